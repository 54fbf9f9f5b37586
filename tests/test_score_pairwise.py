"""`judgebench score` on pairwise samples writes the pairwise table: a scripted judge on a real
loopback HTTP server (tests/scripted_judge.py), every column checked against the script, the
shapes that cannot mix refused before any call, kill and resume, and the wide-table readers
refusing a pairwise table."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, column, run_cli, write_jsonl
from scripted_judge import ScriptedJudge, verdict_for

from judgebench.errors import InputError
from judgebench.tables.io import read_table
from judgebench.tables.scores_table import load_scores_table, refuse_pairwise

KEY_ENV = {"JB_PAIR_KEY": "not-a-secret"}


def judge_spec(url: str, **options: str) -> str:
    extra = "".join(f",{k}={v}" for k, v in options.items())
    return (f"judge.pairwise:backend=openai_compat,model=judge,api_base={url},"
            f"api_key_env=JB_PAIR_KEY,protocol=text{extra}")


# (item, output_a, output_b, expected .ab, expected .ba, expected combined), by the script:
# the higher q= wins; equal q: the biased judge picks the first shown; GARBLE shown first
# has no verdict.
PAIRS = [
    ("q1", "a clear answer q=3", "a weak one q=1", "a", "a", "a"),
    ("q2", "wrong q=1", "right, and kind q=4", "b", "b", "b"),
    ("q3", "same quality q=2", "équivalent ✓ q=2", "a", "b", "tie"),  # flips with the order
    ("q4", "GARBLE q=2", "fine q=5", None, "b", None),  # order ab unparseable
    ("q5", "GARBLE q=1", "GARBLE too q=1", None, None, None),
]


def strict_template(tmp_path: Path) -> Path:
    """The built-in pairwise template with a STRICT system prompt: the scripted judge then
    says tie on equal quality (the plain one names the output shown first)."""
    strict = tmp_path / "strict.txt"
    builtin = REPO / "plugins" / "judgebench_judges" / "templates" / "pairwise.txt"
    strict.write_text(builtin.read_text().replace("You are an impartial judge.",
                                                  "You are a STRICT impartial judge."))
    return strict


def pair_records() -> list[dict]:
    records = []
    for n, (item, a, b, *_) in enumerate(PAIRS):
        record = {"item": item, "input": f"Question {item}?", "system_a": "M0",
                  "system_b": "M1", "output_a": a, "output_b": b,
                  "human": {"pref": [1, 0, 0.5, 0, None][n], "other": float(n)}}
        if n == 0:
            record["category"] = "math"  # a top-level field: read into metadata
        if n == 2:
            record["metadata"] = {"category": "writing", "source": "x"}
        records.append(record)
    return records


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in KEY_ENV.items():
        monkeypatch.setenv(k, v)


def score(tmp_path: Path, spec: str, out: str, *extra: str, data: Path | None = None):
    data = data or write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    return run_cli("score", str(data), "--allow-failures", "-m", spec, "-o", str(tmp_path / out),
                   "--store", str(tmp_path / "runs.db"), *extra, cwd=tmp_path, env=KEY_ENV)


def test_the_script_is_what_the_expectations_say() -> None:
    system = "You are an impartial judge."
    shown = "<response_a>\n{}\n</response_a>\n<response_b>\n{}\n</response_b>"
    letter = {"Compared them carefully. [[A]]": "A", "Compared them carefully. [[B]]": "B",
              "Compared them carefully. [[C]]": "C"}
    to_ab = {"A": "a", "B": "b", "C": "tie"}
    to_ba = {"A": "b", "B": "a", "C": "tie"}
    for _, a, b, ab, ba, _ in PAIRS:
        assert to_ab.get(letter.get(verdict_for(system, shown.format(a, b)), "")) == ab
        assert to_ba.get(letter.get(verdict_for(system, shown.format(b, a)), "")) == ba


def test_every_column_of_the_pairwise_table(tmp_path) -> None:
    with ScriptedJudge() as server:
        spec = judge_spec(server.url)
        failing = run_cli("score", str(write_jsonl(tmp_path / "pairs.jsonl", pair_records())),
                          "-m", spec, "-o", str(tmp_path / "strict.csv"), cwd=tmp_path,
                          env=KEY_ENV)
        assert failing.returncode == 3 and "parse_error" in failing.stderr  # the GARBLE pairs
        proc = score(tmp_path, spec, "pairs.csv")
        assert proc.returncode == 0, proc.stderr
        assert server.calls == 2 * len(PAIRS)
    spec = column(spec)
    table = read_table(tmp_path / "pairs.csv", key=("item", "system_a", "system_b"))
    assert list(table.columns) == ["item", "system_a", "system_b", "category", "length_a",
                                   "length_b", spec, f"{spec}.ab", f"{spec}.ba",
                                   "human.pref", "human.other"]
    assert list(table["item"]) == [p[0] for p in PAIRS]
    assert set(table["system_a"]) == {"M0"} and set(table["system_b"]) == {"M1"}

    def cells(column: str) -> list:
        return [None if pd.isna(v) else v for v in table[column]]

    assert cells(f"{spec}.ab") == [p[3] for p in PAIRS]
    assert cells(f"{spec}.ba") == [p[4] for p in PAIRS]
    # MT-Bench's conservative rule: the winner both orders agree on, else a tie; a failed
    # judgement (q4: one order unparseable) is empty, not a tie
    for (_, _, _, ab, ba, combined), got in zip(PAIRS, cells(spec), strict=True):
        expected = None if ab is None or ba is None else (ab if ab == ba else "tie")
        assert got == expected == combined
    assert list(table["length_a"]) == [len(p[1]) for p in PAIRS]
    assert list(table["length_b"]) == [len(p[2]) for p in PAIRS]
    assert table["length_b"][2] == 16 != len(PAIRS[2][2].encode())  # characters, not bytes
    assert cells("category") == ["math", None, "writing", None, None]
    assert cells("human.pref") == [1.0, 0.0, 0.5, 0.0, None]
    assert cells("human.other") == [0.0, 1.0, 2.0, 3.0, 4.0]
    # the parse errors are statuses, visible in the summary, the sidecar and the store
    assert "3 ok, 2 parse_error" in proc.stderr
    meta = json.loads((tmp_path / "pairs.csv.meta.json").read_text())
    assert meta["table"] == "pairwise"
    assert meta["columns"][spec]["statuses"] == {"ok": 3, "parse_error": 2}
    assert meta["columns"][spec]["table_columns"] == {
        "verdict": spec, "ab": f"{spec}.ab", "ba": f"{spec}.ba"}
    db = sqlite3.connect(tmp_path / "runs.db")
    rows = dict(db.execute("SELECT item, status FROM scores WHERE system = 'M0 vs M1'"))
    assert rows == {"q1": "ok", "q2": "ok", "q3": "ok", "q4": "parse_error",
                    "q5": "parse_error"}
    reason = db.execute("SELECT reason FROM scores WHERE item = 'q4'").fetchone()[0]
    assert "order ab" in reason and "order ba" not in reason
    # the table's verdicts are the judge's own, mapped to the original A/B
    for item, extra in db.execute("SELECT item, extra FROM scores"):
        stored = json.loads(extra)
        row = table[table["item"] == item].iloc[0]
        for order in ("ab", "ba"):
            value = row[f"{spec}.{order}"]
            assert (None if pd.isna(value) else value) == stored[f"verdict_{order}"]


def test_every_format_holds_the_same_table(tmp_path) -> None:
    with ScriptedJudge() as server:
        spec = judge_spec(server.url)
        frames = []
        for out in ("pairs.csv", "pairs.jsonl", "pairs.parquet"):
            proc = score(tmp_path, spec, out, "--resume",
                         data=write_jsonl(tmp_path / "in.jsonl", pair_records()))
            assert proc.returncode == 0, proc.stderr
            frames.append(read_table(tmp_path / out, key=("item", "system_a", "system_b")))
        assert server.calls == 2 * len(PAIRS)  # the second and third runs reuse the store
    spec = column(spec)
    for frame in frames[1:]:
        for name in frames[0].columns:
            left = [None if pd.isna(v) else v for v in frames[0][name]]
            right = [None if pd.isna(v) else v for v in frame[name]]
            assert left == right, name
    parquet = pd.read_parquet(tmp_path / "pairs.parquet")
    assert str(parquet[spec].dtype) in {"string", "str", "object"}
    jsonl = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert jsonl[2][spec] == "tie" and jsonl[3][spec] is None and jsonl[3][f"{spec}.ba"] == "b"


def test_one_order_leaves_ba_empty(tmp_path) -> None:
    with ScriptedJudge() as server:
        spec = judge_spec(server.url, both_orders="false")
        proc = score(tmp_path, spec, "one.csv")
        assert proc.returncode == 0, proc.stderr
        assert server.calls == len(PAIRS)
    spec = column(spec)
    table = read_table(tmp_path / "one.csv", key=("item", "system_a", "system_b"))
    assert table[f"{spec}.ba"].isna().all()
    ab = [None if pd.isna(v) else v for v in table[f"{spec}.ab"]]
    assert ab == [p[3] for p in PAIRS]
    combined = [None if pd.isna(v) else v for v in table[spec]]
    assert combined == ab  # one order: its verdict is the verdict (q3's bias goes unseen)


def test_two_templates_are_two_judges_side_by_side(tmp_path) -> None:
    strict = strict_template(tmp_path)
    with ScriptedJudge() as server:
        biased, careful = judge_spec(server.url), judge_spec(server.url, template=str(strict))
        data = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
        proc = run_cli("score", str(data), "--allow-failures", "-m", biased, "-m", careful, "-o",
                       str(tmp_path / "two.csv"), "--store", str(tmp_path / "runs.db"),
                       cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    biased, careful = column(biased), column(careful)
    table = read_table(tmp_path / "two.csv", key=("item", "system_a", "system_b"))
    row = table[table["item"] == "q3"].iloc[0]
    assert (row[biased], row[f"{biased}.ab"], row[f"{biased}.ba"]) == ("tie", "a", "b")
    assert (row[careful], row[f"{careful}.ab"], row[f"{careful}.ba"]) == ("tie", "tie", "tie")


@pytest.mark.parametrize("case", ["mixed metrics", "mixed rows", "pointwise metric",
                                  "no system_b", "pair twice"])
def test_shapes_that_cannot_mix_are_refused_before_any_call(tmp_path, case) -> None:
    records = pair_records()
    with ScriptedJudge() as server:
        specs = [judge_spec(server.url)]
        if case == "mixed metrics":
            specs.append("lexical.length")
        elif case == "mixed rows":
            records.append({"item": "q9", "system": "M0", "output": "one output"})
        elif case == "pointwise metric":
            specs = ["lexical.length"]
        elif case == "no system_b":
            del records[1]["system_b"]
            records[1]["system"] = "M0 alone"
        else:
            records.append({**records[0], "system": "M0 vs M1 (again)"})
        data = write_jsonl(tmp_path / "bad.jsonl", records)
        args = [a for spec in specs for a in ("-m", spec)]
        proc = run_cli("score", str(data), "--allow-failures", *args, "-o",
                       str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"),
                       cwd=tmp_path, env=KEY_ENV)
        assert server.calls == 0
    assert proc.returncode == 2, proc.stderr
    expected = {"mixed metrics": "one run writes one table",
                "mixed rows": "the input mixes 5 pairwise rows",
                "pointwise metric": "use pairwise metrics",
                "no system_b": "needs system_a and system_b",
                "pair twice": "given twice"}[case]
    assert expected in proc.stderr, proc.stderr
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "runs.db").exists()


def test_wide_table_readers_refuse_a_pairwise_table(tmp_path) -> None:
    with ScriptedJudge() as server:
        proc = score(tmp_path, judge_spec(server.url), "pairs.csv")
        assert proc.returncode == 0, proc.stderr
    # (aggregate reads pairwise tables itself: not a wide-table reader of this one)
    for command in (["meta-eval", str(tmp_path / "pairs.csv"), "--human", "human.pref"],
                    ["audit", str(tmp_path / "pairs.csv"), "--human", "human.pref"]):
        refused = run_cli(*command, cwd=tmp_path)
        assert refused.returncode == 2, (command, refused.stderr)
    refused = run_cli("meta-eval", str(tmp_path / "pairs.csv"), "--human", "human.pref")
    assert "pairwise table" in refused.stderr and "meta-eval pairwise" in refused.stderr
    # an old-style wide table of pairs ("X vs Y" systems), no sidecar
    old = tmp_path / "old.csv"
    old.write_text("item,system,judge.pairwise,human.pref\nq1,M0 vs M1,1.0,1\n"
                   "q2,M0 vs M1,0.5,0\nq3,M0 vs M2,0.0,0.5\n")
    refused = run_cli("meta-eval", str(old), "--human", "human.pref", cwd=tmp_path)
    assert refused.returncode == 2 and "looks like a pair ('M0 vs M1')" in refused.stderr


def test_refuse_pairwise_is_one_rule() -> None:
    path = Path("t.csv")
    pairs = pd.DataFrame({"item": ["1", "2"], "system": ["a vs b", "c vs d"]})
    with pytest.raises(InputError, match=r"system.*looks like a pair"):
        refuse_pairwise(path, sidecar=None, frame=pairs)
    with pytest.raises(InputError, match="sidecar says this is a pairwise table"):
        refuse_pairwise(path, sidecar={"table": "pairwise"})
    # a wide table where only some systems have " vs " in their names is a wide table
    mixed = pd.DataFrame({"item": ["1", "2"], "system": ["a vs b", "gpt-4"]})
    refuse_pairwise(path, sidecar=None, frame=mixed)
    refuse_pairwise(path, sidecar={"columns": {}}, frame=mixed.iloc[1:])
    table = load_scores_table(path, frame=mixed.assign(m=[1.0, 2.0]))
    assert list(table.frame["system"]) == ["a vs b", "gpt-4"]


@pytest.mark.slow
def test_kill_and_resume_keeps_the_table_identical(tmp_path) -> None:
    records = [{"item": f"q{n:02d}", "input": "Which is better?", "system_a": "M0",
                "system_b": "M1", "output_a": f"answer {n} q={n % 4}",
                "output_b": f"other {n} q={(n * 7) % 4}", "human": {"pref": n % 2}}
               for n in range(40)]
    data = write_jsonl(tmp_path / "pairs.jsonl", records)
    env = {**os.environ, **KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedJudge(latency=0.02) as server:
        spec = judge_spec(server.url, concurrency="2")
        args = [sys.executable, "-m", "judgebench.cli", "score", str(data), "-m", spec,
                "--store", str(tmp_path / "runs.db"), "--resume"]
        fresh = subprocess.run([*args[:-3], "--store", str(tmp_path / "fresh.db"), "-o",
                                str(tmp_path / "fresh.csv")], env={
                                    **env, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "c2")},
                               capture_output=True, text=True, timeout=300)
        assert fresh.returncode == 0, fresh.stderr
        before = server.calls
        proc = subprocess.Popen([*args, "-o", str(tmp_path / "resumed.csv")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while server.calls - before < 30 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_after = server.calls - before
        assert 30 <= killed_after < 80
        assert not (tmp_path / "resumed.csv").exists()  # nothing half-written
        resumed = subprocess.run([*args, "-o", str(tmp_path / "resumed.csv")], env=env,
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        # answers cached before the kill are not asked again
        assert server.calls - before < 80 + 4
        again = subprocess.run([*args, "-o", str(tmp_path / "again.csv")], env=env,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert "computed 0, reused 40" in again.stderr
    fresh_text = (tmp_path / "fresh.csv").read_text()
    assert (tmp_path / "resumed.csv").read_text() == fresh_text
    assert (tmp_path / "again.csv").read_text() == fresh_text
    assert "tie" in fresh_text and ",a," in fresh_text and ",b," in fresh_text


def test_a_panel_of_pairwise_judges_writes_probabilities(tmp_path) -> None:
    with ScriptedJudge() as server:
        panel = (f"judge.panel:judge=judge.pairwise,models=m1;m2;m3,backend=openai_compat,"
                 f"api_base={server.url},api_key_env=JB_PAIR_KEY,protocol=text,combine=mean")
        proc = score(tmp_path, panel, "panel.jsonl")
        assert proc.returncode == 0, proc.stderr
    panel = column(panel)
    rows = [json.loads(line) for line in (tmp_path / "panel.jsonl").read_text().splitlines()]
    # every member judges alike: a -> 1.0, b -> 0.0, the biased tie -> 0.5, failures empty
    assert [r[panel] for r in rows] == ["1.0", "0.0", "0.5", None, None]
    assert all(r[f"{panel}.ab"] is None and r[f"{panel}.ba"] is None for r in rows)


def test_the_python_api_returns_the_pairwise_table(tmp_path) -> None:
    from judgebench.services.score import score as score_api

    with ScriptedJudge() as server:
        spec = judge_spec(server.url)
        result = score_api(pair_records(), metrics=[spec])
        proc = score(tmp_path, spec, "pairs.csv")
        assert proc.returncode == 0, proc.stderr
    table = result.to_frame()
    on_disk = read_table(tmp_path / "pairs.csv", key=("item", "system_a", "system_b"))
    assert list(table.columns) == list(on_disk.columns)
    for name in table.columns:
        assert ([None if pd.isna(v) else v for v in table[name]]
                == [None if pd.isna(v) else v for v in on_disk[name]]), name
    assert result.run.summary()["table"] == "pairwise"


def test_a_value_that_is_not_a_verdict_is_an_error_not_an_empty_cell() -> None:
    from judgebench.engine.pairwise_table import verdicts_of
    from judgebench.errors import JudgebenchError
    from judgebench.models import Score, Status

    ok = Score(item="q", system="a vs b", metric="x.y", value=0.25, status=Status.OK)
    assert verdicts_of(ok) == ("0.25", None, None)
    with pytest.raises(JudgebenchError, match=r"gave 3\.0 for the pair"):
        verdicts_of(ok.model_copy(update={"value": 3.0}))
    failed = Score(item="q", system="a vs b", metric="judge.pairwise", value=None,
                   status=Status.PARSE_ERROR, extra={"verdict_ab": None, "verdict_ba": "b"})
    assert verdicts_of(failed) == (None, None, "b")
