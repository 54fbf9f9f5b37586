"""`meta-eval reliability` from plain tables: raters as columns or in a rater column, draws in
a draw column, and `score --repeats`' store as one source among them.

The six ICC forms through the CLI against pingouin.intraclass_corr (random tables with ties,
missing ratings and extreme magnitudes, to 1e-9) and Shrout and Fleiss 1979's Table 2; the
long and wide rater layouts give equal numbers; the draw statistics of a long table equal
a direct computation (pass@k by brute force over subsets, flips, spread); the draws of a
`score --repeats` store give the same numbers from the store and exported as a table; bad
tables are refused naming the file, line and field."""

from __future__ import annotations

import json
import sqlite3
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
PINGOUIN = dict(zip(FORMS, ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)",
                            "ICC(C,k)"), strict=True))
CHOICES = [(design, unit) for design in ("one-way", "two-way-random", "two-way-mixed")
           for unit in ("single", "mean")]
FORM_OF = {("one-way", "single"): "ICC1", ("one-way", "mean"): "ICC1k",
           ("two-way-random", "single"): "ICC2", ("two-way-random", "mean"): "ICC2k",
           ("two-way-mixed", "single"): "ICC3", ("two-way-mixed", "mean"): "ICC3k"}
PUBLISHED = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62,
             "ICC3k": 0.91}  # Shrout and Fleiss 1979, Table 4, of their Table 2


def reliability(*args: str) -> list[dict]:
    done = run_cli("meta-eval", "reliability", *args, "--json")
    assert done.returncode == 0, done.stderr
    return strict_json(done.stdout)


def random_ratings(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 25)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, 1)) * rng.uniform(0, 2) + rng.normal(size=(1, k)) + \
        rng.normal(size=(n, k))
    if seed % 2:
        x = np.round(x)  # ties
    x[rng.integers(0, n), rng.integers(0, k)] = np.nan  # a unit dropped (listwise)
    return x


def pingouin_table(x: np.ndarray) -> pd.DataFrame:
    pingouin = pytest.importorskip("pingouin")
    from pingouin.config import _no_rounding

    n, k = x.shape
    long = pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n),
                         "y": x.reshape(-1)})
    with _no_rounding():
        return pingouin.intraclass_corr(data=long, targets="t", raters="r", ratings="y",
                                        nan_policy="omit").set_index("Type")


def wide_csv(path: Path, x: np.ndarray) -> list[str]:
    raters = [f"r{j}" for j in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=raters)
    frame.insert(0, "unit", [f"u{i:03d}" for i in range(len(x))])
    frame.to_csv(path, index=False)
    return raters


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [0, 900, -900])
def test_every_icc_form_from_rater_columns_equals_pingouin(tmp_path: Path, seed: int,
                                                          scale: int) -> None:
    x = random_ratings(seed)
    expected = pingouin_table(x)  # unscaled: pingouin's squares overflow at 2^900
    raters = wide_csv(tmp_path / "ratings.csv", np.ldexp(x, scale))  # ICC is scale-free
    flags = [a for r in raters for a in ("--rater", r)]
    for design, unit in CHOICES:
        (row,) = reliability(str(tmp_path / "ratings.csv"), "--item", "unit", *flags,
                             "--icc-design", design, "--icc-unit", unit)
        form = FORM_OF[(design, unit)]
        assert list(row["icc"]) == [form] and row["icc_design"] == design
        got, theirs = row["icc"][form], expected.loc[PINGOUIN[form]]
        for mine, want in [(got["value"], theirs["ICC"]), (got["f"], theirs["F"]),
                           (got["p_value"], theirs["pval"]),
                           (got["ci_low"], theirs["CI95"][0]),
                           (got["ci_high"], theirs["CI95"][1])]:
            assert mine == pytest.approx(want, rel=1e-9, abs=1e-12), form
        assert (got["df1"], got["df2"]) == (theirs["df1"], theirs["df2"])
        assert row["n"] == len(x) and row["dropped"] == 1 and row["complete"] == len(x) - 1
        assert f"design:{design}" in row["signature"] and "dropped:1" in row["signature"]


