"""A third party's bias probe: registered through `register_probes` beside the built-in
ones, checked when it registers, and run by `audit --bias-probe NAME --fail-on
bias:NAME>X` on a scripted loopback judge like the built-in probes."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli
from scripted_judge import ScriptedJudge

from judgebench.errors import PluginError
from judgebench.plugins import build_host

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HEADER = '''
    from judgebench.plugin_api import BiasProbe, hookimpl
'''
BROKEN = {
    "modes": ('''
        class Odd(BiasProbe):
            name = "odd"
            description = "nothing"
            modes = ("listwise",)

        @hookimpl
        def register_probes(register):
            register(Odd)
    ''', r"registers bias probe 'odd' with modes=\('listwise',\); one or more of pointwise, "
         r"pairwise"),
    "threshold": ('''
        class Odd(BiasProbe):
            name = "odd"
            description = "nothing"
            threshold = 1.5

        @hookimpl
        def register_probes(register):
            register(Odd)
    ''', r"registers bias probe 'odd' with threshold=1\.5; a shift in \[0, 1\)"),
    "expect": ('''
        class Odd(BiasProbe):
            name = "odd"
            description = "nothing"
            expect = "higher"

        @hookimpl
        def register_probes(register):
            register(Odd)
    ''', r"registers bias probe 'odd' with expect='higher'; one of same, lower"),
    "clash": ('''
        class Mine(BiasProbe):
            name = "authority"
            description = "mine"

        @hookimpl
        def register_probes(register):
            register(Mine)
    ''', r"registers 'authority', already registered by plugin 'audit'"),
}

SHOUT = '''
    class Shout(BiasProbe):
        """shout: the answer in capitals."""

        name = "shout"
        description = "the answer in capital letters"
        modes = ("pointwise",)
        threshold = 0.3

        def edit(self, text, rng):
            return text.upper() if text != text.upper() else None

    @hookimpl
    def register_probes(register):
        register(Shout)
'''


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_a_bias_probe_that_breaks_the_contract_is_an_error(tmp_path: Path, rule: str) -> None:
    source, message = BROKEN[rule]
    plugin = tmp_path / f"broken_bias_{rule}.py"
    plugin.write_text(textwrap.dedent(HEADER) + textwrap.dedent(source), encoding="utf-8")
    with pytest.raises(PluginError, match=f"plugin '{re.escape(str(plugin))}' {message}"):
        build_host([str(plugin)])


def shouting_judge(system: str, user: str) -> str:
    """A rubric judge that gives 5 to an answer in capitals and 2 to anything else."""
    found = re.search(r"<response>\n(.*?)\n</response>", user, re.DOTALL)
    text = found.group(1) if found else ""
    return f"Feedback: read. [RESULT] {5 if text == text.upper() else 2}"


def test_a_third_party_bias_probe_runs_and_gates_like_a_built_in_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    plugin = tmp_path / "shout_probe.py"
    plugin.write_text(textwrap.dedent(HEADER) + textwrap.dedent(SHOUT), encoding="utf-8")
    assert build_host([str(plugin)]).bias_probes()["shout"].plugin == str(plugin)
    with ScriptedJudge(reply=shouting_judge) as server:
        spec = f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},protocol=text"
        proc = run_cli("-p", str(plugin), "audit", str(EXAMPLES / "summeval-scores.csv"),
                       "--human", "human.coherence", "--samples",
                       str(EXAMPLES / "summeval-sample.jsonl"), "--level", "segment",
                       "--grouping", "none", "--bootstrap", "0", "--resamples", "50",
                       "--sentinel", "sentinel.random", "--judge", spec, "--bias-pairs", "16",
                       "--bias-probe", "shout", "--fail-on", "bias:shout>0.5", "--json")
    assert proc.returncode == 4, proc.stderr
    [row] = [r for r in json.loads(proc.stdout) if r["type"] == "bias"]
    # 16 moves of +1: the Clopper-Pearson bound puts the interval's low end at 0.59 > 0.5
    assert (row["probe"], row["value"], row["n"]) == ("shout", 1.0, 16)
    assert row["extra"]["threshold"] == 0.5 and row["extra"]["verdict"] == "biased"
    assert "FAIL judge.rubric:" in proc.stderr and "shout moves it by +1.000" in proc.stderr
