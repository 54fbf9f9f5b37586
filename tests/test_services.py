"""The services are the Python API: each gives exactly what its command prints with --json,
on real SummEval rows (20 documents x 16 systems, scored once with ROUGE-1, token F1 and
BLEU, whose corpus score enters system-level meta-evaluation)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

from judgebench.api import meta_eval
from judgebench.auditing.blocks import Options
from judgebench.errors import InputError
from judgebench.services.aggregate import aggregate
from judgebench.services.audit import audit
from meta_eval.task import Task

HUMANS = ("human.relevance", "human.coherence")
METRICS = ("lexical.rouge1", "lexical.token_f1", "lexical.bleu")


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("services")
    samples = write_jsonl(root / "gen.jsonl", summeval_records(16 * 20))
    scores = root / "scores.csv"
    run_cli("score", str(samples), *(a for m in METRICS for a in ("-m", m)), "-o",
            str(scores), "--store", str(root / "runs.db"), check=True)
    frame = pd.read_csv(scores, dtype={"item": str, "system": str})
    board = frame.groupby("system")[[*METRICS, "human.coherence", "human.fluency"]].mean()
    board["people"] = frame.groupby("system")["human.relevance"].mean()
    board.loc["M3", "lexical.bleu"] = float("nan")  # a missing score
    board.reset_index().to_csv(root / "board.csv", index=False)
    return {"samples": samples, "scores": scores, "board": root / "board.csv"}


def cli_json(*args: str) -> list[dict]:
    result = run_cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def same_json(objects: object, printed: list[dict]) -> None:
    """The service's to_dict() serialises to the bytes the command printed."""
    assert json.dumps(objects, indent=2) == json.dumps(printed, indent=2)


# -- meta-eval ------------------------------------------------------------------------------
def test_meta_eval_system_level_with_corpus_scores(scored: dict[str, Path]) -> None:
    result = meta_eval(scored["scores"], humans=HUMANS, level="system",
                       statistics=("pearson", "kendall"), bootstrap=30)
    printed = cli_json("meta-eval", str(scored["scores"]), *(a for h in HUMANS
                       for a in ("--human", h)), "--level", "system", "--statistic",
                       "pearson", "--statistic", "kendall", "--bootstrap", "30")
    same_json(result.to_dict(), printed)
    bleu = [r for r in printed if r["metric"] == "lexical.bleu"]
    assert len(bleu) == 4 and {r["system_score"] for r in bleu} == {"corpus"}
    assert all("ci_note" in r and "ci_low" not in r for r in bleu)
    frame = result.to_frame()
    assert len(frame) == 2 * 2 * 3 and set(frame["metric"]) == set(METRICS)


def test_meta_eval_segment_level_with_compare(scored: dict[str, Path]) -> None:
    kwargs = {"humans": HUMANS[:1], "level": "segment", "grouping": "item",
              "statistics": ("spearman", "kendall-23"), "epsilon": 0.01, "compare": True,
              "resamples": 100}
    result = meta_eval(scored["scores"], **kwargs)
    printed = cli_json("meta-eval", str(scored["scores"]), "--human", HUMANS[0], "--level",
                       "segment", "--grouping", "item", "--statistic", "spearman",
                       "--statistic", "kendall-23", "--epsilon", "0.01", "--compare",
                       "--resamples", "100")
    same_json(result.to_dict(), printed)
    assert all(r["cluster"] >= 1 and r["cluster_test"] == "permutation" for r in printed)
    block = result.blocks[0]
    assert block.result.ranking is not None and block.result.ranking.p_values
    # the same numbers from a DataFrame
    from_frame = meta_eval(pd.read_csv(scored["scores"], dtype={"item": str, "system": str}),
                           **kwargs)
    values = [(r["metric"], r["value"], r["cluster"]) for r in from_frame.to_dict()]
    assert values == [(r["metric"], r["value"], r["cluster"]) for r in printed]


def test_task_is_what_meta_eval_computes(scored: dict[str, Path]) -> None:
    frame = pd.read_csv(scored["scores"], dtype={"item": str, "system": str})
    task = Task(human="human.relevance", statistic="pearson", level="segment",
                grouping="none", bootstrap=20, compare=True, resamples=50)
    got = task.run(frame, ["lexical.rouge1", "lexical.token_f1"])
    printed = cli_json("meta-eval", str(scored["scores"]), "--human", "human.relevance",
                       "--metric", "lexical.rouge1", "--metric", "lexical.token_f1",
                       "--bootstrap", "20", "--compare", "--resamples", "50")
    for row in printed:
        outcome = got[row["metric"]]
        assert outcome.result.value == row["value"] and outcome.cluster == row["cluster"]
        assert (outcome.result.ci_low, outcome.result.ci_high) == (row["ci_low"],
                                                                    row["ci_high"])
    assert list(got.to_frame()["metric"]) == [r["metric"] for r in printed]


