"""`judgebench meta-eval pairwise PAIRS --bootstrap 1000` on 100,000 pairs x 5 judges.

Data (synthetic, seeded): 100,000 pairs over 20,000 items (5 pairs per item), a human
preference (a/b/tie, 10% ties, 2% missing) and 5 judges with both orders (`<j>.ab`,
`<j>.ba`: the human label flipped with a judge-specific error rate, a first-position bias
in .ab, 5% ties, 1% missing), written as one CSV.

Ours: the whole command as a fresh process (`python -c "from judgebench.cli import main;
main()" meta-eval pairwise T --human human.preference --bootstrap 1000 --json`): start-up,
CSV read, label checks, 8 statistics x 5 judges, 1,000 item-bootstrap resamples, JSON out.
Its wall time and peak RSS (getrusage of the child).

Reference: a pandas/numpy computation of the same numbers in this process, as a numpy user
would write it: every statistic by boolean masks over the rows (scikit-learn's
cohen_kappa_score for the kappas), and the 95% CI of `accuracy` of every judge from per-item
counts of right and scored verdicts, each resample's totals a matrix product of its item
counts with them (the same item draws). (Until issue 29 the reference expanded each
resample into its rows in a Python loop: 206 s, not what a user would write.) The script
asserts that every value and every one of
those CIs agree (to 1e-9) before printing any time.

    .venv/bin/python benchmarks/bench_meta_eval_pairwise.py [--pairs 100000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from meta_eval.pairwise_eval import _CELLS  # noqa: E402  (the bootstrap's block size)

JUDGES = 5
RESAMPLES = 1000
FLIP = {"a": "b", "b": "a", "tie": "tie"}


def synthetic(pairs: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    human = rng.choice(["a", "b", "tie"], size=pairs, p=[0.45, 0.45, 0.10]).astype(object)
    human[rng.random(pairs) < 0.02] = None
    frame = {"item": [f"q{k // 5:06d}" for k in range(pairs)], "system_a": "m1",
             "system_b": "m2", "human.preference": human}
    base = np.where(pd.isna(human), "a", human)
    for j in range(JUDGES):
        for order, bias in (("ab", 0.08), ("ba", 0.0)):
            wrong = rng.random(pairs) < 0.1 + 0.05 * j
            verdict = np.where(wrong, [FLIP[v] for v in base], base).astype(object)
            verdict[rng.random(pairs) < bias] = "a"
            verdict[rng.random(pairs) < 0.05] = "tie"
            verdict[rng.random(pairs) < 0.01] = None
            frame[f"judge{j}.{order}"] = verdict
    return pd.DataFrame(frame)


def plain_statistics(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Every statistic (ties: drop) by masks over the rows."""
    from sklearn.metrics import cohen_kappa_score

    out = {}
    h = frame["human.preference"]
    for j in range(JUDGES):
        ab, ba = frame[f"judge{j}.ab"], frame[f"judge{j}.ba"]
        scored_ab = h.notna() & (h != "tie") & ab.notna()
        scored_ba = h.notna() & (h != "tie") & ba.notna()
        both = scored_ab & scored_ba
        orders = ab.notna() & ba.notna()
        name = f"judge{j}"
        out[(name, "accuracy-ab")] = (ab[scored_ab] == h[scored_ab]).mean()
        out[(name, "accuracy-ba")] = (ba[scored_ba] == h[scored_ba]).mean()
        out[(name, "accuracy")] = (out[(name, "accuracy-ab")] + out[(name, "accuracy-ba")]) / 2
        out[(name, "both-correct")] = ((ab[both] == h[both]) & (ba[both] == h[both])).mean()
        out[(name, "consistency")] = (ab[orders] == ba[orders]).mean()
        verdicts = pd.concat([ab.dropna(), ba.dropna()])
        out[(name, "tie-rate")] = (verdicts == "tie").mean()
        out[(name, "kappa-orders")] = cohen_kappa_score(ab[orders], ba[orders])
        combined = ab.where(ba.isna() | (ab == ba), "tie").where(ab.notna(), ba)
        gold = h.notna() & (h != "tie") & combined.notna()
        out[(name, "kappa")] = cohen_kappa_score(combined[gold], h[gold])
    return out


def plain_accuracy_ci(frame: pd.DataFrame, seed: int = 0) -> dict[str, tuple[float, float]]:
    """95% percentile CI of each judge's accuracy, as a numpy user would write it: per item,
    the number of right and of scored verdicts of each judge and order (`np.bincount`);
    each resample's totals are its item counts times those (a matrix product, exact for
    these integers), for the same item draws as the bootstrap's."""
    items, item_names = pd.factorize(frame["item"])
    n_items = len(item_names)
    h = frame["human.preference"].to_numpy(dtype=object)
    decided = pd.notna(h) & (h != "tie")
    columns = []
    for j in range(JUDGES):
        for order in ("ab", "ba"):
            v = frame[f"judge{j}.{order}"].to_numpy(dtype=object)
            scored = decided & pd.notna(v)
            columns += [np.bincount(items, weights=scored & (v == h), minlength=n_items),
                        np.bincount(items, weights=scored, minlength=n_items)]
    per_item = np.stack(columns, axis=1)  # (items, judges x orders x (right, scored))
    rng = np.random.default_rng(seed)
    values = np.empty((RESAMPLES, JUDGES))
    step = max(1, _CELLS // n_items)
    done = 0
    while done < RESAMPLES:
        k = min(step, RESAMPLES - done)
        draws = rng.integers(0, n_items, size=(k, n_items))
        counts = np.bincount((draws + n_items * np.arange(k)[:, None]).ravel(),
                             minlength=k * n_items).reshape(k, n_items).astype(float)
        totals = (counts @ per_item).reshape(k, JUDGES, 2, 2)
        accuracy = totals[..., 0] / totals[..., 1]  # (k, judges, orders)
        values[done:done + k] = (accuracy[..., 0] + accuracy[..., 1]) / 2
        done += k
    return {f"judge{j}": tuple(np.quantile(values[:, j], [0.025, 0.975]))
            for j in range(JUDGES)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    frame = synthetic(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs.csv"
        frame.to_csv(path, index=False)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins")])}
        command = [sys.executable, "-c", "import sys; from judgebench.cli import main; "
                   "main(sys.argv[1:])", "meta-eval", "pairwise", str(path), "--human",
                   "human.preference", "--bootstrap", str(RESAMPLES), "--json"]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        ours_s = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = json.loads(proc.stdout)
    start = time.perf_counter()
    expected = plain_statistics(frame)
    point_s = time.perf_counter() - start
    start = time.perf_counter()
    cis = plain_accuracy_ci(frame)
    ci_s = time.perf_counter() - start
    got = {(r["metric"], r["statistic"]): r for r in rows}
    assert set(got) == set(expected), set(got) ^ set(expected)
    for key, value in expected.items():
        assert abs(got[key]["value"] - value) <= 1e-9, (key, got[key]["value"], value)
    for judge, (low, high) in cis.items():
        row = got[(judge, "accuracy")]
        assert abs(row["ci_low"] - low) <= 1e-9 and abs(row["ci_high"] - high) <= 1e-9, judge
    report = {"pairs": args.pairs, "judges": JUDGES, "statistics": len(rows),
              "resamples": RESAMPLES, "ours_command_s": round(ours_s, 2),
              "ours_peak_rss_mib": round(peak_mib, 1),
              "plain_point_values_s": round(point_s, 2),
              "plain_accuracy_ci_s": round(ci_s, 2),
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                         f"{platform.python_version()}, numpy {np.__version__}",
              "load": os.getloadavg()}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
