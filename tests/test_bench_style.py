"""`bench` on a pairwise suite shows each judge's Bradley-Terry ranking raw and with the
outputs' style controlled, length and markdown (arena-hard-auto's header, list and bold
counts: the suite's samples carry the texts, which bench adds to the scored pairs.csv), with
the covariates' coefficients and intervals: every number equals `aggregate -r bradley-terry
--control length,markdown --winner SPEC` on a table built here from the scored verdicts and
the suite's own texts (both commands run here), in the card's JSON, and the text, Markdown
and HTML cards print them with the controls used. A synthetic suite of four systems judged
by the scripted judge through a real loopback server, lengths from 2 to ~900 characters,
0 to 3 headers, list items and bold spans (some inside a fenced code block, which does not
count). Where a pair lacks a text the table stays as scored and length alone is controlled.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from conftest import run_cli
from scripted_judge import ScriptedJudge
from suites_support import plugin_args, plugin_env

from judgebench.render.card import fmt
from judgebench.render.markdown import markdown_escape

SYSTEMS = ("north", "south", "east", "west")
SPEC_TAIL = ",api_key_env=JB_PAIR_KEY,protocol=text"


def _gz(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        for row in rows:
            handle.write((json.dumps(row) + "\n").encode())
    return buffer.getvalue()


def _markdown(rng: np.random.Generator) -> str:
    """0-3 headers, list items and bold spans; sometimes a fenced block with more inside."""
    lines = [f"{'#' * int(rng.integers(1, 4))} Part {k}" for k in range(rng.integers(0, 4))]
    lines += [f"{int(rng.integers(1, 9))}. step" if rng.random() < 0.5 else "- point"
              for _ in range(rng.integers(0, 4))]
    lines += ["a **bold** word" for _ in range(rng.integers(0, 4))]
    if rng.random() < 0.2:
        lines.append("```\n# not a header\n- not a list\n```")
    return "\n".join(lines)


def style_suite(folder: Path, *, seed: int) -> list[dict[str, Any]]:
    """80 pairs of two of four systems (the samples written); an output's quality q=N (which
    the scripted judge follows) rises with its system's index and, by chance, its length
    and its headers."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    samples, human = [], []
    for j in range(80):
        a, b = (int(x) for x in rng.choice(len(SYSTEMS), 2, replace=False))
        outputs = []
        for system in (a, b):
            words = int(rng.integers(0, 120))
            styled = _markdown(rng)
            q = int(np.clip(system // 2 + (words > 60) + styled.startswith("#")
                            + rng.integers(0, 3), 0, 5))
            outputs.append((f"q={q} " + "word " * words).strip() + "\n" + styled)
        key = {"item": f"p{j:02d}", "system_a": SYSTEMS[a], "system_b": SYSTEMS[b]}
        samples.append({**key, "input": "Say hi.", "output_a": outputs[0],
                        "output_b": outputs[1]})
        human.append({**key, "human.preference": str(rng.choice(["a", "b"]))})
    files = {}
    for name, data in (("samples.jsonl.gz", _gz(samples)), ("human.jsonl.gz", _gz(human))):
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {"name": folder.name, "title": "Styled pairs", "description": "synthetic",
            "kind": "pairwise", "criteria": ["preference"],
            "protocols": [{"name": "pref", "criterion": "preference", "level": "pair",
                           "statistics": ["accuracy"], "human": "human.preference",
                           "ties": "drop"}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}
    (folder / "suite.json").write_text(json.dumps(info), encoding="utf-8")
    return samples


def test_the_bench_card_shows_what_aggregate_computes(tmp_path: Path) -> None:
    samples = style_suite(tmp_path / "suites" / "spairs", seed=3)
    env = {**plugin_env(), "JB_PAIR_KEY": "not-a-secret",
           "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedJudge() as judge:
        spec = f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url}"
        args = [*plugin_args(), "bench", spec + SPEC_TAIL, "--suite", "spairs",
                "--suite-path", str(tmp_path / "suites"), "--bootstrap", "0", "--store",
                str(tmp_path / "runs.db")]
        proc = run_cli(*args, "--json", "--workdir", str(tmp_path / "work"), env=env)
        assert proc.returncode == 0, proc.stderr
        printed = {fmt_: run_cli(*args, "--format", fmt_, env=env)
                   for fmt_ in ("text", "markdown", "html")}
    (card,) = json.loads(proc.stdout)["cards"]
    [row] = card["style"]
    column = row["judge"]
    assert column.startswith("judge.pairwise:")
    # the verdicts as scored, the texts from the suite's samples (no lengths)
    [scored] = list((tmp_path / "work").rglob("pairs.csv"))
    verdicts = pd.read_csv(scored, dtype=str, keep_default_na=False)[
        ["item", "system_a", "system_b", column, f"{column}.ab", f"{column}.ba"]]
    texts = pd.DataFrame(samples).drop(columns="input")
    table = tmp_path / "texts.jsonl"
    verdicts.merge(texts, on=["item", "system_a", "system_b"], validate="one_to_one").to_json(
        table, orient="records", lines=True)
    agg = run_cli("aggregate", str(table), "-r", "bradley-terry", "--control",
                  "length,markdown", "--winner", column, "--json")
    assert agg.returncode == 0, agg.stderr
    [outcome] = json.loads(agg.stdout)
    expected = outcome["style_control"]
    assert expected["status"] == "ok" and row["status"] == "ok"
    assert {k: row[k] for k in expected} == expected  # every number, exactly
    covariates = ["length", "headers", "lists", "bold"]
    assert row["controls"] == ["length", "markdown"] and expected["covariates"] == covariates
    assert list(expected["coefficients"]) == covariates
    assert set(expected["systems"]) == set(SYSTEMS) and expected["comparisons"] > 0
    headers = expected["coefficients"]["headers"]
    assert headers["low"] > 0  # the judge prefers headers (q follows them): it shows
    shown = [f"{fmt(c['estimate'])} [{fmt(c['low'])}, {fmt(c['high'])}]"
             for s in expected["systems"].values() for c in (s["raw"], s["controlled"])]
    shown += [f"{fmt(c['estimate'])} [{fmt(c['low'])}, {fmt(c['high'])}]"
              for c in expected["coefficients"].values()]
    for fmt_, out in printed.items():
        assert out.returncode == 0, out.stderr
        assert "ankings with style controlled" in out.stdout, fmt_
        assert "controls: length, markdown;" in out.stdout, fmt_
        for cell in shown:
            wanted = {"html": html.escape(cell), "markdown": markdown_escape(cell)}.get(
                fmt_, cell)
            assert wanted in out.stdout, (fmt_, cell)


def test_a_pair_without_a_text_keeps_length_alone(tmp_path: Path) -> None:
    """The texts are added only where every pair has both, once, and each markdown feature
    varies over the pairs (else aggregate refuses to fit it); the scored cells are kept as
    written (an id like 007, a verdict 1, a probability 0.30000000000000004)."""
    from judgebench.services.pairwise_style import add_texts, controls_of

    written = ("item,system_a,system_b,length_a,length_b,j,human.p\n"
               "007,x,y,3,0,1,1.0\n"
               "8,y,x,2,4,0.30000000000000004,\n")
    table = tmp_path / "pairs.csv"
    rows: list[dict[str, str | None]] = [
        {"item": "007", "system_a": "x", "system_b": "y", "output_a": "# a\n", "output_b": ""},
        {"item": "8", "system_a": "y", "system_b": "x", "output_a": "**b**",
         "output_b": "- 1\r\n"}]
    plain = [{**r, "output_a": "text", "output_b": ""} for r in rows]
    samples = tmp_path / "samples.jsonl"
    refused = [([rows[0], {**rows[1], "output_b": None}], "has no text for the pair (8, y, x)"),
               ([rows[0], rows[1], rows[1]], "gives the pair (8, y, x) twice"),
               (plain, "arena-hard-auto's headers feature is the same on every pair of the "
                       "texts (most often: no output has any), so its coefficient cannot be "
                       "estimated")]
    for pair, why in [*refused, (rows, None)]:
        table.write_text(written, encoding="utf-8")
        samples.write_text("".join(json.dumps({**r, "system": f"s{k}"}) + "\n"
                                   for k, r in enumerate(pair)), encoding="utf-8")
        said = add_texts(table, samples, output=table)
        assert (said or "").removeprefix(str(samples) + " ") == (why or "")
        frame = pd.read_csv(table, dtype=str, keep_default_na=False)
        assert controls_of(list(frame.columns)) == (
            ("length",) if why else ("length", "markdown"))
        if why:
            assert table.read_text(encoding="utf-8") == written
            continue
        assert frame.drop(columns=["output_a", "output_b"]).to_csv(index=False) == written
        assert frame["output_a"].tolist() == ["# a\n", "**b**"]
        assert frame["output_b"].tolist() == ["", "- 1\r\n"]
        assert add_texts(table, samples, output=tmp_path / "again.csv") == "the table has texts"
        assert not (tmp_path / "again.csv").exists()
