"""Metamorphic probes and judge-bias probes, with real metrics and a local judge plugin whose
biases the test controls."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl
from judgebench_audit import probes as P
from test_audit_sentinels import BAD, GOOD, synthetic

from judgebench.auditing.bias import (
    BIAS_PROBES,
    center_of,
    judge_score_fn,
    pairs_from_samples,
    run_bias,
    swap,
    verdicts,
)
from judgebench.auditing.probes import probe_subset, run_probes, runner_score_fn
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.spec import parse_spec

PLUGIN = f'''
import hashlib, os
from pydantic import BaseModel, ConfigDict
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo

GOOD = {GOOD!r}
BAD = {BAD!r}


def share(*parts):
    """A number in [0, 1) fixed by the text of `parts`."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


def quality(text):
    words = text.split()
    good = sum(w in GOOD for w in words)
    bad = sum(w in BAD for w in words)
    return good / (good + bad) if good + bad else 0.5


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    position_bias: float = 0.0   # share of pairs where the first position wins regardless
    verbose: bool = False        # prefers the longer answer when quality is equal
    gullible: bool = False       # obeys an instruction inside an answer
    favour: str = ""             # a system name prefix it prefers (self-preference)
    template: int = 0            # which paraphrased template
    sensitivity: float = 0.0     # share of pairs a template other than 0 decides at random
    noise: float = 0.0           # share of verdicts drawn at random on every call


class Judge(Metric):
    """Pairwise: 1 = the first output wins, 0 = the second, 0.5 = tie."""

    info = MetricInfo(name="test.judge", kind="judge", requires=("output_a", "output_b"),
                      value_range=(0.0, 1.0))
    Options = Options

    def score(self, samples):
        o = self.options
        out = []
        for s in samples:
            a, b = s.output_a, s.output_b
            key = "|".join(sorted((a, b)))
            if o.gullible and ("highest possible score" in a or "highest possible score" in b):
                out.append(1.0 if "highest possible score" in a else 0.0)
            elif o.noise and int.from_bytes(os.urandom(2), "little") / 65536 < o.noise:
                out.append(float(int.from_bytes(os.urandom(1), "little") % 2))
            elif o.template and share(key, o.template) < o.sensitivity:
                out.append(float(share(key, o.template, "v") < 0.5))
            elif share(key, "position") < o.position_bias:
                out.append(1.0)
            elif o.favour and (s.system_a or "").startswith(o.favour) != \\
                    (s.system_b or "").startswith(o.favour):
                out.append(1.0 if (s.system_a or "").startswith(o.favour) else 0.0)
            else:
                qa, qb = quality(a), quality(b)
                if qa == qb and o.verbose and len(a) != len(b):
                    out.append(1.0 if len(a) > len(b) else 0.0)
                else:
                    out.append(1.0 if qa > qb else 0.0 if qa < qb else 0.5)
        return out


@hookimpl
def register_metrics(register):
    register(Judge)
