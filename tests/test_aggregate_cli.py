"""`judgebench aggregate`: the three inputs, JSON and text output, errors, plugin rules."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

TENNESSEE_CSV = """system,memphis,nashville,chattanooga,knoxville,people
Memphis,4,1,1,1,1
Nashville,3,4,2,2,4
Chattanooga,2,3,4,3,3
Knoxville,1,2,3,4,2
"""
WEIGHTS = ["--weight", "memphis=42", "--weight", "nashville=26", "--weight", "chattanooga=15",
           "--weight", "knoxville=17"]


def invoke(*args: str):
    return run_cli("aggregate", *args)


def as_json(*args: str) -> list[dict]:
    result = invoke(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def tennessee(tmp_path: Path) -> Path:
    path = tmp_path / "tennessee.csv"
    path.write_text(TENNESSEE_CSV, encoding="utf-8")
    return path


def test_leaderboard_json(tennessee: Path) -> None:
    out = as_json(str(tennessee), "-r", "borda", "-r", "plurality", "-r", "condorcet",
                  "-r", "kemeny", *WEIGHTS, "--human", "people")
    by_rule = {o["rule"]: o for o in out}
    assert list(by_rule) == ["borda", "plurality", "condorcet", "kemeny"]
    for o in out:
        assert {"rule", "ranking", "scores", "winners", "ties", "status"} <= set(o)
        assert "people" not in o["ranking"]
    assert by_rule["borda"]["winners"] == ["Nashville"]
    assert by_rule["borda"]["scores"] == {"Memphis": 126, "Nashville": 194, "Chattanooga": 173,
                                          "Knoxville": 107}
    assert by_rule["plurality"]["winners"] == ["Memphis"]
    assert by_rule["condorcet"]["scores"] is None
    assert by_rule["kemeny"]["ranking"] == ["Nashville", "Chattanooga", "Knoxville", "Memphis"]
    assert by_rule["borda"]["agreement"]["kemeny"] == pytest.approx(4 / 6)
    assert by_rule["kemeny"]["human"]["kendall_tau"] == 1.0
    assert by_rule["plurality"]["human"]["pairwise_accuracy"] == pytest.approx(2 / 6)


def test_weight_zero_drops_a_column_and_lower_is_better_flips_it(tennessee: Path) -> None:
    only_memphis = ["--weight", "nashville=0", "--weight", "chattanooga=0",
                    "--weight", "knoxville=0", "--weight", "people=0"]
    out = as_json(str(tennessee), "-r", "borda", *only_memphis)
    assert out[0]["ranking"] == ["Memphis", "Nashville", "Chattanooga", "Knoxville"]
    out = as_json(str(tennessee), "-r", "borda", *only_memphis, "--lower-is-better", "memphis")
    assert out[0]["ranking"] == ["Knoxville", "Chattanooga", "Nashville", "Memphis"]


def test_condorcet_cycle_has_empty_winners(tmp_path: Path) -> None:
    path = tmp_path / "cycle.csv"
    path.write_text("system,t1,t2,t3\nA,3,1,2\nB,2,3,1\nC,1,2,3\n", encoding="utf-8")
    out = as_json(str(path), "-r", "condorcet", "-r", "copeland")
    assert out[0]["winners"] == [] and "no Condorcet winner" in out[0]["note"]
    assert out[1]["ties"] == [["A", "B", "C"]]


def test_missing_scores_and_dropping(tmp_path: Path) -> None:
    path = tmp_path / "gappy.csv"
    path.write_text("system,t1,t2\nA,3,\nB,2,5\nC,1,4\n", encoding="utf-8")
    out = as_json(str(path), "-r", "borda")
    assert out[0]["scores"] == {"A": 2, "B": 2, "C": 0}  # t2 ranks only B and C
    assert out[0]["ties"] == [["A", "B"]]
    out = as_json(str(path), "-r", "borda", "--missing", "drop-systems")
    assert out[0]["ranking"] == ["B", "C"]
    out = as_json(str(path), "-r", "borda", "--missing", "drop-voters")
    assert out[0]["scores"] == {"A": 2, "B": 1, "C": 0}


def test_scores_table_items_vote(tmp_path: Path) -> None:
    rows = []
    for item in range(6):
        for system, base in (("x", 3), ("y", 2), ("z", 1)):
            rows.append({"item": f"i{item}", "system": system,
                         "bleu": base + (item % 2) * (system == "z") * 5,
                         "human.quality": base})
    path = tmp_path / "scores.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    out = as_json(str(path), "--metric", "bleu", "-r", "mean", "-r", "borda",
                  "--human", "human.quality")
    mean_rule, borda_rule = out
    assert mean_rule["winners"] == ["z"]  # big wins on half the items lift the mean
    assert borda_rule["winners"] == ["x"]  # but x beats z on more items
    assert borda_rule["ranking"] == ["x", "z", "y"]
    # people say x > y > z: borda gets (x, y) and (x, z) right, (y, z) wrong
    assert borda_rule["human"]["kendall_tau"] == pytest.approx(1 / 3)


def test_pairwise_table_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    lines = ["item,system_a,system_b,winner"]
    for i in range(10):
        lines += [f"{i},A,B,a", f"{i},B,C,{'b' if i % 3 else 'tie'}", f"{i},A,C,A"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke(str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert "pairwise table" in result.stderr
    out = {o["rule"]: o for o in json.loads(result.stdout)}
    assert set(out) == {"bradley-terry", "elo", "copeland", "schulze", "kemeny"}
    assert all(o["ranking"] == ["A", "C", "B"] for o in out.values())
    assert "nu" in out["bradley-terry"]["note"]
    bad = invoke(str(path), "-r", "borda")
    assert bad.returncode == 2 and "needs voters" in bad.stderr


def test_bootstrap_and_make_win_in_json(tennessee: Path) -> None:
    out = as_json(str(tennessee), "-r", "borda", "-r", "copeland", *WEIGHTS,
                  "--weight", "people=0", "--bootstrap", "100", "--make-win", "Memphis")
    borda_rule, copeland_rule = out
    boot = borda_rule["bootstrap"]
    assert boot["n"] == 100 and boot["k"] == 3
    assert sum(s["p_win"] for s in boot["systems"].values()) == pytest.approx(1.0)
    assert all(s["rank_low"] <= s["rank_high"] for s in boot["systems"].values())
    assert borda_rule["make_win"]["possible"] and borda_rule["make_win"]["verified"]
    assert borda_rule["make_win"]["weights"]["memphis"] > 0
    assert copeland_rule["make_win"]["supported"] is False


def test_text_output_is_side_by_side(tennessee: Path) -> None:
    result = invoke(str(tennessee), "-r", "borda", "-r", "plurality", *WEIGHTS,
                    "--weight", "people=0", "--bootstrap", "20", "--make-win", "Knoxville")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["rank", "borda", "plurality"]
    assert lines[1].split() == ["1", "Nashville", "194", "Memphis", "42"]  # system, score
    assert "Kendall tau-b" in result.stdout and "Bootstrap" in result.stdout
    assert "make Knoxville win" in result.stdout


def test_all_rules_and_options(tennessee: Path) -> None:
    out = as_json(str(tennessee), "-r", "all", "-r", "minimax:variant=winning_votes",
                  *WEIGHTS, "--weight", "people=0")
    names = [o["rule"] for o in out]
    assert {"mean", "median", "baldwin", "kemeny", "elo", "bradley-terry"} <= set(names)
    assert "minimax:variant=winning_votes" in names
    assert all(o["status"] == "ok" for o in out)


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("system,t1\nA,1\nB,x\n", [], "line 3, field 't1': not a number"),
        ("system,t1\nA,1\nA,2\n", [], "line 3, field 'system'"),
        ("system,t1\nA,1\nB,2\n", ["-r", "nope"], "unknown rule 'nope'"),
        ("system,t1\nA,1\nB,2\n", ["--weight", "t9=2"], "field 't9'"),
        ("system,t1\nA,1\nB,2\n", ["--weight", "t1=-1"], "non-negative"),
        ("system,t1\nA,1\nB,2\n", ["--metric", "t1"], "--metric applies to scores"),
        ("system,t1\nA,1\nB,2\n", ["-r", "minimax:colour=red"], "no option"),
        ("system,t1\nA,1\nB,2\n", ["--make-win", "Z"], "no system 'Z'"),
        ("item,system_a,system_b,winner\n1,A,B,maybe\n", [], "line 2, field 'winner'"),
        ("item,system,m1,m2\n1,A,1,2\n", [], "give --metric"),
        ("system,t1\nA,1\nB,2\n", ["--human", "people"], "field 'people'"),
        ("item,system,m1\n1,A,1\n1,A,2\n", [], "line 3, field 'item'"),
        ("item,system_a,system_b,winner,length_a,length_b\n1,A,B,a,-1,5\n2,A,B,b,3,4\n",
         ["-r", "bradley-terry", "--control", "length"],
         "line 2, field 'length_a': an output length must be a non-negative number, got -1"),
        ("item,system,m1\n1,A,inf\n1,B,2\n", ["--metric", "m1"], "value inf is not finite"),
    ],
)
def test_bad_input_exits_2_naming_the_place(tmp_path: Path, content: str, args: list[str],
                                            message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    result = invoke(str(path), *args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr


def test_a_failing_rule_is_a_status_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "neg.csv"
    path.write_text("system,t1\nA,-1\nB,2\n", encoding="utf-8")
    result = invoke(str(path), "-r", "geometric-mean", "-r", "borda", "--json")
    assert result.returncode == 1
    out = json.loads(result.stdout)
    assert out[0]["status"] == "error" and "positive" in out[0]["reason"]
    assert out[1]["status"] == "ok" and out[1]["winners"] == ["B"]


def test_a_third_party_rule_from_a_plugin(tmp_path: Path, tennessee: Path) -> None:
    plugin = tmp_path / "alphabet_rule.py"
    plugin.write_text(
        "from judgebench.hookspecs import hookimpl\n"
        "from meta_eval.aggregation import RuleResult\n\n"
        "class Alphabetical:\n"
        "    name = 'alphabetical'\n"
        "    description = 'systems in name order'\n"
        "    def rank(self, data):\n"
        "        order = sorted(data.systems)\n"
        "        return RuleResult('alphabetical', tuple((s,) for s in order), None,\n"
        "                          (order[0],))\n\n"
        "@hookimpl\n"
        "def register_aggregators(register):\n"
        "    register('alphabetical', Alphabetical())\n",
        encoding="utf-8",
    )
    listed = run_cli("-p", str(plugin), "aggregate", str(tennessee), "--list-rules")
    assert listed.returncode == 0, listed.stderr
    assert "alphabetical" in listed.stdout and "kemeny" in listed.stdout
    ran = run_cli("-p", str(plugin), "aggregate", str(tennessee), "-r", "alphabetical",
                  "-r", "borda", "--json")
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out[0]["ranking"] == ["Chattanooga", "Knoxville", "Memphis", "Nashville"]
    assert "agreement" in out[0]


def test_human_ranking_with_ties_and_from_a_file(tmp_path: Path, tennessee: Path) -> None:
    out = as_json(str(tennessee), "-r", "kemeny", *WEIGHTS, "--weight", "people=0",
                  "--human-ranking", "Nashville,Chattanooga=Knoxville,Memphis")
    assert out[0]["human"]["source"] == "ranking"
    assert out[0]["human"]["pairwise_accuracy"] == pytest.approx(5 / 6)
    ranking = tmp_path / "people.txt"
    ranking.write_text("Nashville\nChattanooga\nKnoxville\nMemphis\n", encoding="utf-8")
    out = as_json(str(tennessee), "-r", "kemeny", *WEIGHTS, "--weight", "people=0",
                  "--human-ranking", f"@{ranking}")
    assert out[0]["human"]["kendall_tau"] == 1.0
