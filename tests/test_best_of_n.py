"""Best-of-N accuracy, its pairwise reduction and RewardBench 2's Ties score against direct
computations (loops over the candidates as RewardBench 2's `process_single_model` states its
rule) on random tables with score ties, several correct candidates and extreme magnitudes;
and `meta-eval listwise`, which reads them from a listwise table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from meta_eval.best_of_n import best_of_n_accuracy, pairwise_reduction, prompt_stats, ties_score

REPO = Path(__file__).resolve().parent.parent


def _table(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups, scores, correct = [], [], []
    scale = [1.0, 1e-200, 1e200, 1.0][seed % 4]
    for prompt in range(int(rng.integers(1, 40))):
        n = int(rng.integers(2, 7))
        k = int(rng.integers(1, n))  # correct candidates: 1 .. n - 1
        flags = rng.permutation([True] * k + [False] * (n - k))
        values: np.ndarray
        if seed % 4 == 3:  # a judge that picks one: 1 for its pick, 0 for the others
            values = np.zeros(n)
            values[rng.integers(0, n)] = 1.0
        else:
            values = rng.integers(0, 4, n) * scale  # many score ties
        groups += [f"p{prompt}"] * n
        scores += list(values)
        correct += list(flags)
    order = rng.permutation(len(groups))  # rows in any order
    return (np.array(scores)[order], np.array(correct)[order], np.array(groups)[order])


def _direct(scores: np.ndarray, correct: np.ndarray, groups: np.ndarray
            ) -> tuple[float, float]:
    right, shares = [], []
    for name in sorted(set(groups.tolist())):
        good = [s for s, c, g in zip(scores, correct, groups, strict=True) if g == name and c]
        bad = [s for s, c, g in zip(scores, correct, groups, strict=True) if g == name and not c]
        right.append(all(x > y for x in good for y in bad))
        wins = [1.0 if x > y else 0.5 if x == y else 0.0 for x in good for y in bad]
        shares.append(sum(wins) / len(wins))
    return sum(right) / len(right), sum(shares) / len(shares)


@pytest.mark.parametrize("seed", range(12))
def test_best_of_n_matches_a_direct_computation(seed: int) -> None:
    scores, correct, groups = _table(seed)
    accuracy, pairwise = _direct(scores, correct, groups)
    assert best_of_n_accuracy(scores=scores, correct=correct, groups=groups) == accuracy
    assert pairwise_reduction(scores=scores, correct=correct, groups=groups) == \
        pytest.approx(pairwise, rel=1e-12)


def test_a_pick_is_right_only_when_it_is_the_one_correct_candidate() -> None:
    groups = ["q1"] * 4 + ["q2"] * 4
    correct = [True, False, False, False, False, True, False, False]
    picks = [1, 0, 0, 0, 1, 0, 0, 0]
    assert best_of_n_accuracy(scores=picks, correct=correct, groups=groups) == 0.5
    # the pairwise reduction of the same choices: q1 wins 3 of 3, q2 loses 1 and ties 2
    assert pairwise_reduction(scores=picks, correct=correct, groups=groups) == \
        pytest.approx((1.0 + 1.0 / 3.0) / 2.0)


def test_a_prompt_needs_a_correct_and_an_incorrect_candidate() -> None:
    with pytest.raises(ValueError, match="prompt 'q2'"):
        best_of_n_accuracy(scores=[1, 0, 1], correct=[True, False, True], groups=["q1", "q1",
                                                                                   "q2"])
    with pytest.raises(ValueError, match="finite"):
        best_of_n_accuracy(scores=[1, np.nan], correct=[True, False], groups=["q", "q"])


def _ties_direct(samples: dict[tuple[str, str], list[tuple[bool, float]]]) -> float:
    """RewardBench 2's Ties score written out per its definition."""
    def stats(items: list[tuple[bool, float]]) -> tuple[bool, float | None, float]:
        good = [s for c, s in items if c]
        bad = [s for c, s in items if not c]
        spread = max(good) - min(good) if len(good) > 1 else None
        return min(good) - max(bad) > 0, spread, min(good) - max(bad)

    ref = {p: stats(v) for (kind, p), v in samples.items() if kind == "ref"}
    tied = {p: stats(v) for (kind, p), v in samples.items() if kind == "tied"}
    ref_acc = sum(s[0] for s in ref.values()) / len(ref)
    tied_acc = sum(s[0] for s in tied.values()) / len(tied)
    both = sorted(set(ref) & set(tied))
    preferred = hard = margin = 0.0
    for p in both:
        spread, m_tied, m_ref = tied[p][1], tied[p][2], ref[p][2]
        low = min(m_ref, m_tied)
        preferred += spread is not None and m_tied > spread
        hard += spread is not None and low > spread
        if spread is None:
            continue
        if spread == 0:
            margin += 0.0 if low == 0 else math.copysign(1.0, low) * math.tanh(math.inf)
        else:
            margin += math.tanh(low / spread - 1.0)
    k = len(both)
    return 0.3 * tied_acc + 0.3 * ref_acc + 0.2 * preferred / k + 0.2 * hard / k + \
        0.01 * margin / k


