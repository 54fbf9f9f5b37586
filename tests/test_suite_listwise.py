"""Listwise suites: suite.json's `listwise` kind (a `prompt` protocol, best-of-N accuracy)
validated with errors naming its field; the `summeval-best-of-4` suite rebuilt byte for byte
and checked against a direct reading of the vendored SummEval copy; `bench` with a listwise
judge (the scripted loopback judge) against `meta-eval listwise` on the same scored table."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import column, run_cli, summeval_records
from scripted_judge import ScriptedJudge
from suites_support import DATA, check_files, copy_suite, gz, suite_rows

from judgebench.errors import InputError
from judgebench.suite import load_suite, score_rows

CANDIDATES = [("p0", "a", 1), ("p0", "b", 0), ("p0", "c", 0),
              ("p1", "a", 1), ("p1", "b", 1), ("p1", "c", 0)]


def listwise_info(files: dict[str, str], **protocol: Any) -> dict[str, Any]:
    return {"name": "tiny-list", "title": "Tiny list", "description": "synthetic",
            "kind": "listwise", "criteria": ["overall"],
            "protocols": [{"name": "best-of-3", "criterion": "overall", "level": "prompt",
                           "statistics": ["accuracy"], "human": "human.best", **protocol}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}


def listwise_suite(root: Path, **protocol: Any) -> Path:
    """A listwise suite `root/tiny-list` (two prompts of three candidates, one tied best)."""
    folder = root / "tiny-list"
    folder.mkdir(parents=True)
    samples = [{"item": i, "candidate": c, "input": f"question {i}", "output": f"{i}{c}",
                "subset": "s"} for i, c, _ in CANDIDATES]
    human = [{"item": i, "candidate": c, "human.best": b} for i, c, b in CANDIDATES]
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = gz(rows)
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    (folder / "suite.json").write_text(json.dumps(listwise_info(files, **protocol)),
                                       encoding="utf-8")
    return folder


def rewrite(folder: Path, change: Any) -> None:
    path = folder / "suite.json"
    info = json.loads(path.read_text(encoding="utf-8"))
    change(info)
    path.write_text(json.dumps(info), encoding="utf-8")


def test_a_listwise_suite_loads_keyed_by_item_and_candidate(tmp_path: Path) -> None:
    suite = load_suite(listwise_suite(tmp_path))
    assert suite.info.kind == "listwise" and suite.key == ("item", "candidate")
    rows = score_rows(suite)
    # the subset stays a column (the listwise reader's), the best marks join on the key
    assert rows[4] == {"item": "p1", "candidate": "b", "input": "question p1",
                       "output": "p1b", "subset": "s", "human": {"best": 1.0}}


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda i: i["protocols"][0].update(level="item"), "protocols",
     "level 'item' does not fit a listwise suite"),
    (lambda i: i["protocols"][0].update(statistics=["accuracy", "kendall"]), "protocols",
     r"statistics are \['accuracy'\] \(best-of-N accuracy\), not \['kendall'\]"),
    (lambda i: i["protocols"][0].update(grouping="item"), "protocols",
     "takes no grouping"),
    (lambda i: i["protocols"][0].update(ties="drop"), "protocols", "takes no ties"),
    (lambda i: i["protocols"][0].update(failed_as="0"), "protocols", "takes no failed_as"),
    (lambda i: i["protocols"][0].update(level="pair"), "protocols",
     "level 'pair' does not fit a listwise suite"),
    (lambda i: i.update(kind="pointwise"), "protocols",
     "level 'prompt' does not fit a pointwise suite"),
    (lambda i: i.update(kind="ranked"), "kind", "'pointwise', 'pairwise' or 'listwise'"),
    (lambda i: i.update(published=[{"metric": "x", "protocol": "best-of-3",
                                    "statistic": "accuracy", "value": 0.5, "precision": 2,
                                    "table": "t", "verdicts_column": "x.pick"}]),
     "published[0].verdicts_column", "stores no baseline's picks"),
])
def test_a_bad_listwise_protocol_is_refused_naming_the_field(
        tmp_path: Path, change: Any, field: str, message: str) -> None:
    folder = listwise_suite(tmp_path)
    rewrite(folder, change)
    with pytest.raises(InputError, match=message) as caught:
        load_suite(folder)
    assert caught.value.path == str(folder / "suite.json")
    assert caught.value.field == field


# -- summeval-best-of-4 ---------------------------------------------------------------------
BEST_OF_4 = "summeval-best-of-4"


def test_the_build_is_byte_for_byte_and_the_files_are_listed(tmp_path: Path) -> None:
    check_files(BEST_OF_4, {"samples.jsonl.gz", "human.jsonl.gz"})
    spec = importlib.util.spec_from_file_location("best_of_4_build", DATA / BEST_OF_4 /
                                                  "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.main(None, str(tmp_path))
    for name in ("samples.jsonl.gz", "human.jsonl.gz", "suite.json"):
        assert (tmp_path / name).read_bytes() == (DATA / BEST_OF_4 / name).read_bytes(), name


def test_people_s_best_is_the_highest_mean_expert_rating_ties_kept() -> None:
    """Against the vendored SummEval rows read directly: 4 distinct systems of each of the
    100 documents, their texts as in the source, and best = the mean of the four criteria's
    mean ratings within 1e-9 of the document's highest (several when tied)."""
    source = {(r["item"], r["system"]): r for r in summeval_records()}
    samples = suite_rows(BEST_OF_4, "samples.jsonl.gz")
    human = suite_rows(BEST_OF_4, "human.jsonl.gz")
    assert [(r["item"], r["candidate"]) for r in samples] == \
        [(r["item"], r["candidate"]) for r in human]
    items = list(dict.fromkeys(r["item"] for r in samples))
    assert len(items) == 100 and len(samples) == 400
    tied = []
    for item in items:
        rows = [r for r in samples if r["item"] == item]
        marks = [r["human.best"] for r in human if r["item"] == item]
        assert len({r["candidate"] for r in rows}) == 4
        means = []
        for r in rows:
            original = source[(item, r["candidate"])]
            assert (r["input"], r["output"]) == (original["input"], original["output"])
            means.append(float(np.mean([original["human"][c] for c in
                                        ("coherence", "consistency", "fluency",
                                         "relevance")])))
        top = max(means)
        assert marks == [int(abs(m - top) < 1e-9) for m in means], item
        assert 1 <= sum(marks) < 4
        tied.append(sum(marks))
    assert {k: tied.count(k) for k in set(tied)} == {1: 83, 2: 14, 3: 3}  # as SOURCE.md says
    suite = load_suite(DATA / BEST_OF_4)
    assert suite.info.kind == "listwise" and suite.info.published == []
    assert "no published number" in suite.info.description


