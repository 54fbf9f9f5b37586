"""judge.mqm (GEMBA-MQM): weights against Freitag et al. (2021) and GEMBA's own
`parse_mqm_answer` (transcribed here), GEMBA's text format (its few-shot answers), the JSON
schema whose spans are the output's word runs, spans located in the output (a span not found
is reported), and the judge against a loopback server (tests/fault_server.py) answering
scripted spans under both protocols."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli
from fault_server import FaultServer
from judgebench_judges import parsing
from judgebench_judges.mqm import (
    CATEGORIES,
    EXAMPLES,
    error_schema,
    gemba_text,
    locate,
    parse_json,
    parse_text,
    penalty,
    weight,
    word_runs,
)

OUTPUT = "Ich möchte euch alle bitten, für eine Sekunde die Tatsache zu bedenken."


def gemba_score(errors: list[tuple[str, str]]) -> float:
    """GEMBA's parse_mqm_answer scoring, transcribed: (level, category) per error, levels
    in the order critical, major, minor; non-translation filed as critical; the first five
    count; capped at 25; negated."""
    by_level: dict[str, list[str]] = {"critical": [], "major": [], "minor": []}
    for level, category in errors:
        by_level["critical" if "non-translation" in category else level].append(category)
    total, counted = 0, 0
    for level in ("critical", "major", "minor"):
        for _ in by_level[level]:
            if counted < 5:
                total += 25 if level == "critical" else 5 if level == "major" else 1
                counted += 1
    return -min(total, 25)


def test_wmt_weights_are_freitag_et_al() -> None:
    assert weight("accuracy/mistranslation", "major") == 5
    assert weight("accuracy/mistranslation", "critical") == 5  # no Critical in WMT MQM
    assert weight("fluency/grammar", "minor") == 1
    assert weight("fluency/punctuation", "minor") == 0.1
    assert weight("fluency/punctuation", "major") == 5
    assert weight("non-translation", "minor") == 25


@pytest.mark.parametrize("seed", range(30))
def test_gemba_weights_are_gembas_parse_mqm_answer(seed) -> None:
    import random

    rng = random.Random(seed)
    errors = [(rng.choice(["critical", "major", "minor"]), rng.choice(CATEGORIES))
              for _ in range(rng.randint(0, 9))]
    # GEMBA counts per level in the order critical, major, minor: the judge's spans are
    # in answer order, so order them as GEMBA's lists do for the first-five rule.
    levels = ["critical", "major", "minor"]
    ordered = sorted(errors, key=lambda e: levels.index(
        "critical" if e[1] == "non-translation" else e[0]))
    spans = [{"weight": weight(c, sev, "gemba")} for sev, c in ordered]
    assert -penalty(spans, "gemba") == gemba_score(errors)


def test_gembas_few_shot_answers_parse() -> None:
    for _, _, _, _, errors in EXAMPLES:
        assert parse_text(gemba_text(errors)) == list(errors)
    text = 'Critical:\nno-error\nMajor:\nnon-translation - "x y"\nMinor:\nstyle - "a"\n'
    assert parse_text(text) == [("critical", "non-translation", "x y"),
                                ("minor", "style", "a")]


@pytest.mark.parametrize("answer", ["The translation is fine.", 'Major:\nwhatever it is',
                                    'accuracy - "x"', 'Major:\nbanana - "x"'])
def test_answers_outside_the_format_are_parse_errors(answer) -> None:
    with pytest.raises(parsing.ParseError):
        parse_text(answer)


def test_word_runs_and_schema() -> None:
    runs = word_runs("Ich möchte euch, bitte.", 2)
    assert runs == ["Ich", "Ich möchte", "möchte", "möchte euch", "euch", "euch,", ",",
                    ", bitte", "bitte", "bitte.", "."]
    schema = error_schema(runs, 3)
    items = schema["properties"]["errors"]
    assert items["maxItems"] == 3 and items["items"]["properties"]["span"] == {"enum": runs}
    assert parse_json('{"errors": [{"span": "euch", "category": "fluency/register", '
                      '"severity": "Minor"}]}', schema) == [("minor", "fluency/register",
                                                              "euch")]
    with pytest.raises(parsing.ParseError):
        parse_json('{"errors": [{"span": "euch", "severity": "minor"}]}', schema)
    with pytest.raises(parsing.ParseError):
        parse_json('{"errors": [{"span": "euch", "category": "style", "severity": "big"}]}',
                   schema)


def test_spans_are_located_and_a_missing_one_is_reported() -> None:
    output = "die Katze und die Katze"
    spans = locate(output, [("major", "other", "Katze"), ("minor", "other", "Katze"),
                            ("minor", "accuracy/omission", "the cat")], "wmt")
    assert [(s["start"], s["end"]) for s in spans] == [(4, 9), (18, 23), (None, None)]
    assert [s["weight"] for s in spans] == [5, 1, 1]


def write_samples(path: Path, outputs: list[str]) -> Path:
    rows = [{"item": str(i), "system": "sys", "source": "I want to ask you all.",
             "output": out, "human": {"mqm": -1.0}} for i, out in enumerate(outputs, 1)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("protocol", ["json", "text"])
def test_judge_against_a_loopback_server(tmp_path, protocol) -> None:
    outputs = [OUTPUT, "Ich bitte euch alle.", "Alles gut."]
    if protocol == "json":
        replies = [[OUTPUT, json.dumps({"errors": [
            {"span": "euch", "category": "fluency/register", "severity": "minor"},
            {"span": "Sekunde", "category": "accuracy/mistranslation", "severity": "major"},
            {"span": "not there", "category": "accuracy/omission", "severity": "minor"}]})],
            ["Ich bitte euch alle.", '{"errors": []}'], ["Alles gut.", "not json"]]
    else:
        replies = [[OUTPUT, 'Critical:\nno-error\nMajor:\naccuracy/mistranslation - '
                    '"Sekunde"\nMinor:\nfluency/register - "euch"\naccuracy/omission - '
                    '"not there"\n'],
                   ["Ich bitte euch alle.", "Critical:\nno-error\nMajor:\nno-error\n"
                    "Minor:\nno-error\n"], ["Alles gut.", "It is fine."]]
    (tmp_path / "replies.json").write_text(json.dumps(replies), encoding="utf-8")
    data = write_samples(tmp_path / "in.jsonl", outputs)
    with FaultServer("--replies", str(tmp_path / "replies.json"),
                     log=tmp_path / "served.jsonl") as server:
        spec = (f"judge.mqm:backend=openai_compat,model=judge,api_base={server.url},"
                f"protocol={protocol},examples=false")
        out, store = tmp_path / "scores.csv", tmp_path / "store.db"
        proc = run_cli("score", str(data), "-m", spec, "-o", str(out), "--store", str(store),
                       "--allow-failures", env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "c")})
        assert proc.returncode == 0, proc.stderr
        served = server.served()
    [column] = json.loads(Path(f"{out}.meta.json").read_text())["columns"].values()
    assert column["statuses"] == {"ok": 2, "parse_error": 1}
    assert f"protocol:{protocol}" in column["signature"]
    assert "weights:wmt" in column["signature"]
    assert len(served) == 3
    assert all(entry["schema"] == (protocol == "json") for entry in served)
    rows = {item: (value, json.loads(extra) if extra else {}) for item, value, extra in
            sqlite3.connect(store).execute("SELECT item, value, extra FROM scores")}
    value, extra = rows["1"]
    assert value == -7.0  # major 5 + minor 1 + the unlocated minor omission 1
    assert extra["unlocated"] == 1 and extra["output"] == OUTPUT
    located = {(s["text"], s["start"], s["end"], s["severity"]) for s in extra["spans"]}
    assert ("euch", 11, 15, "minor") in located
    assert ("Sekunde", OUTPUT.index("Sekunde"), OUTPUT.index("Sekunde") + 7,
            "major") in located
    assert ("not there", None, None, "minor") in located
    assert rows["2"][0] == 0.0 and rows["2"][1]["spans"] == []
    assert rows["3"][0] is None
    logs = run_cli("logs", "--store", str(store), "--item", "1",
                   env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "c")})
    assert logs.returncode == 0, logs.stderr
    assert "Ich möchte [euch](" in logs.stdout and "[Sekunde](" in logs.stdout
    assert "not in the output" in logs.stdout


def test_the_schema_enumerates_spans_only_where_it_can() -> None:
    from judgebench_judges.mqm import MAX_RUNS, MqmJudge

    judge = MqmJudge(backend="openai_compat", model="m", api_base="http://127.0.0.1:9/v1")
    span = judge.schema(OUTPUT)["properties"]["errors"]["items"]["properties"]["span"]
    assert span == {"enum": word_runs(OUTPUT, 6)}
    long = " ".join(f"w{k}" for k in range(MAX_RUNS))
    for text in ("", long):
        span = judge.schema(text)["properties"]["errors"]["items"]["properties"]["span"]
        assert span == {"type": "string"}


def test_an_empty_output_is_judged_and_shown_empty(tmp_path) -> None:
    (tmp_path / "replies.json").write_text(json.dumps([["```", '{"errors": []}']]))
    data = write_samples(tmp_path / "in.jsonl", [""])
    with FaultServer("--replies", str(tmp_path / "replies.json"),
                     log=tmp_path / "served.jsonl") as server:
        spec = (f"judge.mqm:backend=openai_compat,model=judge,api_base={server.url},"
                "examples=false")
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "s.csv"),
                       "--store", str(tmp_path / "s.db"),
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "c")})
        assert proc.returncode == 0, proc.stderr
    [(value,)] = sqlite3.connect(tmp_path / "s.db").execute("SELECT value FROM scores")
    assert value == 0.0
    logs = run_cli("logs", "--store", str(tmp_path / "s.db"),
                   env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "c")})
    assert "translation:\n      ``````" in logs.stdout, logs.stdout