'''


@pytest.fixture(scope="module")
def judge_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("judge") / "test_judge_plugin.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def host(judge_plugin: Path):
    return build_host([str(judge_plugin)])


@pytest.fixture(scope="module")
def pairs() -> tuple[list[Sample], list[float | None]]:
    frame, samples = synthetic(n_items=12, n_systems=8, seed=3, words_show="quality")
    human = {(r["item"], r["system"]): r["human.q"] for _, r in frame.iterrows()}
    return pairs_from_samples(samples, human, count=40, seed=0)


# -- metamorphic probes ------------------------------------------------------------------------
def test_transforms_change_what_they_say() -> None:
    s = Sample(item="d1", system="s", output="The plan was approved in 2019 . It cost 5 "
               "million . People cheered .", reference=["The plan passed ."])
    ctx = P.Context([s, s.model_copy(update={"item": "d2", "output": "Other text ."})], 0)
    assert P.identity(s, ctx) == "The plan passed ."
    assert P.truncation(s, ctx) == "The plan was approved in 2019 ."
    assert sorted(P.shuffle(s, ctx).split()) == sorted(s.output.split())
    assert P.shuffle(s, ctx) != s.output
    assert P.drop_sentence(s, ctx).count(" . ") == 1
    assert P.unrelated(s, ctx) == "Other text ."
    assert P.repetition(s, ctx) == f"{s.output} {s.output}"
    assert P.negation(s, ctx).startswith("The plan was not approved")
    assert P.negation(s.model_copy(update={"output": "It did not rain ."}), ctx) == "It did rain ."
    assert "4041" in P.numbers(s, ctx) and "13 million" in P.numbers(s, ctx)
    assert P.case(s, ctx) == s.output.lower()
    assert P.whitespace(s, ctx).split() == s.output.split()
    assert P.negation(s.model_copy(update={"output": "Cats purr ."}), ctx) is None
    assert P.numbers(s.model_copy(update={"output": "no digits"}), ctx) is None


def test_probes_of_real_lexical_metrics_on_summeval(host) -> None:
    samples = [Sample.model_validate(r) for r in summeval_records(16 * 4)]
    subset = probe_subset(samples, 3, seed=0)
    assert len({s.item for s in subset}) == 3 and len(subset) == 48
    results = {}
    for spec in ("lexical.rouge1", "lexical.bleu"):
        for r in run_probes(subset, runner_score_fn(parse_spec(spec), host), metric=spec):
            results[(spec, r.probe)] = r
    rouge = {p: r for (m, p), r in results.items() if m == "lexical.rouge1"}
    bleu = {p: r for (m, p), r in results.items() if m == "lexical.bleu"}
    assert rouge["identity"].rate == 1.0 and rouge["identity"].n == 3
    assert rouge["shuffle"].rate == 0.0  # a bag of words cannot see order
    assert bleu["shuffle"].rate == 1.0
    assert rouge["unrelated"].rate == 1.0 and rouge["unrelated"].mean_delta < -0.1
    for probe in ("whitespace", "rename-systems", "batch-order"):
        assert rouge[probe].rate == 1.0 and bleu[probe].rate == 1.0, probe
    assert bleu["case"].rate < 0.5  # cased BLEU moves when the case changes
    assert all(r.failed == 0 for r in results.values())
    assert rouge["numbers"].skipped + rouge["numbers"].n == 48


def test_identity_scores_the_reference_against_itself_alone(host) -> None:
    """With 11 references an item, the first one as the output and every system are scored
    against that reference alone: a mean over references the output cannot all match no longer
    makes a perfect output lose to a system (it did on half of these items)."""
    samples = [Sample.model_validate(r) for r in summeval_records(16 * 6)]
    subset = probe_subset(samples, 6, seed=0)
    assert min(len(s.references) for s in subset) == 11
    for spec in ("lexical.rouge2:multi_ref=mean", "lexical.rouge2"):
        batches: list[int] = []
        fn = runner_score_fn(parse_spec(spec), host)

        def counted(batch, fn=fn, batches=batches):
            batches.append(len(batch))
            return fn(batch)

        [result] = run_probes(subset, counted, metric=spec, probes=["identity"])
        assert (result.rate, result.n, result.failed) == (1.0, 6, 0), result
        assert result.mean_delta > 0.3
        assert batches == [96 + 6 + 96]  # originals, the references, the systems rescored


def test_identity_with_one_reference_reuses_the_original_scores() -> None:
    samples = [Sample(item=f"d{i}", system=f"s{k}", output=f"a b c {k}", reference="a b c")
               for i in range(2) for k in range(3)]
    batches: list[int] = []

    def overlap(batch):
        batches.append(len(batch))
        return [len(set(s.output.split()) & set(s.references[0].split())) / 4.0
                for s in batch]

    [result] = run_probes(samples, overlap, metric="overlap", probes=["identity"])
    assert (result.rate, result.n, result.mean_delta) == (1.0, 2, 0.0)
    assert batches == [6 + 2]


BUGGY = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo

class ByPosition(Metric):
    """Scores depend on the position in the batch: the batch-order probe must catch it."""
    info = MetricInfo(name="test.by-position", kind="reference", requires=("output",))
    batch_size = 8
    def score(self, samples):
        return [len(s.output.split()) + 0.01 * k for k, s in enumerate(samples)]

class ByName(Metric):
    """Scores depend on the system name: the rename probe must catch it."""
    info = MetricInfo(name="test.by-name", kind="reference", requires=("output",))
    def score(self, samples):
        return [len(s.output.split()) + len(s.system) for s in samples]

@hookimpl
def register_metrics(register):
    register(ByPosition)
    register(ByName)
'''


