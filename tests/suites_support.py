"""What the suite tests share: the built-in suites' folder and how a test reaches them.

Installed with `judgebench[suites]` (CI), the `suites` entry point registers them; in a
checkout without it, `-p judgebench_suites` with plugins/judgebench_suites on the path does
the same, so the tests run either way.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

from conftest import REPO

DIST = REPO / "plugins" / "judgebench_suites"
DATA = DIST / "judgebench_suites" / "data"
#: every suite folder in this checkout (a folder added later is tested without editing this)
BUILTIN = tuple(sorted(p.name for p in DATA.iterdir() if (p / "suite.json").is_file()))


def installed() -> bool:
    return any(ep.name == "suites" for ep in importlib.metadata.entry_points(group="judgebench"))


def plugin_args() -> list[str]:
    return [] if installed() else ["-p", "judgebench_suites"]


def plugin_env() -> dict[str, str]:
    return {} if installed() else {"PYTHONPATH": str(DIST)}


def copy_suite(name: str, target: Path, *, rename: str | None = None) -> Path:
    """A copy of built-in suite `name` under `target` (renamed: suite.json's name too)."""
    folder = target / (rename or name)
    shutil.copytree(DATA / name, folder)
    if rename:
        info = json.loads((folder / "suite.json").read_text(encoding="utf-8"))
        info["name"] = rename
        (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return folder
