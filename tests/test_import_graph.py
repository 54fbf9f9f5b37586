"""The import graphs of meta_eval/ and judgebench/, read with `ast`, have no cycle.

An edge a -> b is an import of module b (or of a name from it) anywhere in module a: at
module level or inside a function (a function-level import does not break a cycle, it
hides one), except under `if TYPE_CHECKING:`. `from pkg import sub` names the submodule
when `sub` is one. meta_eval and judgebench must be acyclic with every edge.

And a scores table is read in judgebench/tables/ only: no module outside it calls or
imports one of READERS, the low-level readers (`.ci/structure.py` counts them too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("meta_eval.correlation", "meta_eval.agreement", "meta_eval.deviation",
           "meta_eval.reliability", "meta_eval.pairs", "meta_eval.system")
LOWER = {"meta_eval.arrays", "meta_eval.numerics", "meta_eval.p_values", "meta_eval.pairs",
         "meta_eval.results",
         "meta_eval.correlation"}
#: The low-level readers of a scores table (its frame, sidecar, failed cells, corpus scores,
#: turn layout), which only judgebench/tables/ calls: everything else reads a table through
#: PreparedTable, PreparedPairs, read_judged, VoterTable or SignedTable.
READERS = ("load_scores_table", "read_sidecar", "find_failed", "read_corpus_table",
           "corpus_records", "turn_units")


def module_files(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package) for every .py file under root/package."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(tree: ast.AST, top_level: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node.test):
            yield from _imports(ast.Module(body=node.orelse, type_ignores=[]), top_level)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if top_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield from _imports(node, top_level)


def import_graph(root: Path, packages: tuple[str, ...], *, top_level: bool = False
                 ) -> dict[str, set[str]]:
    """module -> the modules of `packages` it imports (`top_level`: outside functions)."""
    known: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        known.update(module_files(root, package))

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        base = name if is_package else name.rpartition(".")[0]
        targets = []
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), top_level):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
                continue
            module = node.module or ""
            if node.level:
                parts = base.split(".")[:len(base.split(".")) - node.level + 1]
                module = ".".join([*parts, *([module] if module else [])])
            targets += [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                        for a in node.names]
        graph[name] = {t for t in map(owner, targets) if t is not None and t != name}
    return graph


def scores_table_readers(root: Path) -> list[str]:
    """The files of root/judgebench outside judgebench/tables/ that call one of READERS (a
    name or an attribute: `read_sidecar(p)`, `scores_table.read_sidecar(p)`) or import one
    (under any alias), sorted."""
    out = []
    for path in sorted((root / "judgebench").rglob("*.py")):
        if path.is_relative_to(root / "judgebench" / "tables"):
            continue
        named = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                named.add(node.func.id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                named.add(node.func.attr)
            elif isinstance(node, ast.ImportFrom):
                named.update(alias.name for alias in node.names)
        if named & set(READERS):
            out.append(path.relative_to(root).as_posix())
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def test_meta_eval_has_no_import_cycle_even_through_functions() -> None:
    assert cycles(import_graph(ROOT, ("meta_eval",))) == []


def test_judgebench_has_no_import_cycle_even_through_functions() -> None:
    assert cycles(import_graph(ROOT, ("judgebench", "meta_eval"))) == []


def test_kernels_import_only_numerics_and_other_kernels() -> None:
    graph = import_graph(ROOT, ("meta_eval",))
    for kernel in KERNELS:
        assert graph[kernel] - {"meta_eval"} <= LOWER, kernel


def test_statistics_reach_every_kernel_through_the_table() -> None:
    graph = import_graph(ROOT, ("meta_eval",))
    assert {"meta_eval.correlation", "meta_eval.agreement", "meta_eval.deviation",
            "meta_eval.reliability"} <= graph["meta_eval.statistics"]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("files", "expected"), [
    ({"p/__init__.py": "", "p/a.py": "from p.b import x\n", "p/b.py": "import p.a\n"},
     [["p.a", "p.b"]]),
    ({"p/__init__.py": "", "p/a.py": "from p import b\n",
      "p/b.py": "def f():\n    from . import a\n"}, [["p.a", "p.b"]]),
    ({"p/__init__.py": "", "p/a.py": "from .b import x\n",
      "p/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.a\n"}, []),
    ({"p/__init__.py": "", "p/q/__init__.py": "", "p/q/a.py": "from ..b import x\n",
      "p/b.py": "from p.q import a\n"}, [["p.b", "p.q.a"]]),
    ({"p/__init__.py": "from p.a import x\n", "p/a.py": "import numpy\n"}, []),
])
def test_cycles_are_found_in_real_files(tmp_path: Path, files: dict[str, str],
                                        expected: list[list[str]]) -> None:
    root = _package(tmp_path, files)
    assert cycles(import_graph(root, ("p",))) == expected


def test_a_function_level_cycle_is_not_a_module_level_one(tmp_path: Path) -> None:
    root = _package(tmp_path, {"p/__init__.py": "", "p/a.py": "import p.b\n",
                               "p/b.py": "def f():\n    import p.a\n"})
    assert cycles(import_graph(root, ("p",))) == [["p.a", "p.b"]]
    assert cycles(import_graph(root, ("p",), top_level=True)) == []


def test_only_tables_reads_a_scores_table() -> None:
    assert scores_table_readers(ROOT) == []


def test_a_reader_outside_tables_is_found_however_it_is_reached(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "judgebench/__init__.py": "",
        "judgebench/tables/prepared.py": "def f(p):\n    return read_sidecar(p)\n",
        "judgebench/services/by_name.py":
            "from judgebench.tables.failed import find_failed as told\n",
        "judgebench/services/by_attribute.py":
            "from judgebench.tables import scores_table\n"
            "def f(p):\n    return scores_table.load_scores_table(p)\n",
        "judgebench/services/in_words.py":
            '"""read_sidecar is called in tables/ only"""\nturn_units = 1\n',
        "judgebench/services/prepared.py":
            "from judgebench.tables.prepared import PreparedTable\n"
            "def f(p):\n    return PreparedTable.read(p, None)\n",
    })
    assert scores_table_readers(root) == ["judgebench/services/by_attribute.py",
                                          "judgebench/services/by_name.py"]
