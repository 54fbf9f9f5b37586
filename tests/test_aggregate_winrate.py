"""`aggregate -r win-rate` and `-r lc-win-rate`: AlpacaEval's published numbers, every statistic
against an independent computation, and the input errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy import stats
from scipy.special import expit

from meta_eval.aggregation import RULES
from meta_eval.aggregation.tables import comparisons_from_pairwise
from meta_eval.aggregation.winrate import fit_soft_logistic, instruction_difficulty

DATA = Path(__file__).parent / "data" / "alpaca_eval"
BASELINE = "gpt4_1106_preview"


def aggregate_json(path: Path, *args: str) -> dict[str, dict]:
    proc = run_cli("aggregate", str(path), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return {o["rule"]: o for o in json.loads(proc.stdout)}


# -- AlpacaEval 2.0, published -------------------------------------------------------------
@pytest.mark.parametrize("model", ["jina-chat", "alpaca-7b"])
def test_reproduces_the_alpacaeval_leaderboard(model: str) -> None:
    row = pd.read_csv(DATA / "leaderboard.csv", index_col="model").loc[model]
    spec = f"win-rate:baseline={BASELINE}"
    out = aggregate_json(DATA / f"{model}.csv", "-r", spec)[spec]
    extra = out["extra"]
    # the leaderboard prints 16 significant digits; we match them all
    assert out["scores"][model] == pytest.approx(row["win_rate"], rel=1e-15, abs=0)
    assert extra["standard_error"][model] == pytest.approx(row["standard_error"], rel=1e-15,
                                                           abs=0)
    assert extra["discrete_win_rate"][model] == pytest.approx(row["discrete_win_rate"],
                                                              rel=1e-15, abs=0)
    assert extra["n_wins"][model] == row["n_wins"]
    assert extra["n_losses"][model] == row["n_wins_base"]
    assert extra["n_draws"][model] == row["n_draws"]
    assert extra["n_total"][model] == row["n_total"]
    assert out["ranking"] == [model]  # the baseline is not ranked


def test_alpacaeval_side_does_not_matter(tmp_path: Path) -> None:
    """The same verdicts with A and B swapped on a random half of the rows (P -> 1 - P)."""
    frame = pd.read_csv(DATA / "jina-chat.csv")
    swap = np.random.default_rng(0).random(len(frame)) < 0.5
    swapped = frame.copy()
    swapped.loc[swap, ["system_a", "system_b"]] = frame.loc[swap, ["system_b", "system_a"]].values
    swapped.loc[swap, ["length_a", "length_b"]] = frame.loc[swap, ["length_b", "length_a"]].values
    swapped.loc[swap, "preference"] = 1.0 - frame.loc[swap, "preference"]
    path = tmp_path / "swapped.csv"
    swapped.to_csv(path, index=False)
    specs = [f"win-rate:baseline={BASELINE}", f"lc-win-rate:baseline={BASELINE}"]
    args = [x for s in specs for x in ("-r", s)]
    original, flipped = aggregate_json(DATA / "jina-chat.csv", *args), aggregate_json(path, *args)
    for spec in specs:
        assert flipped[spec]["scores"]["jina-chat"] == pytest.approx(
            original[spec]["scores"]["jina-chat"], rel=1e-9)
    for key, by_system in original[specs[0]]["extra"].items():
        assert flipped[specs[0]]["extra"][key] == pytest.approx(by_system, rel=1e-12), key


# -- independent computation on random data ------------------------------------------------
def random_table(rng: np.random.Generator, *, n_items: int = 40, systems=("m1", "m2", "m3"),
                 baseline: str = "base") -> pd.DataFrame:
    """Ties, soft values, hard a/b verdicts, either side; m3 never beats the baseline."""
    rows = []
    for item in range(n_items):
        for s in systems:
            kind = rng.integers(0, 4)
            p = [1.0, 0.0, 0.5, float(rng.uniform())][kind]
            if s == "m3":
                p = 0.0
            base_first = bool(rng.integers(0, 2))
            verdict: object = p
            if kind < 3 and s != "m3" and rng.random() < 0.5:
                verdict = {1.0: "A", 0.0: "b", 0.5: "Tie"}[p]  # words, any case
            length_s, length_b = int(rng.integers(10, 900)), int(rng.integers(10, 900))
            if base_first:  # verdicts are P(A better): the baseline is A, so flip
                flipped = {"A": "b", "b": "A", "Tie": "Tie"}
                verdict = flipped[verdict] if isinstance(verdict, str) else 1.0 - p
                rows.append((item, baseline, s, verdict, length_b, length_s))
            else:
                rows.append((item, s, baseline, verdict, length_s, length_b))
    # one comparison between two non-baseline systems, and a system seen once
    rows.append((0, "m1", "m2", 0.25, 100, 200))
    rows.append((0, "solo", baseline, 0.75, 100, 200))
    return pd.DataFrame(rows, columns=["item", "system_a", "system_b", "judge", "length_a",
                                       "length_b"])


def side_of(frame: pd.DataFrame, system: str, opponent: str | None) -> list[float]:
    """Plain loop: P(system is better) for each of its comparisons (with `opponent`)."""
    words = {"a": 1.0, "b": 0.0, "tie": 0.5}
    out = []
    for _, row in frame.iterrows():
        v = row["judge"]
        p = words[v.lower()] if isinstance(v, str) else float(v)
        if row["system_a"] == system and opponent in (None, row["system_b"]):
            out.append(p)
        elif row["system_b"] == system and opponent in (None, row["system_a"]):
            out.append(1.0 - p)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("baseline", ["base", None])
def test_win_rate_statistics_match_loops_and_scipy(tmp_path: Path, seed: int,
                                                   baseline: str | None) -> None:
    frame = random_table(np.random.default_rng(seed))
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    spec = "win-rate" + (f":baseline={baseline}" if baseline else "")
    out = aggregate_json(path, "-r", spec)[spec]
    systems = ["m1", "m2", "m3", "solo"] + ([] if baseline else ["base"])
    assert sorted(out["scores"]) == sorted(systems)
    for s in systems:
        p = side_of(frame, s, baseline)
        n = len(p)
        wins = sum(x > 0.5 for x in p)
        draws = sum(x == 0.5 for x in p)
        losses = sum(x < 0.5 for x in p)
        assert out["scores"][s] == pytest.approx(100 * sum(p) / n, rel=1e-12)
        assert out["extra"]["discrete_win_rate"][s] == pytest.approx(100 * (wins + draws / 2) / n)
        assert (out["extra"]["n_wins"][s], out["extra"]["n_draws"][s],
                out["extra"]["n_losses"][s], out["extra"]["n_total"][s]) == (wins, draws, losses, n)
        if n >= 2:
            assert out["extra"]["standard_error"][s] == pytest.approx(100 * stats.sem(p),
                                                                      rel=1e-10)
        else:  # one comparison: undefined, said so, never 0
            assert out["extra"]["standard_error"][s] is None
            assert "one comparison only for ['solo']" in out["note"]
    if baseline:
        assert out["scores"]["m3"] == 0.0 and out["extra"]["n_wins"]["m3"] == 0
        assert out["ranking"][-1] in ("m3",)


# -- lc-win-rate against scikit-learn ------------------------------------------------------
def sklearn_soft_fit(x: np.ndarray, y: np.ndarray, *, c: float | None) -> np.ndarray:
    """Soft-target logistic regression as alpaca_eval fits it: each row twice, label 1 with
    weight y and label 0 with weight 1 - y; no intercept (the design carries one)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=np.inf if c is None else c, fit_intercept=False, tol=1e-12,
                               max_iter=10_000)
    model.fit(np.vstack([x, x]), np.r_[np.ones(len(y)), np.zeros(len(y))],
              sample_weight=np.r_[y, 1.0 - y])
    return np.asarray(model.coef_[0])


