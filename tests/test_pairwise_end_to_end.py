"""Pairwise judges end to end on CPU: `score` a pairwise file with two scripted judges on a
real loopback server, then `meta-eval --pairwise`, `aggregate -r bradley-terry -r win-rate`,
`compare-judges` and `audit --pairwise` on the table it wrote, every number checked against
what the script makes the judges say."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, write_jsonl
from scripted_judge import ScriptedJudge
from test_score_pairwise import (  # noqa: F401 (isolated: a fixture)
    KEY_ENV,
    isolated,
    judge_spec,
    strict_template,
)

# Quality per (system, item number): the scripted judge prefers the higher q=; on equal q the
# plain template picks the output shown first, the STRICT one says tie. People agree with q.
QUALITY = {"M0": lambda n: 2, "M1": lambda n: 3, "M2": lambda n: 1 + n % 2,
           "M3": lambda n: 3 if n % 2 == 0 else 1}
ITEMS = 12
PAIRS = [("M0", "M1"), ("M0", "M2"), ("M0", "M3"), ("M1", "M2")]


def _records() -> list[dict]:
    records = []
    for n in range(ITEMS):
        for a, b in PAIRS:
            qa, qb = QUALITY[a](n), QUALITY[b](n)
            records.append({
                "item": f"q{n}", "input": f"Question {n}?", "system_a": a, "system_b": b,
                "output_a": f"answer of {a} q={qa}", "output_b": f"answer of {b} q={qb}",
                "metadata": {"category": "even" if n % 2 == 0 else "odd"},
                "human": {"pref": 1.0 if qa > qb else 0.0 if qa < qb else 0.5}})
    return records


def _json(proc) -> list[dict]:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_score_then_meta_eval_aggregate_compare_and_audit(tmp_path: Path) -> None:
    records = _records()
    ties = [r for r in records if r["human"]["pref"] == 0.5]
    assert 0 < len(ties) < len(records)
    data = write_jsonl(tmp_path / "pairs.jsonl", records)
    table = tmp_path / "pairs.csv"
    with ScriptedJudge() as server:
        plain = judge_spec(server.url)
        strict = judge_spec(server.url, template=str(strict_template(tmp_path)))
        proc = run_cli("score", str(data), "-m", plain, "-m", strict, "-o", str(table),
                       "--store", str(tmp_path / "runs.db"), cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    plain, strict = column(plain), column(strict)

    # meta-eval --pairwise: with human ties as a class, the strict judge is right everywhere;
    # the plain one is right on decided pairs only (on a tie it names the first shown).
    rows = _json(run_cli("meta-eval", "pairwise", str(table), "--human", "human.pref",
                         "--human-ties", "class", "--bootstrap", "200", "--compare", "--json"))
    got = {(r["metric"], r["statistic"]): r for r in rows}
    decided = 1 - len(ties) / len(records)
    assert got[(strict, "accuracy")]["value"] == 1.0
    assert got[(plain, "accuracy-ab")]["value"] == pytest.approx(decided)
    assert got[(plain, "accuracy-ba")]["value"] == pytest.approx(decided)
    assert got[(plain, "consistency")]["value"] == pytest.approx(decided)
    assert got[(strict, "consistency")]["value"] == 1.0
    assert got[(plain, "tie-rate")]["value"] == 0.0
    assert got[(strict, "tie-rate")]["value"] == pytest.approx(len(ties) / len(records))
    assert got[(strict, "accuracy")]["cluster"] == 1
    assert got[(plain, "accuracy")]["cluster"] == 2
    low, high = got[(plain, "accuracy")]["ci_low"], got[(plain, "accuracy")]["ci_high"]
    assert low <= decided <= high

    # aggregate: win rates against M0 and Bradley-Terry from the strict judge's verdicts.
    rules = _json(run_cli("aggregate", str(table), "--winner", strict, "-r",
                          "win-rate:baseline=M0", "-r", "bradley-terry", "--json"))
    by_rule = {r["rule"].split(":")[0]: r for r in rules}
    win = by_rule["win-rate"]
    assert win["scores"]["M1"] == 100.0  # q=3 beats q=2 on every item
    assert win["scores"]["M2"] == 25.0  # q=1 loses, q=2 ties (half): (0 + 0.5) / 2
    assert win["scores"]["M3"] == 50.0  # wins on even items, loses on odd ones
    assert win["extra"]["n_total"] == {"M1": ITEMS, "M2": ITEMS, "M3": ITEMS}
    assert win["extra"]["n_draws"]["M2"] == ITEMS // 2
    bt = by_rule["bradley-terry"]["ranking"]
    assert bt.index("M1") < bt.index("M0") < bt.index("M2")

    # compare-judges: A-first verdicts differ exactly on the tied pairs.
    stats = {r["statistic"]: r for r in _json(run_cli(
        "compare-judges", str(table), "--a", f"{plain}.ab", "--b", f"{strict}.ab",
        "--human", "human.pref", "--bootstrap", "100", "--json"))}
    assert stats["flip_rate"]["value"] == pytest.approx(len(ties) / len(records))

    # audit --pairwise: the report opens with the judges against people, per category.
    report = tmp_path / "audit.html"
    results = _json(run_cli("audit", str(table), "--pairwise", "--human", "human.pref",
                            "--human-ties", "class", "--by", "category", "--bootstrap", "100",
                            "--report", str(report), "--json"))
    pairwise = [r for r in results if r["type"] == "pairwise"]
    assert {r.get("category") for r in pairwise} == {"even", "odd", "(macro)"}
    macro = {(r["metric"], r["statistic"]): r["value"] for r in pairwise
             if r.get("category") == "(macro)"}
    assert macro[(strict, "accuracy")] == 1.0
    page = report.read_text()
    assert page.index('id="verdict"') < page.index('id="pairwise"')
    assert f"{strict} agrees best with human.pref" in page.replace("&amp;", "&")
