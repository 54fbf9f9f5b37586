"""An empty output is a text, not a missing field (issue 23, item 1).

Reading: an absent key, JSON null, an unquoted empty CSV cell, a Parquet null or a NaN in a
DataFrame is missing; `""` (JSON, a quoted CSV cell, Parquet, a DataFrame) is a value. Every
built-in metric declares what it does with an empty text and does it: the lexical metrics
score it as sacrebleu, rouge-score and SQuAD's script do (corpus statistics included), the
judges judge it (the prompt shows it as empty), the rest skip it with a reason. Also BLEU's
corpus-level effective order, against sacrebleu's `corpus_bleu(..., use_effective_order=True)`.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import random
import re
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu
from conftest import column, run_cli, write_jsonl
from rouge_score import rouge_scorer
from scripted_judge import ScriptedJudge, any_judges_form

import judgebench
from judgebench.metric import add_statistics, outcome_of
from judgebench.models import Sample, Status
from judgebench.plugins import build_host
from judgebench.tables.io import read_samples, samples_from_frame

KEY_ENV = {"JB_EMPTY_KEY": "sk-empty-test"}
SACREBLEU = {"lexical.bleu": lambda: sacrebleu.BLEU(), "lexical.chrf": lambda: sacrebleu.CHRF(),
             "lexical.chrf++": lambda: sacrebleu.CHRF(word_order=2),
             "lexical.ter": lambda: sacrebleu.TER()}
ROUGE = {"lexical.rouge1": "rouge1", "lexical.rouge2": "rouge2", "lexical.rougeL": "rougeL"}


def _metric(name: str, **options: object):
    return build_host().metric(name).build(**options)


def _scored(samples: list[Sample], spec: str) -> list[float]:
    """One column of `judgebench.score` on the samples: read, checked and run as `score`
    runs them (the old requirement check refused a sample with an empty text)."""
    table = judgebench.score(samples, metrics=[spec]).to_pandas()
    assert table["item"].tolist() == [s.item for s in samples]
    return table[spec].tolist()


# -- reading: missing versus the empty string -----------------------------------------------
def test_the_issue_two_rows_one_empty_output_is_scored(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "s", "output": "", "reference": "the cat sat"},
        {"item": "2", "system": "s", "output": "a dog ran", "reference": ""}])
    proc = run_cli("score", str(data), "-m", "lexical.chrf", "-m", "lexical.ter",
                   "-o", str(tmp_path / "out.csv"), "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "out.csv")
    ter = sacrebleu.TER()
    assert table["lexical.ter"].tolist() == [ter.sentence_score("", ["the cat sat"]).score,
                                             ter.sentence_score("a dog ran", [""]).score]
    assert table["lexical.chrf"].tolist() == [0.0, 0.0]


def test_jsonl_null_and_an_absent_key_are_missing_an_empty_string_is_not(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "s", "output": "", "reference": ""},
        {"item": "2", "system": "s", "output": None, "reference": [""]},
        {"item": "3", "system": "s", "input": ""}])
    samples = read_samples(data)
    assert [s.output for s in samples] == ["", None, None]
    assert [s.reference for s in samples] == ["", [""], None]
    assert [s.references for s in samples] == [[""], [""], []]
    assert samples[2].input == ""
    proc = run_cli("score", str(data), "-m", "lexical.length", "--store",
                   str(tmp_path / "s.db"))
    assert proc.returncode == 2
    assert "needs field 'output', missing in 2 of 3 rows (first: item='2'" in proc.stderr


def test_csv_a_quoted_empty_cell_is_the_empty_string_an_unquoted_one_is_missing(
        tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('item,system,output,reference,metadata.note,human.q\n'
                    '1,s,"","ref",,""\n'
                    '2,s,,"",""," "\n'
                    '3,s,"multi\nline",  ,x,3\n', encoding="utf-8")
    samples = read_samples(path)
    assert [s.output for s in samples] == ["", None, "multi\nline"]
    assert [s.reference for s in samples] == ["ref", "", "  "]
    assert [s.metadata for s in samples] == [{"note": None}, {"note": ""}, {"note": "x"}]
    assert [s.human for s in samples] == [{"q": None}, {"q": None}, {"q": 3.0}]


def _csv_cell(value: str | None, rng: random.Random) -> str:
    """None as an empty cell; text quoted where it must be, and sometimes where it need not."""
    if value is None:
        return ""
    if value == "" or rng.random() < 0.5 or any(c in value for c in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _nasty(rng: random.Random) -> str | None:
    pieces = ["", "a", " ", ",", '"', '""', "\n", "\r\n", "é", "x y", "[", "nan", "None"]
    roll = rng.random()
    if roll < 0.25:
        return None
    if roll < 0.5:
        return ""
    return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))


def test_csv_reading_agrees_with_pyarrow_which_tells_quoted_from_unquoted(
        tmp_path: Path) -> None:
    """pyarrow's CSV reader (`quoted_strings_can_be_null=False`) is the independent reading:
    on random cells, missing where it reads null and text where it reads text."""
    import pyarrow.csv as pacsv

    rng = random.Random(23)
    columns = ["output", "input", "source", "note"]
    rows = [{c: _nasty(rng) for c in columns} for _ in range(400)]
    for row in rows:  # a text cell that starts with '[' is a list (its own rule)
        for c in columns:
            if row[c] is not None and row[c].lstrip().startswith("["):
                row[c] = "x" + row[c]
    lines = ["item,system," + ",".join(columns)]
    lines += [f"{i},s," + ",".join(_csv_cell(r[c], rng) for c in columns)
              for i, r in enumerate(rows)]
    path = tmp_path / "in.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    arrow = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        column_types={c: "string" for c in ["item", "system", *columns]},
        null_values=[""], strings_can_be_null=True,
        quoted_strings_can_be_null=False)).to_pylist()
    samples = read_samples(path)
    assert len(samples) == len(arrow) == len(rows)
    for sample, theirs, ours in zip(samples, arrow, rows, strict=True):
        assert [sample.output, sample.input, sample.source,
                sample.metadata.get("note")] == [theirs[c] for c in columns]
        assert [theirs[c] for c in columns] == [ours[c] for c in columns]


def test_csv_quoted_fields_count_the_fields_python_csv_reads() -> None:
    from judgebench.tables.io import csv_quoted_fields

    rng = random.Random(5)
    for _ in range(3000):
        cells = [_nasty(rng) for _ in range(rng.randint(1, 5))]
        if cells == [None]:
            continue  # a blank line: no record (the reader skips it)
        text = ",".join(_csv_cell(c, rng) for c in cells) + "\r\n"
        values = next(csv.reader(io.StringIO(text, newline="")))
        quoted = csv_quoted_fields(text)
        assert len(quoted) == len(values) == len(cells)
        assert [None if v == "" and not q else v
                for v, q in zip(values, quoted, strict=True)] == cells
    assert csv_quoted_fields('a"b,"",,"x""y"z') == [False, True, False, True]


def test_parquet_and_dataframe_null_is_missing_the_empty_string_is_not(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"item": ["1", "2", "3"], "system": ["s"] * 3,
                             "output": ["", None, "x"], "reference": [[""], ["r", ""], None]}),
                   path)
    samples = read_samples(path)
    assert [s.output for s in samples] == ["", None, "x"]
    assert [s.reference for s in samples] == [[""], ["r", ""], None]
    frame = pd.DataFrame({"item": ["1", "2", "3", "4"], "system": "s",
                          "output": ["", np.nan, None, pd.NA], "reference": ["", "r", "r", "r"]})
    assert [s.output for s in samples_from_frame(frame)] == ["", None, None, None]
    assert [s.reference for s in samples_from_frame(frame)] == ["", "r", "r", "r"]


def test_the_python_api_scores_an_empty_output() -> None:
    table = judgebench.score([{"item": "1", "system": "s", "output": "", "reference": "r"},
                              {"item": "2", "system": "s", "output": "r", "reference": "r"}],
                             metrics=["lexical.ter", "lexical.length"]).to_pandas()
    assert table["lexical.ter"].tolist() == [100.0, 0.0]
    assert table["lexical.length"].tolist() == [0.0, 1.0]


# -- the lexical metrics against their reference libraries ----------------------------------
def _random_samples(seed: int, n_items: int = 24, systems: int = 3) -> list[Sample]:
    """Texts from a small vocabulary (so n-grams match) with empty outputs and references,
    several references per item (some empty), one system that outputs only empty text."""
    rng = random.Random(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", ".", "it", "was"]

    def text() -> str:
        return "" if rng.random() < 0.25 else " ".join(
            rng.choice(words) for _ in range(rng.randint(1, 9)))

    refs = {i: [text() for _ in range(rng.randint(1, 3))] for i in range(n_items)}
    return [Sample(item=f"i{i}", system=f"s{s}", output="" if s == 0 else text(),
                   reference=refs[i] if len(refs[i]) > 1 else refs[i][0])
            for s in range(systems) for i in range(n_items)]


def _streams(samples: list[Sample]) -> list[list[str | None]]:
    width = max(len(s.references) for s in samples)
    return [[s.references[k] if k < len(s.references) else None for s in samples]
            for k in range(width)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sacrebleu_metrics_on_empty_texts_through_the_cli(tmp_path: Path, seed: int) -> None:
    samples = _random_samples(seed)
    assert any(s.output == "" for s in samples) and any("" in s.references for s in samples)
    data = write_jsonl(tmp_path / "in.jsonl", [s.model_dump(exclude_defaults=True)
                                               for s in samples])
    proc = run_cli("score", str(data), *[a for m in SACREBLEU for a in ("-m", m)],
                   "-o", str(tmp_path / "out.csv"), "--corpus", str(tmp_path / "corpus.csv"),
                   "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "out.csv", dtype={"item": str, "system": str})
    corpus = pd.read_csv(tmp_path / "corpus.csv", dtype={"system": str})
    for name, build in SACREBLEU.items():
        theirs = build()
        if name == "lexical.bleu":
            theirs = sacrebleu.BLEU(effective_order=True)  # sentence_bleu's setting
        expected = [theirs.sentence_score(s.output, s.references).score for s in samples]
        assert table[name].tolist() == expected, name
        for system in sorted({s.system for s in samples}):
            mine = [s for s in samples if s.system == system]
            want = build().corpus_score([s.output for s in mine], _streams(mine)).score
            got = corpus[(corpus.metric == name) & (corpus.system == system)]
            assert got["value"].tolist() == [want] and got["status"].tolist() == ["ok"]
            assert got["n"].tolist() == [len(mine)]  # the empty outputs are counted


def test_sacrebleu_test_suite_cases_with_empty_texts() -> None:
    """The empty-text cases of sacrebleu's own tests (test_bleu, test_chrf, test_ter)."""
    refs = [['The dog bit the man.', 'It was not unexpected.', 'The man bit him first.'],
            ['The dog had bit the man.', 'No one was surprised.', 'The man had bitten the dog.']]
    bleu = _metric("lexical.bleu")
    empty = [Sample(item=str(k), system="s", output="", reference=[r[k] for r in refs])
             for k in range(3)]
    assert bleu.corpus_score(empty) == 0.0  # "ensure that empty hypotheses are not removed"
    assert _summed(bleu, empty) == 0.0
    chrf = _metric("lexical.chrf", beta=3, eps_smoothing=True)
    plain = _metric("lexical.chrf", beta=3)
    for reference in ("b", "ref", "reference", "c"):
        one = [Sample(item="1", system="s", output="", reference=reference)]
        theirs = sacrebleu.corpus_chrf([""], [[reference]], beta=3, eps_smoothing=True).score
        assert chrf.corpus_score(one) == _summed(chrf, one) == theirs
        assert abs(theirs - 0.0) < 1e-4  # test_chrf's expectation and tolerance
        assert plain.corpus_score(one) == _summed(plain, one) == 0.0
    ter = _metric("lexical.ter")
    one = [Sample(item="1", system="s", output="", reference="a")]
    assert ter.corpus_score(one) == _summed(ter, one) == 100.0  # "corner case"
    assert outcome_of(ter.score(one)[0]).value == 100.0


