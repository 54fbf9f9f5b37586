"""The dependencies pyproject declares are the ones the code imports.

Every `import` in judgebench/, meta_eval/ and plugins/ (module level or inside a function) of a
third-party module must come from a declared distribution: a module-level import in judgebench/
or meta_eval/ from a core dependency (`pip install judgebench` must be enough to import it);
one in a plugin or inside a function from a core dependency or an extra. And every core
dependency is imported somewhere, so none is installed for nothing.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("judgebench", "meta_eval", "plugins")
CORE_SOURCES = ("judgebench", "meta_eval")
FIRST_PARTY = {"judgebench", "meta_eval"} | {
    p.name for p in (REPO / "plugins").iterdir() if (p / "__init__.py").is_file()}
#: Modules of extras that are not installed in the test environment (no metadata to map).
NOT_INSTALLED_HERE = {"comet": "unbabel-comet", "vllm": "vllm"}
#: Modules only pytest imports (a `pytest11` entry point): pytest is there when they load, so
#: their imports need a declared extra, not a core dependency.
LOADED_BY_PYTEST = {Path("judgebench/pytest_plugin.py")}


@dataclass(frozen=True)
class Import:
    module: str  # the top-level module name
    path: Path
    line: int
    module_level: bool

    def __str__(self) -> str:
        where = "module level" if self.module_level else "in a function"
        return f"{self.path.relative_to(REPO)}:{self.line} imports {self.module} ({where})"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r}"
    return normalize(match.group(1))


def optional_dependencies() -> dict[str, list[str]]:
    """The extras as setup.py gives them to setuptools (pyproject's
    [tool.judgebench.optional-dependencies] plus `suites`, the in-repo distribution)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    extras = dict(tomllib.loads(text)["tool"]["judgebench"]["optional-dependencies"])
    return {**extras, "suites": ["judgebench-suites"]}


@cache
def declared() -> tuple[frozenset[str], frozenset[str]]:
    """(core dependencies, dependencies of any extra), normalized names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = frozenset(requirement_name(r) for r in project["dependencies"])
    extras = frozenset(requirement_name(r) for group in optional_dependencies().values()
                       for r in group)
    return core, extras


def imports_in(path: Path) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.extend(Import(n.split(".")[0], path, child.lineno, not in_function)
                             for n in names)
            visit(child, in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False)
    return found


@cache
def third_party_imports() -> tuple[Import, ...]:
    every = [imp for folder in SOURCES for path in sorted((REPO / folder).rglob("*.py"))
             for imp in imports_in(path)]
    return tuple(imp for imp in every
                 if imp.module not in sys.stdlib_module_names and imp.module not in FIRST_PARTY)


@cache
def installed() -> dict[str, list[str]]:
    """Top-level module -> the installed distributions that provide it."""
    return dict(importlib.metadata.packages_distributions())


def distributions_of(module: str) -> set[str]:
    found = installed().get(module)
    if found:
        return {normalize(d) for d in found}
    assert module in NOT_INSTALLED_HERE, (
        f"no installed distribution provides '{module}': install the extras, or name the "
        "distribution in NOT_INSTALLED_HERE if its extra cannot be installed here")
    return {normalize(NOT_INSTALLED_HERE[module])}


def test_the_walk_sees_module_level_and_function_imports(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("import numpy as np\nfrom pandas.api import types\nfrom . import sibling\n"
                      "def f():\n    import torch.nn\n    class C:\n        import scipy\n",
                      encoding="utf-8")
    assert [(i.module, i.line, i.module_level) for i in imports_in(source)] == [
        ("numpy", 1, True), ("pandas", 2, True), ("torch", 5, False), ("scipy", 7, False)]


def test_every_import_comes_from_a_declared_distribution() -> None:
    core, extras = declared()
    undeclared = []
    for imp in third_party_imports():
        dists = distributions_of(imp.module)
        where = imp.path.relative_to(REPO)
        must_be_core = (imp.module_level and where.parts[0] in CORE_SOURCES
                        and where not in LOADED_BY_PYTEST)
        allowed = core if must_be_core else core | extras
        if not dists & allowed:
            need = "a core dependency" if must_be_core else "a dependency or an extra"
            undeclared.append(f"{imp}: {' or '.join(sorted(dists))} is not {need}")
    assert not undeclared, "\n".join(undeclared)


def test_every_core_dependency_is_imported() -> None:
    core, _ = declared()
    imported = {d for imp in third_party_imports() for d in distributions_of(imp.module)}
    assert core - imported == set(), "core dependencies that nothing imports"


def test_the_tables_name_what_they_should() -> None:
    assert {"judgebench", "meta_eval", "judgebench_lexical"} <= FIRST_PARTY
    core, extras = declared()
    assert {"click", "pandas", "rouge-score"} <= core and {"torch", "litellm"} <= extras
    for module, dist in NOT_INSTALLED_HERE.items():
        assert normalize(dist) in extras, f"{dist} ({module}) is in no extra"


#: Pairs that install together (neither's metadata forbids the other) and then fail at import
#: (each installed into a throwaway venv: score to Parquet and meta-eval, faiss k-means).
BROKEN_PAIRS = [
    (("pyarrow", "26.0.1"), ("numpy", "1.26.4")),  # "pyarrow requires NumPy 2.0 or newer"
    (("pyarrow", "14.0.2"), ("numpy", "2.4.6")),  # built against numpy 1
    (("faiss-cpu", "1.8.0"), ("numpy", "2.4.6")),  # built against numpy 1
]


def declared_ranges() -> dict[str, SpecifierSet]:
    """Each distribution's range: core dependencies and every extra's, intersected."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    every = [*project["dependencies"],
             *(r for group in optional_dependencies().values() for r in group)]
    ranges: dict[str, SpecifierSet] = {}
    for text in every:
        requirement = Requirement(text)
        name = normalize(requirement.name)
        ranges[name] = ranges.get(name, SpecifierSet()) & requirement.specifier
    return ranges


def test_no_declared_range_admits_a_pair_known_to_break() -> None:
    ranges = declared_ranges()
    admitted = [f"{a}=={va} with {b}=={vb}" for (a, va), (b, vb) in BROKEN_PAIRS
                if ranges[a].contains(va) and ranges[b].contains(vb)]
    assert admitted == []
