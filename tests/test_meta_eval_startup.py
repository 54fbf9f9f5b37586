"""What `judgebench meta-eval` skips at start-up changes nothing it prints: the plugin host is
built only for a column whose direction no flag or sidecar gives, `import meta_eval` loads a
module only when one of its names is used, and a numeric column skips the per-cell boolean
check."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

import meta_eval
from judgebench import cli, plugins
from judgebench.errors import InputError
from judgebench.tables.columns import numeric_columns
from judgebench.tables.scores_table import load_scores_table


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SummEval's first 10 documents x 16 systems scored with lexical.length and lexical.bleu
    (corpus scores in the sidecar), `judgebench score` style; `plain.csv` beside it has no
    sidecar, and `ter.csv` names its length column `lexical.ter` (lower is better)."""
    folder = tmp_path_factory.mktemp("scored")
    samples = write_jsonl(folder / "in.jsonl", summeval_records(160))
    run_cli("score", str(samples), "-m", "lexical.length", "-m", "lexical.bleu", "-o",
            str(folder / "scores.csv"), "--store", str(folder / "runs.db"), check=True)
    shutil.copy(folder / "scores.csv", folder / "plain.csv")
    text = (folder / "scores.csv").read_text(encoding="utf-8")
    (folder / "ter.csv").write_text(text.replace("lexical.length", "lexical.ter", 1),
                                    encoding="utf-8")
    return folder


CASES = [
    ("scores.csv", "--human", "human.relevance", "--level", "segment", "--grouping", "item",
     "--statistic", "acc-eq", "--statistic", "kendall"),
    ("scores.csv", "--human", "human.coherence", "--level", "system", "--statistic",
     "pearson", "--lower-is-better", "lexical.length"),
    ("plain.csv", "--human", "human.fluency", "--level", "system", "--statistic", "kendall"),
    ("ter.csv", "--human", "human.relevance", "--level", "segment", "--grouping", "system",
     "--statistic", "kendall-23", "--epsilon", "0.5"),
    ("ter.csv", "--human", "human.relevance", "--higher-is-better", "lexical.ter"),
    ("scores.csv", "--human", "no.such.column"),
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c[:2]) + str(i) for i, c in
                                             enumerate(CASES)])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_output_is_that_of_a_host_built_at_start_up(scored: Path, args: tuple[str, ...],
                                                    as_json: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    table, *rest = args
    argv = ["meta-eval", str(scored / table), *rest, *(["--json"] if as_json else [])]
    lazy = run_cli(*argv)
    monkeypatch.setattr(cli, "HOSTLESS_COMMANDS", frozenset())
    eager = run_cli(*argv)
    assert (lazy.returncode, lazy.stdout, lazy.stderr) == (
        eager.returncode, eager.stdout, eager.stderr)
    assert lazy.stdout or lazy.returncode == 2


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    builds: list[int] = []
    real = plugins.build_host

    def counted(*args: Any, **kwargs: Any) -> Any:
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(plugins, "build_host", counted)
    return builds


def test_no_plugin_host_when_the_sidecar_gives_every_direction(
        scored: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _count_builds(monkeypatch)
    proc = run_cli("meta-eval", str(scored / "scores.csv"), "--human", "human.relevance",
                   "--level", "system", "--json")
    assert proc.returncode == 0, proc.stderr
    assert builds == []
    assert {row["direction_from"] for row in json.loads(proc.stdout)} == {"sidecar"}


@pytest.mark.parametrize("table", ["plain.csv", "ter.csv"])
def test_the_host_is_built_for_a_column_without_a_sidecar_direction_once(
        scored: Path, table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Then the cached registry (judgebench.tables.directions) answers, with the same output.
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    builds = _count_builds(monkeypatch)
    argv = ("meta-eval", str(scored / table), "--human", "human.relevance", "--json")
    first, second = run_cli(*argv), run_cli(*argv)
    assert first.returncode == 0, first.stderr
    assert builds == [1]
    assert (second.returncode, second.stdout, second.stderr) == (
        first.returncode, first.stdout, first.stderr)


def test_a_local_plugin_still_loads_at_start_up(scored: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = tmp_path / "empty_plugin.py"
    plugin.write_text("", encoding="utf-8")
    builds = _count_builds(monkeypatch)
    proc = run_cli("-p", str(plugin), "meta-eval", str(scored / "scores.csv"), "--human",
                   "human.relevance")
    assert proc.returncode == 0, proc.stderr
    assert builds == [1]
    missing = run_cli("-p", str(tmp_path / "nope.py"), "meta-eval", "x.csv", "--human", "h")
    assert missing.returncode == 2 and missing.stderr.startswith("Error: plugin file not found")


def test_lazy_and_given_registries_describe_every_column_alike(scored: Path) -> None:
    host = plugins.build_host()
    for table in ("scores.csv", "plain.csv", "ter.csv"):
        path = scored / table
        columns = [c for c in pd.read_csv(path, nrows=0).columns if c not in ("item", "system")]
        for lower, higher in (((), ()), (columns[:1], columns[1:2])):
            lazy = load_scores_table(path, lower=lower, higher=higher)
            given = load_scores_table(path, lower=lower, higher=higher, host=host)
            assert [lazy.info(c) for c in columns] == [given.info(c) for c in columns]


def test_meta_eval_names_load_their_modules_on_first_use() -> None:
    assert set(meta_eval._WHERE) == set(meta_eval.__all__)
    for name, (module, attribute) in meta_eval._WHERE.items():
        assert getattr(meta_eval, name) is getattr(sys.modules[module], attribute)
    with pytest.raises(AttributeError):
        _ = meta_eval.no_such_name
    fresh = subprocess.run(
        [sys.executable, "-c", "import sys, meta_eval.statistics; "
         "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))"],
        capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "[]"


def test_a_boolean_in_a_column_of_objects_is_still_refused() -> None:
    frame = pd.DataFrame({"a": [1.0, True, 2.0], "b": [1, 2, 3]}, dtype=object)
    frame.attrs["lines"] = [2, 3, 4]
    with pytest.raises(InputError, match=r"value True.*") as caught:
        numeric_columns(frame, ["a"], "t.csv")
    assert "line 3" in str(caught.value)
    numeric = pd.DataFrame({"b": [1, 2, 3]})
    numeric_columns(numeric, ["b"], "t.csv")
    assert numeric["b"].dtype == float and numeric["b"].tolist() == [1.0, 2.0, 3.0]


def test_meta_eval_with_a_sidecar_imports_no_pydantic_model(scored: Path) -> None:
    # Reading a scores table needs no Sample model: pydantic stays out of a meta-eval process.
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('LOADED', sorted(m for m in ('pydantic', "
            "'judgebench.models') if m in sys.modules)))\n"
            "from judgebench.cli import main\n"
            "main(['meta-eval', sys.argv[1], '--human', 'human.relevance', '--level', 'system'])")
    proc = subprocess.run([sys.executable, "-c", code, str(scored / "scores.csv")],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "LOADED []", proc.stderr
