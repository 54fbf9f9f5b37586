"""Measures of judgebench's structure, read from the code (no module is imported or run).

    python .ci/structure.py [TREE]     # TREE: a checkout (default: this one)

- modules and import edges of `judgebench/` (an edge: module a imports module b, or a name
  from it, anywhere in a, a function body included; `if TYPE_CHECKING:` blocks excluded), the
  graph of tests/test_import_graph.py;
- edges from a lower layer up to a higher one, with the layers of LAYERS below (a module's
  layer is its longest matching prefix);
- import circles (strongly connected components of more than one module) with module-level
  imports only, and with function-level imports too;
- the largest cyclomatic complexities, as radon measures them (functions and methods);
- the places outside judgebench/tables/ that read a scores table themselves: modules that call
  or import one of READERS (tests/test_import_graph.py, which keeps them at none).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))
# READERS: the low-level readers of a scores table, kept beside the test that holds their
# callers outside judgebench/tables/ at none
from test_import_graph import READERS as READERS  # noqa: E402
from test_import_graph import cycles, import_graph, scores_table_readers  # noqa: E402

# Lowest first. A module imports its own layer or lower ones; the package's lazy __init__
# (re-exports of the API, resolved on first use) sits on top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("judgebench._version", "judgebench.errors", "judgebench.redact", "judgebench.display",
     "judgebench.extras", "judgebench.results", "judgebench.verbosity"),
    ("judgebench.models", "judgebench.spec", "judgebench.conversation", "judgebench.scales",
     "judgebench.listwise_sample"),
    ("judgebench.metric", "judgebench.sentinel", "judgebench.probe", "judgebench.bias_probe",
     "judgebench.hookspecs",
     "judgebench.registry", "judgebench.backends", "judgebench.suggest",
     "judgebench.metric_card"),
    # engine's leaves (they import only lower layers): the run's settings, the progress line,
    # where the judge cache lives (tests/test_module_leaves.py), and the store with its labels
    # (persistence: tables read failed statuses and people's labels from it)
    ("judgebench.tables", "judgebench.engine.runtime", "judgebench.engine.progress_line",
     "judgebench.engine.cache_path", "judgebench.engine.store", "judgebench.engine.labels"),
    ("judgebench.engine", "judgebench.plugin_api", "judgebench.plugins", "judgebench.suite",
     "judgebench.backends.installed"),
    ("judgebench.services", "judgebench.auditing", "judgebench.pytest_plugin"),
    ("judgebench.render",),
    ("judgebench.api", "judgebench.commands", "judgebench.view", "judgebench.cli"),
    ("judgebench",),
)

def layer(module: str) -> int:
    best, found = -1, len(LAYERS) - 1
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), rank
    return found


def complexities(tree: Path) -> list[tuple[int, str]]:
    from radon.complexity import cc_visit  # the dev extra; the measure the issues quote

    found = []
    for path in sorted((tree / "judgebench").rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            name = f"{block.classname}.{block.name}" if getattr(block, "classname", None) \
                else block.name
            found.append((block.complexity, f"{path.relative_to(tree)}:{name}"))
    return sorted(found, reverse=True)


def main(tree: Path) -> dict[str, object]:
    full = import_graph(tree, ("judgebench",))
    top = import_graph(tree, ("judgebench",), top_level=True)
    upward = sorted(f"{a} -> {b}" for a, bs in full.items() for b in bs
                    if layer(b) > layer(a))
    worst = complexities(tree)
    return {
        "modules": len(full),
        "import_edges": sum(len(b) for b in full.values()),
        "upward_edges": upward,
        "circles_module_level": cycles(top),
        "circles_with_function_level": cycles(full),
        "largest_complexity": worst[:10],
        "functions_over_24": sum(1 for c, _ in worst if c > 24),
        "scores_table_readers": scores_table_readers(tree),
    }


if __name__ == "__main__":
    result = main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE)
    for key, value in result.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for row in value:
                print(f"  {row}")
        else:
            print(f"{key}: {value}")
