"""services.label_sample: the rows a table gives an annotator to label. Each strategy's draw
equals meta_eval.sampling's on inputs computed here independently (pandas strata and bins, the
judges' disagreement scaled by hand, a pairwise judge's two orders, a judge's `score --repeats`
draws read from a real store with sqlite3), exclusions by (item, system), pairs keyed
"A vs B", and every refusal naming the file and the column or option."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, column, run_cli, summeval_records, write_jsonl

from judgebench.errors import InputError
from judgebench.services.label_sample import label_sample
from meta_eval.estimation import active_label_priority, ppi_mean
from meta_eval.sampling import (
    active_binary_sample,
    active_sample,
    disagreement_sample,
    stratified_sample,
)

SCORES = REPO / "examples" / "summeval-scores.csv"


def keys(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip([str(v) for v in frame["item"]], [str(v) for v in frame["system"]],
                    strict=True))


def test_random_rows_are_table_rows_with_n_over_n_and_never_an_excluded_one():
    frame = pd.read_csv(SCORES)
    done = keys(frame)[:10]
    result = label_sample(SCORES, strategy="random", n=12, seed=3, exclude=done)
    got = [(r.item, r.system) for r in result.rows]
    assert len(set(got)) == 12 and set(got) <= set(keys(frame)) and not set(got) & set(done)
    assert [r.position for r in result.rows] == list(range(12))
    assert all(r.inclusion_probability == 12 / (len(frame) - 10) for r in result.rows)
    assert (result.candidates, result.eligible) == (len(frame), len(frame) - 10)
    assert result.signature.startswith("sample.random@1|n:12|seed:3|")
    again = label_sample(SCORES, strategy="random", n=12, seed=3, exclude=done)
    assert again.rows == result.rows
    table = result.to_frame()
    assert list(table.columns) == ["item", "system", "inclusion_probability", "position",
                                   "stratum"]
    assert json.loads(result.to_json())["rows"][0]["item"] == result.rows[0].item


def test_stratified_by_system_and_bins_is_n_h_over_n_h_of_strata_built_with_pandas():
    frame = pd.read_csv(SCORES)
    bleu = frame["lexical.bleu"].to_numpy(dtype=float)
    edges = np.quantile(bleu, [1 / 3, 2 / 3])
    binned = pd.cut(bleu, bins=[-np.inf, *edges, np.inf], right=False, labels=False)
    strata = [f"system={s} | lexical.bleu bin {b + 1} of 3"
              for s, b in zip(frame["system"], binned, strict=True)]
    result = label_sample(SCORES, strategy="stratified", n=45, seed=4, judge="lexical.bleu",
                          bins=3, minimum=1)
    want = stratified_sample(strata=strata, n=45, seed=4, minimum=1)
    assert [(r.item, r.system) for r in result.rows] == [keys(frame)[k] for k in want.positions]
    counts = pd.Series(strata).value_counts()
    drawn = pd.Series([r.stratum for r in result.rows]).value_counts()
    for row in result.rows:
        assert row.stratum is not None
        assert row.inclusion_probability == drawn[row.stratum] / counts[row.stratum]
    assert result.parameters["bins"] == 3 and result.parameters["by"] == "system"


def scaled(values: np.ndarray) -> np.ndarray:
    return (values - values.min()) / (values.max() - values.min())


def test_disagreement_between_judges_scales_each_higher_is_better_to_0_1():
    frame = pd.read_csv(SCORES)
    # TER is lower-is-better (the sidecar says so): turned around before comparing
    columns = np.column_stack([scaled(frame["lexical.bleu"].to_numpy()),
                               scaled(-frame["lexical.ter"].to_numpy()),
                               scaled(frame["lexical.rougeL"].to_numpy())])
    d = columns.std(axis=1)
    result = label_sample(SCORES, strategy="disagreement", n=8, seed=5,
                          judges=["lexical.bleu", "lexical.ter", "lexical.rougeL"])
    want = disagreement_sample(disagreement=d, n=8, seed=5)
    assert [(r.item, r.system) for r in result.rows] == [keys(frame)[k] for k in want.positions]
    assert [r.inclusion_probability for r in result.rows] == pytest.approx(want.probabilities,
                                                                           rel=1e-12)
    assert result.parameters["disagreement"] == "judges"
    unturned = np.column_stack([scaled(frame["lexical.bleu"].to_numpy()),
                                scaled(frame["lexical.ter"].to_numpy()),
                                scaled(frame["lexical.rougeL"].to_numpy())]).std(axis=1)
    other = disagreement_sample(disagreement=unturned, n=8, seed=5)
    assert other.probabilities != pytest.approx(want.probabilities, rel=1e-6), \
        "the direction of TER must change the design"


def test_disagreement_between_a_pairwise_judges_two_orders(tmp_path):
    rows = []
    verdicts = ["a", "b", "tie", "0.75", "a", "b"]
    for k in range(30):
        ab, ba = verdicts[k % 6], verdicts[(k * 7 + 1) % 6]
        rows.append({"item": f"i{k // 3}", "system_a": "m1", "system_b": f"m{2 + k % 3}",
                     "j": ab, "j.ab": ab, "j.ba": "" if k == 4 else ba})
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    probability = {"a": 1.0, "b": 0.0, "tie": 0.5, "0.75": 0.75, "": np.nan}
    first = np.array([probability[r["j.ab"]] for r in rows])
    second = np.array([probability[r["j.ba"]] for r in rows])
    d = np.where(np.isfinite(second), np.abs(first - second) / 2, 0.0)
    result = label_sample(path, strategy="disagreement", n=6, seed=1, judge="j")
    want = disagreement_sample(disagreement=d, n=6, seed=1)
    names = [(r["item"], f"m1 vs {r['system_b']}") for r in rows]
    assert [(r.item, r.system) for r in result.rows] == [names[k] for k in want.positions]
    assert result.parameters["disagreement"] == "orders"
    excluded = label_sample(path, strategy="random", n=29, seed=0, exclude=[names[4]])
    assert names[4] not in [(r.item, r.system) for r in excluded.rows]


def test_disagreement_between_a_judges_repeats_read_from_the_store(tmp_path):
    pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")
    from fault_server import FaultServer

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(12))
    with FaultServer("--random-scores", "3") as server:
        spec = ("judge.rubric:backend=openai_compat,model=judge,api_base=" + server.url
                + ",timeout_s=5,temperature=1,protocol=text")
        done = run_cli("score", str(data), "-m", spec, "--repeats", "4", "--store",
                       str(tmp_path / "runs.db"), "--cache", str(tmp_path / "cache.sqlite"),
                       "-o", str(tmp_path / "out.csv"), cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "d")})
    assert done.returncode == 0, done.stderr
    judge = column(spec)
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        stored = pd.read_sql("SELECT item, system, sample_index, value FROM scores", conn)
    draws = stored.pivot_table(index=["item", "system"], columns="sample_index",
                               values="value")
    table = pd.read_csv(tmp_path / "out.csv")
    matrix = draws.loc[keys(table)].to_numpy(dtype=float)
    assert matrix.shape == (12, 4) and np.unique(matrix).size > 1
    d = ((matrix - matrix.min()) / (matrix.max() - matrix.min())).std(axis=1)
    result = label_sample(tmp_path / "out.csv", strategy="disagreement", n=5, seed=2,
                          judge=judge)
    want = disagreement_sample(disagreement=d, n=5, seed=2)
    assert [(r.item, r.system) for r in result.rows] == [keys(table)[k] for k in want.positions]
    assert result.parameters["disagreement"] == "repeats"


def direct_priority(f: np.ndarray, y: np.ndarray, lam: float, centre: bool = True
                    ) -> np.ndarray:
    """sqrt of the mean squared residual Y - lam f (less the labels' mean of it: centred) in
    quantile bins of the labelled judge scores (floor(sqrt(labels)) bins, right-closed at the
    edges as searchsorted 'right')."""
    labelled = np.isfinite(y)
    count = max(1, int(np.sqrt(labelled.sum())))
    edges = np.unique(np.quantile(f[labelled], np.linspace(0, 1, count + 1)[1:-1]))
    where = np.searchsorted(edges, f, side="right")
    residual = y - lam * f
    if centre:
        residual = residual - residual[labelled].mean()
    squared = residual**2
    means = {b: squared[labelled & (where == b)].mean() for b in np.unique(where[labelled])}
    overall = squared[labelled].mean()
    return np.sqrt(np.array([means.get(b, overall) for b in where]))


def test_active_draws_by_the_priority_of_the_labels_with_labelled_rows_priced_too():
    frame = pd.read_csv(SCORES)
    rows = keys(frame)
    labelled = list(range(0, 64, 3))
    labels = {rows[k]: float(frame["human.relevance"][k]) for k in labelled}
    mine = [rows[k] for k in labelled[:8]]  # this annotator labelled 8 of the 22
    result = label_sample(SCORES, strategy="active", n=10, seed=6, judge="lexical.rougeL",
                          labels=labels, exclude=mine)
    f = frame["lexical.rougeL"].to_numpy(dtype=float)
    y = np.full(len(rows), np.nan)
    y[labelled] = frame["human.relevance"].to_numpy()[labelled]
    lam = ppi_mean(judge=f, human=y).lam
    assert lam is not None and result.parameters["lam"] == pytest.approx(lam, abs=1e-6)
    priority = direct_priority(f, y, lam)
    unlabelled = ~np.isfinite(y)
    assert np.allclose(priority[unlabelled],
                       active_label_priority(judge=f, human=y, lam=lam,
                                             centre=True)[unlabelled])
    want = active_sample(priority=priority, n=10, seed=6,
                         exclude=[rows.index(m) for m in mine])
    assert [(r.item, r.system) for r in result.rows] == [rows[k] for k in want.positions]
    assert not set(mine) & {(r.item, r.system) for r in result.rows}
    uncentred = active_sample(priority=direct_priority(f, y, lam, centre=False), n=10, seed=6,
                              exclude=[rows.index(m) for m in mine])
    assert uncentred.probabilities != pytest.approx(want.probabilities, rel=1e-6), \
        "centring must change the design (the check could not tell otherwise)"


def test_active_turns_a_lower_is_better_judge_around(tmp_path):
    """The sidecar says TER is lower-is-better: the priority's lam comes from -TER, which
    agrees with people here (lam > 0); TER as written would get lam = 0 (clipped)."""
    frame = pd.read_csv(SCORES)
    rng = np.random.default_rng(0)
    frame["lexical.ter"] = 90 - 10 * frame["human.relevance"] + rng.normal(size=len(frame))
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    path.with_name("scores.csv.meta.json").write_text(
        Path(f"{SCORES}.meta.json").read_text(encoding="utf-8"), encoding="utf-8")
    rows = keys(frame)
    labels = {rows[k]: float(frame["human.relevance"][k]) for k in range(0, 64, 3)}
    y = np.full(len(rows), np.nan)
    y[::3] = frame["human.relevance"].to_numpy()[::3]
    ter = frame["lexical.ter"].to_numpy()
    turned = ppi_mean(judge=-ter, human=y).lam
    assert turned is not None and turned > 0 and ppi_mean(judge=ter, human=y).lam == 0.0
    result = label_sample(path, strategy="active", n=10, seed=6, judge="lexical.ter",
                          labels=labels)
    assert result.parameters["lam"] == pytest.approx(turned, abs=1e-6)


def test_active_with_binary_verdicts_splits_by_verdict_from_labels_or_the_prior():
    frame = pd.read_csv(SCORES)
    frame["verdict"] = (frame["lexical.rougeL"] > 0.25).astype(int)
    frame["pass"] = (frame["human.relevance"] >= 4).astype(int)
    rows = keys(frame)
    prior = label_sample(frame, strategy="active", n=16, seed=7, judge="verdict")
    want = active_binary_sample(verdicts=frame["verdict"].to_numpy(), n=16, seed=7)
    assert [(r.item, r.system) for r in prior.rows] == [rows[k] for k in want.positions]
    assert prior.parameters["rates"] == "prior 0.9/0.9"
    labels = {rows[k]: float(frame["pass"][k]) for k in range(0, 64, 2)}
    y = frame["pass"].to_numpy()[::2]
    v = frame["verdict"].to_numpy()[::2]
    q0 = (((v == 0) & (y == 0)).sum() + 2 * 0.9) / ((y == 0).sum() + 2)
    q1 = (((v == 1) & (y == 1)).sum() + 2 * 0.9) / ((y == 1).sum() + 2)
    fitted = label_sample(frame, strategy="active", n=16, seed=7, judge="verdict",
                          labels=labels, exclude=list(labels)[:20])
    assert fitted.parameters["specificity"] == pytest.approx(q0, rel=1e-12)
    assert fitted.parameters["sensitivity"] == pytest.approx(q1, rel=1e-12)
    for row in fitted.rows:
        share = fitted.details["strata"][f"judged {row.stratum[-1]}"]  # type: ignore[index]
        drawn, size = (int(x) for x in share.split("/"))
        assert row.inclusion_probability == drawn / size


def test_active_by_a_judges_probability_follows_p_times_1_minus_p(tmp_path):
    frame = pd.read_csv(SCORES)
    rouge = frame["lexical.rougeL"].to_numpy(dtype=float)
    frame["p"] = np.round((rouge - rouge.min()) / (rouge.max() - rouge.min()), 1)  # ties
    rows = keys(frame)
    labels = {rows[k]: 3.0 for k in range(4)}
    result = label_sample(frame, strategy="active", n=12, seed=8, judge="p",
                          uncertainty="probability", labels=labels, exclude=rows[:2])
    p = frame["p"].to_numpy()
    want = active_sample(uncertainty=p * (1 - p), n=12, seed=8, exclude=[0, 1])
    assert [(r.item, r.system) for r in result.rows] == [rows[k] for k in want.positions]
    assert [r.inclusion_probability for r in result.rows] == list(want.probabilities)
    assert result.parameters["uncertainty"] == "probability"
    assert "priority:uncertainty" in result.signature and "uniform_share:0.5" in result.signature
    assert any("labels given are not used" in note for note in result.notes)
    verdicts = frame.assign(p=(frame["p"] > 0.5).astype(int))  # 0/1: p (1 - p) = 0, uniform
    uniform = label_sample(verdicts, strategy="active", n=8, seed=1, judge="p",
                           uncertainty="probability")
    assert [r.inclusion_probability for r in uniform.rows] == pytest.approx([8 / 64] * 8,
                                                                            rel=1e-12)
    frame.loc[9, "p"] = 1.25
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"1\.25 is not a probability") as error:
        label_sample(path, strategy="active", n=5, judge="p", uncertainty="probability")
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 11, "p")


def test_active_by_a_judges_repeats_follows_the_variance_of_its_draws(tmp_path):
    pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")
    from fault_server import FaultServer

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(16))
    with FaultServer("--random-scores", "5") as server:
        spec = ("judge.rubric:backend=openai_compat,model=judge,api_base=" + server.url
                + ",timeout_s=5,temperature=1,protocol=text")
        done = run_cli("score", str(data), "-m", spec, "--repeats", "3", "--store",
                       str(tmp_path / "runs.db"), "--cache", str(tmp_path / "cache.sqlite"),
                       "-o", str(tmp_path / "out.csv"), cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "d")})
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        stored = pd.read_sql("SELECT item, system, sample_index, value FROM scores", conn)
    table = pd.read_csv(tmp_path / "out.csv")
    draws = stored.pivot_table(index=["item", "system"], columns="sample_index",
                               values="value").loc[keys(table)].to_numpy(dtype=float)
    assert draws.shape == (16, 3) and np.isfinite(draws).all()
    variance = draws.var(axis=1, ddof=1)
    assert np.unique(variance).size > 2
    judge = column(spec)
    result = label_sample(tmp_path / "out.csv", strategy="active", n=6, seed=4, judge=judge,
                          uncertainty="repeats")
    want = active_sample(uncertainty=variance, n=6, seed=4)
    assert [(r.item, r.system) for r in result.rows] == [keys(table)[k] for k in want.positions]
    assert [r.inclusion_probability for r in result.rows] == list(want.probabilities)
    with pytest.raises(InputError, match="no score distribution") as error:
        label_sample(tmp_path / "out.csv", strategy="active", n=6, judge=judge,
                     uncertainty="distribution")
    assert error.value.field == judge


def test_active_by_a_geval_judges_score_distribution(tmp_path):
    """G-Eval in logprobs mode keeps its distribution over 1-5 (the server puts 0.6 on its
    answer and 0.1 on each other score): the variance of that distribution, read here from
    the store with sqlite3, is the uncertainty."""
    pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")
    from fault_server import FaultServer

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(20))
    with FaultServer(reply="{score}") as server:
        spec = ("judge.geval:backend=openai_compat,model=judge,api_base=" + server.url
                + ",timeout_s=5,criterion=relevance,steps=1. Rate relevance.")
        done = run_cli("score", str(data), "-m", spec, "--store", str(tmp_path / "runs.db"),
                       "--cache", str(tmp_path / "cache.sqlite"), "-o",
                       str(tmp_path / "out.csv"), cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "d")})
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        stored = {(item, system): json.loads(extra)["probs"] for item, system, extra in
                  conn.execute("SELECT item, system, extra FROM scores")}
    table = pd.read_csv(tmp_path / "out.csv")
    variance = []
    for key in keys(table):
        probs = {int(s): p for s, p in stored[key].items()}
        mean = sum(s * p for s, p in probs.items())
        variance.append(sum(p * (s - mean) ** 2 for s, p in probs.items()))
    assert len(set(np.round(variance, 9))) > 1  # 0.6 on 1 or 5 spreads more than on 3
    with pytest.raises(InputError, match="the sidecar names none: pass the store"):
        label_sample(tmp_path / "out.csv", strategy="active", n=7, seed=2,
                     judge=column(spec), uncertainty="distribution")
    result = label_sample(tmp_path / "out.csv", strategy="active", n=7, seed=2,
                          judge=column(spec), uncertainty="distribution",
                          store=tmp_path / "runs.db")
    want = active_sample(uncertainty=variance, n=7, seed=2)
    assert [(r.item, r.system) for r in result.rows] == [keys(table)[k] for k in want.positions]
    assert [r.inclusion_probability for r in result.rows] == pytest.approx(want.probabilities,
                                                                           rel=1e-12)
    assert result.parameters["uncertainty"] == "distribution"


def test_refusals_name_the_file_and_the_column_or_option(tmp_path):
    cases = [
        (dict(strategy="random", n=65), "cannot draw 65 items", "--sample"),
        (dict(strategy="stratified", n=5, judge="nope"), "nope", "nope"),
        (dict(strategy="active", n=5, judge="lexical.bleu"), "at least 2 rows", "labels"),
        (dict(strategy="disagreement", n=5, judge="lexical.bleu"), "not scored with --repeats",
         "lexical.bleu"),
        (dict(strategy="stratified", n=200, judge="lexical.bleu"), "cannot draw 200",
         "--sample"),
    ]
    for options, message, field in cases:
        with pytest.raises(InputError, match=message) as error:
            label_sample(SCORES, **options)  # type: ignore[arg-type]
        assert error.value.field == field
        assert error.value.path == str(SCORES)
    with pytest.raises(InputError, match="unknown strategy 'uncertainty'"):
        label_sample(SCORES, strategy="uncertainty", n=5)
    for wrong in (dict(strategy="random", uncertainty="probability"),
                  dict(strategy="active", judge="lexical.bleu", uncertainty="entropy")):
        with pytest.raises(InputError, match="instead of labels") as error:
            label_sample(SCORES, n=5, **wrong)  # type: ignore[arg-type]
        assert error.value.field == "--uncertainty"
    with pytest.raises(InputError, match=r"not scored with --repeats.*variance of its draws") \
            as error:
        label_sample(SCORES, strategy="active", n=5, judge="lexical.bleu",
                     uncertainty="repeats")
    assert (error.value.path, error.value.field) == (str(SCORES), "lexical.bleu")
    with pytest.raises(InputError, match="two or more judge columns") as error:
        label_sample(SCORES, strategy="disagreement", n=5, judges=["lexical.bleu"])
    assert error.value.field == "--judges"

    frame = pd.read_csv(SCORES)
    frame.loc[5, "lexical.bleu"] = np.nan
    holes = tmp_path / "holes.csv"
    frame.to_csv(holes, index=False)
    labels = {k: 3.0 for k in keys(frame)[:4]}
    with pytest.raises(InputError, match="no score on this row") as error:
        label_sample(holes, strategy="active", n=5, judge="lexical.bleu", labels=labels)
    assert (error.value.path, error.value.line, error.value.field) == \
        (str(holes), 7, "lexical.bleu")
    fine = label_sample(holes, strategy="active", n=5, judge="lexical.bleu", labels=labels,
                        exclude=[keys(frame)[5]])
    assert keys(frame)[5] not in [(r.item, r.system) for r in fine.rows]

    twice = tmp_path / "twice.csv"
    pd.concat([frame.iloc[:3], frame.iloc[[1]]]).to_csv(twice, index=False)
    with pytest.raises(InputError, match="appears twice") as error:
        label_sample(twice, strategy="random", n=2)
    assert (error.value.path, error.value.line) == (str(twice), 5)