def test_lc_win_rate_one_system_matches_sklearn() -> None:
    frame = pd.read_csv(DATA / "jina-chat.csv")
    comps = comparisons_from_pairwise(frame)
    result = RULES["lc-win-rate"].with_options(baseline=BASELINE).rank(comps)
    y = 1.0 - frame["preference"].to_numpy()  # the model's side
    delta = (frame["length_b"] - frame["length_a"]).to_numpy(dtype=float)
    x = np.column_stack([np.ones(len(y)), np.tanh(delta / np.std(delta, ddof=1))])
    coef = sklearn_soft_fit(x, y, c=None)
    expected = 100 / (1 + np.exp(-coef[0]))
    assert result.scores["jina-chat"] == pytest.approx(expected, rel=1e-6)
    assert result.extra["length_coefficient"]["jina-chat"] == pytest.approx(coef[1], rel=1e-5)
    assert result.extra["win_rate"]["jina-chat"] == pytest.approx(7.786130393366459, rel=1e-15)
    # no instruction term: every prediction is the same, so no standard error is claimed
    assert np.isnan(result.extra["standard_error"]["jina-chat"])
    assert "no instruction term" in result.note
    # longer outputs win more: controlling for length raises jina-chat's (short) win rate
    assert result.scores["jina-chat"] > result.extra["win_rate"]["jina-chat"]