def test_shrout_fleiss_table_2_from_the_bundled_example() -> None:
    table = str(ROOT / "examples" / "rater-ratings.csv")
    flags = ["--item", "item", *[a for j in range(1, 5) for a in ("--rater", f"rater{j}")]]
    found: dict[str, float] = {}
    expected = pingouin_table(pd.read_csv(table).drop(columns="item").to_numpy(dtype=float))
    for design in ("one-way", "two-way-random", "two-way-mixed"):
        (row,) = reliability(table, *flags, "--icc-design", design)
        found |= {form: icc["value"] for form, icc in row["icc"].items()}
        for form, icc in row["icc"].items():
            theirs = expected.loc[PINGOUIN[form]]
            for mine, want in [(icc["value"], theirs["ICC"]), (icc["f"], theirs["F"]),
                               (icc["p_value"], theirs["pval"]),
                               (icc["ci_low"], theirs["CI95"][0]),
                               (icc["ci_high"], theirs["CI95"][1])]:
                assert mine == pytest.approx(want, rel=1e-9, abs=1e-12), form
    assert {form: round(v, 2) for form, v in found.items()} == PUBLISHED
    (default,) = reliability(table, *flags)
    assert default["icc_design"] == "two-way-random" and list(default["icc"]) == ["ICC2",
                                                                                  "ICC2k"]
    assert "absolute agreement" in default["icc_design_reason"]
    text = run_cli("meta-eval", "reliability", table, *flags)
    assert text.returncode == 0, text.stderr
    assert "design: two-way random" in text.stdout and "ICC(A,1)" in text.stdout
    assert "0.2898" in text.stdout and "[0.0188, 0.7611]" in text.stdout


def test_a_rater_column_gives_what_rater_columns_give(tmp_path: Path) -> None:
    x = random_ratings(3)
    raters = wide_csv(tmp_path / "wide.csv", x)
    long = pd.read_csv(tmp_path / "wide.csv").melt(id_vars="unit", var_name="annotator",
                                                    value_name="rating")
    long = long.sample(frac=1.0, random_state=1)  # row order carries nothing
    long.to_json(tmp_path / "long.jsonl", orient="records", lines=True)
    flags = [a for r in raters for a in ("--rater", r)]
    for design in ("one-way", "two-way-random", "two-way-mixed"):
        (wide,) = reliability(str(tmp_path / "wide.csv"), "--item", "unit", *flags,
                              "--icc-design", design)
        (tall,) = reliability(str(tmp_path / "long.jsonl"), "--item", "unit",
                              "--rater-column", "annotator", "--score", "rating",
                              "--icc-design", design)
        assert tall["icc"] == wide["icc"]
        assert (tall["n"], tall["dropped"], tall["kind"]) == (wide["n"], 1, "raters")


def test_the_python_api_gives_the_commands_numbers(tmp_path: Path) -> None:
    import judgebench

    frame = pd.read_csv(ROOT / "examples" / "rater-ratings.csv", dtype={"item": str})
    raters = ["rater1", "rater2", "rater3", "rater4"]
    result = judgebench.meta_eval_reliability(frame, items=["item"], raters=raters,
                                              design="two-way-mixed")
    flags = [a for r in raters for a in ("--rater", r)]
    (cli,) = reliability(str(ROOT / "examples" / "rater-ratings.csv"), "--item", "item",
                         *flags, "--icc-design", "two-way-mixed")
    (got,) = json.loads(result.to_json())
    assert got["icc"] == cli["icc"] and got["source"] == "<DataFrame>"
    bad = frame.assign(rater2=frame["rater2"].astype(object))
    bad.loc[3, "rater2"] = "x"
    with pytest.raises(judgebench.errors.InputError, match="row 4") as caught:
        judgebench.meta_eval_reliability(bad, items=["item"], raters=raters)
    assert caught.value.field == "rater2" and caught.value.path == "<DataFrame>"
    with pytest.raises(judgebench.errors.InputError, match="--ci"):
        judgebench.meta_eval_reliability(frame, items=["item"], raters=raters, confidence=1.0)
    with pytest.raises(judgebench.errors.InputError, match="--icc-design"):
        judgebench.meta_eval_reliability(frame, items=["item"], raters=raters,
                                         design="two-way")