# -- bench on a listwise suite ----------------------------------------------------------------
_SHOWN = re.compile(r"Response ([A-Z]):\n<response>\n(.*?)\n</response>", re.DOTALL)
KEY_ENV = {"JB_LIST_KEY": "not-a-secret"}


def longest_or_none(system: str, user: str) -> str:
    """The planted judge: the label of the longest summary shown; no pick (a parse error)
    when two are longest (SummEval has identical summaries) or its length is a multiple
    of 5."""
    shown = sorted(_SHOWN.findall(user), key=lambda lt: -len(lt[1]))
    if len(shown[0][1]) == len(shown[1][1]) or len(shown[0][1]) % 5 == 0:
        return "They all have merits."
    return f"Read them all. [[{shown[0][0]}]]"


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


@pytest.fixture
def best_of_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This checkout's summeval-best-of-4, renamed (an installed copy may register its own)."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in KEY_ENV.items():
        monkeypatch.setenv(k, v)
    copy_suite(BEST_OF_4, tmp_path / "suites", rename="my-best-of-4")
    return tmp_path / "suites"


def test_bench_a_listwise_judge_equals_meta_eval_listwise_and_the_planted_picks(
        tmp_path: Path, best_of_4: Path) -> None:
    limit = 40
    with ScriptedJudge(reply=longest_or_none) as server:
        spec = (f"judge.listwise:backend=openai_compat,model=judge,api_base={server.url},"
                "api_key_env=JB_LIST_KEY,protocol=text")
        args = ("bench", spec, "--suite", "my-best-of-4", "--suite-path", str(best_of_4),
                "--limit", str(limit), "--store", str(tmp_path / "runs.db"),
                "--workdir", str(tmp_path / "work"), "--workers", "1")
        strict = run_cli(*args, "--json", cwd=tmp_path)
        proc = run_cli(*args, "--json", "--allow-failures", "--force", cwd=tmp_path)
        text = run_cli(*args, "--allow-failures", "--force", "--resume", cwd=tmp_path)
        html = run_cli(*args, "--allow-failures", "--force", "--resume", "--format", "html",
                       "-o", str(tmp_path / "card.html"), cwd=tmp_path)
        assert server.calls == limit  # the reruns answered by the judge cache and the store
    assert proc.returncode == 0 and text.returncode == 0, proc.stderr + text.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    name = column(spec)
    mine = next(r for r in card["rows"] if r["kind"] == "yours")
    random = next(r for r in card["rows"] if r["kind"] == "random")

    # the same scored table through `meta-eval listwise`
    table = tmp_path / "work" / "my-best-of-4" / "listwise.csv"
    report = run_cli("meta-eval", "listwise", str(table), "--human", "human.best", "--json",
                     check=True)
    (row,) = json.loads(report.stdout)
    assert (mine["value"], mine["ci_low"], mine["ci_high"], mine["n"]) == (
        row["accuracy"], row["ci_low"], row["ci_high"], row["prompts"])
    assert (random["value"], random["n"]) == (row["random"], row["prompts"])

    # and a direct computation from the planted rule on the suite's first `limit` documents
    samples = suite_rows(BEST_OF_4, "samples.jsonl.gz")
    best = {(r["item"], r["candidate"]): r["human.best"]
            for r in suite_rows(BEST_OF_4, "human.jsonl.gz")}
    items = list(dict.fromkeys(r["item"] for r in samples))[:limit]
    right, failed, chance = 0, 0, []
    tied = sum(1 for item in items if sum(best[(r["item"], r["candidate"])] for r in samples
                                          if r["item"] == item) > 1)
    for item in items:
        group = [r for r in samples if r["item"] == item]
        # the judge is shown each summary stripped (templates.as_data)
        lengths = sorted((len(r["output"].strip()) for r in group), reverse=True)
        top = max(group, key=lambda r: len(r["output"].strip()))
        if lengths[0] == lengths[1] or lengths[0] % 5 == 0:
            failed += 1
            continue
        marks = [best[(item, r["candidate"])] for r in group]
        right += int(sum(marks) == 1 and best[(item, top["candidate"])] == 1)
        chance.append(1 / math.comb(4, sum(marks)))
    n = limit - failed
    assert 0 < failed < limit and strict.returncode == 3
    assert card["failed"] == failed and card["scored"] == limit and card["full_set"] is False
    assert mine["value"] == pytest.approx(right / n, rel=1e-12) and mine["n"] == n
    assert (mine["ci_low"], mine["ci_high"]) == pytest.approx(wilson(right, n), rel=1e-9)
    assert random["value"] == pytest.approx(float(np.mean(chance)), rel=1e-12)
    assert card["kind"] == "listwise" and card["coverage"] == []
    assert card["verdict"][0].startswith(f"{name} picks people's best on SummEval best of 4 "
                                         f"at accuracy {100 * right / n:.1f}%")
    assert (f"protocol best-of-4: best of N per prompt; n = {n} prompts" in card["verdict"][0]
            and f"a random ranking gets {100 * random['value']:.1f}%" in card["verdict"][0])
    assert any(f"{failed} judgement(s) failed" in note for note in card["notes"])
    assert f"--limit {limit}: {limit} of the suite's 100 prompts" in " ".join(card["notes"])
    assert tied > 0 and (f"best-of-4: {tied} of the {limit} prompts have several candidates "
                         "tied for best; a judge that picks one candidate is never right on "
                         f"them (its best possible accuracy: {100 * (limit - tied) / limit:.1f}%)"
                         ) in card["notes"]
    lines = text.stdout.splitlines()
    assert any(line.split()[:2] == ["*", name] for line in lines)
    assert any(line.startswith("~  (random ranking)") for line in lines), text.stdout
    assert "~ = random ranking" in text.stdout
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "card.html").read_text(encoding="utf-8")
    assert "(random ranking)" in page and f"{random['value']:.3f}" in page


