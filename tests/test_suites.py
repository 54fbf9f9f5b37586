"""Suites: the layout's loader and checksums, the register_suites hook, `judgebench suites`,
`--suite-path`, and `bench`'s card (human ceiling against an independent computation)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from scipy import stats
from suites_support import BUILTIN, DATA, copy_suite, plugin_args, plugin_env

from judgebench.errors import InputError
from judgebench.suite import load_suite, score_rows


@pytest.mark.parametrize("name", BUILTIN)
def test_each_builtin_suite_loads_and_its_checksums_verify(name: str) -> None:
    suite = load_suite(DATA / name)
    assert suite.name == name
    for file, digest in suite.info.files.items():
        data = (DATA / name / file).read_bytes()
        assert digest == "sha256:" + hashlib.sha256(data).hexdigest()
        assert data[4:8] == b"\0\0\0\0"  # gzip mtime 0: build.py's bytes are reproducible
    human = suite.human()
    samples = suite.samples()
    assert len(samples) == len(human)
    keys = {tuple(str(r[k]) for k in suite.key) for r in samples}
    assert keys == {tuple(str(v) for v in row) for row in human[list(suite.key)].to_numpy()}
    for protocol in suite.info.protocols:
        assert protocol.human in human.columns


def test_a_changed_file_is_refused_naming_it(tmp_path: Path) -> None:
    folder = copy_suite("llmbar", tmp_path)
    path = folder / "human.jsonl.gz"
    rows = gzip.decompress(path.read_bytes()).replace(b'"human.gold": "a"', b'"human.gold": "b"',
                                                       1)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as f:
        f.write(rows)
    path.write_bytes(buffer.getvalue())
    with pytest.raises(InputError, match="checksum mismatch") as caught:
        load_suite(folder)
    assert caught.value.path == str(path)


def test_a_missing_file_and_a_bad_field_are_refused_naming_them(tmp_path: Path) -> None:
    folder = copy_suite("summeval", tmp_path)
    (folder / "samples.jsonl.gz").unlink()
    with pytest.raises(InputError, match="missing") as caught:
        load_suite(folder)
    assert caught.value.path == str(folder / "samples.jsonl.gz")
    info = json.loads((DATA / "summeval" / "suite.json").read_text(encoding="utf-8"))
    info["protocols"][0]["criterion"] = "coherance"
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(InputError, match="criterion 'coherance'") as caught:
        load_suite(folder)
    assert caught.value.field == "protocols"
    info["protocols"][0]["level"] = "document"
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_suite(folder)
    assert caught.value.path == str(folder / "suite.json")
    assert caught.value.field == "protocols.0.level"


def test_suites_lists_the_registered_suites_and_shows_a_card() -> None:
    listed = run_cli(*plugin_args(), "suites", "--json", env=plugin_env(), check=True)
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert set(BUILTIN) <= set(rows)
    assert rows["summeval"]["size"] == 1600 and rows["llmbar"]["size"] == 419
    assert rows["llmbar"]["kind"] == "pairwise" and rows["llmbar"]["licence"] == "MIT"
    card = run_cli(*plugin_args(), "suites", "llmbar", env=plugin_env(), check=True).stdout
    assert "GPT-4 Vanilla+Rules: accuracy 0.955 on Natural" in card
    assert "licence: MIT" in card and "900616bff90b6c6c8e1681f7d079250637c55992" in card
    unknown = run_cli(*plugin_args(), "suites", "sumeval", env=plugin_env())
    assert unknown.returncode == 2 and "did you mean 'summeval'" in unknown.stderr


def test_export_writes_score_input_that_score_and_meta_eval_read(tmp_path: Path) -> None:
    out = tmp_path / "export"
    run_cli(*plugin_args(), "suites", "llmbar", "--export", str(out), env=plugin_env(),
            check=True)
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 419
    # a/b/tie as score's input takes a preference (1/0/0.5); stored verdicts stay in human.jsonl
    assert rows[0]["metadata"] == {"category": "Natural"} and rows[0]["human"] == {"gold": 1.0}
    human = [json.loads(line) for line in (out / "human.jsonl").read_text().splitlines()]
    assert human[0]["human.gold"] == "a" and human[0]["gpt4-vanilla.ab"] == "a"
    summeval = tmp_path / "summeval"
    run_cli(*plugin_args(), "suites", "summeval", "--export", str(summeval), env=plugin_env(),
            check=True)
    scores = tmp_path / "scores.csv"
    run_cli("score", str(summeval / "samples.jsonl"), "-m", "lexical.chrf", "--limit", "32",
            "-o", str(scores), "--store", str(tmp_path / "runs.db"), "--workers", "1",
            check=True)
    meta = run_cli("meta-eval", str(scores), "--human", "human.relevance", "--level",
                   "segment", "--grouping", "item", "--statistic", "kendall", "--json",
                   check=True)
    assert json.loads(meta.stdout)[0]["n"] == 2  # 32 rows: the first two articles


def test_suite_path_adds_a_users_folder_and_refuses_a_clash(tmp_path: Path) -> None:
    copy_suite("llmbar", tmp_path / "mine", rename="my-llmbar")
    listed = run_cli(*plugin_args(), "suites", "--suite-path", str(tmp_path / "mine"),
                     "--json", env=plugin_env(), check=True)
    origin = {r["name"]: r["origin"] for r in json.loads(listed.stdout)}
    assert origin["my-llmbar"] == "--suite-path" and origin["llmbar"] != "--suite-path"
    copy_suite("llmbar", tmp_path / "clash")
    clash = run_cli(*plugin_args(), "suites", "--suite-path", str(tmp_path / "clash"),
                    env=plugin_env())
    assert clash.returncode == 2 and "already registered" in clash.stderr
    empty = run_cli("suites", "--suite-path", str(tmp_path / "nothing"))
    assert empty.returncode == 2 and "no such folder" in empty.stderr


def test_a_pointwise_metric_skips_a_pairwise_suite_saying_so(tmp_path: Path) -> None:
    """Skipped where another suite runs (a bench where nothing runs is an input error:
    tests/test_bench_claims.py)."""
    rated_suite(tmp_path / "suites" / "rated", np.ones((2, 4)), ["the cat sat"] * 4)
    proc = run_cli(*plugin_args(), "bench", "lexical.chrf", "--suite", "llmbar,rated",
                   "--suite-path", str(tmp_path / "suites"), "--json", "--bootstrap", "0",
                   "--workers", "1", "--store", str(tmp_path / "runs.db"), env=plugin_env(),
                   check=True)
    skipped, ran = json.loads(proc.stdout)["cards"]
    assert skipped["skipped"] and skipped["rows"] == []
    assert "lexical.chrf cannot run on LLMBar" in skipped["verdict"][0]
    assert not ran["skipped"] and ran["rows"]


# -- the human ceiling, on a suite with annotators -----------------------------------------
def _gz(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as f:
        for row in rows:
            f.write((json.dumps(row) + "\n").encode())
    return buffer.getvalue()


def rated_suite(folder: Path, ratings: np.ndarray, outputs: list[str]) -> Path:
    """A pointwise suite of len(outputs) rows, one item each, rated by ratings.shape[0]
    annotators (NaN: not rated); the aggregate is their mean."""
    folder.mkdir(parents=True)
    annotators = [f"r{k}" for k in range(ratings.shape[0])]
    samples = [{"item": f"i{j}", "system": "S", "output": text, "reference": "the cat sat"}
               for j, text in enumerate(outputs)]
    human = []
    for j in range(len(outputs)):
        column = ratings[:, j]
        row = {"item": f"i{j}", "system": "S", "human.quality": float(np.nanmean(column))}
        row |= {f"human.quality.{a}": None if np.isnan(v) else float(v)
                for a, v in zip(annotators, column, strict=True)}
        human.append(row)
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = _gz(rows)
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {"name": folder.name, "title": folder.name.title(), "description": "synthetic", "kind":
            "pointwise", "criteria": ["quality"], "annotators": {"quality": annotators},
            "protocols": [{"name": "global", "criterion": "quality", "level": "global",
                           "statistics": ["pearson", "spearman"], "human": "human.quality"}],
            "licence": "CC0-1.0", "citation": "-", "source": {"repository": "-", "commit":
                                                              "-", "files": []},
            "files": files}
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


def loo_ceiling(ratings: np.ndarray, statistic: str) -> float:
    """Leave-one-annotator-out: each annotator against the mean of the others (over the
    rows both have), averaged over annotators; scipy's statistic."""
    kernel = {"pearson": stats.pearsonr, "spearman": stats.spearmanr}[statistic]
    values = []
    for r in range(ratings.shape[0]):
        others = np.delete(ratings, r, axis=0)
        with np.errstate(all="ignore"):
            reference = np.nanmean(others, axis=0)
        ok = ~np.isnan(ratings[r]) & ~np.isnan(reference)
        values.append(float(kernel(ratings[r][ok], reference[ok])[0]))
    return float(np.mean(values))