def brute_pass(draws: np.ndarray, k: int, best: bool) -> float:
    values = []
    for unit in draws:
        kept = unit[np.isfinite(unit)]
        if kept.size >= k:
            subsets = list(combinations(kept, k))
            values.append(np.mean([max(s) if best else min(s) for s in subsets]))
    return float(np.mean(values))


def test_draws_of_a_long_table_equal_a_direct_computation(tmp_path: Path) -> None:
    from scipy.stats import f_oneway

    rng = np.random.default_rng(7)
    units, k = 15, 4
    passed = (rng.random((units, k)) < rng.uniform(0, 1, size=(units, 1))).astype(float)
    score = np.round(rng.normal(size=(units, 1)) + rng.normal(size=(units, k)))
    passed[2, 3] = np.nan
    people = rng.normal(size=units) * 1e-300  # tiny: scale-free statistics stay finite
    people[4] = np.nan  # a unit people did not score
    rows = [{"item": f"i{u // 3}", "system": f"s{u % 3}", "draw": d,
             "pass": passed[u, d], "score": score[u, d],
             "human.q": people[u] if d != 1 else np.nan}  # given on some rows only
            for d in range(k) for u in range(units)]  # draws first: order carries nothing
    pd.DataFrame(rows).to_csv(tmp_path / "draws.csv", index=False)
    done = run_cli("meta-eval", "reliability", str(tmp_path / "draws.csv"), "--draw", "draw",
                   "--human", "human.q", "--json")
    assert done.returncode == 0, done.stderr
    assert "pass: 1 of 15 units miss a draw's judgement" in done.stderr
    by = {row["metric"]: row for row in json.loads(done.stdout)}
    assert set(by) == {"pass", "score"}
    got = by["pass"]
    assert got["icc_design"] == "one-way" and list(got["icc"]) == ["ICC1", "ICC1k"]
    assert (got["n"], got["complete"], got["k"]) == (units, units - 1, k)
    for j in range(1, k + 1):
        assert got["pass_at_k"][str(j)] == pytest.approx(brute_pass(passed, j, True),
                                                         rel=1e-12)
        assert got["pass_hat_k"][str(j)] == pytest.approx(brute_pass(passed, j, False),
                                                          rel=1e-12)
    flips = np.mean([np.unique(u[np.isfinite(u)]).size > 1 for u in passed])
    assert got["draws"]["flip_share"] == pytest.approx(flips)
    s = by["score"]
    assert "pass_at_k" not in s, "pass@k only for draws that are all 0 or 1"
    one_way = f_oneway(*score)  # each unit a group: ICC(1) = (F - 1) / (F + k - 1)
    f = one_way.statistic
    assert s["icc"]["ICC1"]["value"] == pytest.approx((f - 1) / (f + k - 1), rel=1e-9)
    assert s["icc"]["ICC1"]["p_value"] == pytest.approx(one_way.pvalue, rel=1e-9)
    assert s["draws"]["spread"] == pytest.approx(np.mean(np.std(score, axis=1, ddof=1)))
    from scipy.stats import pearsonr

    kept = np.isfinite(people)
    r = pearsonr(people[kept], score[kept].mean(axis=1)).statistic
    f_kept = f_oneway(*score[kept]).statistic
    icc_k = (f_kept - 1) / f_kept  # ICC(k) of the balanced draws: 1 - 1/F
    noise = s["noise_ceiling"]["human.q"]
    assert noise["agreement"] == pytest.approx(r, rel=1e-9)
    assert noise["ceiling"] == pytest.approx(np.sqrt(icc_k), rel=1e-9)
    assert noise["disattenuated"] == pytest.approx(r / np.sqrt(icc_k), rel=1e-9)


