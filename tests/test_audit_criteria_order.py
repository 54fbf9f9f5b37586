"""The criteria-order probe: its per-criterion shifts against a direct computation (random
scores with ties, failures and extreme magnitudes; scipy's t interval), and through
`judgebench audit` on the bundled SummEval sample against scripted judge.rubric judges with
criteria= on real loopback OpenAI-compatible servers: a judge that rates the first-listed
criterion one point up is found (the first criterion moves down with the order reversed, the
last up), a judge without that bias is not, `--fail-on bias:criteria-order>X` gates on it
(exit 4), and a judge rating one criterion, or a pairwise judge, is refused with a reason."""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from bias_script import bias_audit
from scripted_judge import ScriptedJudge

from judgebench.auditing.bias_variants import criteria_order, reversed_order
from judgebench.models import Sample

COUNT = 12
_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.DOTALL)
_ASKED = re.compile(r"^Criterion \d+ \((\w+)\): ", re.MULTILINE)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")


def samples(n: int) -> list[Sample]:
    return [Sample(item=str(k), system="s", output="o") for k in range(n)]


def answering(rows: Sequence[Mapping[str, float] | None]):
    def score(batch: Sequence[Sample]) -> list[Mapping[str, float] | None]:
        assert len(batch) == len(rows)
        return list(rows)

    return score


@pytest.mark.parametrize("seed", range(8))
def test_each_criterions_shift_matches_a_direct_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 50))
    criteria = list(rng.permutation(["coherence", "fluency", "relevance", "consistency"])
                    [:int(rng.integers(2, 5))])
    scale = float(rng.choice([1e-6, 1.0, 1e8]))

    def row() -> dict[str, float] | None:
        return None if rng.random() < 0.1 else {
            k: float(rng.integers(1, 6)) * scale for k in criteria if rng.random() > 0.05}

    plain = [row() for _ in range(n)]
    # reordered: often the same score (ties), else another; a criterion may be missing
    reordered = [None if rng.random() < 0.1 else {
        k: (p[k] if p is not None and k in p and rng.random() < 0.4
            else float(rng.integers(1, 6)) * scale) for k in criteria}
        for p in plain]
    results = criteria_order(samples(n), answering(plain), answering(reordered),
                             criteria=criteria, judge="j", seed=seed, confidence=0.9)
    assert [r.extra["criterion"] for r in results] == criteria
    for result, key in zip(results, criteria, strict=True):
        moves, deltas = [], []
        for p, q in zip(plain, reordered, strict=True):
            if p is not None and q is not None and key in p and key in q:
                moves.append(0.0 if p[key] == q[key] else float(np.sign(q[key] - p[key])))
                deltas.append(q[key] - p[key])
        assert result.probe == "criteria-order" and result.measure == "shift"
        assert result.n == len(moves) and result.extra["failed"] == n - len(moves)
        assert result.value == pytest.approx(np.mean(moves), abs=1e-12)
        assert result.extra["mean_delta"] == pytest.approx(np.mean(deltas), rel=1e-12)
        assert result.extra["order"] == criteria
        assert result.extra["reordered"] == criteria[::-1]
        assert result.extra["signature"].endswith(
            f"|criterion:{key}|order:{'>'.join(criteria)}")
        if np.std(moves) > 0:
            low, high = stats.ttest_1samp(moves, 0).confidence_interval(0.9)
            assert result.extra["ci_low"] == pytest.approx(max(-1.0, low), abs=1e-12)
            assert result.extra["ci_high"] == pytest.approx(min(1.0, high), abs=1e-12)


@pytest.mark.parametrize("criteria", [["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d", "e"]])
def test_the_edit_keeps_the_criteria_and_moves_their_order(criteria: list[str]) -> None:
    order = reversed_order(criteria)
    assert sorted(order) == sorted(criteria) and order != criteria
    moved = [k for k, (x, y) in enumerate(zip(criteria, order, strict=True)) if x != y]
    assert len(moved) == len(criteria) - len(criteria) % 2


def cue(text: str, key: str) -> int:
    """A criterion's content score of a response: 2 + (a hash % 2)."""
    return 2 + zlib.crc32(f"{key}:{text}".encode()) % 2


def reply(biased: bool):
    """A JSON answer rating each criterion the prompt lists by its content cue; a biased
    judge rates the criterion listed first one point higher."""
    def answer(system: str, user: str) -> str:
        found = _RESPONSE.search(user)
        text = found.group(1) if found else ""
        order = _ASKED.findall(user)
        scores = {k: cue(text, k) + (1 if biased and n == 0 else 0)
                  for n, k in enumerate(order)}
        return json.dumps({"feedback": "read", **scores})

    return answer