def test_the_human_ceiling_is_leave_one_annotator_out_under_the_same_statistic(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, size=40).astype(float)
    ratings = np.clip(truth + rng.integers(-1, 2, size=(3, 40)), 1, 5)  # ties throughout
    ratings[0, 3] = ratings[2, 17] = np.nan
    ratings[1, 5] = 1e6  # one extreme rating
    words = ["the", "cat", "sat", "on", "a", "mat", "dog"]
    outputs = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(2, 9, size=40)]
    rated_suite(tmp_path / "suites" / "rated", ratings, outputs)
    proc = run_cli("bench", "lexical.chrf", "--suite", "rated", "--suite-path",
                   str(tmp_path / "suites"), "--json", "--bootstrap", "0", "--store",
                   str(tmp_path / "runs.db"), "--workers", "1", check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    ceiling = {r["statistic"]: r["value"] for r in card["rows"] if r["kind"] == "ceiling"}
    for statistic in ("pearson", "spearman"):
        assert ceiling[statistic] == pytest.approx(loo_ceiling(ratings, statistic), abs=1e-12)
    assert "the human ceiling is" in card["verdict"][0]
    assert card["verdict"][0].startswith("lexical.chrf correlates with people on Rated at "
                                         "pearson")


def test_bench_renders_text_markdown_json_and_html_with_the_verdict_first(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    ratings = rng.integers(1, 6, size=(2, 12)).astype(float)
    rated_suite(tmp_path / "suites" / "tiny", ratings, ["the cat sat"] * 6 + ["a dog"] * 6)
    common = ["bench", "lexical.chrf", "lexical.token_f1", "--suite", "tiny", "--suite-path",
              str(tmp_path / "suites"), "--bootstrap", "50", "--store",
              str(tmp_path / "runs.db"), "--workers", "1"]
    text = run_cli(*common, check=True).stdout
    assert text.splitlines()[1].startswith("lexical.chrf correlates with people on Tiny")
    markdown = run_cli(*common, "--format", "markdown", check=True).stdout
    assert markdown.startswith("## Tiny\n\n**lexical.chrf correlates")
    html_path = tmp_path / "card.html"
    run_cli(*common, "--format", "html", "-o", str(html_path), check=True)
    html = html_path.read_text(encoding="utf-8")
    assert "Content-Security-Policy" in html and "<script" not in html
    assert html.index("correlates with people") < html.index("<table")
    data = json.loads(run_cli(*common, "--json", check=True).stdout)["cards"]
    assert data[0]["suite"] == "tiny" and {r["kind"] for r in data[0]["rows"]} == {
        "yours", "ceiling"}


def test_score_rows_carry_every_annotator() -> None:
    rows = score_rows(load_suite(DATA / "summeval"))
    assert rows[0]["human"] == {"coherence": pytest.approx(4.666666666666667),
                                "consistency": pytest.approx(4.666666666666667),
                                "fluency": pytest.approx(4.666666666666667), "relevance": 3.0}


def test_register_suites_checks_what_a_plugin_registers(tmp_path: Path) -> None:
    plugin = tmp_path / "my_suites.py"
    good = copy_suite("llmbar", tmp_path / "data", rename="their-llmbar")
    plugin.write_text(
        "from judgebench.plugin_api import hookimpl\n\n\n@hookimpl\n"
        f"def register_suites(register):\n    register({str(good)!r})\n", encoding="utf-8")
    listed = run_cli("-p", str(plugin), "suites", "--json", check=True)
    (row,) = [r for r in json.loads(listed.stdout) if r["name"] == "their-llmbar"]
    assert row["origin"] == str(plugin.resolve())
    plugin.write_text(
        "from judgebench.plugin_api import hookimpl\n\n\n@hookimpl\n"
        f"def register_suites(register):\n    register({str(tmp_path)!r})\n", encoding="utf-8")
    bad = run_cli("-p", str(plugin), "suites")
    assert bad.returncode == 1 and "holds no suite.json" in bad.stderr


def pairwise_rated_suite(folder: Path, labels: np.ndarray) -> Path:
    """A pairwise suite of labels.shape[1] pairs judged a/b by labels.shape[0] annotators
    (1 = a); the aggregate is their majority."""
    folder.mkdir(parents=True)
    annotators = [f"r{k}" for k in range(labels.shape[0])]
    samples, human = [], []
    for j in range(labels.shape[1]):
        key = {"item": f"i{j}", "system_a": "X", "system_b": "Y"}
        samples.append({**key, "input": "Say hi.", "output_a": "q=1 hi", "output_b": "q=2 hi"})
        mean = labels[:, j].mean()
        row = {**key, "human.preference": "a" if mean > 0.5 else "b" if mean < 0.5 else "tie"}
        row |= {f"human.preference.{a}": "a" if v else "b"
                for a, v in zip(annotators, labels[:, j], strict=True)}
        human.append(row)
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = _gz(rows)
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {"name": folder.name, "title": "Pairs", "description": "synthetic",
            "kind": "pairwise", "criteria": ["preference"],
            "annotators": {"preference": annotators},
            "protocols": [{"name": "pref", "criterion": "preference", "level": "pair",
                           "statistics": ["accuracy"], "human": "human.preference",
                           "ties": "drop", "failed_as": "wrong"}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


def test_the_pairwise_human_ceiling_is_each_annotator_against_the_others_majority(
        tmp_path: Path) -> None:
    from scripted_judge import ScriptedJudge

    rng = np.random.default_rng(11)
    labels = (rng.random((4, 30)) < 0.7).astype(int)  # 4 annotators: the others' vote ties
    pairwise_rated_suite(tmp_path / "suites" / "pairs", labels)
    with ScriptedJudge() as judge:
        spec = (f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url},"
                "api_key_env=JB_PAIR_KEY,protocol=text")
        proc = run_cli("bench", spec, "--suite", "pairs", "--suite-path",
                       str(tmp_path / "suites"), "--json", "--bootstrap", "0", "--store",
                       str(tmp_path / "runs.db"), env={"JB_PAIR_KEY": "not-a-secret"},
                       check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    (ceiling,) = [r for r in card["rows"] if r["kind"] == "ceiling"]
    per_annotator = []
    for r in range(labels.shape[0]):
        others = np.delete(labels, r, axis=0).mean(axis=0)
        decided = others != 0.5  # the others' majority is a tie: dropped (ties "drop")
        per_annotator.append(float(np.mean(labels[r][decided] == (others[decided] > 0.5))))
    assert ceiling["value"] == pytest.approx(float(np.mean(per_annotator)), abs=1e-12)
    (mine,) = [r for r in card["rows"] if r["kind"] == "yours"]
    assert mine["value"] == pytest.approx(float(np.mean(labels.mean(axis=0) < 0.5)) /
                                          (1 - float(np.mean(labels.mean(axis=0) == 0.5))),
                                          abs=1e-12)  # q=2 (B) always wins: right where b


def test_a_metric_that_needs_a_field_the_suite_lacks_is_skipped_saying_so(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rated_suite(tmp_path / "suites" / "norefs", rng.integers(1, 6, size=(2, 8)).astype(float),
                ["the cat"] * 8)
    folder = tmp_path / "suites" / "norefs"
    rows = [json.loads(line) for line in gzip.decompress(
        (folder / "samples.jsonl.gz").read_bytes()).decode().splitlines()]
    (folder / "samples.jsonl.gz").write_bytes(_gz([{k: v for k, v in r.items()
                                                     if k != "reference"} for r in rows]))
    info = json.loads((folder / "suite.json").read_text(encoding="utf-8"))
    info["files"]["samples.jsonl.gz"] = "sha256:" + hashlib.sha256(
        (folder / "samples.jsonl.gz").read_bytes()).hexdigest()
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    proc = run_cli("bench", "lexical.chrf", "lexical.length", "--suite", "norefs",
                   "--suite-path", str(tmp_path / "suites"), "--json", "--bootstrap", "0",
                   "--store", str(tmp_path / "runs.db"), "--workers", "1", check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    assert card["notes"][0] == ("lexical.chrf: skipped, it needs reference, which this suite's "
                                "samples do not have")
    assert {r["label"] for r in card["rows"] if r["kind"] == "yours"} == {"lexical.length"}


def test_the_python_api_gives_the_commands_cards(tmp_path: Path) -> None:
    import judgebench

    rng = np.random.default_rng(9)
    rated_suite(tmp_path / "suites" / "api", rng.integers(1, 6, size=(3, 10)).astype(float),
                ["the cat sat"] * 5 + ["a dog ran"] * 5)
    result = judgebench.bench("lexical.chrf", "api", suite_paths=(str(tmp_path / "suites"),),
                              bootstrap=0)
    cli = run_cli("bench", "lexical.chrf", "--suite", "api", "--suite-path",
                  str(tmp_path / "suites"), "--json", "--bootstrap", "0", "--store",
                  str(tmp_path / "runs.db"), "--workers", "1", check=True)
    assert result.to_dict() == json.loads(cli.stdout)


def test_a_bench_run_with_failed_scores_says_so_and_exits_3(tmp_path: Path) -> None:
    """A judge whose every answer fails to parse: the card is printed, stderr counts the
    failures, and the exit is 3 (0 with --allow-failures), as for `score`."""
    from fault_server import FaultServer

    rated_suite(tmp_path / "suites" / "tiny", np.ones((2, 4)), ["the cat sat"] * 4)
    with FaultServer(reply="I would rather not say.") as server:
        spec = (f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},"
                "protocol=text,max_attempts=1")
        common = ["bench", spec, "--suite", "tiny", "--suite-path", str(tmp_path / "suites"),
                  "--bootstrap", "0", "--store", str(tmp_path / "runs.db"), "--json"]
        proc = run_cli(*common)
        assert proc.returncode == 3, proc.stderr
        (card,) = json.loads(proc.stdout)["cards"]
        assert card["failed"] == 4 and card["scored"] == 4
        assert "bench: 4 score(s) failed (see `judgebench logs --store" in proc.stderr
        allowed = run_cli(*common, "--allow-failures", "--resume")
        assert allowed.returncode == 0, allowed.stderr
