"""Modules split out to break import circles stay below the modules that use them: importing
one loads none of those (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ("judgebench._version", ["judgebench.api", "judgebench.services", "judgebench.plugins"]),
    ("judgebench.engine.survey", ["judgebench.engine.runner", "judgebench.engine.pairwise_table"]),
    ("judgebench.services.meta_eval_results",
     ["judgebench.services.meta_eval", "judgebench.services.missingness",
      "judgebench.services.robustness", "judgebench.services.sequential"]),
    ("judgebench.tables.prepared", ["judgebench.services", "judgebench.auditing"]),
    ("judgebench.tables.pairs", ["judgebench.services", "judgebench.auditing"]),
    ("judgebench.engine.cache_path", ["judgebench.backends", "judgebench.engine.judge_cache",
                                      "judgebench.plugins"]),
    ("judgebench.auditing.pairwise", ["judgebench.auditing.report", "judgebench.services"]),
    ("judgebench.metric", ["judgebench.plugins", "judgebench.registry"]),
]


@pytest.mark.parametrize(("module", "above"), CASES)
def test_importing_a_leaf_loads_nothing_above_it(module: str, above: list[str]) -> None:
    code = (f"import sys, {module}\nabove = {above!r}\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m in above or m.startswith(tuple(a + '.' for a in above))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