def audit(url: str, *args: str, criteria: str = "coherence;fluency;relevance",
          cache: Path | None = None) -> tuple[int, list[dict], str]:
    judge = (f"judge.rubric:backend=openai_compat,model=m,api_base={url},"
             f"criteria={criteria}")
    return bias_audit(judge, COUNT, *args, cache=cache)


@pytest.mark.parametrize("biased", [True, False], ids=["biased", "fair"])
def test_a_judge_favouring_the_first_criterion_is_found_and_a_fair_one_is_not(
        biased: bool) -> None:
    with ScriptedJudge(reply=reply(biased)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "criteria-order")
        prompts = server.prompts
    assert code == 0, stderr
    assert [(r["probe"], r["measure"], r["extra"]["criterion"]) for r in rows] == [
        ("criteria-order", "shift", k) for k in ("coherence", "fluency", "relevance")]
    # each sample asked twice: as the judge asks and reversed; the reported value unmoved
    orders = [_ASKED.findall(p[-1]["content"]) for p in prompts]
    assert len(prompts) == 2 * COUNT
    assert orders.count(["coherence", "fluency", "relevance"]) == COUNT
    assert orders.count(["relevance", "fluency", "coherence"]) == COUNT
    expected = {"coherence": -1.0, "fluency": 0.0, "relevance": 1.0} if biased else {}
    bound = 1 - 0.025 ** (1 / COUNT)  # every unit alike: Clopper-Pearson on 12
    for row in rows:
        extra = row["extra"]
        value = expected.get(extra["criterion"], 0.0)
        assert row["n"] == COUNT and extra["failed"] == 0 and extra["mode"] == "pointwise"
        assert row["value"] == value and extra["mean_delta"] == value
        assert extra["ci_low"] == pytest.approx(max(-1, value - bound * (value + 1)))
        assert extra["ci_high"] == pytest.approx(min(1, value + bound * (1 - value)))
        assert extra["verdict"] == ("biased" if value else "inconclusive")
        assert extra["signature"].startswith("bias.criteria-order@")
        assert f"criterion {extra['criterion']}" in row["note"]


def test_fail_on_criteria_order_exits_4_for_a_biased_judge_and_0_for_a_fair_one(
        tmp_path: Path) -> None:
    with ScriptedJudge(reply=reply(True)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "criteria-order",
                                   "--fail-on", "bias:criteria-order>0.3",
                                   criteria="fluency;coherence")
    assert code == 4, stderr
    assert "criteria-order moves its fluency by -1.000" in stderr
    assert "criteria-order moves its coherence by +1.000" in stderr
    assert {r["extra"]["threshold"] for r in rows} == {0.3}
    with ScriptedJudge(reply=reply(False)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "criteria-order",
                                   "--fail-on", "bias:criteria-order>0.3",
                                   criteria="fluency;coherence", cache=tmp_path / "fresh")
    assert code == 0, stderr
    assert [r["extra"]["verdict"] for r in rows] == ["unbiased", "unbiased"]


def test_a_judge_with_criteria_is_probed_without_asking_by_name() -> None:
    with ScriptedJudge(reply=reply(True)) as server:
        code, rows, stderr = audit(server.url, criteria="coherence;fluency")
    assert code == 0, stderr
    found = {r["extra"]["criterion"]: r["value"] for r in rows if r["probe"] == "criteria-order"}
    assert found == {"coherence": -1.0, "fluency": 1.0}
    assert [r["note"] for r in rows if r["probe"] == "scale-inversion"] == [
        "skipped: a judge rating criteria= in one call takes no invert= (its criteria-order "
        "probe runs)"]


@pytest.mark.parametrize(("judge", "note"), [
    ("judge.rubric:backend=openai_compat,model=m,api_base={url}",
     "skipped: it rates 1 criterion in a call; give criteria= with two or more"),
    ("judge.rubric:backend=openai_compat,model=m,api_base={url},criteria=fluency",
     "skipped: it rates 1 criterion in a call; give criteria= with two or more"),
    ("judge.geval:backend=openai_compat,model=m,api_base={url},protocol=text,"
     "steps=Read it.", "skipped: the judge has no criteria= option (judge.rubric has)"),
    ("judge.pairwise:backend=openai_compat,model=m,api_base={url}",
     "skipped: it probes a judge that scores one output"),
])
def test_criteria_order_asked_of_a_judge_it_does_not_apply_to_says_why(judge: str,
                                                                       note: str) -> None:
    with ScriptedJudge(reply=lambda system, user: "2") as server:
        code, rows, stderr = bias_audit(judge.format(url=server.url), 3, "--bias-probe",
                                        "criteria-order")
        assert server.calls == 0
    assert code == 0, stderr
    assert [(r["probe"], r["measure"]) for r in rows] == [("criteria-order", "skipped")]
    assert rows[0]["note"].startswith(note)
