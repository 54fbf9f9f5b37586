"""`judgebench diff A B` (issue 28, part 2): two stores scored by the same judge spec on one
loopback server address, the second server giving other answers (``--score-salt``), compared
against flips, negative flips, winners and clusters computed by hand from the two `score -o`
tables (pandas), and `--fail-on drift` exiting 4."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer, free_port

REPLY = "Feedback: ok. [RESULT] {score}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Stores A and B of one judge spec (+ lexical.length) over 64 SummEval rows, B's server
    answering differently, a human table whose integer label is A's judge score on even rows
    and B's on odd rows, and both -o tables."""
    tmp = tmp_path_factory.mktemp("diff")
    data = write_jsonl(tmp / "in.jsonl", summeval_records(64))
    port = free_port()
    out = {}
    for side, salt in (("a", ()), ("b", ("--score-salt", "other-judge"))):
        with FaultServer(*salt, "--fingerprint", f"fp_{side}", port=port,
                         reply=REPLY) as server:
            spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
                    "protocol=text,max_attempts=1")
            proc = run_cli("score", str(data), "-m", spec, "-m", "lexical.length", "-o",
                           str(tmp / f"{side}.csv"), "--store", str(tmp / f"{side}.db"),
                           "--cache", str(tmp / f"cache-{side}"), "--workers", "1", cwd=tmp)
            assert proc.returncode == 0, proc.stderr
    a = pd.read_csv(tmp / "a.csv", dtype={"item": str, "system": str})
    b = pd.read_csv(tmp / "b.csv", dtype={"item": str, "system": str})
    judge = column(spec)
    assert (a[["item", "system"]].to_numpy() == b[["item", "system"]].to_numpy()).all()
    human = np.where(np.arange(len(a)) % 2 == 0, a[judge], b[judge])
    # human.mix: A's judge score, ties broken by length, so that A's judge leads and B's
    # (other answers) falls behind length: the clusters swap
    length = a["lexical.length"].to_numpy(dtype=float)
    mix = a[judge].to_numpy(dtype=float) + length / (length.max() + 1)
    labels = a[["item", "system"]].assign(**{"human.label": human, "human.mix": mix})
    labels.to_csv(tmp / "human.csv", index=False)
    out.update(tmp=tmp, a=a, b=b, judge=judge, human=human, mix=mix)
    return out


def _diff(runs: dict, *args: str):
    tmp = runs["tmp"]
    return run_cli("diff", str(tmp / "a.db"), str(tmp / "b.db"), *args, cwd=tmp)


