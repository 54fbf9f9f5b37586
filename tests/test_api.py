"""`judgebench.api`: one function per command, the command's numbers, twice in a row.

Each function is called as the README shows it, twice in one process (a re-run notebook cell)
and compared with the command's `--json` on the same data; the README's API example runs
twice in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import EXAMPLE, REPO, run_cli

import judgebench
from judgebench.errors import InputError

PAIRS = REPO / "tests" / "data" / "pairwise" / "llmbar" / "pairs.csv"
METRICS = ["lexical.chrf", "lexical.rouge2"]


def cli_json(*args: str) -> Any:
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def twice(call: Any) -> Any:
    """`call()` twice; both results' JSON must be the same (no state kept between calls)."""
    first, second = call(), call()
    assert type(first) is type(second)
    assert comparable(first.to_dict()) == comparable(second.to_dict())
    return first


def comparable(data: Any) -> Any:
    """`data` without what differs between two runs by design: when, and where files lie."""
    text = json.dumps(data, sort_keys=True)
    text = re.sub(r'"created": "[^"]*"', '"created": ""', text)
    text = re.sub(r'"scores": "(<DataFrame>|/[^"]*/s\.csv)"', '"scores": "TABLE"', text)
    text = re.sub(r'"(elapsed_s|started|finished|duration_s|[a-z_]*_s)": [0-9.e+-]+', r'"\1": 0',
                  text)
    return json.loads(text)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example scored by the command, with its sidecar and store."""
    folder = tmp_path_factory.mktemp("cli")
    proc = run_cli("score", str(EXAMPLE), *[a for m in METRICS for a in ("-m", m)],
                   "-o", str(folder / "s.csv"), "--store", str(folder / "r.db"))
    assert proc.returncode == 0, proc.stderr
    return folder / "s.csv"


@pytest.fixture(scope="module")
def in_memory() -> Any:
    return twice(lambda: judgebench.score(EXAMPLE, METRICS))


def test_every_command_has_one_function_and_no_name_shadows_another() -> None:
    import judgebench.api as api
    from judgebench.services import meta_eval  # the module, as any import gives it

    assert set(judgebench.API) == set(api.__all__)
    for name in api.__all__:
        assert callable(getattr(judgebench, name)), name
        assert getattr(judgebench, name) is getattr(api, name)
    importlib.import_module("judgebench.auditing")  # the audit subpackage, once imported

    assert callable(judgebench.audit) and callable(judgebench.meta_eval)
    assert meta_eval.__name__ == "judgebench.services.meta_eval"


def test_score_gives_the_commands_table(scored: Path, in_memory: Any) -> None:
    table = in_memory.to_pandas()
    cli = pd.read_csv(scored)
    for metric in METRICS:
        assert table[metric].tolist() == pytest.approx(cli[metric].tolist(), rel=0, abs=0)
    assert json.loads(in_memory.to_json()) == in_memory.to_dict()


def test_meta_eval_of_the_score_result_uses_its_corpus_scores(scored: Path,
                                                                in_memory: Any) -> None:
    args = ["--human", "human.relevance", "--level", "system", "--statistic", "kendall"]
    cli = cli_json("meta-eval", str(scored), *args)
    options = {"humans": ["human.relevance"], "level": "system", "statistics": ["kendall"]}
    for table in (in_memory, in_memory.to_pandas(), scored, str(scored)):
        result = twice(lambda table=table: judgebench.meta_eval(table, **options))
        assert comparable(result.to_dict()) == comparable(cli)
    chrf = next(r for r in cli if r["metric"] == "lexical.chrf")
    assert chrf["system_score"] == "corpus"
    # a frame without its sidecar has no corpus scores: system means, said so
    bare = judgebench.meta_eval(pd.read_csv(scored), **options).to_dict()
    assert next(r for r in bare if r["metric"] == "lexical.chrf")["value"] != chrf["value"]


def test_audit_aggregate_items_combine_take_frames_and_results(scored: Path, in_memory: Any,
                                                               tmp_path: Path) -> None:
    cli = cli_json("audit", str(scored), "--human", "human.relevance")
    for table in (in_memory, scored):
        report = twice(lambda table=table: judgebench.audit(table, humans=["human.relevance"]))
        assert comparable(report.results()) == comparable(cli)  # what --json prints
        assert report.to_dict()["inputs"]["scores"] in {str(scored), "<DataFrame>"}

    cli = cli_json("aggregate", str(scored), "-r", "borda", "--metric", "lexical.chrf")
    for table in (in_memory, in_memory.to_pandas(), scored):
        result = twice(lambda table=table: judgebench.aggregate(
            table, rules=["borda"], metric="lexical.chrf"))
        assert comparable(result.to_dict()) == comparable(cli)
        assert list(result.to_pandas().columns)

    cli = cli_json("items", str(scored), "--metric", "lexical.chrf", "--threshold", "40")
    for table in (in_memory, scored):
        result = twice(lambda table=table: judgebench.items(table, metric="lexical.chrf",
                                                            threshold=40.0))
        assert comparable(result.to_dict()) == comparable(cli)

    out_cli, out_api = tmp_path / "cli.csv", tmp_path / "api.csv"
    cli = cli_json("combine", str(scored), "--human", "human.relevance", "--metric",
                   "lexical.chrf", "--metric", "lexical.rouge2", "-o", str(out_cli))
    result = judgebench.combine(in_memory, human="human.relevance", metrics=METRICS,
                                out=out_api)
    ours = result.to_dict()
    for row in (*cli, *ours):
        row.pop("out", None)
    assert comparable(ours) == comparable(cli)
    assert pd.read_csv(out_api).equals(pd.read_csv(out_cli))


def test_pairwise_functions_take_paths_and_frames() -> None:
    cli = cli_json("meta-eval", "pairwise", str(PAIRS), "--human", "human.gold")
    for table in (PAIRS, pd.read_csv(PAIRS)):
        result = twice(lambda table=table: judgebench.meta_eval_pairwise(
            table, humans=["human.gold"]))
        assert comparable(result.to_dict()) == comparable(cli)
    cli = cli_json("compare-judges", str(PAIRS), "--a", "gpt4-vanilla.ab", "--b",
                   "chatgpt-vanilla.ab", "--human", "human.gold")
    for table in (PAIRS, pd.read_csv(PAIRS)):
        result = twice(lambda table=table: judgebench.compare_judges(
            table, a="gpt4-vanilla.ab", b="chatgpt-vanilla.ab", human="human.gold"))
        assert comparable(result.to_dict()) == comparable(cli)


def test_runs_and_logs_read_the_store(scored: Path) -> None:
    store = scored.parent / "r.db"
    assert comparable(twice(lambda: judgebench.runs(store)).to_dict()) == comparable(
        cli_json("runs", "--store", str(store)))
    assert comparable(twice(lambda: judgebench.logs(store)).to_dict()) == comparable(
        cli_json("logs", "--store", str(store)))


def test_an_error_about_a_frame_names_the_frame_row_and_field(in_memory: Any) -> None:
    frame = in_memory.to_pandas().copy()
    frame["human.relevance"] = frame["human.relevance"].astype(object)
    frame.loc[3, "human.relevance"] = "high"
    with pytest.raises(InputError) as caught:
        judgebench.audit(frame, humans=["human.relevance"])
    message = str(caught.value)
    assert message.startswith("<DataFrame>"), message
    assert "DataFrame.csv" not in message and "judgebench-" not in message
    assert caught.value.field == "human.relevance"


README_API = re.compile(r"```python\n(import judgebench\n.*?)```", re.S)


def test_the_readmes_api_example_runs_twice_in_a_fresh_process(tmp_path: Path) -> None:
    page = REPO / "docs" / "guides" / "scoring.md"  # the API example, moved from the README
    blocks = README_API.findall(page.read_text(encoding="utf-8"))
    assert blocks, "docs/guides/scoring.md shows the Python API in a ```python block"
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / EXAMPLE.name).write_bytes(EXAMPLE.read_bytes())
    code = "\n".join(blocks)
    script = "for _ in range(2):\n" + "".join(f"    {line}\n" for line in code.splitlines())
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_diff_suites_and_label_sample_give_the_commands_numbers(scored: Path,
                                                               tmp_path: Path) -> None:
    """The functions issue 42 added: `diff` (two runs), `suites` (the listing, a card, an
    export) and `label_sample` (Python only: against a direct call of its draw twice)."""
    other = tmp_path / "other.csv"
    frame = pd.read_csv(scored)
    frame.assign(**{"lexical.chrf": frame["lexical.chrf"] * 0.5 + 1}).to_csv(other, index=False)
    args = ["--human", "human.relevance", "--bootstrap", "50"]
    cli = cli_json("diff", str(scored), str(other), *args)
    result = twice(lambda: judgebench.diff(scored, other, human="human.relevance",
                                           bootstrap=50))
    assert comparable(result.to_dict()) == comparable({k: v for k, v in cli.items()
                                                       if k != "failed_checks"})  # --fail-on
    assert cli_json("suites") == twice(lambda: judgebench.suites()).to_dict()
    card = twice(lambda: judgebench.suites("summeval"))
    assert card.to_dict() == cli_json("suites", "summeval")
    assert card.to_pandas()["name"].tolist() == ["summeval"]
    exported = judgebench.suites("llmbar", export=tmp_path / "api")
    proc = run_cli("suites", "llmbar", "--export", str(tmp_path / "cli"))
    assert proc.returncode == 0, proc.stderr
    for name, path in exported.to_dict().items():
        assert Path(path).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    with pytest.raises(InputError, match="exist already"):
        judgebench.suites("llmbar", export=tmp_path / "api")
    drawn = twice(lambda: judgebench.label_sample(scored, strategy="random", n=5, seed=3))
    same = judgebench.label_sample(pd.read_csv(scored), strategy="random", n=5, seed=3)
    assert [(r.item, r.system) for r in drawn.rows] == [(r.item, r.system) for r in same.rows]
    assert len(drawn.rows) == 5


def test_calling_a_function_after_importing_its_service_module(scored: Path) -> None:
    """`judgebench.services.<name>` is a module (internal); importing it changes nothing
    about `judgebench.<name>`, which stays the function, on the first call and the second."""
    import judgebench.services.aggregate
    import judgebench.services.compare_judges
    import judgebench.services.diff

    for _ in range(2):
        assert judgebench.aggregate(scored, rules=["borda"], metric="lexical.chrf").to_dict()
        assert judgebench.compare_judges(PAIRS, a="gpt4-vanilla.ab",
                                         b="chatgpt-vanilla.ab").to_dict()
        assert callable(judgebench.diff) and callable(judgebench.meta_eval_spans)


def test_no_guide_names_the_internal_services() -> None:
    """The guides, the tutorials and the README show `judgebench.api` (re-exported at
    `judgebench`) only; `judgebench.services` is internal (docs/design describes it)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        if "design" in page.relative_to(REPO).parts:
            continue
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"judgebench\.services|from judgebench\.services|\bservices\.\w+\(",
                         line):
                found.append(f"{page.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