def _summed(metric, samples: list[Sample]) -> float:
    total = None
    for result in metric.score(samples):
        total = add_statistics(total, outcome_of(result).extra["statistics"])
    return float(outcome_of(metric.corpus_from_statistics(total)).value)


@pytest.mark.parametrize("name", sorted(ROUGE))
@pytest.mark.parametrize("multi_ref", ["max", "mean"])
def test_rouge_on_empty_texts_equals_rouge_score(name: str, multi_ref: str) -> None:
    samples = _random_samples(7)
    scorer = rouge_scorer.RougeScorer([ROUGE[name]], use_stemmer=True)
    expected = []
    for s in samples:
        per_ref = [scorer.score(r, s.output)[ROUGE[name]] for r in s.references]
        if multi_ref == "max":
            expected.append(max(per_ref, key=lambda x: x.fmeasure).fmeasure)
        else:
            expected.append(sum(x.fmeasure for x in per_ref) / len(per_ref))
    assert _scored(samples, f"{name}:multi_ref={multi_ref}") == expected
    assert scorer.score("", "")[ROUGE[name]].fmeasure == 0.0  # both empty: rouge-score's 0


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("tokenizer", ["unicode", "rouge_score"])
def test_rouge_scores_own_empty_case(rouge_type: str, tokenizer: str) -> None:
    """rouge-score's rouge_scorer_test.testRougeEmpty: target "testing one two", prediction
    "": precision, recall and F-measure 0."""
    sample = [Sample(item="1", system="s", output="", reference="testing one two")]
    for measure in ("p", "r", "f"):
        spec = f"lexical.{rouge_type}:measure={measure},tokenizer={tokenizer},stemmer=false"
        assert _scored(sample, spec) == [0.0]