def test_a_pointwise_or_pairwise_metric_skips_a_listwise_suite_saying_so(
        tmp_path: Path, best_of_4: Path) -> None:
    for spec, kind in (("lexical.length", "pointwise"), ("judge.pairwise", "pairwise")):
        proc = run_cli("bench", spec, "--suite", "my-best-of-4", "--suite-path",
                       str(best_of_4), "--store", str(tmp_path / "b.db"), cwd=tmp_path)
        assert proc.returncode == 2
        assert (f"{spec}: skipped, a {kind} metric does not run on a listwise suite (a "
                "listwise metric, such as judge.listwise, does)") in proc.stderr
    assert not (tmp_path / "b.db").exists()


def test_a_listwise_and_a_pointwise_metric_each_run_on_their_own_kind_of_suite(
        tmp_path: Path, best_of_4: Path) -> None:
    with ScriptedJudge(reply=longest_or_none) as server:
        spec = (f"judge.listwise:backend=openai_compat,model=judge,api_base={server.url},"
                "api_key_env=JB_LIST_KEY,protocol=text")
        args = ("bench", "lexical.length", spec, "--suite", "summeval,my-best-of-4",
                "--suite-path", str(best_of_4), "--limit", "3", "--bootstrap", "0",
                "--store", str(tmp_path / "runs.db"), "--workers", "1", "--allow-failures")
        proc = run_cli(*args, "--json", cwd=tmp_path)
        text = run_cli(*args, cwd=tmp_path)
        assert server.calls == 3
    assert proc.returncode == 0 and text.returncode == 0, proc.stderr + text.stderr
    out = json.loads(proc.stdout)
    pointwise, listwise = out["cards"]
    assert listwise["kind"] == "listwise" and listwise["scored"] == 3
    assert {r["label"] for r in listwise["rows"] if r["kind"] == "yours"} == {column(spec)}
    assert {r["label"] for r in pointwise["rows"] if r["kind"] == "yours"} == {"lexical.length"}
    cells = {(c["metric"], c["suite"]): c for c in out["summary"] if c["kind"] == "yours"}
    assert cells[(column(spec), "summeval")]["status"] == "skipped"
    assert cells[("lexical.length", "my-best-of-4")]["status"] == "skipped"
    mine = next(r for r in listwise["rows"] if r["kind"] == "yours")
    assert cells[(column(spec), "my-best-of-4")]["value"] == mine["value"]
    summary = " ".join(text.stdout.split("\n\n== ")[0].split())
    assert ("my-best-of-4: accuracy (protocol best-of-4: best of N per prompt; n = "
            f"{mine['n']} prompts, --limit: 3 of the suite's prompts)") in summary
