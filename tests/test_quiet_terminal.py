"""Third-party noise stays off the terminal unless `judgebench -v`: sacrebleu's "tokenized
period" warning (lexical.bleu on SummEval's tokenized outputs; `force=true` turns it off as in
sacrebleu), transformers' tokenizer warnings and progress bars, huggingface_hub's bars. Each
line comes from the library itself, in a real run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_cli_process, summeval_records, write_jsonl

SACREBLEU_WARNING = "lines that end in a tokenized period"


@pytest.fixture
def tokenized(tmp_path: Path) -> Path:
    rows = summeval_records(160)
    assert sum(r["output"].endswith(" .") for r in rows) >= 100  # SummEval is tokenized
    return write_jsonl(tmp_path / "tokenized.jsonl", rows)


#: The code under test in a child process: this checkout first.
CHILD_ENV = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins")]),
             "JUDGEBENCH_LOAD_PLUGINS": "lexical"}


def score(tmp_path: Path, data: Path, spec: str, *flags: str) -> str:
    """The stderr of a `score` run in a fresh interpreter, as a user's terminal shows it (in
    this one pytest's log capture would take the library's records), scored anew."""
    where = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    where.mkdir()
    proc = run_cli_process(*flags, "score", str(data), "-m", spec, "--store",
                           str(where / "r.db"), "-o", str(where / "s.csv"), cwd=where,
                           env=CHILD_ENV)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.slow  # three runs in fresh interpreters
def test_sacrebleu_warning_only_with_verbose_and_force_turns_it_off(tmp_path, tokenized) -> None:
    assert SACREBLEU_WARNING not in score(tmp_path, tokenized, "lexical.bleu")
    loud = score(tmp_path, tokenized, "lexical.bleu", "-v")
    assert SACREBLEU_WARNING in loud and "`force` parameter" in loud
    forced = score(tmp_path, tokenized, "lexical.bleu:force=true", "--verbose")
    assert SACREBLEU_WARNING not in forced


def test_bleu_force_changes_no_score_and_no_signature() -> None:
    from judgebench.models import Sample
    from judgebench.plugins import build_host

    entry = build_host().metric("lexical.bleu")
    plain, forced = entry.build(), entry.build(force=True)
    assert str(plain.signature()) == str(forced.signature())
    assert "force" not in str(plain.signature())
    samples = [Sample(**r) for r in summeval_records(160)]
    assert plain.score(samples) == forced.score(samples)
    # One batch at once gives what one sentence at a time gives (sacrebleu's sentence_score).
    from sacrebleu.metrics import BLEU

    outputs = [str(s.output) for s in samples]
    sentence = BLEU(effective_order=True)
    assert list(plain.score(samples[:20])) == [
        sentence.sentence_score(output, s.references).score
        for output, s in zip(outputs[:20], samples[:20], strict=True)]
    corpus = BLEU().corpus_score(outputs,
                                 [[s.references[i] for s in samples] for i in range(11)])
    assert plain.corpus_from_statistics(
        [sum(col) for col in zip(*plain.statistics(samples), strict=True)]) == corpus.score


NOISY_PLUGIN = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class TokenCount(Metric):
    """Tokens per output with a transformers tokenizer: real transformers code paths that warn
    (a sequence longer than model_max_length) and draw progress bars (weights loading)."""

    info = MetricInfo(name="test.tokens", kind="learned", requires=("output",))
    _tokenizer = None

    def score(self, samples):
        if self._tokenizer is None:
            from huggingface_hub.utils import tqdm as hub_tqdm
            from tokenizers import Tokenizer
            from tokenizers.models import WordLevel
            from tokenizers.pre_tokenizers import Whitespace
            from transformers import PreTrainedTokenizerFast
            from transformers.utils import logging

            for _ in logging.tqdm(range(2), desc="Loading weights"):
                pass
            for _ in hub_tqdm(range(2), desc="Fetching files"):
                pass
            inner = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
            inner.pre_tokenizer = Whitespace()
            self._tokenizer = PreTrainedTokenizerFast(tokenizer_object=inner, model_max_length=4)
        return [float(len(self._tokenizer(s.output)["input_ids"])) for s in samples]


@hookimpl
def register_metrics(register):
    register(TokenCount)
'''


@pytest.mark.slow  # fresh interpreters that import transformers
def test_transformers_warnings_and_bars_only_with_verbose(tmp_path) -> None:
    pytest.importorskip("transformers")
    plugin = tmp_path / "noisy_plugin.py"
    plugin.write_text(NOISY_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    env = dict(CHILD_ENV)
    for name in ("TRANSFORMERS_VERBOSITY", "HF_HUB_DISABLE_PROGRESS_BARS",
                 "TRANSFORMERS_NO_ADVISORY_WARNINGS"):
        env[name] = ""  # as for a user who set none of them (empty: the library default)

    def run(*flags: str) -> str:
        proc = run_cli_process(*flags, "-p", str(plugin), "score", str(data), "-m",
                               "test.tokens", "--store", str(tmp_path / f"r{len(flags)}.db"),
                               cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    quiet, loud = run(), run("-v")
    lines = ("Token indices sequence length is longer", "Loading weights", "Fetching files")
    for line in lines:
        assert line in loud, (line, loud)
        assert line not in quiet, (line, quiet)
    assert "scored 3 rows" in quiet  # judgebench's own messages stay
