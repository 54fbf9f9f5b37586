"""An MT segment end to end: TED talks segments (the vendored WMT21 en-de MQM suite) scored
by judge.mqm against a loopback server (tests/fault_server.py) scripted to answer with error
spans, then `meta-eval --spans` against the vendored human spans (the suite, and the same
spans as a JSONL file), `audit --spans` and `logs`. The expected numbers are recomputed here
per character and per span by brute force from the suite's files, not by meta_eval.spans."""

from __future__ import annotations

import gzip
import json
import math

import pytest
from conftest import run_cli
from fault_server import FaultServer
from suites_support import DATA, DIST, installed, plugin_args, plugin_env
from test_spans_kernels import brute_chars, brute_span_matches

SUITE = "wmt21-tedtalks-en-de"
FOLDER = DATA / SUITE
SEV = {"Minor": 0, "Major": 1}


def rows(name: str) -> list[dict]:
    with gzip.open(FOLDER / name, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def ted() -> dict:
    """Six TED translations whose target-side error spans each occur once in the output
    (so a judge quoting them is located where people marked them), one with no error."""
    samples = {(r["item"], r["system"]): r for r in rows("samples.jsonl.gz")}
    human = {(r["item"], r["system"]): r for r in rows("human.jsonl.gz")}
    spans: dict[tuple[str, str], list[dict]] = {}
    for r in rows("spans.jsonl.gz"):
        spans.setdefault((r["item"], r["system"]), []).append(r)
    chosen: list[tuple[str, str]] = []
    clean: tuple[str, str] | None = None
    for key, sample in samples.items():
        found = spans.get(key, [])
        if not found and clean is None:
            clean = key
        if found and len(chosen) < 5 and all(
                s["side"] == "target" and s["end"] > s["start"]
                and sample["output"].count(s["span"]) == 1 for s in found):
            chosen.append(key)
    assert clean is not None and len(chosen) == 5
    chosen.append(clean)
    return {"keys": chosen, "samples": samples, "human": human, "spans": spans}


def predicted(ted: dict) -> dict[tuple[str, str], list[dict]]:
    """What the scripted judge answers: people's spans, with the first segment's first
    span at the other severity and a span of the second segment left out, plus a span
    that is not in the output."""
    out = {}
    for n, key in enumerate(ted["keys"]):
        errors = [{"span": s["span"], "category": s["category"].lower(),
                   "severity": s["severity"].lower()} for s in ted["spans"].get(key, [])]
        if n == 0:
            errors[0]["severity"] = "minor" if errors[0]["severity"] == "major" else "major"
        if n == 1:
            errors = errors[1:]
        if n == 2:
            errors.append({"span": "kein Teil der Ausgabe", "category": "other",
                           "severity": "minor"})
        out[key] = errors
    return out


def expected(ted: dict, answers: dict) -> dict[str, tuple[float, float]]:
    """(precision, recall) per view, by brute force over (segment, character) sets and
    span pairs."""
    human, metric = [], []
    for seg, key in enumerate(ted["keys"]):
        output = ted["samples"][key]["output"]
        human += [(seg, s["start"], s["end"], SEV[s["severity"]])
                  for s in ted["spans"].get(key, [])]
        for e in answers[key]:
            at = output.find(e["span"])
            if at >= 0:
                metric.append((seg, at, at + len(e["span"]), SEV[e["severity"].title()]))
    out = {}
    for credit in ("partial", "match", "ignore"):
        tp, n_m, n_h = brute_chars(human, metric, credit)
        out[f"character-{credit}"] = (tp / n_m, tp / n_h)
    for match in ("overlap", "exact"):
        for severity in (False, True):
            name = f"span-{match}{'+severity' if severity else ''}"
            out[name] = (brute_span_matches(metric, human, match, severity) / len(metric),
                         brute_span_matches(human, metric, match, severity) / len(human))
    return out


@pytest.fixture(scope="module")
def scored(ted, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("spans")
    answers = predicted(ted)
    replies = [[ted["samples"][k]["output"], json.dumps({"errors": answers[k]},
                                                        ensure_ascii=False)]
               for k in ted["keys"]]
    (tmp / "replies.json").write_text(json.dumps(replies, ensure_ascii=False),
                                      encoding="utf-8")
    data = tmp / "ted.jsonl"
    with data.open("w", encoding="utf-8") as handle:
        for key in ted["keys"]:
            sample = dict(ted["samples"][key])
            sample["human"] = {"mqm": ted["human"][key]["human.mqm"]}
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    env = {"JUDGEBENCH_CACHE_DIR": str(tmp / "cache"), **plugin_env()}
    with FaultServer("--replies", str(tmp / "replies.json"), log=tmp / "served.jsonl") as srv:
        spec = (f"judge.mqm:backend=openai_compat,model=judge,api_base={srv.url},"
                "source_lang=English,target_lang=German")
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp / "scores.csv"),
                       "--store", str(tmp / "store.db"), env=env)
        assert proc.returncode == 0, proc.stderr
    return {"tmp": tmp, "env": env, "answers": answers, "spec": spec}