@pytest.mark.slow  # scikit-learn on 3,220 x 809 takes ~5 s
def test_lc_win_rate_with_instruction_difficulty_matches_sklearn() -> None:
    frames = [pd.read_csv(DATA / f"{m}.csv") for m in ("jina-chat", "alpaca-7b")]
    comps = comparisons_from_pairwise(pd.concat(frames, ignore_index=True))
    group = {item: g for item, g in zip(pd.concat(frames)["item"], comps.groups, strict=True)}
    for f in frames:
        f["group"] = f["item"].map(group)  # our item index (items sort as text: 0, 1, 10, ...)
    result = RULES["lc-win-rate"].with_options(baseline=BASELINE).rank(comps)
    assert "instruction difficulty" in result.note
    # stage 1, by hand: one joint design, items one-hot, L2 penalty 1 = sklearn's C = 1
    n_items = 805
    blocks, targets, features = [], [], []
    for j, f in enumerate(frames):
        y = 1.0 - f["preference"].to_numpy()
        delta = (f["length_b"] - f["length_a"]).to_numpy(dtype=float)
        feature = np.tanh(delta / np.std(delta, ddof=1))
        x = np.zeros((len(f), 4 + n_items))
        x[:, j] = 1.0
        x[:, 2 + j] = feature
        x[np.arange(len(f)), 4 + f["group"].to_numpy()] = 1.0
        blocks.append(x)
        targets.append(y)
        features.append(feature)
    gamma = sklearn_soft_fit(np.vstack(blocks), np.concatenate(targets), c=1.0)[4:]
    ours = instruction_difficulty(comps, comps.systems.index(BASELINE),
                                  [comps.systems.index("jina-chat"),
                                   comps.systems.index("alpaca-7b")])
    np.testing.assert_allclose(ours, gamma, atol=1e-5)
    # stage 2 per system, unpenalised, predicted at equal length
    for f, y, feature, name in zip(frames, targets, features, ("jina-chat", "alpaca-7b"),
                                   strict=True):
        g = gamma[f["group"].to_numpy()]
        coef = sklearn_soft_fit(np.column_stack([np.ones(len(y)), feature, g]), y, c=None)
        predicted = 1 / (1 + np.exp(-(coef[0] + coef[2] * g)))
        assert result.scores[name] == pytest.approx(100 * predicted.mean(), rel=1e-4)
        assert result.extra["standard_error"][name] == pytest.approx(
            100 * stats.sem(predicted), rel=1e-3)