@pytest.mark.parametrize("seed", range(6))
def test_ties_score_matches_its_definition(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    samples: dict[tuple[str, str], list[tuple[bool, float]]] = {}
    rows: list[tuple[str, str, str, bool, float]] = []
    for p in range(int(rng.integers(2, 15))):
        for kind in ("ref", "tied"):
            n_good = 1 if kind == "ref" else int(rng.integers(2, 5))
            n_bad = int(rng.integers(1, 4))
            values = rng.integers(-2, 5, n_good + n_bad).astype(float) * 10.0 ** (seed - 3)
            items = [(i < n_good, float(v)) for i, v in enumerate(values)]
            samples[(kind, str(p))] = items
            rows += [(f"{kind}:{p}", kind, str(p), c, s) for c, s in items]
    groups, kinds, pairs, correct, scores = (np.array(x) for x in zip(*rows, strict=True))
    got = ties_score(scores=scores.astype(float), correct=correct.astype(bool), groups=groups,
                     kind=kinds, pair=pairs)
    assert got == pytest.approx(_ties_direct(samples), rel=1e-12, abs=1e-15)


def test_prompt_stats_keep_the_prompts_order() -> None:
    stats = prompt_stats(scores=[2, 1, 5, 5, 4], correct=[True, False, True, True, False],
                         groups=["b", "b", "a", "a", "a"])
    assert stats.prompts == ["b", "a"]
    assert list(stats.accurate) == [True, True]
    assert np.isnan(stats.correct_spread[0]) and stats.correct_spread[1] == 0.0
    assert list(stats.margin) == [1.0, 1.0]


# -- meta-eval listwise ---------------------------------------------------------------------
def _listwise(seed: int, path: Path) -> pd.DataFrame:
    scores, correct, groups = _table(seed)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"item": groups, "candidate": [f"c{i}" for i in range(len(groups))],
                          "human.best": correct.astype(int), "rm": scores,
                          "subset": rng.choice(["math", "focus"], len(groups))})
    frame["subset"] = frame.groupby("item")["subset"].transform("first")
    frame.to_csv(path, index=False)
    return frame


@pytest.mark.parametrize("seed", range(4))
def test_listwise_command_matches_a_direct_computation(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "bon.csv"
    frame = _listwise(seed, path)
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["subset"]: r for r in json.loads(proc.stdout)}
    for subset, part in [("all", frame), *frame.groupby("subset")]:
        accuracy, pairwise = _direct(part.rm.to_numpy(), part["human.best"].to_numpy() == 1,
                                     part.item.to_numpy())
        row = rows[str(subset)]
        assert row["accuracy"] == pytest.approx(accuracy, rel=1e-12)
        assert row["pairwise"] == pytest.approx(pairwise, rel=1e-12)
        sizes = part.groupby("item")["human.best"].agg(["size", "sum"])
        random = np.mean([1 / math.comb(n, k) for n, k in sizes.itertuples(index=False)])
        assert row["random"] == pytest.approx(random, rel=1e-12)
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
        assert row["signature"].startswith("meta-eval.listwise@1|rule:best-of-n|")


def test_listwise_leaves_out_a_failed_prompt_and_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "bon.csv"
    path.write_text("item,candidate,human.best,judge\nq1,a,1,1\nq1,b,0,0\nq2,a,0,\nq2,b,1,0\n"
                    "q3,a,0,0\nq3,b,1,1\n", encoding="utf-8")
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert (row["prompts"], row["failed_prompts"], row["accuracy"]) == (2, 1, 1.0)


def test_listwise_leaves_out_a_prompt_people_did_not_mark_and_counts_it(tmp_path: Path
                                                                        ) -> None:
    """`score` carries a listwise file's empty marks through: a prompt with every mark empty
    is unlabelled (left out, counted), not an error; q3 alone would make the accuracy 0.5."""
    path = tmp_path / "bon.csv"
    path.write_text("item,candidate,human.best,judge\nq1,a,1,1\nq1,b,0,0\nq2,a,0,1\nq2,b,1,0\n"
                    "q3,a,,1\nq3,b,,0\nq4,a,0,0\nq4,b,1,1\n", encoding="utf-8")
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert (row["prompts"], row["unlabelled_prompts"], row["failed_prompts"]) == (3, 1, 0)
    assert row["accuracy"] == pytest.approx(2 / 3, rel=1e-12)
    text = run_cli("meta-eval", "listwise", str(path), "--human", "human.best")
    assert "1 prompt(s) of all people did not mark, left out" in text.stdout


