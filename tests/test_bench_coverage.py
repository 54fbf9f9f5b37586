"""`bench` cards: each judge's coverage at 1 - alpha = 0.9 (trust or escalate on the suite's
labels, confidence = a pairwise judge's two orders agree). The kept counts and thresholds equal
a direct fixed-sequence binomial test written here (scipy's binomial tail) on a synthetic
pairwise suite judged by the scripted judge through a real loopback server, and on LLMBar's
stored verdicts (which cannot show 0.9 alone: each line says so); a pointwise suite says
"n/a: no confidence"; every format prints it."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from scipy.stats import binom
from scripted_judge import ScriptedJudge
from suites_support import DATA, plugin_args, plugin_env
from suites_support import suite as tiny_suite

from judgebench.suite import load_suite

SPEC_TAIL = ",api_key_env=JB_PAIR_KEY,protocol=text"


def _gz(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        for row in rows:
            handle.write((json.dumps(row) + "\n").encode())
    return buffer.getvalue()


def quality_suite(folder: Path, *, seed: int) -> list[tuple[int, int, str]]:
    """Pairs whose outputs carry their quality (q=N, which the scripted judge follows): 50
    with different qualities (the judge right in both orders), 14 equal (it picks the one
    shown first: the orders disagree); people's label is the better one, with a few against
    it (one) and ties. Returns (quality a, quality b, label) per row."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    rows, samples, human = [], [], []
    for j in range(64):
        qa = int(rng.integers(1, 5))
        qb = qa if j >= 50 else int(rng.choice([q for q in range(1, 5) if q != qa]))
        label = "a" if qa > qb else "b" if qb > qa else str(rng.choice(["a", "b", "tie"]))
        if j == 3:
            label = "b" if label == "a" else "a"  # people against the quality
        if j == 30:
            label = "tie"
        key = {"item": f"p{j:02d}", "system_a": "X", "system_b": "Y"}
        samples.append({**key, "input": "Say hi.", "output_a": f"q={qa} hi",
                        "output_b": f"q={qb} hello"})
        human.append({**key, "human.preference": label})
        rows.append((qa, qb, label))
    files = {}
    for name, data in (("samples.jsonl.gz", _gz(samples)), ("human.jsonl.gz", _gz(human))):
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {"name": folder.name, "title": "Quality pairs", "description": "synthetic",
            "kind": "pairwise", "criteria": ["preference"],
            "protocols": [{"name": "pref", "criterion": "preference", "level": "pair",
                           "statistics": ["accuracy"], "human": "human.preference",
                           "ties": "drop", "failed_as": "wrong"}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return rows


def fixed_sequence(confidence: np.ndarray, agree: np.ndarray, alpha: float = 0.1,
                   delta: float = 0.1) -> tuple[float | None, int]:
    """Trust or escalate written out: thresholds from the highest confidence down, each kept
    set tested by the binomial tail, stopping at the first that fails (sets too small to be
    rejected at all skipped); (threshold, kept)."""
    chosen: tuple[float | None, int] = (None, 0)
    smallest = next(n for n in range(1, 10_000) if (1 - alpha) ** n <= delta)
    for t in sorted(set(confidence.tolist()), reverse=True):
        kept = confidence >= t
        n, wrong = int(kept.sum()), int((kept & ~agree).sum())
        if n < smallest:
            continue
        if binom.cdf(wrong, n, alpha) > delta:
            break
        chosen = (t, n)
    return chosen


def bench(tmp_path: Path, judge: ScriptedJudge, suite: str, *args: str) -> dict:
    spec = f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url}{SPEC_TAIL}"
    proc = run_cli(*plugin_args(), "bench", spec, "--suite", suite, "--json", "--bootstrap",
                   "0", "--store", str(tmp_path / "runs.db"), *args,
                   env={**plugin_env(), "JB_PAIR_KEY": "not-a-secret"})
    assert proc.returncode == 0, proc.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    return card


def test_the_judges_coverage_equals_the_fixed_sequence_test(tmp_path: Path) -> None:
    rows = quality_suite(tmp_path / "suites" / "qpairs", seed=1)
    with ScriptedJudge() as judge:
        card = bench(tmp_path, judge, "qpairs", "--suite-path", str(tmp_path / "suites"))
        text = run_cli(*plugin_args(), "bench", f"judge.pairwise:backend=openai_compat,"
                       f"model=judge,api_base={judge.url}{SPEC_TAIL}", "--suite", "qpairs",
                       "--suite-path", str(tmp_path / "suites"), "--bootstrap", "0",
                       "--store", str(tmp_path / "runs.db"),
                       env={**plugin_env(), "JB_PAIR_KEY": "not-a-secret"})
    (mine,) = card["coverage"]
    labelled = [(qa, qb, label) for qa, qb, label in rows if label != "tie"]  # ties dropped
    consistent = np.asarray([qa != qb for qa, qb, _ in labelled])
    verdict = ["a" if qa > qb else "b" if qb > qa else "tie" for qa, qb, _ in labelled]
    agree = np.asarray([v == label for v, (_, _, label) in zip(verdict, labelled,
                                                               strict=True)])
    threshold, kept = fixed_sequence(np.where(consistent, 1.0, 0.5), agree)
    assert (mine["threshold"], mine["kept"], mine["items"]) == (threshold, kept,
                                                                len(labelled))
    assert threshold == 1.0 and 0 < kept < len(labelled)
    assert mine["coverage"] == pytest.approx(kept / len(labelled))
    assert mine["agreement"] == pytest.approx(float(agree[consistent].mean()))
    assert mine["guaranteed_agreement"] == 0.9 and mine["kind"] == "yours"
    assert text.returncode == 0, text.stderr
    assert "coverage at 1 - alpha = 0.9" in text.stdout
    assert f"{100 * kept / len(labelled):.1f}% ({kept} of {len(labelled)} kept: both orders " \
           "agree" in text.stdout


def test_llmbars_stored_verdicts_cannot_show_0_9_alone(tmp_path: Path) -> None:
    with ScriptedJudge() as judge:
        card = bench(tmp_path, judge, "llmbar", "--limit", "120")
    human = load_suite(DATA / "llmbar").human().iloc[:120]
    by_label = {c["label"]: c for c in card["coverage"]}
    published = {p.metric: p.verdicts_column for p in load_suite(DATA / "llmbar").info.published
                 if p.verdicts_column}
    assert set(published) <= set(by_label)
    for name, column in published.items():
        ab, ba = human[f"{column}.ab"].to_numpy(), human[f"{column}.ba"].to_numpy()
        gold = human["human.gold"].to_numpy()
        verdict = np.where(ab == ba, ab, "tie")
        threshold, kept = fixed_sequence(np.where(ab == ba, 1.0, 0.5), verdict == gold)
        found = by_label[name]
        assert (found["threshold"], found["kept"] or 0) == (threshold, kept), name
        assert found["items"] == 120 and found["kind"] == "published"
        if threshold is None:
            assert found["note"].startswith("keeps nothing: ")


def test_a_pointwise_suite_says_no_confidence(tmp_path: Path) -> None:
    tiny_suite(tmp_path / "suites")
    proc = run_cli("bench", "lexical.chrf", "--suite", "tiny", "--suite-path",
                   str(tmp_path / "suites"), "--json", "--bootstrap", "0", "--store",
                   str(tmp_path / "runs.db"))
    assert proc.returncode == 0, proc.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    (only,) = card["coverage"]
    assert only["coverage"] is None and only["note"].startswith("n/a: no confidence")
    for fmt in ("markdown", "html", "text"):
        out = run_cli("bench", "lexical.chrf", "--suite", "tiny", "--suite-path",
                      str(tmp_path / "suites"), "--format", fmt, "--bootstrap", "0",
                      "--store", str(tmp_path / "runs.db"))
        assert out.returncode == 0, out.stderr
        assert "lexical.chrf: n/a: no confidence" in out.stdout, fmt
