"""End to end on real data: ROUGE on SummEval against the published summary-level table.

SOURCE.md (beside the data) reprints Liu et al. 2023 (G-Eval) Table 1 / Zhong et al. 2022:
ROUGE F-measure, mean over the 11 references, correlated per document across the 16 systems
and averaged (documents where either side is constant are skipped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SUMMEVAL, run_cli

pytestmark = pytest.mark.slow  # scores all of SummEval (1,600 rows) with ROUGE

PUBLISHED = {  # metric -> criterion -> (spearman, kendall)
    "lexical.rouge1:multi_ref=mean": {"coherence": (0.167, 0.126), "consistency": (0.160, 0.130),
                                      "fluency": (0.115, 0.094), "relevance": (0.326, 0.252)},
    "lexical.rouge2:multi_ref=mean": {"coherence": (0.184, 0.139), "consistency": (0.187, 0.155),
                                      "fluency": (0.159, 0.128), "relevance": (0.290, 0.219)},
    "lexical.rougeLsum:multi_ref=mean": {"coherence": (0.128, 0.099),
                                         "consistency": (0.115, 0.092),
                                         "fluency": (0.105, 0.084),
                                         "relevance": (0.311, 0.237)},
}
CRITERIA = ("coherence", "consistency", "fluency", "relevance")


def test_rouge_on_summeval_reproduces_the_published_table(tmp_path: Path):
    assert SUMMEVAL.exists(), f"the SummEval data is needed at {SUMMEVAL}"
    scores = tmp_path / "scores.csv"
    specs = [a for m in PUBLISHED for a in ("-m", m)]
    run_cli("score", str(SUMMEVAL), *specs, "-o", str(scores), "--store",
            str(tmp_path / "runs.db"), check=True)
    humans = [a for c in CRITERIA for a in ("--human", f"human.{c}")]
    proc = run_cli("meta-eval", str(scores), *humans, "--level", "segment", "--grouping",
                   "item", "--statistic", "spearman", "--statistic", "kendall", "--json",
                   check=True)
    results = json.loads(proc.stdout)
    assert len(results) == 3 * 4 * 2
    got = {(r["metric"], r["human"], r["statistic"]): r for r in results}
    for metric, table in PUBLISHED.items():
        for criterion, (rho, tau) in table.items():
            for statistic, published in (("spearman", rho), ("kendall", tau)):
                r = got[(metric, f"human.{criterion}", statistic)]
                assert r["n"] + r["skipped"] == 100
                if "rouge2" in metric:
                    assert round(r["value"], 3) == pytest.approx(published, abs=1e-9), (
                        metric, criterion, statistic, r["value"])
                else:
                    assert abs(r["value"] - published) <= 0.003, (
                        metric, criterion, statistic, r["value"])
