"""Corpus scores from summed sufficient statistics: sacrebleu's `corpus_score` exactly, no
samples kept by the runner, resume from a store written before the statistics were stored,
and the command's corpus file holding sacrebleu's corpus scores."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import sacrebleu
from conftest import run_cli, summeval_records, write_jsonl
from judgebench_lexical.metrics import Bleu, Chrf, ChrfPlusPlus, SacrebleuMetric, Ter

from judgebench.engine import runner
from judgebench.engine.store import Store
from judgebench.metric import STATISTICS, Metric, WithStatistics, add_statistics, outcome_of
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.spec import MetricSpec


def _samples(records: list[dict]) -> list[Sample]:
    return [Sample(**{k: v for k, v in r.items() if k in Sample.model_fields}) for r in records]


def _by_system(samples: list[Sample]) -> dict[str, list[Sample]]:
    systems: dict[str, list[Sample]] = {}
    for sample in samples:
        systems.setdefault(sample.system, []).append(sample)
    return systems


def _summed(metric: Metric, samples: list[Sample]) -> float:
    total = None
    for outcome in map(outcome_of, metric.score(samples)):
        total = add_statistics(total, outcome.extra[STATISTICS])
    assert total is not None
    return float(outcome_of(metric.corpus_from_statistics(total)).value)  # type: ignore[arg-type]


def _streams(samples: list[Sample]) -> list[list[Any]]:
    """sacrebleu's reference streams, built here rather than by the plugin: one per position,
    None where an item has fewer references (sacrebleu takes it; its annotation says str)."""
    width = max(len(s.references) for s in samples)
    return [[s.references[i] if i < len(s.references) else None for s in samples]
            for i in range(width)]


def _sacrebleu(name: str, samples: list[Sample]) -> float:
    """sacrebleu's own corpus score, straight from its API."""
    hyps = [s.output or "" for s in samples]
    if name == "bleu":
        return sacrebleu.corpus_bleu(hyps, _streams(samples)).score
    if name == "chrf":
        return sacrebleu.corpus_chrf(hyps, _streams(samples)).score
    if name == "chrf++":
        return sacrebleu.corpus_chrf(hyps, _streams(samples), word_order=2).score
    return sacrebleu.corpus_ter(hyps, _streams(samples)).score


METRICS: dict[str, type[SacrebleuMetric[Any]]] = {"bleu": Bleu, "chrf": Chrf,
                                                  "chrf++": ChrfPlusPlus, "ter": Ter}


@pytest.mark.parametrize("name", ["bleu", "chrf", "chrf++",
                                  pytest.param("ter", marks=pytest.mark.slow)])
def test_summed_statistics_equal_sacrebleu_corpus_score_on_summeval(name: str) -> None:
    # TER on 11 references costs seconds a sample: fewer items for it
    records = summeval_records(2 * 16 if name == "ter" else 20 * 16)
    systems = _by_system(_samples(records))
    if name == "ter":
        systems = dict(list(systems.items())[:1])
    metric = METRICS[name]()
    for samples in systems.values():
        assert min(len(s.references) for s in samples) == 11
        assert _summed(metric, samples) == metric.corpus_score(samples) == _sacrebleu(
            name, samples)


def _random_text(rng: random.Random, words: int) -> str:
    alphabet = ["the", "cat", "a", "Über", "straße", "猫", "が", "好き", "кошка", "!", ".",
                "(hi)", "ça", "naïve", "🙂", "x-y", "don't", "\t", "İ", "ǅ"]
    return " ".join(rng.choice(alphabet) for _ in range(words))


def _random_samples(seed: int, rows: int, *, max_refs: int, empty: float = 0.15
                    ) -> list[Sample]:
    """Random texts; an output, or a reference, is empty with probability `empty`."""
    rng = random.Random(seed)
    samples = []
    for i in range(rows):
        output = "" if rng.random() < empty else _random_text(rng, rng.randint(1, 12))
        references = ["" if rng.random() < empty else _random_text(rng, rng.randint(1, 12))
                      for _ in range(rng.randint(1, max_refs))]
        samples.append(Sample(item=f"i{i}", system="s", output=output,
                              reference=references[0] if len(references) == 1 and i % 2
                              else references))
    return samples


@pytest.mark.parametrize("name", ["bleu", "chrf", "chrf++", "ter"])
@pytest.mark.parametrize("max_refs", [1, 5])
def test_summed_statistics_equal_sacrebleu_on_random_texts(name: str, max_refs: int) -> None:
    """Empty outputs and references, unicode, one reference or an unequal number per item."""
    for seed in range(5):
        samples = _random_samples(seed, 60, max_refs=max_refs)
        metric = METRICS[name]()
        assert _summed(metric, samples) == metric.corpus_score(samples) == _sacrebleu(
            name, samples)


