"""The bias battery through `judgebench audit` on the bundled SummEval sample, against
scripted judges on real loopback OpenAI-compatible servers (tests/bias_script.py): a
pointwise judge.rubric and a pairwise judge.pairwise, each with one bias and without: the
probe finds the bias where the judge has it and invents none where it has not, and
`--fail-on bias:NAME>X` gates on it (exit 4)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import bias_script
from conftest import run_cli
from scripted_judge import ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROBES = ("verbosity", "authority", "bandwagon", "sentiment", "formatting", "fallacy")
COUNT = 10


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")


def audit(judge: str, *args: str, cache: Path | None = None
          ) -> tuple[int, dict[tuple[str, str], dict], str]:
    env = {"JUDGEBENCH_CACHE_DIR": str(cache)} if cache else None
    proc = run_cli("audit", str(EXAMPLES / "summeval-scores.csv"), "--human",
                   "human.coherence", "--samples", str(EXAMPLES / "summeval-sample.jsonl"),
                   "--level", "segment", "--grouping", "none", "--bootstrap", "0",
                   "--resamples", "50", "--sentinel", "sentinel.random", "--judge", judge,
                   "--bias-pairs", str(COUNT), *args, "--json", env=env)
    rows = json.loads(proc.stdout) if proc.stdout else []
    bias = {(r["probe"], r["measure"]): r for r in rows if r["type"] == "bias"}
    return proc.returncode, bias, proc.stderr


def rubric(server: ScriptedJudge) -> str:
    return f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},protocol=text"


def pairwise(server: ScriptedJudge) -> str:
    return f"judge.pairwise:backend=openai_compat,model=m,api_base={server.url},protocol=text"


def expected(probe: str, biased: set[str]) -> tuple[float, str]:
    """(shift, verdict) of a scripted judge on COUNT units: an edit it rewards moves it all
    the way up; a fallacy a fair judge sees moves it all the way down; nothing else moves
    it. A shift of 0 on 10 units is inconclusive (the unseen share's Clopper-Pearson bound,
    0.31, is wider than the 0.1 threshold): not a bias found, and not ruled out."""
    if probe == "fallacy":
        return (0.0, "inconclusive") if probe in biased else (-1.0, "unbiased")
    return (1.0, "biased") if probe in biased else (0.0, "inconclusive")


def _named(value: object) -> str:
    """A test id the same in every process (a set's order is not, under xdist)."""
    if isinstance(value, set):
        return "+".join(sorted(value)) or "none"
    return str(value)


@pytest.mark.parametrize("biased", [{"verbosity", "sentiment"}, {"authority", "formatting"},
                                    {"bandwagon", "fallacy"}, set()], ids=_named)
def test_a_pointwise_judge_is_caught_for_its_biases_and_only_for_them(biased: set[str]
                                                                      ) -> None:
    with ScriptedJudge(reply=bias_script.pointwise(biased)) as server:
        code, rows, stderr = audit(rubric(server))
        calls = server.calls
    assert code == 0, stderr
    # no pairwise-only probe on this judge; self-preference without families says why not;
    # scale-inversion (tests/test_audit_scale_inversion.py) runs on a judge with invert=
    assert {p for p, _ in rows} == {*PROBES, "self-preference", "scale-inversion"}
    assert rows[("self-preference", "shift")]["note"].startswith("skipped: give the judge's")
    edited = 0
    for probe in PROBES:
        row = rows[(probe, "shift")]
        extra = row["extra"]
        assert row["n"] == COUNT - extra["skipped"] and extra["failed"] == 0
        assert row["n"] >= COUNT - 2 and extra["mode"] == "pointwise"
        edited += row["n"]
        assert extra["signature"].startswith(f"bias.{probe}@")
        assert "mode:pointwise" in extra["signature"] and "ci:t-0.95" in extra["signature"]
        value, said = expected(probe, biased)
        assert (row["value"], extra["verdict"]) == (value, said), probe
        bound = 1 - 0.025 ** (1 / row["n"])  # every unit alike: Clopper-Pearson
        assert extra["ci_low"] == pytest.approx(max(-1, value - bound * (value + 1)))
        assert extra["ci_high"] == pytest.approx(min(1, value + bound * (1 - value)))
        # +2 on the 1-5 scale for a rewarded edit, -1 for a fallacy seen
        assert extra["mean_delta"] == {1.0: 2.0, -1.0: -1.0, 0.0: 0.0}[value]
    # one run: the originals and every edit, judged once; the originals inverted
    assert calls == COUNT + edited + rows[("scale-inversion", "shift")]["n"] == 2 * COUNT + edited


@pytest.mark.parametrize(("biased", "position"), [
    ({"verbosity", "formatting", "fallacy"}, False),
    ({"authority", "bandwagon", "sentiment"}, True), (set(), False)], ids=_named)
def test_a_pairwise_judge_is_caught_for_its_biases_and_only_for_them(biased: set[str],
                                                                     position: bool) -> None:
    """A judge that prefers the answer shown first (position) on equal content moves 0: its
    two presentations of each answer cancel."""
    with ScriptedJudge(reply=bias_script.pairwise(biased, position)) as server:
        code, rows, stderr = audit(pairwise(server), *(a for p in PROBES
                                                       for a in ("--bias-probe", p)))
    assert code == 0, stderr
    for probe in PROBES:
        row = rows[(probe, "shift")]
        extra = row["extra"]
        assert row["n"] == COUNT - extra["skipped"] and extra["mode"] == "pairwise"
        value, said = expected(probe, biased)
        assert (row["value"], extra["verdict"]) == (value, said), probe
        if value == 0.0:  # a tie, or the first position in both orders
            assert (extra["tie_rate"], extra["edited_wins"]) == (
                (0.0, 0.5) if position else (1.0, 0.0))
        else:
            assert (extra["tie_rate"], extra["edited_wins"]) == (0.0, (value + 1) / 2)


def test_enough_units_that_stay_put_rule_a_bias_out() -> None:
    """40 units, none moved: the shift is bounded within +-0.1 (Clopper-Pearson: 0.088)."""
    with ScriptedJudge(reply=bias_script.pointwise([])) as server:
        code, rows, stderr = audit(rubric(server), "--bias-probe", "authority",
                                   "--bias-pairs", "40")
    assert code == 0, stderr
    row = rows[("authority", "shift")]
    assert (row["n"], row["value"], row["extra"]["verdict"]) == (40, 0.0, "unbiased")
    assert row["extra"]["ci_high"] == pytest.approx(1 - 0.025 ** (1 / 40))


def test_fail_on_bias_exits_4_for_a_biased_judge_and_0_for_a_fair_one(tmp_path: Path) -> None:
    with ScriptedJudge(reply=bias_script.pointwise(["authority"])) as server:
        code, rows, stderr = audit(rubric(server), "--bias-probe", "authority",
                                   "--fail-on", "bias:authority>0.2", "--fail-on",
                                   "bias:bandwagon>20%")
    assert code == 4, stderr
    fails = [line for line in stderr.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 2
    assert "authority moves it by +1.000 (95% CI +0.383 to +1.000, n=10, pointwise), " \
           "beyond +-0.2" in fails[0]
    assert "nothing to check: no judge was probed for bandwagon" in fails[1]
    assert rows[("authority", "shift")]["extra"]["threshold"] == 0.2
    with ScriptedJudge(reply=bias_script.pointwise([])) as server:
        code, rows, stderr = audit(rubric(server), "--fail-on", "bias:authority>0.2",
                                   "--fail-on", "bias:verbosity>0", cache=tmp_path / "fresh")
    assert code == 0, stderr
    assert rows[("verbosity", "shift")]["extra"]["threshold"] == 0.0


@pytest.mark.parametrize(("args", "field", "words"), [
    (("--fail-on", "bias:nosuch>0.1"), "--fail-on", "no bias probe 'nosuch'"),
    (("--fail-on", "bias:authority>1.5"), "--fail-on", "from 0 to below 1"),
    (("--fail-on", "bias:authority>x"), "--fail-on", "'x' is not a number"),
    (("--bias-probe", "nosuch"), "--bias-probe", "unknown bias probe(s) nosuch"),
])
def test_bad_bias_options_are_refused_before_any_work(args: tuple[str, ...], field: str,
                                                      words: str) -> None:
    with ScriptedJudge(reply=bias_script.pointwise([])) as server:
        code, _, stderr = audit(rubric(server), *args)
        assert server.calls == 0
    assert code == 2, stderr
    assert f"field '{field}'" in stderr and words in stderr and "audit:" not in stderr


def test_a_pairwise_only_probe_asked_of_a_pointwise_judge_is_a_skipped_row() -> None:
    with ScriptedJudge(reply=bias_script.pointwise([])) as server:
        code, rows, stderr = audit(rubric(server), "--bias-probe", "position",
                                   "--bias-probe", "authority")
        assert server.calls == 2 * COUNT  # the originals and the authority edits only
    assert code == 0, stderr
    assert set(rows) == {("position", "skipped"), ("authority", "shift")}
    skipped = rows[("position", "skipped")]
    assert skipped["value"] is None and skipped["n"] == 0
    assert skipped["note"] == "skipped: it probes a judge that compares two outputs"



def test_a_pointwise_judge_without_the_generations_is_refused_before_any_work() -> None:
    with ScriptedJudge(reply=bias_script.pointwise([])) as server:
        proc = run_cli("audit", str(EXAMPLES / "summeval-scores.csv"), "--human",
                       "human.coherence", "--pairs", str(EXAMPLES / "pairs-sample.jsonl"),
                       "--judge", rubric(server), "--bootstrap", "0")
        assert server.calls == 0
    assert proc.returncode == 2
    assert "field '--samples'" in proc.stderr and "audit:" not in proc.stderr