def test_meta_eval_bad_input_is_an_input_error(scored: dict[str, Path]) -> None:
    with pytest.raises(InputError, match="unknown statistic"):
        meta_eval(scored["scores"], humans=HUMANS, statistics=("nope",))


# -- aggregate ------------------------------------------------------------------------------
def test_aggregate_leaderboard_with_every_addition(scored: dict[str, Path]) -> None:
    rules = ("mean", "borda", "plurality:ties=low", "condorcet", "kemeny", "elo")
    result = aggregate(scored["board"], rules=rules, human="people", bootstrap=30,
                       make_win="M11")
    printed = cli_json("aggregate", str(scored["board"]), *(a for r in rules
                       for a in ("-r", r)), "--human", "people", "--bootstrap", "30",
                       "--make-win", "M11")
    same_json(result.to_dict(), printed)
    assert [o.status for o in result.outcomes] == ["ok"] * len(rules)
    supported = {o.spec: o.make_win.supported for o in result.outcomes if o.make_win}
    assert supported == {"mean": True, "borda": True, "plurality:ties=low": True,
                         "condorcet": True, "kemeny": False, "elo": False}
    assert all(set(e["agreement"]) == set(rules) - {e["rule"]} for e in printed)
    frame = result.to_frame()
    assert set(frame["rule"]) == set(rules) and frame["winner"].any()


def test_aggregate_human_ranking_and_a_failing_rule(tmp_path: Path,
                                                    scored: dict[str, Path]) -> None:
    result = aggregate(scored["board"], rules=("all",), human_ranking=[["M11"], ["M1", "M2"]])
    same_json(result.to_dict(), cli_json("aggregate", str(scored["board"]), "-r", "all",
                                         "--human-ranking", "M11,M1=M2"))
    assert {o.human.source for o in result.ok if o.human} == {"ranking"}
    negative = tmp_path / "neg.csv"
    negative.write_text("system,t1\nA,-1\nB,2\n", encoding="utf-8")
    failing = aggregate(negative, rules=("geometric-mean", "borda"))
    assert [o.status for o in failing.outcomes] == ["error", "ok"]
    assert "positive" in (failing.outcomes[0].reason or "")
    printed = run_cli("aggregate", str(negative), "-r", "geometric-mean",
                      "-r", "borda", "--json")
    assert printed.returncode == 1
    same_json(failing.to_dict(), json.loads(printed.stdout))


# -- audit ----------------------------------------------------------------------------------
def test_audit_report_is_what_the_command_prints(scored: dict[str, Path]) -> None:
    options = Options(bootstrap=30, resamples=30)
    report = audit(scored["scores"], humans=["human.relevance"], samples=scored["samples"],
                   levels=("system", "segment"), groupings=("item",), options=options,
                   lower=("lexical.token_f1",))
    printed = cli_json("audit", str(scored["scores"]), "--human", "human.relevance",
                       "--samples", str(scored["samples"]), "--level", "system", "--level",
                       "segment", "--grouping", "item", "--bootstrap", "30", "--resamples",
                       "30", "--lower-is-better", "lexical.token_f1")
    same_json(report.results(), printed)
    kinds = {(r["metric"], r["kind"]) for r in printed if r["type"] == "correlation"}
    assert ("lexical.rouge1", "metric") in kinds and ("sentinel.random", "sentinel") in kinds
    bleu = [r for r in printed if r["metric"] == "lexical.bleu" and r["level"] == "system"]
    assert bleu and bleu[0]["system_score"] == "corpus" and bleu[0]["cluster"] is None
    assert any("lower-is-better" in w for w in report.warnings)


def test_score_file_refuses_paths_that_overwrite_each_other(tmp_path: Path) -> None:
    """The file service checks its own paths, as the command does: an output that is the
    input is refused before any work, and the input is left as it was."""
    from judgebench.engine.runtime import RunSettings
    from judgebench.errors import InputError
    from judgebench.services.score import score_file
    from judgebench.spec import parse_spec

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(16))
    before = data.read_bytes()
    with pytest.raises(InputError, match="INPUT"):
        score_file(data, [parse_spec("lexical.length")], output=data, store=tmp_path / "s.db",
                   settings=RunSettings())
    assert data.read_bytes() == before
    assert not (tmp_path / "s.db").exists()
