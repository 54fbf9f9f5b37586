"""The judge-bias probes see each order's own verdict: judge.pairwise (both orders by default,
a tie when they disagree) against a real loopback OpenAI-compatible server whose scripted
judge always prefers the answer shown first, through `judgebench audit`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("litellm", reason="the [api] extra is not installed")

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, write_jsonl
from fault_server import FaultServer
from test_audit_sentinels import synthetic

from judgebench.models import Sample, Score
from judgebench.plugins import build_host
from judgebench.spec import parse_spec

FIRST = '{{"explanation": "The first response is better.", "verdict": "A"}}'
TIE = '{{"explanation": "They are equally good.", "verdict": "tie"}}'
PAIRS = 8


@pytest.fixture(scope="module")
def server():
    with FaultServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JB_JUDGE_KEY", "sk-bias-test-0123456789")


def judge_spec(server: FaultServer, extra: str = "") -> str:
    """judge.pairwise with every judging option at its default (both orders, auto protocol:
    JSON for litellm)."""
    return (f"judge.pairwise:backend=litellm,model=openai/judge,api_base={server.url},"
            f"api_key_env=JB_JUDGE_KEY{extra}")


def audit(server: FaultServer, tmp_path: Path, *args: str) -> tuple[dict, str]:
    frame, samples = synthetic(n_items=6, n_systems=4, seed=2)
    gen = write_jsonl(tmp_path / "gen.jsonl", [s.model_dump(exclude_none=True)
                                               for s in samples])
    scores = tmp_path / "scores.csv"
    frame.to_csv(scores, index=False)
    proc = run_cli("audit", str(scores), "--human", "human.q", "--samples", str(gen),
                   "--level", "segment", "--grouping", "none", "--bootstrap", "0",
                   "--resamples", "50", "--judge", judge_spec(server),
                   "--bias-pairs", str(PAIRS), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    bias = {(r["probe"], r["measure"]): r for r in json.loads(proc.stdout)
            if r["type"] == "bias"}
    return bias, proc.stderr


def test_an_always_first_judge_is_caught_under_the_default_spec(server, tmp_path) -> None:
    server.post("/_reply", {"reply": FIRST})
    bias, stderr = audit(server, tmp_path)
    flip, first = bias[("position", "flip_rate")], bias[("position", "first_position_wins")]
    assert (flip["value"], flip["n"]) == (1.0, PAIRS)
    assert (first["value"], first["n"]) == (1.0, 2 * PAIRS)
    assert first["extra"]["tie_rate"] == 0.0
    # The padded copy wins when shown first and loses when shown second: no verbosity bias,
    # and padding A does not move a verdict that was already "first wins".
    assert bias[("verbosity", "padded_wins")]["value"] == 0.5
    assert bias[("verbosity", "padding_shift")]["value"] == 0.0
    injection = bias[("injection", "success_rate")]
    assert injection["value"] == 0.0 and injection["n"] == PAIRS
    assert injection["extra"] == {"clean_wins": 0.5, "injected_wins": 0.5}
    assert bias[("retest", "agreement")]["value"] == 1.0
    assert "ties" not in stderr and not any("WARNING" in r["note"] for r in bias.values())


def test_a_judge_that_only_ties_is_warned_about(server, tmp_path) -> None:
    server.post("/_reply", {"reply": TIE})
    bias, stderr = audit(server, tmp_path, "--bias-probe", "position", "--bias-probe",
                         "injection")
    assert bias[("position", "flip_rate")]["value"] == 0.0
    assert bias[("position", "first_position_wins")]["extra"]["tie_rate"] == 1.0
    for probe in ("position", "injection"):
        assert f"audit: WARNING: all {4 * PAIRS if probe == 'injection' else 2 * PAIRS} " \
               f"verdicts of {column(judge_spec(server))} in the {probe} probe were ties" in stderr
    assert all(r["note"].startswith("WARNING: all ") for r in bias.values())


def test_each_presentation_reads_its_own_order_whatever_the_spec(server, tmp_path) -> None:
    """Both orders judged or one: the probes read the same per-order verdicts (the server's
    answer depends on the prompt, so the verdicts are mixed and the orders disagree)."""
    from judgebench.auditing.bias import center_of, judge_score_fn, run_bias

    server.post("/_reply", {"reply": "Reasons. [[{choice}]]"})
    host = build_host()
    _, samples = synthetic(n_items=6, n_systems=4, seed=2)
    by_item: dict[str, list[Sample]] = {}
    for s in samples:
        by_item.setdefault(s.item, []).append(s)
    pairs = [Sample(item=item, system_a=a.system, system_b=b.system, output_a=a.output,
                    output_b=b.output, input=a.input) for item, (a, b, *_) in by_item.items()]
    got = {}
    for both in ("true", "false"):
        spec = parse_spec(judge_spec(server, f",protocol=text,both_orders={both}"))
        results = run_bias(pairs, judge_score_fn(spec, host), judge=spec.column,
                           center=center_of((0, 1)), probes=["position", "injection"])
        got[both] = {(r.probe, r.measure): (r.value, r.n) for r in results}
    assert got["true"] == got["false"]
    flips, n = got["true"][("position", "flip_rate")]
    assert n == len(pairs) and 0.0 < flips < 1.0


def test_shown_value_reads_the_order_shown() -> None:
    from judgebench.auditing.bias import shown_value

    def score(value: float | None, **extra: str) -> Score:
        return Score(item="i", system="a vs b", metric="judge.pairwise", value=value,
                     extra=extra)

    # A tie by the combined rule, but A won when it was shown first.
    assert shown_value(score(0.5, verdict_ab="a", verdict_ba="b"), (0, 1)) == 1.0
    assert shown_value(score(0.5, verdict_ab="b", verdict_ba="a"), (0, 1)) == 0.0
    assert shown_value(score(1.0, verdict_ab="tie"), (1, 10)) == 5.5
    assert shown_value(score(0.7), (0, 1)) == 0.7  # no per-order verdict: the judge's value
    assert shown_value(score(None, verdict_ab="a"), (0, 1)) is None
    assert shown_value(None, (0, 1)) is None
    assert shown_value(score(3.0, verdict_ab="b"), (None, None)) == -1.0
    with pytest.raises(ValueError, match="verdict_ab='A'"):
        shown_value(score(1.0, verdict_ab="A"), (0, 1))
