"""`judgebench estimate`: its numbers equal the meta_eval estimation functions called directly
on the same data (the table read here with pandas, grouped here), per system; the refusals
exit 2 naming the column and system; the JSON objects carry their fields and signatures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from meta_eval.estimation import (
    active_label_priority,
    hajek_ppi_mean,
    human_only_mean,
    judge_only_mean,
    labels_to_reach,
    paired_difference,
    ppi_mean,
    stratified_ppi_mean,
)
from meta_eval.rogan_gladen import rogan_gladen

SYSTEMS = ("alpha", "beta", "gamma")
FIELDS = ("point", "lower", "upper", "standard_error", "labels", "items", "lam",
          "effective_labels")


def table(path: Path, *, items: int = 80, seed: int = 0) -> Path:
    """Three systems on the same items; the judge a biased, noisy copy of people's score
    with ties (rounded) and one system's scores huge; about 40% labelled, sampled with a
    known probability that depends on the judge score; strata = the item's half."""
    rng = np.random.default_rng(seed)
    rows = []
    for s, system in enumerate(SYSTEMS):
        for i in range(items):
            truth = float(rng.integers(1, 6)) + s * 0.3
            judge = round(0.5 * truth + 1.0 + rng.normal(scale=0.6), 1)
            pi = 0.25 if judge < 2.5 else 0.6
            labelled = rng.random() < pi or i < 2
            rows.append({"item": f"i{i:03d}", "system": system,
                         "judge": judge * (1e12 if system == "gamma" else 1.0),
                         "human": truth if labelled else np.nan,
                         "pi": 1.0 if i < 2 else pi, "half": "a" if i < items // 2 else "b",
                         "verdict": float(judge >= 2.5),
                         "passed": float(truth >= 3) if labelled else np.nan})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def estimate(*args: str) -> list[dict]:
    proc = run_cli("estimate", *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def by_key(records: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["system"], r["method"]): r for r in records if r["type"] == "estimate"}


def same(record: dict, expected: object) -> None:
    for name in FIELDS:
        if name == "effective_labels" and record.get("biased"):
            continue  # judge-only used no label: nothing to be worth
        want = getattr(expected, name)
        got = record[name]
        if want is None or got is None:
            assert got == want, name
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300), name