@pytest.mark.parametrize("seed", [0, 1])
def test_lc_win_rate_on_random_data_matches_sklearn(tmp_path: Path, seed: int) -> None:
    """Ties, soft and hard verdicts, either side; two systems sharing the items (so the
    instruction term is on), and lengths scaled by 1e6 change nothing (tanh of a ratio)."""
    frame = random_table(np.random.default_rng(seed), n_items=80, systems=("m1", "m2"))
    frame = frame[(frame["system_a"] != "solo") & (frame["system_b"] != "solo")
                  & ~((frame["system_a"] == "m1") & (frame["system_b"] == "m2"))]
    path, big = tmp_path / "pairs.csv", tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    scaled = frame.copy()
    scaled[["length_a", "length_b"]] = scaled[["length_a", "length_b"]] * 1e6
    scaled.to_csv(big, index=False)
    spec = "lc-win-rate:baseline=base"
    out = aggregate_json(path, "-r", spec)[spec]
    assert out["scores"] == pytest.approx(aggregate_json(big, "-r", spec)[spec]["scores"],
                                          rel=1e-6)  # the fits' own tolerance
    # by hand: orient every row to the system, one-hot items, stage 1 then stage 2
    items = sorted(frame["item"].astype(str).unique())
    item_index = {x: i for i, x in enumerate(items)}
    per_system = {}
    for s in ("m1", "m2"):
        rows = []
        for _, row in frame.iterrows():
            v = row["judge"]
            p = {"a": 1.0, "b": 0.0, "tie": 0.5}[v.lower()] if isinstance(v, str) else float(v)
            if row["system_a"] == s:
                rows.append((p, row["length_a"] - row["length_b"], item_index[str(row["item"])]))
            elif row["system_b"] == s:
                rows.append((1 - p, row["length_b"] - row["length_a"],
                             item_index[str(row["item"])]))
        y, delta, item = (np.array(c) for c in zip(*rows, strict=True))
        per_system[s] = (y, np.tanh(delta / np.std(delta, ddof=1)), item.astype(int))
    x = np.zeros((0, 4 + len(items)))
    for j, (y, feature, item) in enumerate(per_system.values()):
        block = np.zeros((len(y), 4 + len(items)))
        block[:, j], block[:, 2 + j] = 1.0, feature
        block[np.arange(len(y)), 4 + item] = 1.0
        x = np.vstack([x, block])
    gamma = sklearn_soft_fit(x, np.concatenate([v[0] for v in per_system.values()]),
                             c=1.0)[4:]
    for s, (y, feature, item) in per_system.items():
        coef = sklearn_soft_fit(np.column_stack([np.ones(len(y)), feature, gamma[item]]), y,
                                c=None)
        predicted = expit(coef[0] + coef[2] * gamma[item])
        assert out["scores"][s] == pytest.approx(100 * predicted.mean(), rel=1e-4), s
        assert out["extra"]["standard_error"][s] == pytest.approx(100 * stats.sem(predicted),
                                                                  rel=1e-3), s
        assert out["extra"]["n_total"][s] == len(y)


def test_soft_logistic_matches_sklearn_on_random_data() -> None:
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(300), rng.normal(size=300), rng.normal(size=300) * 1e3])
    y = np.clip(rng.uniform(size=300) + 0.1 * x[:, 1], 0, 1)
    y[:20] = np.round(y[:20])  # some hard labels
    ours = fit_soft_logistic(design=x, target=y)
    assert ours.converged and not ours.separated
    np.testing.assert_allclose(ours.coef, sklearn_soft_fit(x, y, c=None), rtol=1e-4,
                               atol=1e-8)
    ridge = fit_soft_logistic(design=x, target=y, penalty=2.0)
    np.testing.assert_allclose(ridge.coef, sklearn_soft_fit(x, y, c=0.5), rtol=1e-4, atol=1e-8)


