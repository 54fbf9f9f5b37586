"""`meta-eval nodes`: a compound judge's nodes against people, and its disagreements
attributed to the nodes, equal to a direct computation: the kernels against scipy and
scikit-learn on random data with ties, NaN and extreme magnitudes; the command end to end on
the five-node DAG of tests/dag_support.py scored by a real loopback judge, against the same
numbers computed from what the judge was scripted to answer and people's labels."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from dag_support import draw_tags, expected, reply, tagged, write_dag
from scripted_judge import ScriptedJudge

from meta_eval.dag_nodes import disagreement_shares, node_agreement

KEY_ENV = {"JB_DAG_KEY": "sk-dag-test"}


def _direct_agreement(h: np.ndarray, m: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = h[ok], m[ok]
    constant = len(set(h)) < 2 or len(set(m)) < 2
    return {
        "n": float(len(h)), "agreement": float(np.mean(h == m)),
        "pearson": math.nan if constant else float(scipy.stats.pearsonr(h, m)[0]),
        "spearman": math.nan if constant else float(scipy.stats.spearmanr(h, m)[0]),
        "kappa": float(cohen_kappa_score(h.astype(str), m.astype(str)))}


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scale", [1.0, 1e-9, 1e12])
def test_node_agreement_equals_scipy_and_sklearn(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    h = rng.integers(0, 4, n).astype(float) * scale  # few values: many ties
    m = np.where(rng.random(n) < 0.6, h, rng.integers(0, 4, n) * scale)
    h[rng.random(n) < 0.15] = np.nan
    m[rng.random(n) < 0.1] = np.nan
    got = node_agreement(node="x", human=h, metric=m)
    want = _direct_agreement(h, m)
    assert got.n == want["n"]
    for name in ("agreement", "pearson", "spearman", "kappa"):
        assert _close(getattr(got, name), want[name]), (name, getattr(got, name), want[name])


def test_node_agreement_with_no_pair_and_a_constant_side() -> None:
    none = node_agreement(node="x", human=np.array([np.nan, 1.0]),
                          metric=np.array([1.0, np.nan]))
    assert none.n == 0 and math.isnan(none.agreement) and math.isnan(none.kappa)
    constant = node_agreement(node="x", human=np.array([1.0, 1.0, 1.0]),
                              metric=np.array([1.0, 0.0, 1.0]))
    assert constant.n == 3 and math.isnan(constant.pearson) and constant.agreement == 2 / 3


@pytest.mark.parametrize("seed", range(6))
def test_disagreement_shares_equal_a_membership_matrix_count(seed: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c", "d", "e"]
    paths = [["a", *rng.sample(names[1:], rng.randint(0, 4))]
             for _ in range(rng.randint(1, 40))]
    disagree = [rng.random() < 0.4 for _ in paths]
    wrong = [{"b": rng.random() < 0.5} if "b" in p else {} for p in paths]
    rows = {r.node: r for r in disagreement_shares(paths=paths, disagree=disagree,
                                                   wrong_at=wrong, nodes=names,
                                                   labelled=["b"])}
    member = np.array([[name in p for name in names] for p in paths])
    d = np.array(disagree)
    total = d.sum()
    for k, name in enumerate(names):
        through = member[:, k].sum()
        against = (member[:, k] & d).sum()
        row = rows[name]
        assert (row.passed, row.disagreements) == (through, against)
        assert _close(row.share, against / total if total else math.nan)
        assert _close(row.rate, against / through if through else math.nan)
    b_wrong = sum(1 for p, x, w in zip(paths, disagree, wrong, strict=True)
                  if "b" in p and x and w["b"])
    assert rows["b"].wrong_here == b_wrong and rows["c"].wrong_here is None
    assert rows["a"].share == (1.0 if total else rows["a"].share)


def test_disagreement_shares_refuse_lists_of_unequal_length() -> None:
    with pytest.raises(ValueError, match="one entry per item"):
        disagreement_shares(paths=[["a"]], disagree=[True, False])


# -- end to end -------------------------------------------------------------------------------
def _scored(tmp_path: Path, n: int, seed: int) -> tuple[list[dict], str]:
    rng = random.Random(seed)
    records, truth = [], []
    for record in summeval_records(n):
        tags = draw_tags(rng)
        labels = {"on_topic": float(tags["on"] if rng.random() < 0.8 else 1 - tags["on"]),
                  "cites": float(tags["cites"] if rng.random() < 0.7 else 1 - tags["cites"]),
                  "overall": float(rng.randint(1, 5))}
        for name in labels:
            if rng.random() < 0.1:
                labels[name] = None  # type: ignore[assignment]  # a missing label
        truth.append({"tags": tags, "labels": labels})
        records.append({**record, "output": tagged(record["output"], tags), "human": labels})
    data = write_jsonl(tmp_path / "samples.jsonl", records)
    write_dag(tmp_path)
    with ScriptedJudge(reply=reply) as server:
        spec = (f"judge.dag:path=dag.toml,backend=openai_compat,model=judge,"
                f"api_base={server.url},api_key_env=JB_DAG_KEY")
        proc = run_cli("score", str(data), "-m", spec, "-o", "out.csv", "--store", "s.db",
                       cwd=tmp_path, env={**KEY_ENV,
                                          "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr
    return truth, spec


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    folder = tmp_path_factory.mktemp("nodes")
    truth, _ = _scored(folder, 40, seed=5)
    return folder, truth


@pytest.mark.parametrize("tolerance", [0.0, 1.0])
def test_meta_eval_nodes_equals_a_direct_computation(scored: tuple[Path, list[dict]],
                                                     tolerance: float) -> None:
    tmp_path, truth = scored
    proc = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.overall", "--store",
                   "s.db", "--tolerance", str(tolerance), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [report] = json.loads(proc.stdout)

    walked = [expected(t["tags"]) for t in truth]
    label = {"on-topic": "on_topic", "cites-source": "cites"}
    answer = {"on-topic": "on", "cites-source": "cites"}
    for node in report["nodes"]:
        name = node["node"]
        through = [i for i, (path, _, _) in enumerate(walked) if name in path]
        h = np.array([np.nan if truth[i]["labels"][label[name]] is None
                      else truth[i]["labels"][label[name]] for i in through], dtype=float)
        m = np.array([truth[i]["tags"][answer[name]] for i in through], dtype=float)
        want = _direct_agreement(h, m)
        assert node["n"] == want["n"]
        for stat in ("agreement", "pearson", "spearman", "kappa"):
            got = math.nan if node[stat] is None else node[stat]
            assert _close(got, want[stat]), (name, stat, got, want[stat])
    assert [n["node"] for n in report["nodes"]] == ["on-topic", "cites-source"]

    evaluated = [i for i, t in enumerate(truth) if t["labels"]["overall"] is not None]
    disagree = {i: abs(truth[i]["labels"]["overall"] - walked[i][1]) > tolerance
                for i in evaluated}
    total = sum(disagree.values())
    assert (report["evaluated"], report["disagreements"]) == (len(evaluated), total)
    for row in report["attribution"]:
        through = [i for i in evaluated if row["node"] in walked[i][0]]
        against = [i for i in through if disagree[i]]
        assert (row["passed"], row["disagreements"]) == (len(through), len(against))
        assert row["share"] == pytest.approx(len(against) / total)
        if row["node"] in label:
            key, tag = label[row["node"]], answer[row["node"]]
            wrong = sum(1 for i in against if truth[i]["labels"][key] is not None
                        and truth[i]["tags"][tag] != truth[i]["labels"][key])
            assert row["wrong_here"] == wrong
        else:
            assert row["wrong_here"] is None
    assert report["signature"].startswith("dag-nodes@1|metric:judge.dag@1|nodes:5:")
    assert f"tolerance:{tolerance:g}" in report["signature"]

    text = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.overall", "--store",
                   "s.db", "--tolerance", str(tolerance), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    cites = next(r for r in report["attribution"] if r["node"] == "cites-source")
    assert (f"{cites['share']:4.0%} of the disagreements pass through node `cites-source`"
            in text.stdout)


def test_meta_eval_nodes_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    _scored(tmp_path, 6, seed=2)
    missing = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.overall", "--store",
                      "nowhere.db", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere.db" in missing.stderr
    assert "--store" in missing.stderr
    no_human = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.nothing",
                       "--store", "s.db", cwd=tmp_path)
    assert no_human.returncode == 2 and "human.nothing" in no_human.stderr
    negative = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.overall",
                       "--tolerance", "-1", cwd=tmp_path)
    assert negative.returncode == 2
    wrong_column = run_cli("meta-eval", "nodes", "out.csv", "--human", "human.overall",
                           "--store", "s.db", "--metric", "human.cites", cwd=tmp_path)
    assert wrong_column.returncode == 2, wrong_column.stderr