def test_each_systems_estimates_equal_the_functions_on_its_rows(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv")
    records = by_key(estimate(str(path), "--judge", "judge", "--human", "human",
                              "--method", "ppi", "--method", "stratified", "--strata", "half",
                              "--method", "weighted", "--inclusion-probability", "pi",
                              "--confidence", "0.9"))
    frame = pd.read_csv(path)
    for system in SYSTEMS:
        rows = frame[frame["system"] == system]
        f, y = rows["judge"].to_numpy(), rows["human"].to_numpy()
        judge_only = judge_only_mean(judge=f, confidence=0.9)
        same(records[(system, "human-only")], human_only_mean(human=y, confidence=0.9))
        same(records[(system, "judge-only")], judge_only)
        assert records[(system, "judge-only")]["biased"] is True
        assert records[(system, "judge-only")]["effective_labels"] is None
        for method, expected in (
                ("ppi++", ppi_mean(judge=f, human=y, confidence=0.9)),
                ("stratified-ppi++", stratified_ppi_mean(
                    judge=f, human=y, strata=rows["half"].to_numpy(), confidence=0.9)),
                ("hajek-ppi++", hajek_ppi_mean(
                    judge=f, human=y, inclusion_probability=rows["pi"].to_numpy(),
                    confidence=0.9))):
            record = records[(system, method)]
            same(record, expected)
            assert record["labels_worth"] == pytest.approx(expected.labels_worth, rel=1e-12)
            assert record["moved"] == pytest.approx(expected.point - judge_only.point,
                                                    rel=1e-12)
            assert record["biased"] is False
            assert f"estimate.{method}@1|" in record["signature"]
            assert "judge:judge|human:human|by:system|confidence:0.9" in record["signature"]
    assert "strata:half" in records[("alpha", "stratified-ppi++")]["signature"]
    assert "inclusion:pi" in records[("alpha", "hajek-ppi++")]["signature"]
    assert "strata:" not in records[("alpha", "ppi++")]["signature"]


def test_overall_and_pass_rate_with_rogan_gladen(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv", seed=1)
    frame = pd.read_csv(path)
    overall = by_key(estimate(str(path), "--judge", "judge", "--human", "human", "--by",
                              "none"))
    same(overall[("(all)", "ppi++")], ppi_mean(judge=frame["judge"], human=frame["human"]))
    records = by_key(estimate(str(path), "--judge", "judge", "--human", "passed",
                              "--statistic", "pass-rate", "--threshold", "2.5"))
    for system in ("alpha", "beta"):  # gamma's judge is scaled by 1e12: >= 2.5 everywhere
        rows = frame[frame["system"] == system]
        verdict = (rows["judge"] >= 2.5).astype(float).to_numpy()
        y = rows["passed"].to_numpy()
        labelled = ~np.isnan(y)
        assert np.array_equal(verdict, rows["verdict"].to_numpy())
        same(records[(system, "ppi++")], ppi_mean(judge=verdict, human=y))
        expected = rogan_gladen(test_verdicts=verdict, calibration_verdicts=verdict[labelled],
                                calibration_human=y[labelled])
        same(records[(system, "rogan-gladen")], expected)
        assert "threshold:2.5|human_threshold:binary" in records[(system, "ppi++")][
            "signature"]
    # gamma's judge passes every item: its specificity is 0, so no corrected rate exists
    undefined = records[("gamma", "rogan-gladen")]
    assert undefined["point"] is None and undefined["lower"] is None
    assert "no better than chance" in undefined["undefined"]
    text = run_cli("estimate", str(path), "--judge", "judge", "--human", "passed",
                   "--statistic", "pass-rate", "--threshold", "2.5")
    assert text.returncode == 0, text.stderr
    assert "rogan-gladen: undefined: the judge's sensitivity" in text.stdout


def test_compare_gives_paired_differences_and_target_width_the_labels(tmp_path: Path
                                                                      ) -> None:
    path = table(tmp_path / "t.csv", seed=2)
    records = estimate(str(path), "--judge", "judge", "--human", "human", "--compare",
                       "--target-width", "0.4", "--next", "5")
    frame = pd.read_csv(path)
    wide = {s: frame[frame["system"] == s].set_index("item").sort_index() for s in SYSTEMS}
    differences = [r for r in records if r["type"] == "difference"]
    assert [(d["system"], d["against"]) for d in differences] == [
        ("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    for d in differences:
        a, b = wide[d["system"]], wide[d["against"]]
        expected = paired_difference(judge_a=a["judge"], judge_b=b["judge"],
                                     human_a=a["human"], human_b=b["human"])
        same(d, expected)
        assert d["excludes_zero"] == (expected.lower > 0 or expected.upper < 0)
        assert d["signature"].startswith("estimate.paired-ppi++@1|")
    for record in records:
        if record["type"] != "estimate" or record["method"] != "ppi++":
            continue
        rows = frame[frame["system"] == record["system"]]
        f, y = rows["judge"].to_numpy(), rows["human"].to_numpy()
        expected = ppi_mean(judge=f, human=y)
        needed = labels_to_reach(estimate=expected, target_width=0.4)
        assert record["labels_to_reach"] == needed and needed
        assert expected.lam is not None
        priority = active_label_priority(judge=f, human=y, lam=expected.lam, centre=True)
        named = record["next_items"]
        assert len(named) == min(needed, 5)
        chosen = rows["item"].isin(named).to_numpy()
        assert np.isnan(y[chosen]).all()
        unnamed = np.isnan(y) & ~chosen
        assert priority[chosen].min() >= priority[unnamed].max()


@pytest.mark.parametrize(("change", "args", "words"), [
    (lambda d: d.assign(judge=d["judge"].where(d.index != 7)), (),
     ("'judge'", "system 'alpha'", "every item")),
    (lambda d: d.assign(human=np.nan), (), ("'human'", "no labels")),
    (lambda d: d.assign(human=d["human"].where((d["system"] != "beta") | (d["item"] == "i000"))),
     (), ("'human'", "1 label(s)", "system 'beta'")),
    (lambda d: d, ("--statistic", "pass-rate", "--human", "passed"),
     ("'judge'", "not binary", "system 'alpha'")),
    (lambda d: d, ("--statistic", "pass-rate", "--threshold", "2.5"),
     ("'human'", "not binary", "--human-threshold")),
    (lambda d: d, ("--method", "rogan-gladen"), ("pass-rate",)),
    (lambda d: d, ("--method", "stratified"), ("--strata",)),
    (lambda d: d, ("--by", "none", "--compare"), ("--compare",)),
    (lambda d: d.assign(pi=d["pi"].where(d.index != 5, 0.0).where(d.index != 4, 1.0)
                        ).assign(human=d["human"].where(d.index != 5, 3.0)),
     ("--method", "weighted", "--inclusion-probability", "pi"), ("'pi'", "line 7", "(0, 1]")),
    (lambda d: d.assign(half=d["half"].where(d.index != 3)),
     ("--method", "stratified", "--strata", "half"), ("'half'", "line 5", "stratum")),
    (lambda d: d.assign(half=np.where(d["item"] == "i000", "lone", d["half"])),
     ("--method", "stratified", "--strata", "half"), ("--strata", "'lone'", "system 'alpha'")),
    (lambda d: d, ("--judge", "nope"), ("nope",)),
])
def test_bad_input_exits_2_naming_the_column(tmp_path: Path, change: object,
                                             args: tuple[str, ...], words: tuple[str, ...]
                                             ) -> None:
    path = table(tmp_path / "t.csv", items=20)
    changed = change(pd.read_csv(path))  # type: ignore[operator]
    changed.to_csv(path, index=False)
    options = {"--judge": "judge", "--human": "human"}
    rest = list(args)
    for flag in ("--judge", "--human"):
        if flag in rest:
            k = rest.index(flag)
            options[flag] = rest[k + 1]
            del rest[k:k + 2]
    proc = run_cli("estimate", str(path), "--judge", options["--judge"], "--human",
                   options["--human"], *rest)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_text_and_tables_show_the_biased_row_and_signatures(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv", items=30)
    text = run_cli("estimate", str(path), "--judge", "judge", "--human", "human")
    assert text.returncode == 0, text.stderr
    assert "judge-only (biased)" in text.stdout
    assert "estimate.ppi++@1|statistic:mean|judge:judge" in text.stdout
    markdown = run_cli("estimate", str(path), "--judge", "judge", "--human", "human", "-f",
                       "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.count("| estimate |") == 3 * 3
    csv = run_cli("estimate", str(path), "--judge", "judge", "--human", "human", "-f", "csv")
    back = pd.read_csv(io.StringIO(csv.stdout))
    records = estimate(str(path), "--judge", "judge", "--human", "human")
    assert back["point"].tolist() == [r["point"] for r in records]


def test_python_api_takes_a_frame(tmp_path: Path) -> None:
    import judgebench

    frame = pd.read_csv(table(tmp_path / "t.csv", items=30))
    result = judgebench.estimate(frame, judge="judge", human="human", by=None)
    rows = result.to_pandas()
    assert list(rows["method"]) == ["human-only", "judge-only", "ppi++"]
    assert rows["point"].iloc[2] == pytest.approx(
        ppi_mean(judge=frame["judge"], human=frame["human"]).point, rel=1e-12)
    assert json.loads(result.to_json()) == result.to_dict()


def test_a_lower_is_better_judge_enters_the_corrections_negated(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv", items=40, seed=3)
    frame = pd.read_csv(path)
    frame.assign(error=-frame["judge"]).to_csv(path, index=False)
    plain = by_key(estimate(str(path), "--judge", "judge", "--human", "human"))
    negated = by_key(estimate(str(path), "--judge", "error", "--human", "human",
                              "--lower-is-better", "error"))
    for system in SYSTEMS:
        rows = frame[frame["system"] == system]
        error, y = -rows["judge"].to_numpy(), rows["human"].to_numpy()
        same(negated[(system, "judge-only")], judge_only_mean(judge=error))
        expected = ppi_mean(judge=-error, human=y)
        same(negated[(system, "ppi++")], expected)
        assert expected.lam and expected.lam > 0  # the judge is used, not clipped away
        assert negated[(system, "ppi++")]["point"] == plain[(system, "ppi++")]["point"]
        assert "|judge_sign:negated|" in negated[(system, "ppi++")]["signature"]
        assert "judge_sign" not in plain[(system, "ppi++")]["signature"]


def test_overall_next_items_name_item_and_system_and_a_frame_error_names_the_frame(
        tmp_path: Path) -> None:
    import judgebench
    from judgebench.errors import InputError

    frame = pd.read_csv(table(tmp_path / "t.csv", items=30, seed=4))
    result = judgebench.estimate(frame, judge="judge", human="human", by=None,
                                 target_width=0.01, next_items=4)
    ppi = next(r for r in result.rows if r.method == "ppi++")
    unlabelled = {f"{i} ({s})" for i, s, h in frame[["item", "system", "human"]].itertuples(
        index=False) if np.isnan(h)}
    assert len(ppi.next_items) == 4 and set(ppi.next_items) <= unlabelled
    with pytest.raises(InputError, match=r"<DataFrame>.*'judge'.*system 'beta'"):
        judgebench.estimate(frame.assign(judge=frame["judge"].where(frame["system"] != "beta")),
                            judge="judge", human="human")


def test_rogan_gladen_refuses_labels_drawn_with_unequal_probabilities(tmp_path: Path) -> None:
    """Its rates assume a uniform calibration sample: with `pi` varying (0.25 / 0.6 by
    verdict) its row says why it has no number, and the weighted estimate stands."""
    path = table(tmp_path / "t.csv", seed=3)
    records = by_key(estimate(str(path), "--judge", "judge", "--human", "passed",
                              "--statistic", "pass-rate", "--threshold", "2.5",
                              "--method", "weighted", "--inclusion-probability", "pi",
                              "--method", "rogan-gladen"))
    frame = pd.read_csv(path)
    for system in ("alpha", "beta"):
        rows = frame[frame["system"] == system]
        verdict = (rows["judge"] >= 2.5).astype(float).to_numpy()
        same(records[(system, "hajek-ppi++")],
             hajek_ppi_mean(judge=verdict, human=rows["passed"].to_numpy(),
                            inclusion_probability=rows["pi"].to_numpy()))
        refused = records[(system, "rogan-gladen")]
        assert refused["point"] is None
        assert "unequal inclusion probabilities" in refused["undefined"]


def test_a_thinly_labelled_stratum_is_named_with_a_caution(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 400
    human = rng.normal(size=n).round(1)
    judge = human + rng.normal(scale=0.5, size=n)
    strata = np.where(np.arange(n) < 300, "big", "small")
    labelled = np.zeros(n, dtype=bool)
    labelled[rng.choice(300, 60, replace=False)] = True  # 60 labels in "big"
    labelled[300 + rng.choice(100, 6, replace=False)] = True  # 6 in "small"
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(n)], "system": "s",
                          "judge": judge, "human": np.where(labelled, human, np.nan),
                          "stratum": strata})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    args = ("--judge", "judge", "--human", "human", "--method", "stratified",
            "--strata", "stratum")
    record = by_key(estimate(str(path), *args))[("s", "stratified-ppi++")]
    assert "small (6)" in record["caution"] and "big" not in record["caution"]
    text = run_cli("estimate", str(path), *args)
    assert text.returncode == 0 and "caution: strata with fewer than 20 labels" in text.stdout
    labelled[300 + rng.choice(100, 30, replace=False)] = True  # now >= 20 in each
    frame["human"] = np.where(labelled, human, np.nan)
    frame.to_csv(path, index=False)
    assert "caution" not in by_key(estimate(str(path), *args))[("s", "stratified-ppi++")]
