"""`bench` on a pairwise suite shows each judge's Bradley-Terry ranking raw and with the
outputs' length controlled (the scored pairs.csv carries length_a and length_b), with the
length coefficient's interval: every number equals `aggregate -r bradley-terry --control
length --winner SPEC` on the scored table (--workdir keeps it; both commands run here), in
the card's JSON, and the text, Markdown and HTML cards print them. A synthetic suite of four
systems judged by the scripted judge through a real loopback server, lengths from 2 to
~600 characters."""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
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


def style_suite(folder: Path, *, seed: int) -> None:
    """80 pairs of two of four systems; an output's quality q=N (which the scripted judge
    follows) rises with its system's index and, by chance, its length."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    samples, human = [], []
    for j in range(80):
        a, b = (int(x) for x in rng.choice(len(SYSTEMS), 2, replace=False))
        outputs = []
        for system in (a, b):
            words = int(rng.integers(0, 120))
            q = int(np.clip(system // 2 + (words > 60) + rng.integers(0, 3), 0, 5))
            outputs.append(f"q={q} " + "word " * words)
        key = {"item": f"p{j:02d}", "system_a": SYSTEMS[a], "system_b": SYSTEMS[b]}
        samples.append({**key, "input": "Say hi.", "output_a": outputs[0].strip(),
                        "output_b": outputs[1].strip()})
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


def test_the_bench_card_shows_what_aggregate_computes(tmp_path: Path) -> None:
    style_suite(tmp_path / "suites" / "spairs", seed=3)
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
    [table] = list((tmp_path / "work").rglob("pairs.csv"))
    column = row["judge"]
    assert column.startswith("judge.pairwise:")
    agg = run_cli("aggregate", str(table), "-r", "bradley-terry", "--control", "length",
                  "--winner", column, "--json")
    assert agg.returncode == 0, agg.stderr
    [outcome] = json.loads(agg.stdout)
    expected = outcome["style_control"]
    assert expected["status"] == "ok" and row["status"] == "ok"
    assert {k: row[k] for k in expected} == expected  # every number, exactly
    assert row["controls"] == ["length"] and expected["covariates"] == ["length"]
    assert set(expected["systems"]) == set(SYSTEMS) and expected["comparisons"] > 0
    shown = [f"{fmt(c['estimate'])} [{fmt(c['low'])}, {fmt(c['high'])}]"
             for s in expected["systems"].values() for c in (s["raw"], s["controlled"])]
    length = expected["coefficients"]["length"]
    shown.append(f"{fmt(length['estimate'])} [{fmt(length['low'])}, {fmt(length['high'])}]")
    for fmt_, out in printed.items():
        assert out.returncode == 0, out.stderr
        assert "ankings with style controlled" in out.stdout, fmt_
        for cell in shown:
            wanted = {"html": html.escape(cell), "markdown": markdown_escape(cell)}.get(
                fmt_, cell)
            assert wanted in out.stdout, (fmt_, cell)
