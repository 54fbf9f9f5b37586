"""The built-in plugins use judgebench through `judgebench.plugin_api` only: the face a
third-party plugin has, so a built-in cannot lean on what a third party cannot."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

import judgebench.plugin_api as plugin_api

PLUGINS = REPO / "plugins"


def judgebench_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a judgebench module in `path`, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, m) for m in modules
                  if m == "judgebench" or m.startswith("judgebench.")]
    return found


def test_built_in_plugins_import_judgebench_through_the_plugin_api_only() -> None:
    files = sorted(PLUGINS.rglob("*.py"))
    assert len(files) > 30
    outside = [f"{path.relative_to(REPO)}:{line}: {module}"
               for path in files for line, module in judgebench_imports(path)
               if module != "judgebench.plugin_api"]
    assert not outside, "\n".join(outside)


def test_every_name_the_plugin_api_declares_is_there_once() -> None:
    names = plugin_api.__all__
    assert len(names) == len(set(names))
    missing = [n for n in names if not hasattr(plugin_api, n)]
    assert not missing
    public = {n for n in vars(plugin_api) if n[0] not in "_@"} - {"annotations"}  # @: pytest
    assert public == set(names)  # nothing importable that the contract does not name