def test_a_turn_column_is_part_of_the_unit(tmp_path: Path) -> None:
    rows = [{"item": "c1", "system": "s", "turn": turn, "draw": d, "score": v}
            for turn, values in ((1, (1, 2, 1)), (3, (5, 5, 4))) for d, v in enumerate(values)]
    rows += [{"item": "c2", "system": "s", "turn": 1, "draw": d, "score": v}
             for d, v in enumerate((3, 3, 2))]
    pd.DataFrame(rows).to_csv(tmp_path / "turns.csv", index=False)
    (row,) = reliability(str(tmp_path / "turns.csv"), "--draw", "draw")
    assert (row["n"], row["k"]) == (3, 3), "three (conversation, turn) units of three draws"
    x = np.array([[1, 2, 1], [5, 5, 4], [3, 3, 2]], dtype=float)
    assert row["icc"]["ICC1"]["value"] == pytest.approx(
        pingouin_table(x).loc["ICC(1,1)", "ICC"], rel=1e-9)


def strict_json(text: str) -> list[dict]:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    out: list[dict] = json.loads(text, parse_constant=refuse)
    return out


def test_too_few_complete_units_or_equal_draws_give_no_number_and_valid_json(
        tmp_path: Path) -> None:
    path = tmp_path / "few.csv"
    path.write_text("item,draw,s,t\na,0,1,2\na,1,,2\nb,0,1,2\nb,2,1,2\n")
    done = run_cli("meta-eval", "reliability", str(path), "--item", "item", "--draw", "draw",
                   "--json")
    assert done.returncode == 0, done.stderr
    few, equal = strict_json(done.stdout)
    assert few["complete"] == 0 and few["dropped"] == 2
    assert all(v["value"] is None and v["df1"] is None and v["df2"] is None
               for v in few["icc"].values())
    assert equal["complete"] == 0 and equal["draws"]["flip_share"] == 0.0
    text = run_cli("meta-eval", "reliability", str(path), "--item", "item", "--draw", "draw")
    assert "ICC: n/a (fewer than 2 units with every judgement)" in text.stdout
    assert "-1" not in text.stdout and "nan" not in text.stdout
    path.write_text("item,draw,s\na,0,3\na,1,3\nb,0,3\nb,1,3\n")
    (same,) = strict_json(run_cli("meta-eval", "reliability", str(path), "--item", "item",
                                  "--draw", "draw", "--json").stdout)
    assert same["complete"] == 2 and same["icc"]["ICC1"]["value"] is None
    assert same["icc"]["ICC1"]["df1"] == 1


BAD = [
    ("item,system,draw,score\n1,a,0,3\n1,a,0,4\n", ["--draw", "draw"], "line 3",
     "field 'item'", "duplicate key"),
    ("item,system,draw,score\n1,a,0,3\n1,a,1,high\n", ["--draw", "draw", "--score", "score"],
     "line 3",
     "field 'score'", "not numeric"),
    ("item,system,draw,score\n1,a,0,3\n1,a,1,inf\n", ["--draw", "draw", "--score", "score"],
     "line 3",
     "field 'score'", "not finite"),
    ("item,system,draw,score\n1,a,0,3\n,a,1,2\n", ["--draw", "draw"], "line 3",
     "field 'item'", "empty key"),
    ("unit,draw,score\nx,0,3\nx,1,2\n", ["--draw", "draw"], "", "field '--item'",
     "no item column"),
    ("item,system,draw,score\n1,a,0,3\n", ["--draw", "turn"], "", "field 'turn'",
     "missing"),
    ("item,system,draw,score\n1,a,0,3\n2,a,0,2\n", ["--draw", "draw"], "", "field 'score'",
     "one draw per unit"),
    ("item,r1,r2\n1,3,4\n1,2,2\n", ["--rater", "r1", "--rater", "r2"], "line 3",
     "field 'item'", "duplicate key"),
    ("item,r1,r2\n1,3,4\n2,2,yes\n", ["--rater", "r1", "--rater", "r2"], "line 3",
     "field 'r2'", "not numeric"),
    ("item,r1,r2\n1,3,4\n", ["--rater", "r1"], "", "field '--rater'", "at least two"),
    ("item,system,draw,score,h\n1,a,0,3,2\n1,a,1,4,\n1,a,2,4,2.5\n",
     ["--draw", "draw", "--human", "h"], "line 4", "field 'h'", "one number"),
    ("item,system,draw,score,h\n1,a,0,3,2\n1,a,1,4,x\n",
     ["--draw", "draw", "--human", "h"], "line 3", "field 'h'", "not numeric"),
]


