"""Sentinels: registration, cross-fitting without leakage, blind sentinels, the gate."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from conftest import summeval_records
from judgebench_audit.regressors import CandSentinel, RefSentinel, SrcSentinel, item_folds
from judgebench_audit.sentinels import ConstantSentinel, LengthSentinel, RandomSentinel

import meta_eval
from judgebench.auditing.blocks import Options, evaluate_block
from judgebench.auditing.gate import gate
from judgebench.auditing.sentinels import compute_sentinels, default_specs
from judgebench.errors import InputError
from judgebench.extras import MissingExtra
from judgebench.models import Outcome, Sample, Status
from judgebench.plugins import build_host
from judgebench.spec import MetricSpec

SENTINELS = ("sentinel.cand", "sentinel.constant", "sentinel.length", "sentinel.random",
             "sentinel.ref", "sentinel.src")
GOOD = ("clear", "accurate", "faithful", "concise", "precise", "complete")
BAD = ("vague", "wrong", "garbled", "confused", "rambling", "invented")
FILLER = ("the", "council", "said", "on", "monday", "that", "city", "budget", "would", "rise",
          "after", "years", "of", "cuts", "and", "residents", "welcomed", "plan")


def synthetic(n_items: int = 40, n_systems: int = 8, seed: int = 0,
              words_show: str = "deviation") -> tuple[pd.DataFrame, list[Sample]]:
    """A scores table and its generations where the human score follows quality words in the
    output (so an output-only regressor can learn it at segment level), with a strong metric
    (human + small noise) and a deliberately bad one (independent noise). With
    words_show="quality" the words follow the whole quality, system part included."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(-1.0, 1.0, n_systems)
    difficulty = rng.normal(0.0, 0.3, n_items)
    rows, samples = [], []
    for i in range(n_items):
        for s in range(n_systems):
            # The words show how this output departs from its system's usual quality, so
            # an output-only regressor does well on segments but not on system means.
            deviation = rng.normal(0.0, 0.6)
            q = quality[s] + deviation
            shown = deviation if words_show == "deviation" else q
            good = int(np.clip(round(3 + 2.5 * shown), 0, 6))
            words = [*rng.choice(FILLER, 12), *rng.choice(GOOD, good),
                     *rng.choice(BAD, 6 - good)]
            rng.shuffle(words)
            human = q - difficulty[i] + rng.normal(0.0, 0.2)
            item, system = f"doc{i}", f"sys{s}"
            rows.append({"item": item, "system": system, "human.q": human,
                         "strong": human + rng.normal(0.0, 0.15),
                         "bad": rng.normal(0.0, 1.0)})
            samples.append(Sample(item=item, system=system, output=" ".join(words),
                                  input=f"source text of document {i} " * 5,
                                  reference=f"reference summary {i}"))
    return pd.DataFrame(rows), samples


def test_every_sentinel_is_registered_as_a_sentinel() -> None:
    host = build_host()
    found = host.sentinels()
    assert set(SENTINELS) <= set(found)
    for name in SENTINELS:
        assert found[name].info.kind == "sentinel"
        assert found[name].plugin == "audit"
    assert not set(SENTINELS) & set(host.metrics())


def test_item_folds_keep_items_whole_and_are_seeded() -> None:
    items = [f"i{k % 13}" for k in range(130)]
    folds = item_folds(items, 5, seed=3)
    for item in set(items):
        assert len({folds[k] for k, i in enumerate(items) if i == item}) == 1
    assert set(folds) == set(range(5))
    assert (folds == item_folds(items, 5, seed=3)).all()
    assert not (folds == item_folds(items, 5, seed=4)).all()
    assert set(item_folds(items[:20], 50, seed=0)) == set(range(13))  # leave one item out