def test_rouge_lsum_of_an_empty_output_is_rouge_scores() -> None:
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    samples = [Sample(item="1", system="s", output="", reference="The cat sat. It ran."),
               Sample(item="2", system="s", output="The cat sat.", reference=""),
               Sample(item="3", system="s", output="", reference="")]
    expected = [scorer.score(s.reference.replace(". ", ".\n"), s.output)["rougeLsum"].fmeasure
                for s in samples]
    assert _scored(samples, "lexical.rougeLsum") == expected


def _squad_v2_normalize(s: str) -> str:
    """SQuAD v2.0's official evaluate-v2.0.py, normalize_answer."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.compile(r"\b(a|an|the)\b", re.UNICODE).sub(" ", s)
    return " ".join(s.split())


def _squad_v2_f1(gold: str, pred: str) -> float:
    """SQuAD v2.0's official compute_f1 (no-answer: 1 if both are empty, else 0)."""
    gold_toks = _squad_v2_normalize(gold).split() if gold else []
    pred_toks = _squad_v2_normalize(pred).split() if pred else []
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return float(gold_toks == pred_toks)
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(pred_toks), num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def test_exact_match_token_f1_and_length_on_empty_texts() -> None:
    samples = [*_random_samples(11),
               Sample(item="x", system="s9", output="", reference=""),
               Sample(item="y", system="s9", output="The", reference="")]  # "the" -> ""
    em = _scored(samples, "lexical.exact_match")
    f1 = _scored(samples, "lexical.token_f1")
    assert em == [max(float(_squad_v2_normalize(s.output) == _squad_v2_normalize(r))
                      for r in s.references) for s in samples]
    assert f1 == [max(_squad_v2_f1(r, s.output) for r in s.references) for s in samples]
    assert em[-2:] == [1.0, 1.0] and f1[-2:] == [1.0, 1.0]
    words = _scored(samples, "lexical.length")
    chars = _scored(samples, "lexical.length:unit=chars")
    assert words == [float(len(s.output.split())) for s in samples]
    assert chars == [float(len(s.output)) for s in samples] and 0.0 in chars