def test_lc_win_rate_undefined_cases_are_nan_with_a_reason(tmp_path: Path) -> None:
    frame = random_table(np.random.default_rng(3), n_items=60, systems=("m1", "m3"))
    frame = frame[frame["system_a"].isin(["m1", "m3", "base"])
                  & frame["system_b"].isin(["m1", "m3", "base"])]
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    spec = "lc-win-rate:baseline=base,instruction=false"
    out = aggregate_json(path, "-r", spec)[spec]
    assert out["scores"]["m3"] is None  # never wins: the MLE does not exist
    assert "m3 (the fit separation" in out["note"]
    assert out["scores"]["m1"] is not None
    penalised = aggregate_json(path, "-r", spec + ",penalty=1")[spec + ",penalty=1"]
    # shrunk towards 50%: an L2 penalty 1 on the intercept of 60 lost comparisons (~5%)
    assert 0 < penalised["scores"]["m3"] < 10


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "spec", "message"),
    [
        ("item,system_a,system_b,winner\n1,A,B,a\n", "win-rate:baseline=Z",
         "field 'baseline': rule 'win-rate:baseline=Z': baseline 'Z' is not in the table"),
        ("item,system_a,system_b,winner\n1,A,B,a\n2,C,Z,\n", "win-rate:baseline=Z",
         "no compared pair (with a verdict) involves the baseline 'Z'"),
        ("item,system_a,system_b,winner\n1,A,B,a\n2,A,B,1.5\n", "win-rate:baseline=A",
         "line 3, field 'winner': a numeric verdict is P(A is better) and must be in [0, 1]"),
        ("item,system_a,system_b,judge.x\n1,A,B,a\n2,A,B,-0.1\n", "win-rate:baseline=A",
         "line 3, field 'judge.x'"),
        ("item,system_a,system_b,winner\n1,A,B,a\n2,A,B,maybe\n", "win-rate",
         "line 3, field 'winner': a verdict is a, b, tie"),
        ("item,system_a,system_b,winner\n1,A,B,a\n", "lc-win-rate:baseline=A",
         "field 'length_a': rule 'lc-win-rate:baseline=A': lc-win-rate needs the outputs' "
         "lengths"),
        ("item,system_a,system_b,winner\n1,A,B,a\n", "lc-win-rate", "give the baseline"),
        ("item,system_a,system_b,winner,length_a,length_b\n1,A,B,a,3,\n",
         "lc-win-rate:baseline=A", "field 'length_b': rule 'lc-win-rate:baseline=A': "
         "lc-win-rate needs every output's length: 1 comparison(s)"),
        ("item,system_a,system_b,winner,length_a,length_b\n1,A,B,a,3,-2\n",
         "win-rate", "line 2, field 'length_b': an output length must be a non-negative"),
        ("item,system_a,system_b,winner,length_a,length_b\n1,A,B,a,3,many\n",
         "win-rate", "line 2, field 'length_b': not a number"),
        ("item,system_a,system_b,winner,length_a,length_b\n1,A,B,a,3,4\n",
         "lc-win-rate:baseline=A,penalty=-1", "field 'penalty'"),
        ("item,system_a,system_b,winner\n1,A,B,a\n", "bradley-terry:bootstrap=1",
         "field 'bootstrap': rule 'bradley-terry:bootstrap=1': bootstrap must be 0"),
        ("item,system_a,system_b,winner\n1,A,B,a\n", "elo:bootstrap=5,level=1.5",
         "field 'level'"),
    ],
)
def test_bad_input_exits_2_naming_file_row_and_column(tmp_path: Path, content: str, spec: str,
                                                      message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    proc = run_cli("aggregate", str(path), "-r", spec)
    assert proc.returncode == 2, proc.stdout
    assert str(path) in proc.stderr and message in proc.stderr, proc.stderr


def test_weighted_pairs_are_refused_by_win_rates(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("system_a,system_b,winner,w\nA,B,a,2\n", encoding="utf-8")
    proc = run_cli("aggregate", str(path), "-r", "win-rate", "--pair-weight", "w")
    assert proc.returncode == 2 and "unweighted" in proc.stderr


def test_all_leaves_out_rules_that_need_options(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("system_a,system_b,winner\nA,B,a\nB,C,0.7\nC,A,tie\n", encoding="utf-8")
    proc = run_cli("aggregate", str(path), "-r", "all", "--json")
    assert proc.returncode == 0, proc.stderr
    rules = [o["rule"] for o in json.loads(proc.stdout)]
    assert "win-rate" in rules and "lc-win-rate" not in rules
    assert "rule 'lc-win-rate' left out" in proc.stderr


def test_text_output_shows_the_figures(tmp_path: Path) -> None:
    proc = run_cli("aggregate", str(DATA / "jina-chat.csv"), "-r",
                   f"win-rate:baseline={BASELINE}")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("jina-chat  "))
    assert line.split() == ["jina-chat", "7.7861", "0.8398", "7.5155", "59", "3", "743", "805"]
    assert "standard_error" in proc.stdout and "discrete_win_rate" in proc.stdout


def test_the_command_bootstrap_leaves_the_unranked_baseline_out_of_tau(tmp_path: Path) -> None:
    frames = [pd.read_csv(DATA / f"{m}.csv") for m in ("jina-chat", "alpaca-7b")]
    path = tmp_path / "two.csv"
    pd.concat(frames).to_csv(path, index=False)
    spec = f"win-rate:baseline={BASELINE}"
    out = aggregate_json(path, "-r", spec, "--bootstrap", "20")[spec]
    assert out["bootstrap"]["mean_tau"] == 1.0  # jina-chat beats alpaca-7b in every resample
    assert out["bootstrap"]["systems"]["jina-chat"]["p_win"] == 1.0