def test_cross_fitting_never_sees_the_item_it_scores() -> None:
    _, samples = synthetic(n_items=20, n_systems=6)
    human = [float(k % 7) for k in range(len(samples))]
    sentinel = CandSentinel(folds=4)
    before = np.array(sentinel.fit_predict(samples, human), dtype=float)
    # Change every human score of doc3: its own predictions must not move, others do.
    changed = [h + 100.0 if s.item == "doc3" else h for s, h in zip(samples, human,
                                                                   strict=True)]
    after = np.array(CandSentinel(folds=4).fit_predict(samples, changed), dtype=float)
    own = np.array([s.item == "doc3" for s in samples])
    np.testing.assert_array_equal(before[own], after[own])
    assert np.abs(before[~own] - after[~own]).max() > 1.0


def test_trained_sentinels_learn_from_the_field_they_see() -> None:
    frame, samples = synthetic()
    human = frame["human.q"].tolist()
    cand = np.array(CandSentinel().fit_predict(samples, human), dtype=float)
    assert np.corrcoef(cand, human)[0, 1] > 0.5
    # Input and reference are the same for every system of an item: constant within items.
    for cls in (SrcSentinel, RefSentinel):
        pred = np.array(cls().fit_predict(samples, human), dtype=float)
        per_item = pd.Series(pred).groupby([s.item for s in samples]).nunique()
        assert (per_item == 1).all()


def test_trained_sentinel_failures_are_statuses() -> None:
    samples = [Sample(item=f"d{k}", system="s", output=None if k == 0 else f"text {k}")
               for k in range(6)]
    out = CandSentinel(folds=3).fit_predict(samples, [None, 1.0, None, None, None, None])
    assert isinstance(out[0], Outcome) and out[0].status == Status.SKIPPED
    assert "no output text" in out[0].reason
    # Only one labelled row: no fold has 2 training rows.
    assert all(isinstance(o, Outcome) and "training rows" in o.reason for o in out[1:])
    with pytest.raises(InputError, match="judgebench audit"):
        CandSentinel().score(samples)


def test_blind_sentinels() -> None:
    samples = [Sample(item=f"d{i}", system=f"s{s}", output="a b c" * (s + 1))
               for i in range(30) for s in range(4)]
    random = np.array(RandomSentinel(seed=1).score(samples))
    reordered = np.array(RandomSentinel(seed=1).score(samples[::-1]))[::-1]
    np.testing.assert_array_equal(random, reordered)
    assert not np.array_equal(random, RandomSentinel(seed=2).score(samples))
    by_system = pd.Series(random).groupby([s.system for s in samples]).mean()
    assert by_system.std() > 0.2  # a mean per system, not just noise
    quiet = np.array(RandomSentinel(seed=1, noise=0.0).score(samples))
    assert pd.Series(quiet).groupby([s.system for s in samples]).nunique().eq(1).all()
    assert ConstantSentinel(value=2.5).score(samples[:3]) == [2.5] * 3
    assert LengthSentinel().score(samples[:2]) == [3.0, 5.0]  # "a b ca b c"
    assert LengthSentinel(unit="chars").score(samples[:1]) == [5.0]


def test_compute_sentinels_aligns_and_explains_what_is_missing() -> None:
    frame, samples = synthetic(n_items=10, n_systems=4)
    host = build_host()
    specs = default_specs(host)
    without = compute_sentinels(frame, humans=["human.q"], samples=None, specs=specs, host=host)
    by_name = {r.column: r for r in without}
    assert np.isfinite(by_name["sentinel.random"].values["human.q"]).all()
    assert np.isnan(by_name["sentinel.cand"].values["human.q"]).all()
    assert "--samples" in by_name["sentinel.cand"].reasons["human.q"]["skipped"]
    # Generations for all but one row, shuffled: matched on (item, system).
    some = samples[1:][::-1]
    runs = compute_sentinels(frame, humans=["human.q"], samples=some, specs=specs, host=host,
                             samples_path="gen.jsonl")
    length = {r.column: r for r in runs}["sentinel.length"]
    values = length.values["human.q"]
    assert np.isnan(values[0]) and np.isfinite(values[1:]).all()
    assert values[1] == len(samples[1].output.split())
    assert "gen.jsonl" in length.reasons["human.q"]["skipped"]
    assert length.statuses["human.q"] == {"ok": len(frame) - 1, "skipped": 1}