# -- BLEU: corpus-level effective order ----------------------------------------------------
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("options", [{}, {"smooth_method": "floor", "smooth_value": 0.01},
                                     {"smooth_method": "none", "tokenize": "none"}])
def test_bleu_corpus_effective_order_equals_sacrebleu_corpus_bleu(seed: int,
                                                                  options: dict) -> None:
    samples = _random_samples(seed, n_items=6)  # short corpora: high orders may have no n-gram
    samples += [Sample(item="short", system=f"s{k}", output="cat", reference="a cat")
                for k in range(3)]
    metric = _metric("lexical.bleu", corpus_effective_order=True, **options)
    default = _metric("lexical.bleu", **options)
    for system in sorted({s.system for s in samples}):
        mine = [s for s in samples if s.system == system]
        outputs, streams = [s.output for s in mine], _streams(mine)
        want = sacrebleu.compat.corpus_bleu(outputs, streams, use_effective_order=True,
                                            **options).score
        assert metric.corpus_score(mine) == _summed(metric, mine) == want
        assert default.corpus_score(mine) == sacrebleu.compat.corpus_bleu(
            outputs, streams, **options).score
        # sentence scores do not depend on it: always sentence_bleu's effective order
        assert metric.score(mine) == default.score(mine)


@pytest.mark.parametrize(("hypothesis", "reference", "expected"), [
    ("test", "a test", 0.3678794411714425), ("a test", "a test", 1.0),
    ("a little test", "a test", 0.03218297948685433)])
