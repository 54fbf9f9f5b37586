"""'Did you mean ...?': an unknown metric, option, column, rule or hook name gets the closest
registered ones in its error, through the CLI (exit 2, or 1 for a plugin's own mistake)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli, write_jsonl

from judgebench.suggest import close_matches, did_you_mean

GOOD = {"item": "d1", "system": "s1", "output": "a cat sat", "reference": "the cat sat"}


@pytest.fixture
def generations(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [GOOD, {**GOOD, "system": "s2"}])


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    rows = [{"item": f"d{i}", "system": f"s{s}", "good": s + rng.normal(),
             "human.quality": s + rng.normal()} for i in range(6) for s in range(4)]
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture
def leaderboard(tmp_path: Path) -> Path:
    path = tmp_path / "board.csv"
    path.write_text("system,task_one,task_two\nA,0.9,0.5\nB,0.5,0.9\nC,0.1,0.2\n",
                    encoding="utf-8")
    return path


def test_close_matches_folds_case_and_reads_past_the_namespace() -> None:
    names = ["lexical.rougeL", "lexical.rouge1", "lexical.rouge2", "lexical.bleu"]
    assert close_matches("lexical.rougel", names) == ["lexical.rougeL"]  # case alone
    assert close_matches("bleu", names) == ["lexical.bleu"]  # the name after the dot
    assert close_matches("lexical.blue", names) == ["lexical.bleu"]
    assert close_matches("zzz", names) == []
    assert did_you_mean("zzz", names) == ""
    assert did_you_mean("lexical.rouge", names).startswith("; did you mean ")


@pytest.mark.parametrize(("spec", "expected"), [
    ("lexical.rougel", "did you mean 'lexical.rougeL'?"),
    ("lexical.blue", "did you mean 'lexical.bleu'?"),
    ("rouge2", "did you mean 'lexical.rouge2'?"),
])
def test_unknown_metric_name_in_score(generations: Path, tmp_path: Path, spec: str,
                                      expected: str) -> None:
    out = tmp_path / "out.csv"
    proc = run_cli("score", str(generations), "-m", spec, "-o", str(out))
    assert proc.returncode == 2
    assert f"unknown metric '{spec}'" in proc.stderr and expected in proc.stderr
    assert not out.exists()


def test_unknown_metric_name_in_metrics_card() -> None:
    proc = run_cli("metrics", "judge.rubirc")
    assert proc.returncode == 2
    assert "did you mean 'judge.rubric'?" in proc.stderr


def test_unknown_option_key(generations: Path, tmp_path: Path) -> None:
    proc = run_cli("score", str(generations), "-m", "lexical.rouge2:multiref=mean", "-o",
                   str(tmp_path / "out.csv"))
    assert proc.returncode == 2
    assert "unknown option 'multiref'; did you mean 'multi_ref'?" in proc.stderr
    assert "options: measure, multi_ref, stemmer, tokenizer" in proc.stderr


def test_unknown_sentinel_and_backend_name(scores: Path, generations: Path,
                                           tmp_path: Path) -> None:
    proc = run_cli("audit", str(scores), "--human", "human.quality", "--sentinel",
                   "sentinel.randm")
    assert proc.returncode == 2 and "did you mean 'sentinel.random'?" in proc.stderr
    proc = run_cli("score", str(generations), "-m", "judge.rubric:backend=litelm,model=m",
                   "-o", str(tmp_path / "out.csv"), "--dry-run")
    assert proc.returncode == 2 and "did you mean 'litellm'?" in proc.stderr, proc.stderr


@pytest.mark.parametrize("option", ["--human", "--metric"])
def test_unknown_column_in_meta_eval(scores: Path, option: str) -> None:
    args = {"--human": ["--human", "human.qualty"],
            "--metric": ["--human", "human.quality", "--metric", "Good"]}[option]
    proc = run_cli("meta-eval", str(scores), *args)
    assert proc.returncode == 2
    wanted = "human.quality" if option == "--human" else "good"
    assert f"no such column; did you mean '{wanted}'?" in proc.stderr
    assert str(scores) in proc.stderr


def test_unknown_column_in_audit(scores: Path) -> None:
    proc = run_cli("audit", str(scores), "--human", "quality")
    assert proc.returncode == 2
    assert "field 'quality': no such column; did you mean 'human.quality'?" in proc.stderr


def test_unknown_direction_flag_column(scores: Path) -> None:
    proc = run_cli("meta-eval", str(scores), "--human", "human.quality",
                   "--lower-is-better", "god")
    assert proc.returncode == 2 and "did you mean 'good'?" in proc.stderr


def test_unknown_columns_in_aggregate(scores: Path, leaderboard: Path) -> None:
    proc = run_cli("aggregate", str(scores), "--metric", "godo")
    assert proc.returncode == 2 and "did you mean 'good'?" in proc.stderr
    proc = run_cli("aggregate", str(leaderboard), "--weight", "task_too=2")
    assert proc.returncode == 2 and "did you mean 'task_two'?" in proc.stderr
    proc = run_cli("aggregate", str(leaderboard), "--human", "Task_One")
    assert proc.returncode == 2 and "did you mean 'task_one'?" in proc.stderr


def test_unknown_rule_name(leaderboard: Path) -> None:
    proc = run_cli("aggregate", str(leaderboard), "-r", "bordda")
    assert proc.returncode == 2
    assert "unknown rule 'bordda'; did you mean 'borda'?" in proc.stderr
    proc = run_cli("aggregate", str(leaderboard), "-r", "Schulze")
    assert proc.returncode == 2 and "did you mean 'schulze'?" in proc.stderr


def test_misspelt_hook_gets_the_hook_it_meant(tmp_path: Path) -> None:
    plugin = tmp_path / "typo_hooks.py"
    plugin.write_text("from judgebench.hookspecs import hookimpl\n\n"
                      "@hookimpl\ndef register_metric(register):\n    pass\n\n"
                      "@hookimpl\ndef register_aggregator(register):\n    pass\n",
                      encoding="utf-8")
    proc = run_cli("-p", str(plugin), "metrics")
    assert proc.returncode == 1
    assert "implements hook 'register_metric'" in proc.stderr
    assert "did you mean 'register_metrics'?" in proc.stderr
    assert "did you mean 'register_aggregators'?" in proc.stderr


def test_no_suggestion_when_nothing_is_close(generations: Path, tmp_path: Path) -> None:
    proc = run_cli("score", str(generations), "-m", "qqqq.zzzz", "-o",
                   str(tmp_path / "out.csv"))
    assert proc.returncode == 2
    assert "did you mean" not in proc.stderr and "registered metrics:" in proc.stderr


def test_unknown_statistic(scores: Path) -> None:
    proc = run_cli("meta-eval", str(scores), "--human", "human.quality", "--statistic",
                   "kendal")
    assert proc.returncode == 2
    assert "unknown statistic 'kendal'" in proc.stderr and "did you mean 'kendall'?" in proc.stderr