def test_flips_and_negative_flips_match_a_hand_count(runs) -> None:
    proc = _diff(runs, "--metric", runs["judge"], "--human", "human.label", "--human-table",
                 str(runs["tmp"] / "human.csv"), "--bootstrap", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    (col,) = result["columns"]
    est = {e["statistic"]: e for e in col["estimates"]}
    ja, jb = runs["a"][runs["judge"]].to_numpy(), runs["b"][runs["judge"]].to_numpy()
    h = runs["human"]
    assert col["units"] == len(ja) == 64
    assert est["flip_rate"]["value"] == pytest.approx(np.mean(ja != jb))
    assert 0 < est["flip_rate"]["value"] < 1
    assert est["negative_flips"]["value"] == pytest.approx(np.mean((ja == h) & (jb != h)))
    assert est["positive_flips"]["value"] == pytest.approx(np.mean((ja != h) & (jb == h)))
    # KL and JS between the two score histograms, by scipy
    support = sorted(set(ja) | set(jb))
    p = np.array([np.sum(ja == v) for v in support], dtype=float) / len(ja)
    q = np.array([np.sum(jb == v) for v in support], dtype=float) / len(jb)
    js = scipy.spatial.distance.jensenshannon(p, q) ** 2
    assert col["js"] == pytest.approx(js, abs=1e-12)
    if (q > 0).all():
        assert col["kl"] == pytest.approx(scipy.stats.entropy(p, q), rel=1e-9)
    # the winner: the system with the highest mean judge score on each side
    for side, frame in (("a", runs["a"]), ("b", runs["b"])):
        means = frame.groupby("system")[runs["judge"]].mean()
        assert col[f"winner_{side}"] == sorted(means[means == means.max()].index)[0]
    # per fingerprint: every unit answered by fp_a on A and fp_b on B
    fa = json.dumps({"model": "judge", "revision": "judge", "system_fingerprint": "fp_a"},
                    sort_keys=True)
    fb = fa.replace("fp_a", "fp_b")
    assert col["fingerprints"] == {"a": {fa: 64}, "b": {fb: 64}}
    assert col["flips_by_fingerprint"] == [{"fingerprint_a": fa, "fingerprint_b": fb,
                                            "units": 64,
                                            "flip_rate": pytest.approx(np.mean(ja != jb))}]


def test_statistic_changes_and_clusters_match_meta_eval_on_the_tables(runs) -> None:
    from meta_eval import evaluate, significance_clusters

    proc = _diff(runs, "--human", "human.mix", "--human-table",
                 str(runs["tmp"] / "human.csv"), "--statistic", "kendall", "--bootstrap",
                 "200", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    by = {c["column_a"]: c for c in result["columns"]}
    assert set(by) == {runs["judge"], "lexical.length"}
    items = sorted(runs["a"]["item"].unique())
    systems = sorted(runs["a"]["system"].unique())

    def matrix(frame: pd.DataFrame, name: str, values=None) -> np.ndarray:
        wide = frame.assign(v=frame[name] if values is None else values).pivot(
            index="item", columns="system", values="v")
        return wide.loc[items, systems].to_numpy(dtype=float)

    h = matrix(runs["a"], runs["judge"], runs["mix"])
    clusters = {}
    for side in ("a", "b"):
        frame = runs[side]
        metrics = {c: matrix(frame, c) for c in (runs["judge"], "lexical.length")}
        for c, m in metrics.items():
            (change,) = by[c]["statistics"]
            assert change[f"value_{side}"] == pytest.approx(evaluate("kendall", human=h,
                                                                     metric=m).value)
        ranking = significance_clusters("kendall", human=h, metrics=metrics, seed=0,
                                        resamples=200)
        clusters[side] = {c: ranking.cluster_of(c) for c in metrics}
        for c in metrics:
            assert by[c][f"cluster_{side}"] == clusters[side][c]
    moved = [f"{c}: kendall cluster {clusters['a'][c]} -> {clusters['b'][c]}"
             for c in clusters["a"] if clusters["a"][c] != clusters["b"][c]]
    # lexical.length scores the same texts alike in both stores: its move is the judge's doing
    unchanged = [m for m in moved if m.startswith("lexical.length")]
    assert [m for m in result["moved"] if "cluster" in m] == [m for m in moved
                                                               if m not in unchanged]
    assert result["moved_by_others"] == [
        f"{m} (its scores did not change: other columns' scores moved the clusters)"
        for m in unchanged]
    assert clusters["a"] == {runs["judge"]: 1, "lexical.length": 2}
    assert clusters["b"] == {runs["judge"]: 2, "lexical.length": 1}
    assert result["drift"] is True
    (judge_change,) = by[runs["judge"]]["statistics"]
    assert judge_change["delta"] < 0 and judge_change["significant"]
    # lexical.length is the same in both runs: no flip, no change, a CI of exactly 0
    length = by["lexical.length"]
    assert {e["statistic"]: e["value"] for e in length["estimates"]}["flip_rate"] == 0
    assert length["statistics"][0]["delta"] == 0 and not length["statistics"][0]["significant"]
    assert length["kl"] == pytest.approx(0, abs=1e-9) and length["js"] == 0


def test_fail_on_drift_exits_4_and_the_same_store_does_not(runs) -> None:
    tmp = runs["tmp"]
    moved = _diff(runs, "--metric", runs["judge"], "--fail-on", "drift", "--fail-on",
                  "flips>0.1", "--bootstrap", "0")
    winners = [runs[s].groupby("system")[runs["judge"]].mean().idxmax() for s in "ab"]
    flips = float(np.mean(runs["a"][runs["judge"]] != runs["b"][runs["judge"]]))
    expect_fail = winners[0] != winners[1] or flips > 0.1
    assert moved.returncode == (4 if expect_fail else 0), moved.stderr
    assert ("check failed: flips>0.1" in moved.stderr) == (flips > 0.1)
    same = run_cli("diff", str(tmp / "a.db"), str(tmp / "a.db"), "--fail-on", "drift",
                   "--bootstrap", "0", cwd=tmp)
    assert same.returncode == 0, same.stderr
    assert "moved: nothing" in same.stdout and "drift: no" in same.stdout
    bad = _diff(runs, "--fail-on", "flaky")
    assert bad.returncode == 2 and "--fail-on" in bad.stderr


def test_two_tables_and_errors_name_the_file(runs) -> None:
    tmp = runs["tmp"]
    proc = run_cli("diff", str(tmp / "a.csv"), str(tmp / "b.csv"), "--metric", runs["judge"],
                   "--bootstrap", "0", "--json", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    (col,) = json.loads(proc.stdout)["columns"]
    ja, jb = runs["a"][runs["judge"]], runs["b"][runs["judge"]]
    assert col["estimates"][0]["value"] == pytest.approx(float(np.mean(ja != jb)))
    assert col["fingerprints"] == {}
    missing = run_cli("diff", str(tmp / "a.db"), str(tmp / "b.db"), "--human", "human.x",
                      cwd=tmp)
    assert missing.returncode == 2 and "--human-table" in missing.stderr
    assert "a.db" in missing.stderr
    assert not math.isnan(col["js"])


def test_pairwise_tables_flip_verdicts_and_move_the_winner(tmp_path) -> None:
    rng = np.random.default_rng(5)
    pairs = [(f"i{i}", a, b) for i in range(30) for a, b in (("x", "y"), ("x", "z"),
                                                            ("y", "z"))]
    keys = pd.DataFrame(pairs, columns=["item", "system_a", "system_b"])
    va = rng.choice(["a", "b", "tie"], size=len(keys), p=[0.6, 0.3, 0.1])
    vb = np.where(rng.random(len(keys)) < 0.3, rng.choice(["a", "b", "tie"], len(keys)), va)
    vb[keys["system_b"].to_numpy() == "z"] = "b"  # B: z wins every pair it is in
    people = np.where(rng.random(len(keys)) < 0.7, va, "b")
    keys.assign(judge=va, **{"human.pref": people}).to_csv(tmp_path / "a.csv", index=False)
    keys.assign(judge=vb).to_csv(tmp_path / "b.csv", index=False)
    proc = run_cli("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--human",
                   "human.pref", "--bootstrap", "0", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["table"] == "pairwise"
    (col,) = result["columns"]
    est = {e["statistic"]: e["value"] for e in col["estimates"]}
    assert est["flip_rate"] == pytest.approx(np.mean(va != vb))
    kept = people != "tie"  # people's ties are left out (--human-ties drop)
    assert est["negative_flips"] == pytest.approx(
        np.mean(((va == people) & (vb != people))[kept]))

    def winner(verdicts: np.ndarray) -> str:
        wins = {"x": 0, "y": 0, "z": 0}
        for (_, sa, sb), v in zip(pairs, verdicts, strict=True):
            if v != "tie":
                wins[sa if v == "a" else sb] += 1
        best = max(wins.values())
        return sorted(s for s, w in wins.items() if w == best)[0]

    assert (col["winner_a"], col["winner_b"]) == (winner(va), winner(vb))
    assert winner(va) != "z" and winner(vb) == "z"
    assert result["moved"] == [f"judge: winner {winner(va)} -> z"]


def test_a_column_can_be_named_by_its_signature(runs) -> None:
    import sqlite3

    tmp = runs["tmp"]
    with sqlite3.connect(tmp / "a.db") as conn:
        (signature,) = conn.execute("SELECT DISTINCT signature FROM scores WHERE metric ="
                                    " 'judge.rubric'").fetchone()
    proc = run_cli("diff", str(tmp / "a.db"), str(tmp / "b.db"), "--column-a", signature,
                   "--column-b", signature, "--bootstrap", "0", "--json", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    (col,) = json.loads(proc.stdout)["columns"]
    ja, jb = runs["a"][runs["judge"]], runs["b"][runs["judge"]]
    assert col["column_a"] == signature
    assert col["estimates"][0]["value"] == pytest.approx(float(np.mean(ja != jb)))
    half = run_cli("diff", str(tmp / "a.db"), str(tmp / "b.db"), "--column-a", signature,
                   cwd=tmp)
    assert half.returncode == 2 and "--column-b" in half.stderr


def test_a_column_whose_scores_did_not_change_is_listed_apart(tmp_path) -> None:
    """B replaces m1's scores with noise; m2 and m3 are the same bytes in both tables. m2's
    cluster changes only because m1 fell: it is listed apart, saying its scores did not
    change, while m1's own move is in `moved`; drift still says yes."""
    rng = np.random.default_rng(0)
    items, systems = 40, 4
    frame = pd.DataFrame({"item": np.repeat([f"d{i}" for i in range(items)], systems),
                          "system": np.tile([f"s{j}" for j in range(systems)], items)})
    human = rng.normal(size=len(frame))
    frame["human.q"] = human
    frame["m1"] = human + rng.normal(scale=0.05, size=len(frame))
    frame["m2"] = human + rng.normal(scale=0.8, size=len(frame))
    frame["m3"] = rng.normal(size=len(frame))
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.assign(m1=rng.normal(size=len(frame))).to_csv(tmp_path / "b.csv", index=False)
    proc = run_cli("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--human",
                   "human.q", "--statistic", "pearson", "--bootstrap", "100", "--json",
                   check=True)
    result = json.loads(proc.stdout)
    clusters = {c["column_a"]: (c["cluster_a"], c["cluster_b"]) for c in result["columns"]}
    assert clusters["m1"][0] == 1 and clusters["m1"][1] > 1
    assert clusters["m2"] == (2, 1)
    assert f"m1: pearson cluster 1 -> {clusters['m1'][1]}" in result["moved"]
    assert not any(m.startswith(("m2", "m3")) for m in result["moved"])
    assert ("m2: pearson cluster 2 -> 1 (its scores did not change: other columns' scores "
            "moved the clusters)") in result["moved_by_others"]
    assert all(m.startswith(("m2", "m3")) for m in result["moved_by_others"])
    assert result["drift"]
    text = run_cli("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--human",
                   "human.q", "--statistic", "pearson", "--bootstrap", "100",
                   check=True).stdout
    assert "moved by the others (scores unchanged): m2: pearson cluster 2 -> 1" in text