def test_invariance_probes_catch_metrics_that_break_them(tmp_path: Path) -> None:
    path = tmp_path / "buggy.py"
    path.write_text(BUGGY)
    buggy = build_host([str(path)])
    _, samples = synthetic(n_items=6, n_systems=4)
    for name, probe in (("test.by-position", "batch-order"), ("test.by-name",
                                                              "rename-systems")):
        [result] = run_probes(samples, runner_score_fn(parse_spec(name), buggy), metric=name,
                              probes=[probe])
        assert result.rate < 0.5, (name, result)


def test_lower_is_better_metrics_are_oriented() -> None:
    samples = [Sample(item=f"d{i}", system="s", output="one two three four five six")
               for i in range(5)]

    def length(batch):  # lower is better: a shorter output "improves" it
        return [float(len(s.output.split())) for s in batch]

    [up] = run_probes(samples, length, metric="len", probes=["truncation"])
    [down] = run_probes(samples, length, metric="len", higher_is_better=False,
                        probes=["truncation"])
    assert up.rate == 1.0 and down.rate == 0.0 and down.mean_delta == 3.0


# -- judge-bias probes -------------------------------------------------------------------------
def _bias(host, pairs, spec: str, probes, **kwargs) -> dict[tuple[str, str], float | None]:
    plist, labels = pairs
    results = run_bias(plist, judge_score_fn(parse_spec(spec), host), judge=spec,
                       center=0.5, human=labels, probes=probes, **kwargs)
    return {(r.probe, r.measure): r.value for r in results}


def test_verdicts_and_swap() -> None:
    assert list(verdicts([1.0, 0.0, 0.5, None], 0.5)[:3]) == [1, -1, 0]
    assert np.isnan(verdicts([None], 0.5)[0])
    s = Sample(item="i", system_a="x", system_b="y", output_a="A", output_b="B")
    t = swap(s)
    assert (t.output_a, t.output_b, t.system_a, t.system_b, t.system) == ("B", "A", "y", "x",
                                                                         "y vs x")
    assert center_of((0.0, 1.0)) == 0.5 and center_of((1.0, 10.0)) == 5.5
    assert center_of((None, None)) == 0.0


def test_pairs_from_pointwise_samples(pairs) -> None:
    plist, labels = pairs
    assert len(plist) == 40 and all(p.is_pairwise for p in plist)
    assert all(p.system_a != p.system_b for p in plist)
    assert all(lab in (-1.0, 0.0, 1.0) for lab in labels)
    firsts = {p.system_a for p in plist}
    assert len(firsts) > 3  # the first position is not always the same system


def test_position_bias_is_measured(host, pairs) -> None:
    fair = _bias(host, pairs, "test.judge", ["position"])
    assert fair[("position", "flip_rate")] == 0.0
    assert fair[("position", "accuracy_both_orders")] > 0.6
    biased = _bias(host, pairs, "test.judge:position_bias=0.6", ["position"])
    assert biased[("position", "flip_rate")] > 0.3
    assert biased[("position", "first_position_wins")] > fair[("position",
                                                                "first_position_wins")] + 0.2


def test_verbosity_bias_is_measured(host, pairs) -> None:
    fair = _bias(host, pairs, "test.judge", ["verbosity"])
    assert fair[("verbosity", "padded_wins")] is None or np.isnan(fair[("verbosity",
                                                                         "padded_wins")])
    assert fair[("verbosity", "padding_shift")] == 0.0
    verbose = _bias(host, pairs, "test.judge:verbose=true", ["verbosity"])
    assert verbose[("verbosity", "padded_wins")] == 1.0
    assert verbose[("verbosity", "padding_shift")] > 0.0


def test_self_preference_is_measured(host, pairs) -> None:
    families = {"sys1": "family-x"}
    kwargs = {"judge_family": "family-x", "families": families}
    fair = _bias(host, pairs, "test.judge", ["self-preference"], **kwargs)
    selfish = _bias(host, pairs, "test.judge:favour=sys1", ["self-preference"], **kwargs)
    key = ("self-preference", "judge_minus_human_win_rate")
    assert abs(fair[key]) < 0.2
    assert selfish[key] > fair[key] + 0.3
    skipped = _bias(host, pairs, "test.judge", ["self-preference"])
    assert skipped[key] is None


