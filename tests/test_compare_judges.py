"""`judgebench compare-judges` and meta_eval.judge_comparison: every statistic against an
independent implementation (numpy loops, scikit-learn, scipy) on random data with ties, NaN
and extreme magnitudes; then end to end on a pairwise table scored by a scripted loopback
judge with two templates, on a wide table of two rubric judges, and on G-Eval score
distributions read from the store."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer
from scripted_judge import ScriptedJudge

from judgebench.services.compare_judges import compare_judges
from meta_eval.judge_comparison import (
    PairCounts,
    VerdictError,
    aligned,
    compare_distributions,
    compare_labels,
    divergences,
    flip_rate,
    human_flips,
    item_bootstrap,
    js_divergence,
    kappa,
    kl_divergence,
    verdict_codes,
)

KEY_ENV = {"JB_PAIR_KEY": "not-a-secret"}


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in KEY_ENV.items():
        monkeypatch.setenv(k, v)


def with_gaps(rng, values, share=0.15):
    values = np.asarray(values, dtype=float).copy()
    values[rng.random(values.size) < share] = np.nan
    return values


# -- statistics against independent implementations ---------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_flip_rate_and_human_flips_equal_plain_loops(seed) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    scale = [1.0, 1e300, 1e-300, 1e6][seed % 4]
    levels = rng.integers(1, 6, size=(3, n)).astype(float) * scale  # many ties
    a, b, h = (with_gaps(rng, row) for row in levels)
    tolerance = [0.0, scale, 0.5 * scale][seed % 3]
    flips = both = 0
    right = {"neg": 0, "pos": 0, "a": 0, "b": 0, "n": 0}
    for x, y, z in zip(a, b, h, strict=True):
        if math.isnan(x) or math.isnan(y):
            continue
        both += 1
        flips += abs(x - y) > tolerance
        if math.isnan(z):
            continue
        ra, rb = abs(x - z) <= tolerance, abs(y - z) <= tolerance
        right["n"] += 1
        right["neg"] += ra and not rb
        right["pos"] += rb and not ra
        right["a"] += ra
        right["b"] += rb
    value, count = flip_rate(judge_a=a, judge_b=b, tolerance=tolerance)
    assert count == both and value == pytest.approx(flips / both, abs=1e-15)
    found, units = human_flips(human=h, judge_a=a, judge_b=b, tolerance=tolerance)
    assert units == right["n"]
    assert found["negative"] == pytest.approx(right["neg"] / units, abs=1e-15)
    assert found["positive"] == pytest.approx(right["pos"] / units, abs=1e-15)
    assert found["accuracy_a"] == pytest.approx(right["a"] / units, abs=1e-15)
    assert found["accuracy_b"] == pytest.approx(right["b"] / units, abs=1e-15)
    assert found["accuracy_b"] - found["accuracy_a"] == pytest.approx(
        found["positive"] - found["negative"], abs=1e-12)


def test_flip_rate_edge_cases() -> None:
    assert math.isnan(flip_rate(judge_a=np.array([np.nan, 1.0]),
                                judge_b=np.array([1.0, np.nan]))[0])
    # 1e308 and -1e308 differ by inf: a flip, not an overflow warning turned silent
    with np.errstate(over="ignore"):
        assert flip_rate(judge_a=np.array([1e308, 1.0]), judge_b=np.array([-1e308, 1.0]),
                         tolerance=1e300) == (0.5, 2)


@pytest.mark.parametrize("seed", range(6))
def test_kappa_equals_scikit_learn(seed) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(10, 400))
    k = int(rng.integers(2, 6))
    scale = [1, 1e300, 1e-300, -3][seed % 4]
    a = with_gaps(rng, rng.integers(0, k, n))
    b = with_gaps(rng, np.where(rng.random(n) < 0.6, np.nan_to_num(a), rng.integers(0, k, n)))
    a, b = a * scale, b * scale
    value, units = kappa(judge_a=a, judge_b=b)
    both = np.isfinite(a) & np.isfinite(b)
    expected = cohen_kappa_score(a[both].astype(str), b[both].astype(str))
    assert units == int(both.sum())
    assert value == pytest.approx(expected, abs=1e-12)


def test_verdict_codes() -> None:
    codes = verdict_codes(["a", "B", " tie ", None, float("nan"), "", 0.9, 0.1, 0.5, 1, 0,
                           "0.75"])
    assert codes[:3].tolist() == [1.0, -1.0, 0.0] and np.isnan(codes[3:6]).all()
    assert codes[6:].tolist() == [1.0, -1.0, 0.0, 1.0, -1.0, 1.0]
    for bad, row in ((["a", "maybe"], 1), ([1.5], 0), ([True], 0), (["a", "b", -0.1], 2)):
        with pytest.raises(VerdictError) as caught:
            verdict_codes(bad)
        assert caught.value.row == row


def random_distribution(rng, labels):
    chosen = [str(x) for x in labels if rng.random() < 0.8] or [str(labels[0])]
    weights = rng.random(len(chosen))
    weights[rng.random(len(chosen)) < 0.3] = 0.0  # zeros inside the support too
    if weights.sum() == 0:
        weights[0] = 1.0
    return dict(zip(chosen, (weights * rng.choice([1.0, 1e-200, 1e200])).tolist(),
                    strict=True))


@pytest.mark.parametrize("seed", range(5))
def test_kl_and_js_equal_scipy(seed) -> None:
    rng = np.random.default_rng(200 + seed)
    p = [random_distribution(rng, range(1, 6)) for _ in range(60)]
    q = [random_distribution(rng, range(1, 6)) for _ in range(60)]
    q[0] = {"9": 1.0}  # disjoint supports: KL is large but finite, JS is ln 2
    kl, js = divergences(p=p, q=q, epsilon=1e-12)
    for u, (pu, qu) in enumerate(zip(p, q, strict=True)):
        support = sorted(set(pu) | set(qu))
        x = np.array([pu.get(k, 0.0) for k in support], dtype=float)
        y = np.array([qu.get(k, 0.0) for k in support], dtype=float)
        x, y = x / x.sum(), y / y.sum()
        eps, size = 1e-12, len(support)
        xs, ys = (x + eps) / (1 + size * eps), (y + eps) / (1 + size * eps)
        assert kl[u] == pytest.approx(float(rel_entr(xs, ys).sum()), rel=1e-9, abs=1e-12)
        assert js[u] == pytest.approx(float(jensenshannon(x, y, base=math.e)) ** 2,
                                      rel=1e-9, abs=1e-12)
    assert js[0] == pytest.approx(math.log(2))
    x0 = np.array(list(aligned(p=p[0], q=p[0])[0]))
    entropy = -float(np.sum(x0[x0 > 0] * np.log(x0[x0 > 0])))
    assert kl[0] == pytest.approx(math.log(1 / 1e-12) - entropy, rel=1e-6)
    same = aligned(p={"1": 0.2, "2": 0.8}, q={"2": 4.0, "1": 1.0})
    assert kl_divergence(p=same[0], q=same[1]) == pytest.approx(0.0, abs=1e-15)
    assert js_divergence(p=same[0], q=same[1]) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="not a probability"):
        aligned(p={"1": -0.1, "2": 1.1}, q={"1": 1.0})
    with pytest.raises(ValueError, match="no mass"):
        aligned(p={"1": 0.0}, q={"1": 1.0})


def test_item_bootstrap_resamples_whole_items() -> None:
    rng = np.random.default_rng(7)
    items = [f"i{k}" for k in rng.integers(0, 12, 90)]
    values = with_gaps(rng, rng.random(90))
    present = np.isfinite(values)

    def weighted_mean(weights):
        w = weights[present]
        return float(w @ values[present] / w.sum()) if w.sum() else math.nan

    def mean(rows):
        x = values[rows]
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else math.nan

    low, high = item_bootstrap(weighted_mean, items=items, resamples=400, seed=3, ci=0.9)
    # the same draws by hand: item labels sorted, each drawn item brings all its rows
    labels = sorted(set(items))
    draws = np.random.default_rng(3)
    by_hand = []
    for _ in range(400):
        drawn = draws.integers(0, len(labels), size=len(labels))
        rows = [r for k in drawn for r, item in enumerate(items) if item == labels[k]]
        by_hand.append(mean(np.array(rows)))
    expected = np.quantile(np.array(by_hand), [0.05, 0.95])
    assert (low, high) == pytest.approx(tuple(expected), rel=1e-12)
    assert low <= mean(np.arange(90)) <= high
    assert item_bootstrap(weighted_mean, items=items, resamples=0) == (None, None)
    again = compare_labels(judge_a=values, judge_b=values[::-1].copy(), items=items,
                           bootstrap=50, seed=1)
    assert again == compare_labels(judge_a=values, judge_b=values[::-1].copy(), items=items,
                                   bootstrap=50, seed=1)  # seeded: the same intervals


@pytest.mark.parametrize("seed", range(6))
def test_bootstrap_statistics_on_weights_equal_repeated_rows(seed) -> None:
    """What the bootstrap computes from draw counts is the statistic of the rows repeated:
    flips by loops, kappa by scikit-learn with sample_weight and by cohen_kappa on the
    repeated rows."""
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(5, 200))
    a = with_gaps(rng, rng.integers(1, 4, n))
    b = with_gaps(rng, np.where(rng.random(n) < 0.5, np.nan_to_num(a), rng.integers(1, 4, n)))
    h = with_gaps(rng, rng.integers(1, 4, n))
    weights = rng.integers(0, 4, n).astype(float)
    rows = np.repeat(np.arange(n), weights.astype(int))
    assert flip_rate(judge_a=a, judge_b=b, weights=weights)[0] == pytest.approx(
        flip_rate(judge_a=a[rows], judge_b=b[rows])[0], rel=1e-12, nan_ok=True)
    found = human_flips(human=h, judge_a=a, judge_b=b, weights=weights)[0]
    plain = human_flips(human=h[rows], judge_a=a[rows], judge_b=b[rows])[0]
    assert found == pytest.approx(plain, rel=1e-12, nan_ok=True)
    counted = PairCounts(a, b)
    assert counted(np.ones(n))[0] == pytest.approx(kappa(judge_a=a, judge_b=b)[0], abs=1e-12)
    repeated = kappa(judge_a=a[rows], judge_b=b[rows])[0]
    assert counted(weights)[0] == pytest.approx(repeated, abs=1e-12, nan_ok=True)
    both = np.isfinite(a) & np.isfinite(b) & (weights > 0)
    if len(set(a[both]) | set(b[both])) > 1:
        assert counted(weights)[0] == pytest.approx(cohen_kappa_score(
            a[both], b[both], sample_weight=weights[both]), abs=1e-12)
    only_one = PairCounts(np.array([2.0, 2.0]), np.array([2.0, 2.0]))
    assert math.isnan(only_one(np.ones(2))[0])


def test_compare_distributions_means_and_intervals() -> None:
    p = [{"1": 1.0}, {"1": 0.5, "2": 0.5}, {"2": 1.0}]
    q = [{"1": 1.0}, {"1": 0.5, "2": 0.5}, {"1": 1.0}]
    found = {e.statistic: e for e in compare_distributions(p=p, q=q, items=["x", "y", "z"],
                                                           bootstrap=200, seed=0)}
    assert found["mean_js"].value == pytest.approx(math.log(2) / 3)
    assert found["mean_kl"].n == 3
    assert 0 <= found["mean_js"].ci_low <= found["mean_js"].value <= found["mean_js"].ci_high


# -- end to end --------------------------------------------------------------------------

def score_pairs(tmp_path: Path) -> tuple[Path, str, str]:
    from test_score_pairwise import judge_spec, pair_records, strict_template

    strict = strict_template(tmp_path)
    with ScriptedJudge() as server:
        biased, careful = judge_spec(server.url), judge_spec(server.url, template=str(strict))
        data = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
        proc = run_cli("score", str(data), "--allow-failures", "-m", biased, "-m", careful, "-o",
                       str(tmp_path / "pairs.csv"), "--store", str(tmp_path / "runs.db"),
                       cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    return tmp_path / "pairs.csv", column(biased), column(careful)


def test_compare_two_pairwise_judges_from_a_scored_table(tmp_path) -> None:
    table, biased, careful = score_pairs(tmp_path)
    # by the script: A-first verdicts biased [a, b, a, -, -], strict [a, b, tie, -, -];
    # people [a, b, tie, b, -]; with --human-ties class people's tie is a label to match
    proc = run_cli("compare-judges", str(table), "--a", f"{biased}.ab", "--b",
                   f"{careful}.ab", "--human", "human.pref", "--human-ties", "class",
                   "--bootstrap", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    found = {r["statistic"]: r for r in rows}
    assert found["flip_rate"]["value"] == pytest.approx(1 / 3) and found["flip_rate"]["n"] == 3
    assert found["negative_flips"]["value"] == 0.0
    assert found["positive_flips"]["value"] == pytest.approx(1 / 3)
    assert found["accuracy_a"]["value"] == pytest.approx(2 / 3)
    assert found["accuracy_b"]["value"] == 1.0
    expected_kappa = cohen_kappa_score(["a", "b", "a"], ["a", "b", "tie"])
    assert found["kappa"]["value"] == pytest.approx(expected_kappa)
    assert found["kappa_b_human"]["value"] == pytest.approx(1.0)
    assert all(r["table"] == "pairwise" and r["judge_a"] == f"{biased}.ab" for r in rows)
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in rows)
    # the combined verdicts agree (the conservative rule hides the position bias)
    combined = compare_judges(table, a=biased, b=careful, bootstrap=0)
    first = combined.estimates[0]
    assert (first.statistic, first.value, first.n) == ("flip_rate", 0.0, 3)
    # the per-order columns of one judge: a flip is a position-biased verdict
    orders = compare_judges(table, a=f"{biased}.ab", b=f"{biased}.ba", bootstrap=0)
    assert orders.estimates[0].value == pytest.approx(1 / 3)  # q3 of q1..q3 (q4: ba only)
    assert orders.estimates[0].n == 3


def test_compare_judges_refuses_bad_input(tmp_path) -> None:
    table, biased, _ = score_pairs(tmp_path)
    same = run_cli("compare-judges", str(table), "--a", biased, "--b", biased)
    assert same.returncode == 2 and "same column" in same.stderr
    missing = run_cli("compare-judges", str(table), "--a", biased, "--b", "nope")
    assert missing.returncode == 2 and "no column 'nope'" in missing.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("item,system_a,system_b,j1,j2\n1,x,y,a,b\n2,x,y,maybe,b\n")
    refused = run_cli("compare-judges", str(bad), "--a", "j1", "--b", "j2")
    assert refused.returncode == 2
    assert "bad.csv, line 3, field 'j1'" in refused.stderr and "'maybe'" in refused.stderr
    twice = tmp_path / "twice.csv"
    twice.write_text("item,system_a,system_b,j1,j2\n1,x,y,a,b\n1,x,y,a,b\n")
    refused = run_cli("compare-judges", str(twice), "--a", "j1", "--b", "j2")
    assert refused.returncode == 2 and "duplicate key" in refused.stderr
    old = tmp_path / "old.csv"
    old.write_text("item,system,j1,j2\n1,x vs y,1,0\n2,x vs y,0,0\n")
    refused = run_cli("compare-judges", str(old), "--a", "j1", "--b", "j2")
    assert refused.returncode == 2 and "looks like a pair" in refused.stderr
    absent = run_cli("compare-judges", str(tmp_path / "none.csv"), "--a", "j1", "--b", "j2")
    assert absent.returncode == 2


def test_two_rubric_judges_on_a_wide_table(tmp_path) -> None:
    records = summeval_records(24)
    for r in records:  # integer human labels on the judges' 1-5 scale
        r["human"] = {"label": float(1 + int(r["human"]["coherence"]) % 5),
                      "coherence": r["human"]["coherence"]}
    data = write_jsonl(tmp_path / "gens.jsonl", records)
    with FaultServer(reply="Feedback: fine. [RESULT] {score}") as server:
        specs = [f"judge.rubric:backend=openai_compat,model={m},api_base={server.url},"
                 "api_key_env=JB_PAIR_KEY,protocol=text" for m in ("judge-one", "judge-two")]
        proc = run_cli("score", str(data), "--allow-failures", "-m", specs[0], "-m", specs[1], "-o",
                       str(tmp_path / "scores.csv"), "--store", str(tmp_path / "runs.db"),
                       cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    import pandas as pd

    specs = [column(s) for s in specs]
    frame = pd.read_csv(tmp_path / "scores.csv")
    a, b, h = (frame[c].to_numpy(dtype=float) for c in (*specs, "human.label"))
    proc = run_cli("compare-judges", str(tmp_path / "scores.csv"), "--a", specs[0], "--b",
                   specs[1], "--human", "human.label", "--json", "--bootstrap", "100")
    assert proc.returncode == 0, proc.stderr
    found = {r["statistic"]: r for r in json.loads(proc.stdout)}
    assert found["flip_rate"]["value"] == pytest.approx(float(np.mean(a != b)))
    assert 0 < found["flip_rate"]["value"] < 1  # two models, two hashes: some agree
    assert found["kappa"]["value"] == pytest.approx(cohen_kappa_score(a, b))
    right_a, right_b = a == h, b == h
    assert found["negative_flips"]["value"] == pytest.approx(np.mean(right_a & ~right_b))
    assert found["positive_flips"]["value"] == pytest.approx(np.mean(~right_a & right_b))
    assert found["kappa_a_human"]["value"] == pytest.approx(cohen_kappa_score(a, h))
    # a tolerance of one point: scores one apart agree
    loose = compare_judges(tmp_path / "scores.csv", a=specs[0], b=specs[1], tolerance=1.0,
                           bootstrap=0)
    assert loose.estimates[0].value == pytest.approx(float(np.mean(np.abs(a - b) > 1)))
    # SummEval's averaged coherence is not categorical: no flips against it, and a note
    averaged = run_cli("compare-judges", str(tmp_path / "scores.csv"), "--a", specs[0],
                       "--b", specs[1], "--human", "human.coherence", "--json",
                       "--bootstrap", "0")
    assert averaged.returncode == 0, averaged.stderr
    names = {r["statistic"] for r in json.loads(averaged.stdout)}
    assert "negative_flips" not in names and "accuracy_a" not in names
    assert "not categorical" in averaged.stderr


def test_geval_distributions_from_the_store(tmp_path) -> None:
    data = write_jsonl(tmp_path / "gens.jsonl", summeval_records(20))
    with FaultServer(reply="{score}") as server:
        specs = [f"judge.geval:backend=openai_compat,model={m},api_base={server.url},"
                 "api_key_env=JB_PAIR_KEY,criterion=fluency,steps=1. Rate fluency."
                 for m in ("judge-one", "judge-two")]
        proc = run_cli("score", str(data), "--allow-failures", "-m", specs[0], "-m", specs[1], "-o",
                       str(tmp_path / "scores.csv"), "--store", str(tmp_path / "runs.db"),
                       cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    specs = [column(s) for s in specs]
    proc = run_cli("compare-judges", str(tmp_path / "scores.csv"), "--a", specs[0], "--b",
                   specs[1], "--store", str(tmp_path / "runs.db"), "--tolerance", "0.5",
                   "--json", "--bootstrap", "100")
    assert proc.returncode == 0, proc.stderr
    found = {r["statistic"]: r for r in json.loads(proc.stdout)}
    import sqlite3

    db = sqlite3.connect(tmp_path / "runs.db")
    signatures = json.loads((tmp_path / "scores.csv.meta.json").read_text())["columns"]
    probs = [{(item, system): json.loads(extra)["probs"] for item, system, extra in
              db.execute("SELECT item, system, extra FROM scores WHERE signature = ?",
                         (signatures[spec]["signature"],))} for spec in specs]
    assert len(probs[0]) == 20 and set(probs[0]) == set(probs[1])
    kl, js = [], []
    for key, p in probs[0].items():
        q = probs[1][key]
        support = sorted(set(p) | set(q))
        x = np.array([p.get(k, 0.0) for k in support])
        y = np.array([q.get(k, 0.0) for k in support])
        x, y = x / x.sum(), y / y.sum()
        xs, ys = (x + 1e-12) / (1 + len(x) * 1e-12), (y + 1e-12) / (1 + len(y) * 1e-12)
        kl.append(float(rel_entr(xs, ys).sum()))
        js.append(float(jensenshannon(x, y, base=math.e)) ** 2)
    assert found["mean_kl"]["n"] == 20 and found["mean_kl"]["unit"] == "nats"
    assert found["mean_kl"]["value"] == pytest.approx(float(np.mean(kl)), rel=1e-9)
    assert found["mean_js"]["value"] == pytest.approx(float(np.mean(js)), rel=1e-9)
    # the server puts 0.6 on its score and 0.1 on each other: KL is 0 or 0.5 ln 6 per sample
    assert all(v == pytest.approx(0.0, abs=1e-9) or v == pytest.approx(0.5 * math.log(6),
                                                                        rel=1e-6) for v in kl)
    assert 0 < found["mean_kl"]["value"] < 0.5 * math.log(6)
    assert found["mean_kl"]["epsilon"] == 1e-12
    # without the store, or with a store that holds no distributions: no KL rows, a note
    plain = run_cli("compare-judges", str(tmp_path / "scores.csv"), "--a", specs[0], "--b",
                    specs[1], "--tolerance", "0.5", "--json", "--bootstrap", "0")
    assert "mean_kl" not in {r["statistic"] for r in json.loads(plain.stdout)}


def test_geval_sampling_distributions_are_empirical(tmp_path) -> None:
    data = write_jsonl(tmp_path / "gens.jsonl", summeval_records(8))
    with FaultServer(reply="{score}") as server:
        specs = [f"judge.geval:backend=openai_compat,model={m},api_base={server.url},"
                 "api_key_env=JB_PAIR_KEY,criterion=fluency,steps=1. Rate fluency.,"
                 "logprobs=false,n=6" for m in ("judge-one", "judge-two")]
        rubric = (f"judge.rubric:backend=openai_compat,model=judge-one,api_base={server.url},"
                  "api_key_env=JB_PAIR_KEY,protocol=text")
        proc = run_cli("score", str(data), "--allow-failures",
                       *[a for s in specs for a in ("-m", s)], "-o", str(tmp_path / "scores.csv"),
                       "--store", str(tmp_path / "runs.db"), cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
        server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
        proc = run_cli("score", str(data), "--allow-failures", "-m", rubric, "-m", specs[0], "-o",
                       str(tmp_path / "mixed.csv"), "--store", str(tmp_path / "runs.db"),
                       "--resume", cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    specs, rubric = [column(s) for s in specs], column(rubric)
    result = compare_judges(tmp_path / "scores.csv", a=specs[0], b=specs[1],
                            store=tmp_path / "runs.db", tolerance=0.5, bootstrap=0)
    found = {e.statistic: e for e in result.estimates}
    import sqlite3

    db = sqlite3.connect(tmp_path / "runs.db")
    meta = json.loads((tmp_path / "scores.csv.meta.json").read_text())["columns"]
    samples = [{(i, s): json.loads(e)["samples"] for i, s, e in db.execute(
        "SELECT item, system, extra FROM scores WHERE signature = ?",
        (meta[spec]["signature"],))} for spec in specs]
    kl = []
    for key, drawn in samples[0].items():
        other = samples[1][key]
        support = sorted({*drawn, *other})
        x = np.array([drawn.count(v) / len(drawn) for v in support])
        y = np.array([other.count(v) / len(other) for v in support])
        xs, ys = (x + 1e-12) / (1 + len(x) * 1e-12), (y + 1e-12) / (1 + len(y) * 1e-12)
        kl.append(float(rel_entr(xs, ys).sum()))
    assert found["mean_kl"].n == 8
    assert found["mean_kl"].value == pytest.approx(float(np.mean(kl)), rel=1e-9)
    assert result.distributions["matched"] == 8
    # a rubric judge stores no distribution: no KL/JS, and a note says so
    mixed = compare_judges(tmp_path / "mixed.csv", a=rubric, b=specs[0],
                           store=tmp_path / "runs.db", bootstrap=0)
    assert "mean_kl" not in {e.statistic for e in mixed.estimates}
    assert any("no matched score distributions" in note for note in mixed.notes)
