"""Both reads of `score` stream the input: the first sample of a file comes before its last
line is read, the survey and the scoring read hold a bounded part of the file, and the
content hashes (the store's keys) are those of the whole-sample JSON dump."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest
from conftest import SUMMEVAL, run_cli, summeval_records, write_jsonl

import judgebench.engine.runner
from judgebench.engine.runner import sample_hash, survey
from judgebench.models import CONVERSATION_FIELDS, Sample
from judgebench.tables.io import SampleFile, iter_samples, read_samples


def _old_hash(sample: Sample) -> str:
    """The content hash as the store has always keyed it (the fields a sample had before
    conversations: a sample without messages hashes as it did)."""
    payload = sample.model_dump(mode="json", exclude={"human", "metadata",
                                                      *CONVERSATION_FIELDS})
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def test_hash_of_every_summeval_sample_is_unchanged() -> None:
    samples = read_samples(SUMMEVAL)
    samples += [Sample(item="é\u2028", system="s", output="ünï [x]\n", reference=["a", "b"],
                       metadata={"k": 1}, human={"q": 2.0}),
                Sample(item="1", system="2", output="", input="\ud800 lone surrogate")]
    assert len(samples) >= 2
    assert [sample_hash(s) for s in samples] == [_old_hash(s) for s in samples]


def _huge_last_line(path: Path, first: list[dict], megabytes: int) -> Path:
    big = {**first[0], "item": "last", "output": "word " * (megabytes * 200_000)}
    write_jsonl(path, [*first, big])
    return path


def test_first_sample_comes_before_the_huge_last_line_is_read(tmp_path: Path) -> None:
    path = _huge_last_line(tmp_path / "gen.jsonl", summeval_records(2), megabytes=20)
    tracemalloc.start()
    try:
        first = next(iter(SampleFile(path)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert first.item == summeval_records(1)[0]["item"]
    assert peak < 2_000_000  # the 20 MB line is not in memory
    _, last = list(iter_samples(path))[-1]
    assert last.item == "last"  # and it is there to be read


def test_a_broken_last_line_is_not_parsed_for_the_first_sample(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gen.jsonl", summeval_records(3))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"item": "x", "system": \n')
    reader = iter(SampleFile(path))
    assert [next(reader).system for _ in range(3)] == ["M0", "M1", "M10"]
    with pytest.raises(Exception, match="malformed JSON"):
        next(reader)


def _many_large_lines(path: Path, rows: int, chars: int) -> Path:
    records = summeval_records(16)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(rows):
            r = records[n % 16]
            handle.write(json.dumps({**r, "item": f"{r['item']}-{n // 16}",
                                     "output": f"{n} " + "x" * chars}) + "\n")
    return path


def test_survey_holds_one_sample_at_a_time(tmp_path: Path) -> None:
    path = _many_large_lines(tmp_path / "gen.jsonl", rows=64, chars=250_000)  # 16 MB
    tracemalloc.start()
    try:
        found = survey(SampleFile(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.rows == 64
    assert peak < path.stat().st_size / 8


def test_scoring_read_holds_one_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judgebench.engine.runner, "CHUNK_ROWS", 4)
    path = _many_large_lines(tmp_path / "gen.jsonl", rows=64, chars=250_000)
    small = _many_large_lines(tmp_path / "small.jsonl", rows=16, chars=10)
    run_cli("score", str(small), "-m", "lexical.length", "-o", str(tmp_path / "small.csv"),
            "--store", str(tmp_path / "small.db"), check=True)  # imports, not measured
    tracemalloc.start()
    try:
        run_cli("score", str(path), "-m", "lexical.length", "-o", str(tmp_path / "s.csv"),
                "--store", str(tmp_path / "s.db"), "--workers", "1", check=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 65
    assert peak < path.stat().st_size / 3  # 4 samples of 250 kB and their copies, not 16 MB