@pytest.mark.parametrize("options", [{"smooth_method": "add-k"}, {"smooth_method": "floor"},
                                     {"tokenize": "char", "lowercase": True}])
def test_bleu_options_keep_the_corpus_score(options: dict) -> None:
    samples = _random_samples(7, 80, max_refs=3)
    metric = Bleu(**options)
    assert _summed(metric, samples) == metric.corpus_score(samples)


def test_segment_scores_are_sentence_scores() -> None:
    samples = _samples(summeval_records(48)) + _random_samples(3, 40, max_refs=4)
    for name, cls in METRICS.items():
        chosen = samples[-40:] if name == "ter" else samples  # TER: short texts only
        metric = cls()
        scores = metric.score(chosen)
        assert all(isinstance(s, WithStatistics) for s in scores)
        sentence = metric._build(sentence=True)
        assert [float(s) for s in scores] == [
            sentence.sentence_score(s.output, s.references).score for s in chosen]
        assert [s.statistics for s in scores] == metric.statistics(chosen)


def test_add_statistics_refuses_vectors_of_another_length() -> None:
    with pytest.raises(ValueError, match="3 numbers added to 2"):
        add_statistics([1, 2], [1, 2, 3])


# -- the runner ---------------------------------------------------------------------------
class _Recorded(runner.SystemCorpus):
    made: ClassVar[list[runner.SystemCorpus]] = []

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        _Recorded.made.append(self)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[runner.SystemCorpus]]:
    _Recorded.made = []
    monkeypatch.setattr(runner, "SystemCorpus", _Recorded)
    yield _Recorded.made


def _old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code before statistics: plain numbers from `score`, the corpus from the samples."""
    plain = SacrebleuMetric.score

    monkeypatch.setattr(SacrebleuMetric, "score",
                        lambda self, samples: [float(v) for v in plain(self, samples)])
    monkeypatch.setattr(SacrebleuMetric, "corpus_from_statistics", Metric.corpus_from_statistics)


SPECS = [MetricSpec(name="lexical.chrf"), MetricSpec(name="lexical.bleu")]


def _run(samples: list[Sample], store: Store, *, resume: bool = False,
         specs: list[MetricSpec] = SPECS) -> runner.TableResult:
    return runner.run(samples, specs, store=store, resume=resume, host=build_host())


def _corpus(result: runner.RunResult) -> list[tuple[str, str, float | None, int]]:
    return [(c.metric, c.system, c.value, c.n) for c in result.corpus]


def test_runner_keeps_no_samples_for_summed_metrics(
        tmp_path: Path, recorded: list[runner.SystemCorpus]) -> None:
    samples = _samples(summeval_records(64))
    with Store(tmp_path / "s.db") as store:
        result = _run(samples, store)
    assert len(recorded) == 16
    assert all(entry.samples == [] for entry in recorded)
    assert all(set(entry.sums) == {"lexical.chrf", "lexical.bleu"} for entry in recorded)
    assert all(s.tail == [] for entry in recorded for s in entry.sums.values())
    expected = []
    for metric, column in ((Chrf(), "lexical.chrf"), (Bleu(), "lexical.bleu")):
        expected += [(column, system, metric.corpus_score(kept), len(kept))
                     for system, kept in _by_system(samples).items()]
    assert _corpus(result) == expected


def test_runner_keeps_samples_for_a_corpus_score_only_metric(
        tmp_path: Path, recorded: list[runner.SystemCorpus],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _old_path(monkeypatch)
    samples = _samples(summeval_records(32))
    with Store(tmp_path / "s.db") as store:
        _run(samples, store)
    assert sorted(len(entry.samples) for entry in recorded) == [2] * 16
    assert all(entry.sums == {} for entry in recorded)


def _peak(samples: list[Sample], path: Path) -> int:
    with Store(path) as store:
        tracemalloc.start()
        try:
            runner.run_stream(lambda: samples, runner.survey(samples),
                              [MetricSpec(name="lexical.chrf")], store=store, host=build_host(),
                              chunk_rows=256)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_summed_statistics_take_less_memory_than_kept_samples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(0)
    samples = [Sample(item=f"i{i // 4}", system=f"s{i % 4}", output=_random_text(rng, 20),
                      reference=[_random_text(rng, 20) for _ in range(3)])
               for i in range(1200)]
    new = _peak(samples, tmp_path / "new.db")
    _old_path(monkeypatch)
    old = _peak(samples, tmp_path / "old.db")
    assert new * 2 < old, (new, old)


def _segment_rows(path: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT signature, item, system, sample_hash, value, status, run_id"
                            " FROM scores ORDER BY rowid").fetchall()


def test_resume_from_a_store_without_statistics(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(summeval_records(48))
    with monkeypatch.context() as old:
        _old_path(old)
        with Store(tmp_path / "old.db") as store:
            before = _run(samples, store)
    rows = _segment_rows(tmp_path / "old.db")
    calls: list[str] = []
    for name in ("statistics", "corpus_from_statistics", "corpus_score"):
        original = getattr(SacrebleuMetric, name)

        def spy(self: SacrebleuMetric, arg: object, _o: object = original,
                _n: str = name) -> object:
            calls.append(_n)
            return _o(self, arg)  # type: ignore[operator]

        monkeypatch.setattr(SacrebleuMetric, name, spy)
    with Store(tmp_path / "old.db") as store:
        after = _run(samples, store, resume=True)
    assert (after.computed, after.reused) == (0, 2 * len(samples))
    assert calls == []  # the corpus scores were committed: nothing recomputed
    assert _corpus(after) == _corpus(before)
    assert after.table.equals(before.table)
    assert _segment_rows(tmp_path / "old.db") == rows


def test_resume_recomputes_missing_statistics_in_input_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older store holds the first rows of each system, without statistics and without
    the corpus score of the whole input: the new rows bring statistics, the old ones get
    them recomputed, and the sum in input order is sacrebleu's. TER's statistics are floats,
    so the order of the sum shows."""
    samples = _random_samples(11, 90, max_refs=4, empty=0)
    samples = [s.model_copy(update={"system": f"s{i % 3}"}) for i, s in enumerate(samples)]
    old_rows = [s for i, s in enumerate(samples) if i % 5 != 2]
    specs = [MetricSpec(name="lexical.ter"), MetricSpec(name="lexical.chrf")]
    with monkeypatch.context() as old:
        _old_path(old)
        with Store(tmp_path / "s.db") as store:
            _run(old_rows, store, specs=specs)
    with Store(tmp_path / "s.db") as store:
        result = _run(samples, store, resume=True, specs=specs)
    assert (result.computed, result.reused) == (2 * (len(samples) - len(old_rows)),
                                                2 * len(old_rows))
    expected = []
    for metric, column in ((Ter(), "lexical.ter"), (Chrf(), "lexical.chrf")):
        expected += [(column, system, metric.corpus_score(kept), len(kept))
                     for system, kept in _by_system(samples).items()]
    assert _corpus(result) == expected