def test_prompt_sensitivity_is_measured(host, pairs) -> None:
    plist, _ = pairs

    def with_templates(sensitivity: float) -> dict:
        specs = [parse_spec(f"test.judge:template={k},sensitivity={sensitivity}")
                 for k in range(3)]
        results = run_bias(plist, runner_score_fn(specs[0], host), judge="test.judge",
                           center=0.5, probes=["prompt"],
                           paraphrases={s.column: runner_score_fn(s, host) for s in specs},
                           paraphrase_centers={s.column: 0.5 for s in specs})
        return {r.measure: r.value for r in results}

    stable, fragile = with_templates(0.0), with_templates(0.6)
    assert stable["verdict_change_rate"] == 0.0 and stable["krippendorff_alpha"] == 1.0
    assert fragile["verdict_change_rate"] > 0.3
    assert fragile["krippendorff_alpha"] < stable["krippendorff_alpha"] - 0.2


def test_injection_and_retest_are_measured(host, pairs) -> None:
    fair = _bias(host, pairs, "test.judge", ["injection"])
    gullible = _bias(host, pairs, "test.judge:gullible=true", ["injection"])
    assert fair[("injection", "success_rate")] == 0.0
    assert gullible[("injection", "success_rate")] == 1.0
    plist, _ = pairs
    for spec, stable in (("test.judge", True), ("test.judge:noise=0.5", False)):
        fn = runner_score_fn(parse_spec(spec), host)
        results = run_bias(plist, fn, judge=spec, center=0.5, rescore=fn, probes=["retest"])
        agreement = next(r.value for r in results if r.measure == "agreement")
        assert (agreement == 1.0) is stable, (spec, agreement)


def test_bias_probes_need_pairwise_samples(host) -> None:
    with pytest.raises(ValueError, match="pairwise"):
        run_bias([Sample(item="i", system="s", output="x")], lambda b: [0.5] * len(b),
                 judge="j", center=0.5)
    assert set(BIAS_PROBES) == {"position", "verbosity", "self-preference", "prompt",
                                "injection", "retest"}