def test_listwise_ties_subset_uses_its_rule(tmp_path: Path) -> None:
    proc = run_cli("meta-eval", "listwise", str(REPO / "examples" / "listwise-sample.csv"),
                   "--human", "human.best", "--judge", "rm.score", "--json")
    assert proc.returncode == 0, proc.stderr
    ties = next(r for r in json.loads(proc.stdout) if r["subset"] == "ties")
    frame = pd.read_csv(REPO / "examples" / "listwise-sample.csv").query("subset == 'ties'")
    samples: dict[tuple[str, str], list[tuple[bool, float]]] = {}
    for item, g in frame.groupby("item"):
        kind, _, pair = str(item).partition(":")
        samples[(kind, pair)] = [(bool(c), float(s)) for c, s in
                                 zip(g["human.best"] == 1, g["rm.score"], strict=True)]
    assert ties["rule"] == "rewardbench2-ties"
    assert ties["accuracy"] == pytest.approx(_ties_direct(samples), rel=1e-12)


@pytest.mark.parametrize(("text", "message"), [
    ("item,candidate,human.best,judge\nq1,a,2,1\nq1,b,0,0\n", "line 2"),
    ("item,candidate,human.best,judge\nq1,a,2,1\nq1,b,0,0\n", "or 0; got 2\n"),
    ("item,candidate,human.best,judge\nq1,a,1,x\nq1,b,0,0\n", "not a finite number"),
    ("item,candidate,human.best,judge\nq1,a,1,1\nq1,b,1,0\n", "one incorrect"),
    ("item,candidate,subset,human.best,judge\nq1,a,ties,1,1\nq1,b,ties,0,0\n", "ref:ID"),
    ("item,candidate,human.best,judge\nq1,a,1,1\nq1,a,0,0\n", "duplicate"),
    ("item,candidate,human.best,judge\nq1,a,1,1\nq1,b,0,0\nq1,c,,0\n", "line 4"),
])
def test_listwise_bad_input_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bon.csv"
    path.write_text(text, encoding="utf-8")
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best")
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@pytest.mark.parametrize("seed", range(4, 8))
def test_listwise_command_leaves_out_random_failed_prompts(tmp_path: Path, seed: int) -> None:
    """Random tables with score ties, several correct candidates, extreme magnitudes and a
    NaN (a failed judgement) in about a quarter of the prompts: each such prompt is left out
    and counted, the rest match the direct computation."""
    path = tmp_path / "bon.csv"
    frame = _listwise(seed, path)
    rng = np.random.default_rng(100 + seed)
    items = sorted(set(frame.item))
    failed = {i for i in items if rng.random() < 0.25} or {items[0]}
    for item in failed:  # one candidate's cell empty fails the whole prompt
        rows = np.flatnonzero(frame.item == item)
        frame.loc[rows[int(rng.integers(0, len(rows)))], "rm"] = np.nan
    frame.to_csv(path, index=False)
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best", "--json")
    assert proc.returncode == 0, proc.stderr
    found = {r["subset"]: r for r in json.loads(proc.stdout)}
    for subset, part in [("all", frame), *frame.groupby("subset")]:
        row = found[str(subset)]
        assert row["failed_prompts"] == len(failed & set(part.item))
        kept = part[~part.item.isin(failed)]
        if kept.empty:
            assert row["accuracy"] is None and row["reason"]
            continue
        accuracy, pairwise = _direct(kept.rm.to_numpy(), kept["human.best"].to_numpy() == 1,
                                     kept.item.to_numpy())
        assert row["prompts"] == kept.item.nunique()
        assert row["accuracy"] == pytest.approx(accuracy, rel=1e-12)
        assert row["pairwise"] == pytest.approx(pairwise, rel=1e-12)


def test_listwise_refuses_an_infinite_score(tmp_path: Path) -> None:
    path = tmp_path / "bon.csv"
    path.write_text("item,candidate,human.best,judge\nq1,a,1,inf\nq1,b,0,0\n", encoding="utf-8")
    proc = run_cli("meta-eval", "listwise", str(path), "--human", "human.best")
    assert proc.returncode == 2
    assert "line 2" in proc.stderr and "field 'judge'" in proc.stderr
