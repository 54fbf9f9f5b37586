"""Measures of the structure of a source tree, from its code: `judgebench/`'s modules and
import edges (module level, and with the imports inside functions), its import circles
(strongly connected components, and pairs of modules importing each other), the most complex
functions (radon's cyclomatic complexity, judgebench/ and meta_eval/), and the modules outside
judgebench/tables/ that do a scores table's reading steps by hand.

    python .ci/structure.py TREE     # needs networkx and radon (not dependencies of the package)
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import networkx as nx
from radon.complexity import cc_visit

READING_STEPS = re.compile(r"\b(find_failed|load_scores_table|numeric_columns|turn_units|"
                           r"apply_numeric)\(")


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in (root / "judgebench").rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def import_graphs(root: Path) -> tuple[dict[str, Path], nx.DiGraph, nx.DiGraph]:
    mods = modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    top, every = nx.DiGraph(), nx.DiGraph()
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]

        def visit(node: ast.AST, in_function: bool, type_only: bool,
                  module: str = module, package: str = package) -> None:
            for child in ast.iter_child_nodes(node):
                only = type_only or (isinstance(child, ast.If)
                                     and "TYPE_CHECKING" in ast.unparse(child.test))
                inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.Import | ast.ImportFrom) and not only:
                    if isinstance(child, ast.Import):
                        names = [a.name for a in child.names]
                    else:
                        base = child.module or ""
                        if child.level:
                            parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                            base = ".".join([*parts, *([base] if base else [])])
                        names = [base, *(f"{base}.{a.name}" for a in child.names)]
                    for name in names:
                        target = resolve(name) if name.startswith("judgebench") else None
                        if target and target != module:
                            every.add_edge(module, target)
                            if not inside:
                                top.add_edge(module, target)
                visit(child, inside, only)

        visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return mods, top, every


def main(root: Path) -> None:
    mods, top, every = import_graphs(root)
    print(f"judgebench/: {len(mods)} modules; import edges {top.number_of_edges()} at module "
          f"level, {every.number_of_edges()} with function-level imports")
    for label, graph in (("module level", top), ("with function-level imports", every)):
        circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
        print(f"import circles ({label}): {len(circles)} strongly connected components, "
              f"sizes {sorted((len(c) for c in circles), reverse=True)}")
    pairs = sorted({tuple(sorted(e)) for e in every.edges if every.has_edge(e[1], e[0])})
    print(f"modules importing each other (any level): {len(pairs)}")
    for a, b in pairs:
        print(f"    {a} <-> {b}")
    rows = []
    for path in [*(root / "judgebench").rglob("*.py"), *(root / "meta_eval").rglob("*.py")]:
        for block in cc_visit(path.read_text(encoding="utf-8")):
            rows.append((block.complexity, f"{path.relative_to(root)}:{block.name}"))
    rows.sort(reverse=True)
    print(f"functions with cyclomatic complexity over 24: {sum(r[0] > 24 for r in rows)}; "
          "the largest:")
    for complexity, name in rows[:5]:
        print(f"    {complexity:3d} {name}")
    readers = sorted(str(p.relative_to(root)) for p in mods.values()
                     if READING_STEPS.search(p.read_text(encoding="utf-8"))
                     and "tables" not in p.parts and p.name != "turn_table.py")
    print(f"modules outside judgebench/tables/ doing a table's reading steps by hand "
          f"({READING_STEPS.pattern}): {len(readers)}")
    for name in readers:
        print(f"    {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