# -- through the command line ------------------------------------------------------------------
def test_audit_cli_runs_probes_and_bias_probes(judge_plugin: Path, tmp_path: Path) -> None:
    frame, samples = synthetic(n_items=10, n_systems=6, seed=5)
    gen = write_jsonl(tmp_path / "gen.jsonl", [s.model_dump(exclude_none=True)
                                               for s in samples])
    scores = tmp_path / "scores.csv"
    frame.to_csv(scores, index=False)
    report = tmp_path / "r.json"
    proc = run_cli("-p", str(judge_plugin), "audit", str(scores), "--human", "human.q",
                   "--samples", str(gen), "--level", "segment", "--grouping", "item",
                   "--bootstrap", "0", "--resamples", "100",
                   "--probe", "lexical.token_f1", "--probe-items", "3",
                   "--judge", "test.judge:position_bias=0.5", "--bias-pairs", "20",
                   "--paraphrase", "test.judge:template=1,sensitivity=0.5",
                   "--paraphrase", "test.judge:template=2,sensitivity=0.5",
                   "--judge-family", "fx", "--system-family", "sys0=fx",
                   "--report", str(report), "--report", str(tmp_path / "r.html"), "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    probes = [r for r in results if r["type"] == "probe"]
    assert {r["probe"] for r in probes} == {p.name for p in P.PROBES}
    assert all(r["metric"] == "lexical.token_f1" for r in probes)
    bias = {(r["probe"], r["measure"]): r for r in results if r["type"] == "bias"}
    assert bias[("position", "flip_rate")]["value"] > 0.2
    assert bias[("position", "flip_rate")]["n"] == 20
    assert bias[("prompt", "verdict_change_rate")]["value"] > 0.2
    assert bias[("retest", "agreement")]["value"] == 1.0
    assert ("self-preference", "judge_minus_human_win_rate") in bias
    saved = json.loads(report.read_text())
    assert saved["probes"] and saved["bias"]
    assert "20 drawn from --samples" in saved["inputs"]["pairs"]
    html = (tmp_path / "r.html").read_text()
    assert 'id="probes"' in html and 'id="bias"' in html


def test_audit_cli_bias_probes_on_a_pairwise_file(judge_plugin: Path, tmp_path: Path,
                                                  pairs) -> None:
    plist, labels = pairs
    rows = [{**p.model_dump(exclude_none=True), "human": {"pref": lab}}
            for p, lab in zip(plist, labels, strict=True)]
    pair_file = write_jsonl(tmp_path / "pairs.jsonl", rows)
    # The pairwise table of this data set: people's preference, and a judge right in the
    # first order and wrong in the second for every fourth pair.
    verdict = ["a" if (lab or 0) > 0 else "b" if (lab or 0) < 0 else "tie" for lab in labels]
    flipped = {"a": "b", "b": "a", "tie": "a"}
    table = pd.DataFrame([{"item": p.item, "system_a": p.system_a, "system_b": p.system_b,
                           "human.pref": v, "judge.ab": v,
                           "judge.ba": flipped[v] if k % 4 == 0 else v}
                          for k, (p, v) in enumerate(zip(plist, verdict, strict=True))])
    scores = tmp_path / "pairs_scores.csv"
    table.to_csv(scores, index=False)
    report = tmp_path / "report.html"
    proc = run_cli("-p", str(judge_plugin), "audit", str(scores), "--pairwise", "--human",
                   "human.pref", "--bootstrap", "200", "--resamples", "100", "--judge",
                   "test.judge", "--pairs", str(pair_file), "--bias-probe", "position",
                   "--report", str(report), "--report", str(tmp_path / "report.md"), "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    bias = {r["measure"]: r for r in results if r["type"] == "bias"}
    assert set(bias) == {"flip_rate", "first_position_wins", "accuracy_both_orders"}
    assert bias["accuracy_both_orders"]["value"] > 0.6
    stats = {r["statistic"]: r for r in results if r["type"] == "pairwise"}
    decided = [k for k, v in enumerate(verdict) if v != "tie"]
    wrong_ba = sum(1 for k in decided if k % 4 == 0)
    assert stats["accuracy-ab"]["value"] == 1.0
    assert stats["accuracy-ba"]["value"] == pytest.approx(1 - wrong_ba / len(decided))
    assert stats["consistency"]["value"] == pytest.approx(
        1 - sum(1 for k in range(len(verdict)) if k % 4 == 0) / len(verdict))
    assert stats["accuracy"]["ci_low"] <= stats["accuracy"]["value"] <= stats["accuracy"]["ci_high"]
    assert not [r for r in results if r["type"] == "correlation"]
    page = report.read_text()
    assert page.index('id="verdict"') < page.index('id="pairwise"') < page.index('id="bias"')
    assert "judge agrees best with human.pref: accuracy" in page
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.index("## Verdict") < markdown.index("## Pairwise judges")
    # A pairwise table is not audited as a wide one, and the wide audit's options are refused.
    proc = run_cli("audit", str(scores), "--human", "human.pref")
    assert proc.returncode == 2 and "system_a and system_b" in proc.stderr
    proc = run_cli("audit", str(scores), "--pairwise", "--human", "human.pref", "--metric", "m")
    assert proc.returncode == 2 and "--metric" in proc.stderr
    proc = run_cli("-p", str(judge_plugin), "audit", str(scores), "--pairwise", "--human",
                   "human.pref", "--judge", "test.judge")
    assert proc.returncode == 2 and "--pairs" in proc.stderr


def test_probe_usage_errors(tmp_path: Path) -> None:
    frame, _ = synthetic(n_items=4, n_systems=3)
    scores = tmp_path / "s.csv"
    frame.to_csv(scores, index=False)
    proc = run_cli("audit", str(scores), "--human", "human.q", "--probe", "lexical.bleu")
    assert proc.returncode == 2 and "--samples" in proc.stderr
    proc = run_cli("audit", str(scores), "--human", "human.q", "--judge", "nope.judge")
    assert proc.returncode == 2 and "unknown metric 'nope.judge'" in proc.stderr
    proc = run_cli("audit", str(scores), "--human", "human.q", "--system-family", "x")
    assert proc.returncode == 2 and "SYSTEM=FAMILY" in proc.stderr