@pytest.mark.parametrize(("text", "flags", "line", "field", "reason"), BAD)
def test_a_bad_table_is_refused_naming_file_line_and_field(
        tmp_path: Path, text: str, flags: list[str], line: str, field: str,
        reason: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    done = run_cli("meta-eval", "reliability", str(path), *flags)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert str(path) in done.stderr and field in done.stderr and reason in done.stderr
    assert line in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(("flags", "reason"), [
    (["--draw", "d", "--rater", "a"], "two layouts"),
    (["--draw", "d", "--metric", "m"], "--metric"),
    (["--rater", "a", "--rater", "b", "--score", "s"], "--score goes with"),
    (["--item", "item"], "--item goes with"),
    (["--rater", "a", "--rater", "b", "--human", "h"], "--human goes with"),
])
def test_options_that_do_not_go_together_are_usage_errors(tmp_path: Path, flags: list[str],
                                                          reason: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text("item,d,s\n1,0,1\n")
    done = run_cli("meta-eval", "reliability", str(path), *flags)
    assert done.returncode == 2 and reason in done.stderr


def test_a_scores_table_without_repeats_points_to_the_plain_layouts() -> None:
    done = run_cli("meta-eval", "reliability", str(ROOT / "examples" / "summeval-scores.csv"))
    assert done.returncode == 2
    assert "drawn more than once" in done.stderr and "--draw" in done.stderr


def test_draws_from_the_store_equal_the_same_draws_as_a_table(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")
    from fault_server import FaultServer

    with FaultServer("--random-scores", "11", log=tmp_path / "served.jsonl") as server:
        metric = ("judge.rubric:backend=openai_compat,model=judge,api_base="
                  f"{server.url},timeout_s=5,max_attempts=3,temperature=1,protocol=text")
        data = write_jsonl(tmp_path / "in.jsonl", summeval_records(10))
        done = run_cli("score", str(data), "-m", metric, "--repeats", "4", "--store",
                       str(tmp_path / "runs.db"), "--cache", str(tmp_path / "cache.sqlite"),
                       "-o", str(tmp_path / "out.csv"), cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "d")})
        assert done.returncode == 0, done.stderr
    name = column(metric)
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        draws = pd.read_sql("SELECT item, system, sample_index AS draw, value FROM scores"
                            " WHERE status = 'ok'", conn)
    assert draws.value.nunique() > 1, "the server answers at random"
    order = pd.read_csv(tmp_path / "out.csv", dtype={"item": str, "system": str})
    # in the scores table's row order: the units' sums are then added in the same order
    draws = order[["item", "system"]].merge(draws, on=["item", "system"], how="left")
    people = order[["item", "system", "human.coherence"]]
    draws = draws.merge(people, on=["item", "system"])  # people's score on each draw's row
    draws.rename(columns={"value": name}).to_csv(tmp_path / "draws.csv", index=False)
    found: dict[str, dict] = {}
    for design in ("one-way", "two-way-random", "two-way-mixed"):
        (stored,) = reliability(str(tmp_path / "out.csv"), "--icc-design", design,
                                "--human", "human.coherence")
        (plain,) = reliability(str(tmp_path / "draws.csv"), "--draw", "draw",
                               "--icc-design", design, "--human", "human.coherence")
        assert stored.pop("source") == str(tmp_path / "runs.db")
        assert plain.pop("source") == str(tmp_path / "draws.csv")
        assert stored == plain and stored["n"] == 10 and stored["k"] == 4
        found[design] = stored
    # and the same as meta-eval's `repeats` section of that store
    shown = run_cli("meta-eval", str(tmp_path / "out.csv"), "--human", "human.coherence",
                    "--json", cwd=tmp_path)
    (repeats,) = [r for r in json.loads(shown.stdout) if r["statistic"] == "repeats"]
    assert repeats["icc_inference"] == found["one-way"]["icc"]
    assert repeats["flip_share"] == found["one-way"]["draws"]["flip_share"]
    assert repeats["noise_ceiling"] == found["one-way"]["noise_ceiling"]