def test_bleu_effective_order_cases_of_sacrebleus_test_suite(hypothesis: str, reference: str,
                                                             expected: float) -> None:
    """test_bleu.py's test_effective_order: raw_corpus_bleu (floor smoothing 0.01, no
    tokenizer, effective order)."""
    metric = _metric("lexical.bleu", corpus_effective_order=True, smooth_method="floor",
                     smooth_value=0.01, tokenize="none")
    one = [Sample(item="1", system="s", output=hypothesis, reference=reference)]
    assert abs(metric.corpus_score(one) / 100 - expected) < 1e-8
    assert abs(_summed(metric, one) / 100 - expected) < 1e-8


def test_bleu_effective_order_enters_the_signature_only_when_set() -> None:
    default, on = _metric("lexical.bleu"), _metric("lexical.bleu", corpus_effective_order=True)
    assert "corpus_effective_order" not in default.signature().fields
    assert on.signature().fields["corpus_effective_order"] == "yes"
    assert {k: v for k, v in on.signature().fields.items()
            if k != "corpus_effective_order"} == default.signature().fields


def test_bleu_effective_order_through_the_cli(tmp_path: Path) -> None:
    samples = _random_samples(9, n_items=5)
    data = write_jsonl(tmp_path / "in.jsonl", [s.model_dump(exclude_defaults=True)
                                               for s in samples])
    spec = "lexical.bleu:corpus_effective_order=true"
    proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                   "--corpus", str(tmp_path / "corpus.csv"), "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 0, proc.stderr
    corpus = pd.read_csv(tmp_path / "corpus.csv", dtype={"system": str})
    for system in sorted({s.system for s in samples}):
        mine = [s for s in samples if s.system == system]
        want = sacrebleu.compat.corpus_bleu([s.output for s in mine], _streams(mine),
                                            use_effective_order=True).score
        assert corpus[corpus.system == system]["value"].tolist() == [want]


# -- every built-in metric declares what it does with an empty text -----------------------
ENTRIES = build_host().metrics() | build_host().sentinels()
BUILTIN = sorted(name for name, entry in ENTRIES.items()
                 if entry.plugin in {"lexical", "neural", "judges", "audit"})


