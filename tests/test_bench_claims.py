"""What a `bench` card says is what its data supports: a judge none of whose scores came back
gets no statistic, interval, cluster or verdict; a part of a suite (`--limit`) is compared
only with baselines recomputed on the same rows; a published number inside the judge's
interval is "not significantly" above or below it; the legend names a human ceiling only
where the card has one; a bench where nothing can run is an input error; and the README's
`bench` spec is the published ROUGE-2 row's."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import REPO, run_cli
from fault_server import FaultServer
from suites_support import DATA, plugin_args, plugin_env


def _gz(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        for row in rows:
            handle.write((json.dumps(row) + "\n").encode())
    return buffer.getvalue()


def pointwise_suite(root: Path, human: np.ndarray, outputs: list[str],
                    published: list[dict] | None = None) -> Path:
    """A one-annotator pointwise suite (no human ceiling) with these printed baselines."""
    folder = root / "plain"
    folder.mkdir(parents=True)
    samples = [{"item": f"i{j}", "system": "S", "output": text, "reference": "the cat sat"}
               for j, text in enumerate(outputs)]
    labels = [{"item": f"i{j}", "system": "S", "human.quality": float(v)}
              for j, v in enumerate(human)]
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", labels)):
        data = _gz(rows)
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {"name": "plain", "title": "Plain", "description": "synthetic", "kind": "pointwise",
            "criteria": ["quality"],
            "protocols": [{"name": "global", "criterion": "quality", "level": "global",
                           "statistics": ["pearson"], "human": "human.quality"}],
            "published": published or [], "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


def test_a_judge_whose_every_verdict_failed_opens_the_card_with_the_failure(
        tmp_path: Path) -> None:
    """Every answer unparseable: the card opens with the failure; the judge's rows have no
    value, interval or cluster; the baselines keep theirs and no sentence compares."""
    with FaultServer(reply="I would rather not say.") as server:
        spec = (f"judge.pairwise:backend=openai_compat,model=m,api_base={server.url},"
                "max_attempts=1")
        proc = run_cli(*plugin_args(), "bench", spec, "--suite", "llmbar", "--limit", "12",
                       "--bootstrap", "20", "--store", str(tmp_path / "runs.db"), "--json",
                       "--workdir", str(tmp_path / "work"), env=plugin_env())
    assert proc.returncode == 3, proc.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    column = "judge.pairwise:backend=openai_compat,model=m"
    assert card["verdict"][0].startswith(f"{column}: every one of its 12 scores failed "
                                         "(parse_error 12; see `judgebench logs --store")
    assert len(card["verdict"]) == 1
    assert not any("significantly" in v for v in card["verdict"])
    mine = [r for r in card["rows"] if r["kind"] == "yours"]
    assert mine and all(r["value"] is None and "cluster" not in r and "ci_low" not in r
                        and r["n"] == 0 for r in mine)
    baselines = [r for r in card["rows"] if r["kind"] == "published" and r["value"] is not None
                 and r["statistic"] == "accuracy" and r["subset"] == "(all)"]
    assert max(baselines, key=lambda r: r["value"])["cluster"] == 1
    # The table the bench scored, read by meta-eval --pairwise with LLMBar's convention: the
    # failed verdicts count as wrong (accuracy 0 over all 12 pairs), as a hand count says.
    table = tmp_path / "work" / "llmbar" / "pairs.csv"
    out = run_cli("meta-eval", str(table), "--pairwise", "--human", "human.gold", "--judge",
                  column, "--failed-as", "wrong", "--json", check=True)
    rows = {r["statistic"]: r for r in json.loads(out.stdout)}
    assert rows["accuracy"]["value"] == 0.0 and rows["accuracy"]["n"] == 12
    assert rows["accuracy"]["failed"]["rows"] == 12
    assert rows["consistency"]["value"] == 1.0  # two failed orders agree (LLMBar)


def test_no_cluster_for_a_judge_with_no_counted_pair(tmp_path: Path) -> None:
    """A judge whose verdicts are all missing has no statistic, so no cluster, while the
    others are ranked; the same for a metric column with no score in meta-eval --compare."""
    rng = np.random.default_rng(4)
    n = 40
    pairs = pd.DataFrame({"item": [f"i{k}" for k in range(n)], "system_a": "x",
                          "system_b": "y", "human": rng.choice(["a", "b"], size=n),
                          "good": rng.choice(["a", "b"], size=n, p=[0.9, 0.1]),
                          "bad": rng.choice(["a", "b"], size=n, p=[0.1, 0.9]), "none": ""})
    path = tmp_path / "pairs.csv"
    pairs.to_csv(path, index=False)
    out = run_cli("meta-eval", str(path), "--pairwise", "--human", "human", "--judge", "good",
                  "--judge", "bad", "--judge", "none", "--compare", "--json", check=True)
    accuracy = {r["metric"]: r for r in json.loads(out.stdout) if r["statistic"] == "accuracy"}
    assert accuracy["none"]["value"] is None and "cluster" not in accuracy["none"]
    assert {accuracy["good"]["cluster"], accuracy["bad"]["cluster"]} <= {1, 2}
    scores = pd.DataFrame({"item": np.repeat([f"d{k}" for k in range(10)], 4),
                           "system": np.tile(["s0", "s1", "s2", "s3"], 10)})
    scores["human.q"] = rng.normal(size=len(scores))
    scores["m.good"] = scores["human.q"] + rng.normal(scale=0.3, size=len(scores))
    scores["m.noise"] = rng.normal(size=len(scores))
    scores["m.empty"] = np.nan
    table = tmp_path / "scores.csv"
    scores.to_csv(table, index=False)
    out = run_cli("meta-eval", str(table), "--human", "human.q", "--compare", "--json",
                  "--higher-is-better", "m.good", "--higher-is-better", "m.noise",
                  "--higher-is-better", "m.empty",
                  check=True)
    rows = {r["metric"]: r for r in json.loads(out.stdout)}
    assert rows["m.empty"]["value"] is None and "cluster" not in rows["m.empty"]
    assert rows["m.good"]["cluster"] == 1


def test_a_limited_bench_compares_only_on_the_same_rows(tmp_path: Path) -> None:
    """--limit: LLMBar's headline compares with the baselines recomputed on the same pairs,
    never with the printed full-set numbers; SummEval (printed numbers only) compares with
    none and says why."""
    with FaultServer(reply="Explanation: ok. [[{choice}]]") as server:
        spec = (f"judge.pairwise:backend=openai_compat,model=m,api_base={server.url},"
                "protocol=text")
        proc = run_cli(*plugin_args(), "bench", spec, "--suite", "llmbar", "--limit", "12",
                       "--bootstrap", "20", "--store", str(tmp_path / "runs.db"), "--json",
                       env=plugin_env(), check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    printed = {f"{100 * r['printed']:.1f}%" for r in card["rows"] if r.get("printed")}
    recomputed = {f"{100 * r['value']:.1f}%" for r in card["rows"]
                  if r["kind"] == "published" and r["value"] is not None}
    for sentence in card["verdict"]:
        assert "recomputed from its stored outputs on the same rows" in sentence, sentence
        quoted = re.search(r"published [^(]+\((\d+\.\d%)", sentence)
        assert quoted is not None and quoted.group(1) in recomputed, sentence
        assert not ({quoted.group(1)} & printed - recomputed)
    proc = run_cli(*plugin_args(), "bench", "lexical.rouge2:multi_ref=mean", "--suite",
                   "summeval", "--limit", "16", "--bootstrap", "0", "--store",
                   str(tmp_path / "se.db"), "--json", "--workers", "1", env=plugin_env(),
                   check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    assert card["verdict"][0].endswith("; the published numbers were measured on the full set, "
                                       "not on these rows: not comparable, no verdict against "
                                       "them.")
    assert "published" not in card["verdict"][0].split("; the published numbers")[0]


def test_a_printed_number_inside_the_interval_is_not_significantly_below(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    human = rng.normal(size=30)
    outputs = [" ".join(["the"] * int(k)) + " cat" for k in rng.integers(1, 6, size=30)]
    suites = tmp_path / "suites"
    common = ["bench", "lexical.length", "--suite", "plain", "--suite-path", str(suites),
              "--bootstrap", "200", "--workers", "1", "--json"]
    pointwise_suite(suites, human, outputs)
    first = json.loads(run_cli(*common, "--store", str(tmp_path / "a.db"), check=True).stdout)
    (mine,) = [r for r in first["cards"][0]["rows"] if r["kind"] == "yours"]
    low, high, value = mine["ci_low"], mine["ci_high"], mine["value"]
    assert low < value < high
    inside, outside = (value + high) / 2, high + 0.2
    for printed, expected in ((inside, "not significantly below the published Paper"),
                              (outside, "significantly below the published Paper")):
        (suites / "plain").rename(tmp_path / f"old-{printed}")
        pointwise_suite(suites, human, outputs, published=[{
            "metric": "Paper", "spec": None, "protocol": "global", "statistic": "pearson",
            "value": printed, "precision": 3, "table": "a table"}])
        (card,) = json.loads(run_cli(*common, "--store", str(tmp_path / f"{printed}.db"),
                                     check=True).stdout)["cards"]
        sentence = card["verdict"][0]
        assert expected in sentence, sentence
        assert ("inside its confidence interval" in sentence) == (printed == inside)
        assert "which is inside" not in sentence
    text = run_cli(*common[:-1], "--store", str(tmp_path / "t.db"), check=True).stdout
    legend = text.splitlines()[-1]
    assert legend.startswith("licence: CC0-1.0; * = yours;") and "ceiling" not in legend


def test_a_bench_where_nothing_can_run_exits_2_before_any_work(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    proc = run_cli(*plugin_args(), "bench", "lexical.chrf", "--suite", "llmbar", "--store",
                   str(store), env=plugin_env())
    assert proc.returncode == 2, proc.stderr
    assert "nothing to run: llmbar: lexical.chrf: skipped, a pointwise metric does not run " \
           "on a pairwise suite" in proc.stderr
    assert proc.stdout == "" and not store.exists()


def test_the_readme_bench_spec_is_the_published_rouge2_rows() -> None:
    info = json.loads((DATA / "summeval" / "suite.json").read_text(encoding="utf-8"))
    specs = {p["spec"] for p in info["published"] if p["metric"] == "ROUGE-2"}
    assert specs == {"lexical.rouge2:multi_ref=mean"}
    for page in (REPO / "README.md", REPO / "docs" / "tutorials" / "quickstart.md"):
        benches = re.findall(r"^judgebench bench (lexical\.rouge2\S*) --suite summeval",
                             page.read_text(encoding="utf-8"), flags=re.M)
        assert benches and set(benches) == specs, page