ODD_SENTINEL = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import NoOptions
from judgebench.models import MetricInfo
from judgebench.sentinel import Sentinel

VALUES = [float("inf"), float("nan"), None, "x", 2.5]


class Odd(Sentinel[NoOptions]):
    info = MetricInfo(name="sentinel.odd", kind="sentinel", requires=())

    def score(self, samples):
        return [VALUES[k % len(VALUES)] for k in range(len(samples))]


@hookimpl
def register_sentinels(register):
    register(Odd)
'''


def test_sentinel_results_become_outcomes_by_the_runners_rule(tmp_path) -> None:
    """inf is a value and NaN, None or a non-number an error, in the audit as in `score`."""
    from judgebench.metric import outcome_of
    from judgebench.plugins import build_host

    plugin = tmp_path / "odd_sentinel.py"
    plugin.write_text(ODD_SENTINEL, encoding="utf-8")
    host = build_host([str(plugin)])
    frame, _ = synthetic(n_items=1, n_systems=5)
    [run] = compute_sentinels(frame, humans=["human.q"], samples=None,
                              specs=[MetricSpec(name="sentinel.odd")], host=host)
    values = run.values["human.q"]
    assert values[0] == np.inf and values[4] == 2.5 and np.isnan(values[1:4]).all()
    assert run.statuses["human.q"] == {"ok": 2, "error": 3}
    expected = [outcome_of(v) for v in (float("inf"), float("nan"), None, "x", 2.5)]
    assert [o.status for o in expected] == ["ok", "error", "error", "error", "ok"]
    assert run.reasons["human.q"]["error"] == expected[1].reason == "metric returned NaN"


def test_unknown_sentinel_and_disjoint_generations_are_input_errors() -> None:
    frame, samples = synthetic(n_items=4, n_systems=2)
    host = build_host()
    with pytest.raises(InputError, match="unknown sentinel"):
        compute_sentinels(frame, humans=["human.q"], samples=samples,
                          specs=[MetricSpec("sentinel.nope")], host=host)
    other = [s.model_copy(update={"item": "x" + s.item}) for s in samples]
    with pytest.raises(InputError, match="no \\(item, system\\)"):
        compute_sentinels(frame, humans=["human.q"], samples=other,
                          specs=default_specs(host), host=host)


def _block(frame: pd.DataFrame, samples: list[Sample], level: str, grouping: str):
    host = build_host()
    runs = compute_sentinels(frame, humans=["human.q"], samples=samples,
                             specs=default_specs(host), host=host)
    table = frame.copy()
    for r in runs:
        table[r.column] = r.values["human.q"]
    names = ["strong", "bad", *(r.column for r in runs)]
    mats = meta_eval.score_matrices(table, ["human.q", *names])
    return evaluate_block(human=mats["human.q"], human_name="human.q",
                          columns={n: mats[n] for n in names},
                          sentinels=[r.column for r in runs], statistic="pearson",
                          level=level, grouping=grouping,
                          options=Options(bootstrap=200, resamples=200))


@pytest.mark.parametrize("grouping", ["none", "item"])
def test_sentinel_beats_a_bad_metric_and_the_gate_fails_it(grouping: str) -> None:
    frame, samples = synthetic()
    block = _block(frame, samples, "segment", grouping)
    values = {r.column: r.result.value for r in block.rows}
    clusters = {r.column: r.cluster for r in block.rows}
    verdict = {g.metric: g for g in block.gate}
    assert values["sentinel.cand"] > values["bad"] + 0.3
    assert clusters["sentinel.cand"] < clusters["bad"]
    assert not verdict["bad"].passed
    assert "significantly worse than sentinel.cand" in verdict["bad"].reason
    # The strong synthetic metric passes: strictly better than every sentinel.
    assert verdict["strong"].passed, verdict["strong"].reason
    assert verdict["strong"].cluster == 1
    assert all(r.cluster is None or r.cluster > 1 for r in block.rows if r.kind == "sentinel")
    assert any(n["sentinel"] == "sentinel.cand" for n in block.notes)


def test_gate_at_system_level() -> None:
    # 12 system means; the output words carry no system-level signal here, so the strong
    # metric must beat the random sentinel and the bad one cannot.
    frame, samples = synthetic(n_items=30, n_systems=12)
    block = _block(frame, samples, "system", "none")
    verdict = {g.metric: g for g in block.gate}
    assert verdict["strong"].passed, verdict["strong"].reason
    assert not verdict["bad"].passed
    assert {r.column: r.result.n for r in block.rows}["strong"] == 12


def test_gate_on_a_given_ranking() -> None:
    ranking = meta_eval.Ranking(
        metrics=[meta_eval.RankedMetric("m1", 0.9, 1), meta_eval.RankedMetric("s1", 0.8, 2),
                 meta_eval.RankedMetric("m2", 0.75, 2), meta_eval.RankedMetric("m3", 0.1, 3),
                 meta_eval.RankedMetric("s2", float("nan"), 4),
                 meta_eval.RankedMetric("m4", float("nan"), 4)],
        p_values={}, alpha=0.05, method="permutation")
    result = {g.metric: g for g in gate(ranking, metrics=["m1", "m2", "m3", "m4"],
                                        sentinels=["s1", "s2"])}
    assert result["m1"].passed and result["m1"].sentinel == "s1"
    assert not result["m2"].passed and "not significantly better" in result["m2"].reason
    assert not result["m3"].passed and "significantly worse" in result["m3"].reason
    assert not result["m4"].passed and "undefined" in result["m4"].reason
    only_undefined = gate(ranking, metrics=["m3"], sentinels=["s2"])
    assert only_undefined[0].passed and only_undefined[0].sentinel is None


def test_sentinels_on_summeval_subset_cover_every_setting() -> None:
    records = summeval_records(16 * 12)
    samples = [Sample.model_validate(r) for r in records]
    frame = pd.DataFrame([{"item": s.item, "system": s.system,
                           "human.relevance": s.human["relevance"]} for s in samples])
    host = build_host()
    runs = compute_sentinels(frame, humans=["human.relevance"], samples=samples,
                             specs=default_specs(host), host=host)
    assert {r.column for r in runs} == set(SENTINELS)
    for r in runs:
        assert r.statuses["human.relevance"] == {"ok": len(frame)}, r.column
        assert r.signature.startswith(r.name + "@1")
    cand = {r.column: r for r in runs}["sentinel.cand"]
    assert "sklearn:" in cand.signature and "folds:5" in cand.signature


@pytest.mark.slow  # loads the MiniLM encoder
def test_embedding_features_use_the_bundled_encoder() -> None:
    pytest.importorskip("judgebench_neural.encoder", reason="needs the neural extra")
    frame, samples = synthetic(n_items=8, n_systems=5)
    sentinel = CandSentinel(features="embedding", folds=4)
    pred = np.array(sentinel.fit_predict(samples, frame["human.q"].tolist()), dtype=float)
    assert np.isfinite(pred).all() and pred.std() > 0
    signature = str(sentinel.signature())
    assert "features:embedding" in signature and "model_revision:" in signature
    assert "max_features" not in signature


def test_missing_scikit_learn_is_refused_before_any_sentinel_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    frame, samples = synthetic(n_items=4, n_systems=2)
    with pytest.raises(MissingExtra, match=r"pip install 'judgebench\[audit\]'") as caught:
        compute_sentinels(frame, humans=["human.q"], samples=samples,
                          specs=[MetricSpec("sentinel.length"), MetricSpec("sentinel.cand")],
                          host=build_host())
    assert caught.value.exit_code == 2 and caught.value.feature == "sentinel.cand"