def test_the_builtin_metrics_are_all_here() -> None:
    assert len(BUILTIN) >= 29
    assert {"lexical.bleu", "neural.mauve", "judge.panel", "sentinel.cand",
            "learned.comet"} <= set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_metric_declares_its_empty_text_behaviour(name: str) -> None:
    info = ENTRIES[name].info
    declared = info.empty_text
    assert declared is not None, name
    assert len(declared.note) >= 10, name
    fields = {"output": declared.output, "reference": declared.reference,
              "input": declared.input, "context": declared.context}
    for field in info.requires:  # every text field it needs is declared
        key = "output" if field.startswith("output") else field
        assert fields[key] is not None, (name, field)
    proc = run_cli("metrics", name, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["empty_text"] == declared.model_dump()
    text = run_cli("metrics", name).stdout
    assert "empty text:" in text.splitlines() and declared.note.split()[0] in text


LOCAL = ["lexical.bleu", "lexical.chrf", "lexical.chrf++", "lexical.ter", "lexical.rouge1",
         "lexical.rouge2", "lexical.rougeL", "lexical.rougeLsum", "lexical.exact_match",
         "lexical.token_f1", "lexical.length", "sentinel.length", "sentinel.constant",
         "sentinel.random"]


@pytest.mark.parametrize("name", LOCAL)
def test_local_metrics_do_what_they_declare_on_empty_texts(name: str) -> None:
    metric = _metric(name)
    declared = metric.info.empty_text
    samples = [Sample(item="1", system="s", output="", reference="the cat"),
               Sample(item="2", system="s", output="the cat", reference=""),
               Sample(item="3", system="s", output="", reference=["", "x"])]
    outcomes = [outcome_of(v) for v in metric.score(samples)]
    reads_reference = "reference" in metric.info.requires
    for sample, outcome in zip(samples, outcomes, strict=True):
        empty_output = sample.output == ""
        action = declared.output if empty_output else (declared.reference
                                                        if reads_reference else "scored")
        want = Status.OK if action in ("scored", None) else Status.SKIPPED
        assert outcome.status == want, (name, sample, outcome)
        if want is Status.SKIPPED:
            assert outcome.reason


@pytest.mark.parametrize("field", ["output", "reference", "input"])
def test_text_sentinels_skip_an_empty_text_with_a_reason(field: str) -> None:
    name = {"output": "sentinel.cand", "reference": "sentinel.ref", "input": "sentinel.src"}[field]
    sentinel = _metric(name, folds=2)
    assert getattr(sentinel.info.empty_text, field) == "skipped"
    rng = random.Random(1)
    samples = [Sample(item=f"i{k}", system="s", output=f"text {k} {rng.random()}",
                      reference=f"ref {k}", input=f"in {k}") for k in range(12)]
    samples[3] = samples[3].model_copy(update={field: ""})
    human = [float(k % 5) for k in range(12)]
    outcomes = [outcome_of(v) for v in sentinel.fit_predict(samples, human)]
    assert outcomes[3].status == Status.SKIPPED and field in outcomes[3].reason
    assert sum(o.status == Status.OK for o in outcomes) == 11


# -- judges judge an empty output, the prompt shows it as empty -----------------------------
JUDGES = {
    "judge.rubric": "protocol=text",
    "judge.reference": "protocol=text",
    "judge.geval": "logprobs=false,steps=1. Read it.",
    "judge.prometheus": "",
    "judge.panel": "judge=judge.rubric,models=m1;m2,protocol=text",
    "judge.pairwise": "protocol=text",
    "judge.prometheus_relative": "",
}


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_judges_judge_an_empty_output_shown_as_empty(tmp_path: Path, name: str) -> None:
    pairwise = name in ("judge.pairwise", "judge.prometheus_relative")
    if pairwise:
        records = [{"item": "1", "input": "Say hi.", "system_a": "x", "system_b": "y",
                    "output_a": "", "output_b": "hi"}]
    else:
        records = [{"item": "1", "system": "s", "input": "Say hi.", "output": "",
                    "reference": "hi"},
                   {"item": "2", "system": "s", "input": "Say hi.", "output": "hi",
                    "reference": ""}]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    with ScriptedJudge(reply=any_judges_form) as server:
        options = JUDGES[name]
        backend = "" if name == "judge.panel" else ",model=m"
        spec = (f"{name}:backend=openai_compat{backend},api_base={server.url},"
                f"api_key_env=JB_EMPTY_KEY" + (f",{options}" if options else ""))
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                       "--store", str(tmp_path / "s.db"), cwd=tmp_path,
                       env={**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr
        prompts = [m[-1]["content"] if m[-1]["role"] == "user" else
                   next(x["content"] for x in m if x["role"] == "user")
                   for m in server.prompts]
    table = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert (table[column(spec)] != "").all(), table
    if pairwise:
        shown = ["<response_a>\n\n</response_a>", "###Response A:\n\n"]
    else:
        shown = ["<response>\n\n</response>", "###Response to evaluate:\n\n"]
    assert any(any(s in p for s in shown) for p in prompts), prompts
    if name in ("judge.reference", "judge.prometheus"):
        assert any("<reference>\n\n</reference>" in p or "(Score 5):\n\n" in p
                   for p in prompts), prompts