def test_a_store_of_this_code_resumes_with_nothing_recomputed(tmp_path: Path) -> None:
    samples = _samples(summeval_records(32))
    with Store(tmp_path / "s.db") as store:
        first = _run(samples, store)
        again = _run(samples, store, resume=True)
        stored = store.scores(first.metrics[0].signature)
    assert all(len(s.extra[STATISTICS]) == 18 for s in stored)
    assert (again.computed, again.reused) == (0, 2 * len(samples))
    assert _corpus(again) == _corpus(first)


def test_a_failed_statistics_step_fails_the_corpus_score_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(summeval_records(32))
    with monkeypatch.context() as old:
        _old_path(old)
        with Store(tmp_path / "s.db") as store:
            _run(samples[:16], store)

    def broken(self: SacrebleuMetric, samples: list[Sample]) -> list[list[float]]:
        raise RuntimeError("no statistics today")

    monkeypatch.setattr(SacrebleuMetric, "statistics", broken)
    with Store(tmp_path / "s.db") as store:
        result = _run(samples, store, resume=True)
    assert {c.status for c in result.corpus} == {"error"}
    assert {c.reason for c in result.corpus} == {"RuntimeError: no statistics today"}
    assert result.table["lexical.chrf"].notna().all()


# -- the command ---------------------------------------------------------------------------
def test_corpus_file_holds_sacrebleu_corpus_scores(tmp_path: Path) -> None:
    records = summeval_records(6 * 16)
    data = write_jsonl(tmp_path / "in.jsonl", records)
    done = run_cli("score", str(data), "-m", "lexical.chrf", "-m", "lexical.bleu",
                   "-o", str(tmp_path / "t.csv"), "--corpus", str(tmp_path / "c.jsonl"),
                   "--store", str(tmp_path / "s.db"), "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    systems = _by_system(_samples(records))
    expected = {("lexical.chrf", system): _sacrebleu("chrf", kept)
                for system, kept in systems.items()}
    expected |= {("lexical.bleu", system): _sacrebleu("bleu", kept)
                 for system, kept in systems.items()}
    assert {(r["metric"], r["system"]): r["value"] for r in rows} == expected