def overall(result: list[dict]) -> dict[str, dict]:
    return {f"{r['level']}-{r['variant']}": r for r in result if r["system"] is None}


def check(found: dict[str, dict], want: dict[str, tuple[float, float]]) -> None:
    assert set(found) == set(want)
    for name, (p, r) in want.items():
        assert found[name]["precision"] == pytest.approx(p, rel=1e-12), name
        assert found[name]["recall"] == pytest.approx(r, rel=1e-12), name
        f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
        assert found[name]["f1"] == pytest.approx(f1, rel=1e-12), name


def test_score_puts_the_spans_in_the_store(scored) -> None:
    meta = json.loads((scored["tmp"] / "scores.csv.meta.json").read_text())
    [column] = meta["columns"].values()
    assert column["statuses"] == {"ok": 6}
    assert "protocol:json" in column["signature"]


def test_meta_eval_spans_against_the_suite(ted, scored) -> None:
    tmp = scored["tmp"]
    proc = run_cli(*plugin_args(), "meta-eval", "spans", str(tmp / "scores.csv"), SUITE,
                   "--store", str(tmp / "store.db"), "--json", env=scored["env"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    want = expected(ted, scored["answers"])
    check(overall(result), want)
    first = overall(result)["character-partial"]
    assert first["n"] == 6 and first["unlocated_spans"] == 1 and first["not_scored"] == 0
    assert not math.isclose(want["character-partial"][0], want["character-match"][0])
    systems = {r["system"] for r in result if r["system"] is not None}
    assert systems == {k[1] for k in ted["keys"]}
    text = run_cli(*plugin_args(), "meta-eval", "spans", str(tmp / "scores.csv"), SUITE,
                   "--store", str(tmp / "store.db"), env=scored["env"])
    assert text.returncode == 0, text.stderr
    assert "character  partial" in text.stdout and "per system" in text.stdout
    assert "1 predicted span(s) not in the output" in text.stdout


def test_meta_eval_spans_from_a_file_and_the_suite_agree(ted, scored) -> None:
    tmp = scored["tmp"]
    human = tmp / "human_spans.jsonl"
    with human.open("w", encoding="utf-8") as handle:
        for key in ted["keys"]:
            found = ted["spans"].get(key, [])
            lines = [{"item": key[0], "system": key[1], "start": s["start"], "end": s["end"],
                      "severity": s["severity"], "category": s["category"],
                      "rater": s["rater"]} for s in found]
            lines = lines or [{"item": key[0], "system": key[1], "start": None, "end": None}]
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    proc = run_cli("meta-eval", "spans", str(tmp / "scores.csv"), str(human), "--store",
                   str(tmp / "store.db"), "--json", env=scored["env"])
    assert proc.returncode == 0, proc.stderr
    check(overall(json.loads(proc.stdout)), expected(ted, scored["answers"]))


def test_bad_human_spans_name_the_file_line_and_field(scored) -> None:
    tmp = scored["tmp"]
    bad = tmp / "bad.jsonl"
    bad.write_text('{"item": "1", "system": "Nemo", "start": 3, "end": 9, "severity": "Minor"}\n'
                   '{"item": "1", "system": "Nemo", "start": 9, "end": 3, "severity": "Minor"}\n')
    proc = run_cli("meta-eval", "spans", str(tmp / "scores.csv"), str(bad), "--store",
                   str(tmp / "store.db"), env=scored["env"])
    assert proc.returncode != 0
    assert "bad.jsonl" in proc.stderr and "line 2" in proc.stderr and "end" in proc.stderr
    bad.write_text('{"item": "1", "system": "Nemo", "start": 3, "end": 9, "severity": "huge"}\n')
    proc = run_cli("meta-eval", "spans", str(tmp / "scores.csv"), str(bad), "--store",
                   str(tmp / "store.db"), env=scored["env"])
    assert proc.returncode != 0 and "severity" in proc.stderr and "line 1" in proc.stderr


def test_audit_reports_the_spans(ted, scored) -> None:
    tmp = scored["tmp"]
    proc = run_cli(*plugin_args(), "audit", str(tmp / "scores.csv"), "--human", "human.mqm",
                   "--spans", SUITE, "--store", str(tmp / "store.db"), "--bootstrap", "0",
                   "--json", env=scored["env"])
    assert proc.returncode == 0, proc.stderr
    found = [r for r in json.loads(proc.stdout) if r.get("type") == "spans"]
    check(overall(found), expected(ted, scored["answers"]))
    card = run_cli(*plugin_args(), "audit", str(tmp / "scores.csv"), "--human", "human.mqm",
                   "--spans", SUITE, "--store", str(tmp / "store.db"), "--bootstrap", "0",
                   "--report", str(tmp / "card.html"), env=scored["env"])
    assert card.returncode == 0, card.stderr
    assert "## Error spans" in card.stdout
    assert '<h2 id="spans">Error spans</h2>' in (tmp / "card.html").read_text()


def test_logs_marks_the_spans_in_the_output(ted, scored) -> None:
    tmp = scored["tmp"]
    key = ted["keys"][2]
    proc = run_cli("logs", "--store", str(tmp / "store.db"), "--item", key[0], "--system",
                   key[1], env=scored["env"])
    assert proc.returncode == 0, proc.stderr
    first = ted["spans"][key][0]["span"]
    assert f"[{first}](1)" in proc.stdout
    assert "not in the output" in proc.stdout and "kein Teil der Ausgabe" in proc.stdout


def test_the_python_api_gives_the_commands_rows(scored, monkeypatch) -> None:
    """`judgebench.meta_eval_spans` (the API's name for `meta-eval spans`) on the table and
    on it as a DataFrame with its sidecar: the command's JSON, twice."""
    import pandas as pd

    import judgebench
    from judgebench.plugins import build_host
    from judgebench.tables.scores_table import SIDECAR_ATTR

    if not installed():  # a checkout without the suites extra: the plugin from its folder
        monkeypatch.syspath_prepend(str(DIST))
    host = build_host([] if installed() else ["judgebench_suites"])

    tmp = scored["tmp"]
    store = tmp / "store.db"
    cli = run_cli(*plugin_args(), "meta-eval", "spans", str(tmp / "scores.csv"), SUITE,
                  "--store", str(store), "--json", env=scored["env"])
    assert cli.returncode == 0, cli.stderr
    frame = pd.read_csv(tmp / "scores.csv")
    frame.attrs[SIDECAR_ATTR] = json.loads((tmp / "scores.csv.meta.json").read_text())
    for table in (tmp / "scores.csv", frame, tmp / "scores.csv"):
        result = judgebench.meta_eval_spans(table, SUITE, store=store, host=host)
        assert result.to_dict() == json.loads(cli.stdout)
