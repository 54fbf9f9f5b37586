"""What the suite tests share: the built-in suites' folder and how a test reaches them.

Installed with `judgebench[suites]` (CI), the `suites` entry point registers them; in a
checkout without it, `-p judgebench_suites` with plugins/judgebench_suites on the path does
the same, so the tests run either way.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import io
import json
import shutil
from pathlib import Path
from typing import Any

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


# -- a built-in suite's folder, as its data tests read it ------------------------------------
def suite_info(name: str) -> dict[str, Any]:
    """Built-in suite `name`'s suite.json, as written (no model: its fields as stored)."""
    data: dict[str, Any] = json.loads((DATA / name / "suite.json").read_text(encoding="utf-8"))
    return data


def suite_rows(name: str, file: str) -> list[dict[str, Any]]:
    """The rows of built-in suite `name`'s gzip-compressed JSONL `file`."""
    with gzip.open(DATA / name / file, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def check_files(name: str, expected: set[str]) -> None:
    """Built-in suite `name` holds exactly the data files `expected` beside suite.json,
    SOURCE.md and build.py; suite.json lists each with the sha256 of its bytes; each is gzip
    with mtime 0 (build.py's bytes are reproducible)."""
    stored = {p.name for p in (DATA / name).iterdir()} - {"suite.json", "SOURCE.md", "build.py"}
    listed = suite_info(name)["files"]
    assert set(listed) == stored == expected, name
    for file, digest in listed.items():
        data = (DATA / name / file).read_bytes()
        assert digest == "sha256:" + hashlib.sha256(data).hexdigest(), file
        assert data[4:8] == b"\0\0\0\0", f"{file}: gzip mtime is not 0"


# -- a tiny pointwise suite whose files are the bytes a test gives ----------------------------
NAME = "tiny"
SAMPLES = [{"item": f"i{k}", "system": "S", "output": f"the cat sat {k}",
            "reference": "the cat sat"} for k in range(4)]
HUMAN = [{"item": f"i{k}", "system": "S", "human.quality": float(k)} for k in range(4)]


def gz(rows: list[Any]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        for row in rows:
            handle.write(row if isinstance(row, bytes) else (json.dumps(row) + "\n").encode())
    return buffer.getvalue()


def info(files: dict[str, str]) -> dict[str, Any]:
    return {"name": NAME, "title": "Tiny", "description": "synthetic", "kind": "pointwise",
            "criteria": ["quality"],
            "protocols": [{"name": "global", "criterion": "quality", "level": "global",
                           "statistics": ["pearson"], "human": "human.quality"}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}


def suite(root: Path, *, samples: bytes | None = None, human: bytes | None = None,
          suite_json: bytes | None = None, extra: dict[str, bytes] | None = None) -> Path:
    """A suite folder `root/tiny` with these bytes as its files, and `extra` files it lists
    (the checksums match them, so what is tested is the reading, not the checksum)."""
    folder = root / NAME
    folder.mkdir(parents=True)
    files = {}
    for name, data in (("samples.jsonl.gz", samples if samples is not None else gz(SAMPLES)),
                       ("human.jsonl.gz", human if human is not None else gz(HUMAN)),
                       *(extra or {}).items()):
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    (folder / "suite.json").write_bytes(suite_json if suite_json is not None
                                        else json.dumps(info(files)).encode())
    return folder
