"""`judgebench meta-eval` as a group: the correlations without a subcommand name, one
subcommand per other question, each with only its own options; the old mode flags as hidden
aliases that warn on stderr and print what the new form prints; float options that refuse a
value that is not finite; subcommand modules imported only when invoked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import REPO, run_cli

from judgebench.commands.meta_eval import SUBCOMMANDS, aliases

SCORES = str(REPO / "examples" / "summeval-scores.csv")
PAIRS = str(REPO / "examples" / "summeval-pairs.csv")
LLMBAR = str(REPO / "tests" / "data" / "pairwise" / "llmbar" / "pairs.csv")
SPANS = str(REPO / "examples" / "ted-mqm-spans.jsonl")

#: (old form, new form) of `judgebench meta-eval ...`, one or more per renamed mode.
RENAMED = [
    ([LLMBAR, "--pairwise", "--human", "human.gold", "--by", "category", "--json"],
     ["pairwise", LLMBAR, "--human", "human.gold", "--by", "category", "--json"]),
    ([LLMBAR, "--pairwise", "--human", "human.gold", "--bootstrap", "20", "--compare",
      "--resamples", "50"],
     ["pairwise", LLMBAR, "--human", "human.gold", "--bootstrap", "20", "--compare",
      "--resamples", "50"]),
    ([PAIRS, "--pairwise", "--transitivity", "--human", "human.relevance", "--bootstrap",
      "30", "--json"],
     ["transitivity", PAIRS, "--human", "human.relevance", "--bootstrap", "30", "--json"]),
    (["--transitivity", PAIRS, "--human", "human.relevance", "--bootstrap", "30"],
     ["transitivity", PAIRS, "--human", "human.relevance", "--bootstrap", "30"]),
    ([SCORES, "--alt-test", "--epsilon", "0.2", "--alt-score", "neg-rmse",
      "--alt-min-items", "10", "--json"],
     ["alt-test", SCORES, "--epsilon", "0.2", "--alt-score", "neg-rmse", "--alt-min-items",
      "10", "--json"]),
    ([SCORES, "--construct", "lexical.chrf=human.relevance", "--construct=lexical.ter="
      "human.coherence", "--resamples", "50"],
     ["construct", SCORES, "--intended", "lexical.chrf=human.relevance", "--intended",
      "lexical.ter=human.coherence", "--resamples", "50"]),
    ([SCORES, "--human", "human.relevance", "--power-for", "0.2", "--json"],
     ["power", SCORES, "--human", "human.relevance", "--delta", "0.2", "--json"]),
    ([SCORES, "--spans", SPANS, "--store", "nosuch.db"],
     ["spans", SCORES, "--store", "nosuch.db", SPANS]),
]


@pytest.mark.parametrize(("old", "new"), RENAMED, ids=lambda args: " ".join(
    Path(a).name if "/" in a else a for a in args)[:60])
def test_an_old_mode_flag_prints_what_its_subcommand_prints(old: list[str], new: list[str],
                                                           tmp_path: Path) -> None:
    before = run_cli("meta-eval", *old, cwd=tmp_path)
    after = run_cli("meta-eval", *new, cwd=tmp_path)
    assert before.stdout == after.stdout
    assert before.returncode == after.returncode
    warning, _, rest = before.stderr.partition("\n")
    assert warning.startswith("meta-eval: warning: --")
    assert " is deprecated " in warning
    assert warning.endswith(f"use: judgebench meta-eval {new[0]} " + " ".join(new[1:]))
    assert rest == after.stderr
    assert "deprecated" not in after.stderr


def test_the_subcommands_give_their_results() -> None:
    # Not only the same output as the aliases: the output each question asks for.
    pairwise = run_cli("meta-eval", "pairwise", LLMBAR, "--human", "human.gold", "--json")
    assert pairwise.returncode == 0, pairwise.stderr
    judges = {r["metric"] for r in json.loads(pairwise.stdout)}
    assert judges == {"gpt4-vanilla", "chatgpt-vanilla", "gpt4-swap-cot"}
    power = run_cli("meta-eval", "power", SCORES, "--human", "human.relevance", "--delta",
                    "0.2")
    assert power.returncode == 0, power.stderr
    assert "lexical.chrf" in power.stdout


def test_without_a_subcommand_name_meta_eval_correlates_as_before() -> None:
    proc = run_cli("meta-eval", SCORES, "--human", "human.relevance", "--metric",
                   "lexical.chrf", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"statistic": "pearson"' in proc.stdout
    assert "deprecated" not in proc.stderr
    missing = run_cli("meta-eval")
    assert missing.returncode == 2
    assert "Usage: judgebench meta-eval [OPTIONS] SCORES" in missing.stderr
    assert "Missing argument 'SCORES'" in missing.stderr


def _help(*path: str) -> str:
    proc = run_cli(*path, "--help")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _options(help_text: str) -> set[str]:
    """The long options an option line of `help_text` names (not those its help mentions)."""
    return {word.rstrip(",") for line in help_text.splitlines() if line.startswith("  -")
            for word in line.split()[:2] if word.startswith("--")}


MODE_OPTIONS = {"--pairwise", "--transitivity", "--spans", "--alt-test", "--construct",
                "--power-for", "--judge", "--by", "--human-ties", "--store", "--alt-score",
                "--alt-min-items", "--target-power"}


def test_each_help_shows_only_its_own_options() -> None:
    group = _help("meta-eval")
    assert not _options(group) & MODE_OPTIONS  # the aliases are hidden
    assert {"--human", "--statistic", "--level", "--sequential"} <= _options(group)
    for name in SUBCOMMANDS:
        assert f"  {name} " in group
    assert _options(_help("meta-eval", "pairwise")) == {
        "--human", "--judge", "--by", "--human-ties", "--bootstrap", "--ci", "--compare",
        "--resamples", "--alpha", "--seed", "--failed-as", "--format", "--json", "--help"}
    assert _options(_help("meta-eval", "transitivity")) == {
        "--human", "--judge", "--bootstrap", "--ci", "--seed", "--format", "--json", "--help"}
    assert _options(_help("meta-eval", "spans")) == {
        "--metric", "--store", "--spans-column", "--format", "--json", "--help"}
    assert _options(_help("meta-eval", "reliability")) == {
        "--item", "--draw", "--rater-column", "--rater", "--score", "--human", "--metric",
        "--icc-design",
        "--icc-unit", "--ci", "--format", "--json", "--help"}
    assert _options(_help("meta-eval", "alt-test")) == {
        "--human", "--metric", "--epsilon", "--alt-score", "--alt-min-items", "--alpha",
        "--format", "--json", "--help"}
    assert _options(_help("meta-eval", "power")) == {
        "--human", "--delta", "--metric", "--rater", "--alpha", "--target-power", "--seed",
        "--lower-is-better", "--higher-is-better", "--exclude-system", "--format", "--json",
        "--help"}
    assert "--intended" in _options(_help("meta-eval", "construct"))
    assert not _options(_help("meta-eval", "construct")) & (MODE_OPTIONS - {"--human"})


def test_construct_takes_one_view() -> None:
    # As the old --construct did: a second --level is refused, not silently the one used.
    proc = run_cli("meta-eval", "construct", SCORES, "--intended",
                   "lexical.chrf=human.relevance", "--human", "human.coherence", "--level",
                   "system", "--level", "segment")
    assert proc.returncode == 2
    assert "one --level" in proc.stderr and proc.stdout == ""


def test_a_subcommand_refuses_another_modes_option() -> None:
    proc = run_cli("meta-eval", "pairwise", LLMBAR, "--human", "human.gold", "--metric", "x")
    assert proc.returncode == 2
    assert "No such option '--metric'" in proc.stderr


@pytest.mark.parametrize("args", [
    ["meta-eval", SCORES, "--human", "human.relevance", "--epsilon", "1e309"],
    ["meta-eval", "alt-test", SCORES, "--epsilon", "inf"],
    ["meta-eval", SCORES, "--human", "human.relevance", "--alpha", "nan"],
    ["meta-eval", SCORES, "--human", "human.relevance", "--sequential", "--margin", "1e400"],
    ["meta-eval", "power", SCORES, "--human", "human.relevance", "--delta", "nan"],
    ["audit", SCORES, "--human", "human.relevance", "--epsilon", "1e309"],
    ["audit", SCORES, "--human", "human.relevance", "--power-for", "0.1", "--target-power",
     "nan"],
    ["bench", "lexical.chrf", "--suite", "summeval", "--alpha", "nan"],
    ["compare-judges", SCORES, "--a", "lexical.chrf", "--b", "lexical.bleu", "--tolerance",
     "-inf"],
    ["items", SCORES, "--metric", "lexical.chrf", "--threshold", "30", "--ci", "nan"],
    ["score", "x.jsonl", "-m", "lexical.bleu", "--settle-margin", "inf"],
    ["aggregate", SCORES, "--metric", "lexical.chrf", "--level", "nan"],
])
def test_a_float_option_that_is_not_finite_is_a_usage_error(args: list[str]) -> None:
    option = next(a for a in reversed(args) if a.startswith("--"))
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert f"Invalid value for '{option}'" in proc.stderr
    assert "is not a finite number" in proc.stderr
    assert proc.stdout == ""


def test_an_aggregation_rule_option_outside_its_choices_is_a_usage_error() -> None:
    proc = run_cli("aggregate", SCORES, "--metric", "lexical.chrf", "-r",
                   "minimax:variant=zzz")
    assert proc.returncode == 2, proc.stderr
    assert "'--rule'" in proc.stderr and "margins, winning_votes, opposition" in proc.stderr
    fine = run_cli("aggregate", SCORES, "--metric", "lexical.chrf", "-r",
                   "minimax:variant=winning_votes", "-r", "schulze:strength=margins")
    assert fine.returncode == 0, fine.stderr


def test_rewrite_maps_each_old_form() -> None:
    assert aliases.rewrite(["s.csv", "--human", "h"]) is None
    assert aliases.rewrite(["--pairwise", "p.csv", "--human", "h"]) == [
        "pairwise", "p.csv", "--human", "h"]
    # The old command chose --alt-test over --pairwise; the other flag stays, to be refused.
    assert aliases.rewrite(["s.csv", "--pairwise", "--alt-test"]) == [
        "alt-test", "s.csv", "--pairwise"]
    assert aliases.rewrite(["s.csv", "--spans=h.jsonl", "--store", "x.db"]) == [
        "spans", "s.csv", "--store", "x.db", "h.jsonl"]
    assert aliases.rewrite(["s.csv", "--spans", "-h.jsonl"]) == [
        "spans", "s.csv", "--", "-h.jsonl"]
    assert aliases.rewrite(["s.csv", "--power-for=0.1"]) == ["power", "s.csv", "--delta", "0.1"]
    # After `--` every argument is a value, even one spelt like a flag.
    assert aliases.rewrite(["--", "--pairwise"]) is None
    with pytest.raises(click.UsageError, match="requires an argument"):
        aliases.rewrite(["s.csv", "--construct"])


def test_help_imports_no_subcommand_module() -> None:
    code = ("import sys\nfrom judgebench.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('judgebench.commands.')))")
    for argv, absent in ((["--help"], "judgebench.commands.meta_eval"),
                         (["meta-eval", "--help"], "judgebench.commands.meta_eval.pairwise")):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                              text=True, cwd=REPO, check=True)
        loaded = proc.stdout.strip().splitlines()[-1]
        assert f"'{absent}'" not in loaded, loaded
