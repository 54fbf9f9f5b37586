"""judge.dag, a compound judge of five nodes (tests/dag_support.py), against a real loopback
OpenAI-compatible judge: the file checked before any call (errors name the file and the
node), every sample's path and score equal to the graph walked by hand, every node's answer in
the store with its signature, and a `judgebench score` process killed mid-run (at an event: the
first call of the second node) then resumed, paying no call twice."""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, column, run_cli, summeval_records, write_jsonl
from dag_support import DAG, draw_tags, expected, reply, tagged, tags_of, write_dag
from judgebench_judges.dag_file import read_dag
from scripted_judge import ScriptedJudge

from judgebench.errors import InputError

KEY_ENV = {"JB_DAG_KEY": "sk-dag-test"}
PYTHONPATH = os.pathsep.join([str(REPO), str(REPO / "plugins")])


def dag_spec(url: str) -> str:
    return (f"judge.dag:path=dag.toml,backend=openai_compat,model=judge,api_base={url},"
            "api_key_env=JB_DAG_KEY")


def tagged_samples(tmp_path: Path, n: int, seed: int) -> tuple[Path, list[dict[str, int]]]:
    rng = random.Random(seed)
    records, tags = [], []
    for record in summeval_records(n):
        drawn = draw_tags(rng)
        tags.append(drawn)
        records.append({**record, "output": tagged(record["output"], drawn)})
    return write_jsonl(tmp_path / "samples.jsonl", records), tags


# -- the file, checked before any call --------------------------------------------------------
BAD = [
    ("cycle", DAG.replace('{ when = "else", goto = "check" }',
                          '{ when = "else", goto = "on-topic" }'),
     "cycle: on-topic -> cites-source -> quality -> on-topic", None),
    ("missing node", DAG.replace('goto = "check"', 'goto = "chek"'),
     "node 'quality' goes to 'chek', which is no node", "nodes.quality.routes[0].goto"),
    ("no else", DAG.replace('{ when = "else", score = 2 }', '{ when = "< 1", score = 2 }'),
     "node 'cites-source': the last route must be when = \"else\"", "nodes.cites-source.routes"),
    ("unreached", DAG + '\n[nodes.orphan]\njudge = "judge.rubric"\n',
     "node 'orphan' is never reached", "nodes.orphan"),
    ("sees off path", DAG.replace('sees = "quality"', 'sees = "second-opinion"'),
     "node 'check' sees 'second-opinion', which is not on every path",
     "nodes.check.sees"),
    ("score off path", DAG.replace('score = "quality"', 'score = "second-opinion"'),
     "scores the value of 'second-opinion', which is not on every path",
     "nodes.check.routes[0].score"),
    ("bad condition", DAG.replace('when = "== 1"', 'when = "is 1"'),
     "node 'cites-source': when must be 'OP NUMBER'", "nodes.cites-source.routes[0].when"),
    ("goto and score", DAG.replace('{ when = "else", score = 1 }',
                                   '{ when = "else", score = 1, goto = "quality" }'),
     "exactly one of goto", "nodes.on-topic.routes[1]"),
    ("one member", DAG.replace(',\n           "judge.rubric:criterion=fluency,'
                               'definition=QUESTION=flu how fluent?"', ''),
     "node 'quality': an ensemble's members are a list of two or more", "nodes.quality.members"),
    ("bad combine", DAG.replace('combine = "mean"', 'combine = "median"'),
     "combine must be one of vote, mean, max", "nodes.quality.combine"),
    ("no judge", DAG.replace('judge = "judge.rubric"\ncriterion = "overall"',
                             'criterion = "overall"'),
     "node 'second-opinion' has no judge", "nodes.second-opinion.judge"),
    ("unknown start", 'start = "nowhere"\n' + DAG.split("\n", 1)[1],
     "start names no node: 'nowhere'", "start"),
    ("unknown key", "judges = 1\n" + DAG, "unknown top-level key(s) judges", "judges"),
    ("defaults not a table", DAG.replace('[defaults]\nprotocol = "text"', 'defaults = 3'),
     "must be a table of judge options", "defaults"),
    ("no nodes", 'start = "a"\n', "no nodes", "nodes"),
    ("node not a table", DAG + "\n[nodes]\nlonely = 3\n", "node 'lonely' must be a table",
     "nodes.lonely"),
    ("bad kind", DAG.replace('kind = "ensemble"', 'kind = "debate"'),
     "kind must be judge or ensemble, got 'debate'", "nodes.quality.kind"),
    ("human not a name", DAG.replace('human = "human.cites"', "human = 3"),
     "node 'cites-source': human must be a column name", "nodes.cites-source.human"),
    ("sees not names", DAG.replace('sees = "quality"', "sees = [1]"),
     "sees must be a node name or a list of them", "nodes.check.sees"),
    ("sees itself", DAG.replace('sees = "quality"', 'sees = "check"'),
     "node 'check' sees 'check', which is not on every path", "nodes.check.sees"),
    ("sees no node", DAG.replace('sees = "quality"', 'sees = "nobody"'),
     "node 'check' sees 'nobody', which is no node", "nodes.check.sees"),
    ("route not a table", DAG.replace('routes = [{ when = "else", goto = "check" }]',
                                      'routes = ["check"]'),
     "a route is a table", "nodes.quality.routes[0]"),
    ("routes not a list", DAG.replace('routes = [{ when = "else", goto = "check" }]',
                                      'routes = "check"'),
     "routes must be a list of tables", "nodes.quality.routes"),
    ("unknown route key", DAG.replace('{ when = "else", goto = "check" }',
                                      '{ when = "else", go = "check" }'),
     "unknown route key(s) go", "nodes.quality.routes[0]"),
    ("infinite when", DAG.replace('when = "== 1"', 'when = "> 1e999"'),
     "not finite", "nodes.cites-source.routes[0].when"),
    ("score a boolean", DAG.replace('{ when = "else", score = 2 }',
                                    '{ when = "else", score = true }'),
     "score must be a finite number or a node's name", "nodes.cites-source.routes[1].score"),
    ("goto itself", DAG.replace('{ when = "else", goto = "check" }',
                                '{ when = "else", goto = "quality" }'),
     "node 'quality' goes to itself", "nodes.quality.routes[0].goto"),
    ("else before the end", DAG.replace('{ when = "== 1", goto = "quality" }',
                                        '{ when = "else", goto = "quality" }'),
     "the routes after an 'else' are never taken", "nodes.cites-source.routes[1]"),
    ("judge and members", DAG.replace('kind = "ensemble"\n', 'judge = "judge.rubric"\n'),
     "node 'quality': an ensemble has members, not judge", "nodes.quality.judge"),
    ("a judge with members", DAG.replace('kind = "ensemble"\n',
                                         'kind = "judge"\njudge = "judge.rubric"\n'),
     "node 'quality': members is an ensemble's key", "nodes.quality.members"),
    ("not toml", "[nodes\n", "not valid TOML", None),
]


@pytest.mark.parametrize(("text", "message", "field"), [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_a_bad_file_names_the_file_the_node_and_the_field(tmp_path: Path, text: str,
                                                          message: str | None,
                                                          field: str | None) -> None:
    path = write_dag(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_dag(path)
    assert message is None or message in str(caught.value)
    assert caught.value.path == str(path)
    if field is not None:
        assert caught.value.field == field


def test_the_good_file_reads_and_json_reads_the_same(tmp_path: Path) -> None:
    dag = read_dag(write_dag(tmp_path))
    assert list(dag.nodes) == ["on-topic", "cites-source", "quality", "check",
                               "second-opinion"]
    assert dag.always_before["second-opinion"] == {"on-topic", "cites-source", "quality",
                                                   "check", "second-opinion"}
    assert dag.humans() == {"on-topic": "human.on_topic", "cites-source": "human.cites"}
    import tomllib

    as_json = tmp_path / "dag.json"
    as_json.write_text(json.dumps(tomllib.loads(DAG)))
    assert read_dag(as_json).structure() == dag.structure()


def test_a_bad_node_stops_the_run_before_any_call_exit_2(tmp_path: Path) -> None:
    data, _ = tagged_samples(tmp_path, 2, seed=1)
    write_dag(tmp_path, DAG.replace('criterion = "overall"', 'criterion = "overall"\nmin = 7'))
    with ScriptedJudge(reply=reply) as server:
        proc = run_cli("score", str(data), "-m", dag_spec(server.url), "-o", "out.csv",
                       "--store", "s.db", cwd=tmp_path,
                       env={**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert server.calls == 0
    assert proc.returncode == 2, proc.stderr
    assert "dag.toml" in proc.stderr and "node 'second-opinion'" in proc.stderr
    assert "min must be below max" in proc.stderr
    assert not (tmp_path / "out.csv").exists()


# -- a run ------------------------------------------------------------------------------------
def test_five_nodes_on_a_loopback_judge_follow_the_graph_and_store_every_answer(
        tmp_path: Path) -> None:
    data, tags = tagged_samples(tmp_path, 24, seed=7)
    write_dag(tmp_path)
    env = {**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedJudge(reply=reply) as server:
        spec = dag_spec(server.url)
        proc = run_cli("score", str(data), "-m", spec, "-o", "out.csv", "--store", "s.db",
                       cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        walked = [expected(t) for t in tags]
        assert server.calls == sum(calls for _, _, calls in walked)
        checks = [p[-1]["content"] for p in server.prompts if "QUESTION=ok" in p[-1]["content"]]
        assert len(checks) == sum("check" in path for path, _, _ in walked)
        assert all("[The verdict of judge 'quality': " in c for c in checks)
        # the whole path of every sample was a run of all five; the second run pays nothing
        again = run_cli("score", str(data), "-m", spec, "-o", "again.csv", "--store", "s2.db",
                        cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert server.calls == sum(calls for _, _, calls in walked)
    table = pd.read_csv(tmp_path / "out.csv")
    assert table[column(spec)].tolist() == [value for _, value, _ in walked]
    assert pd.read_csv(tmp_path / "again.csv")[column(spec)].tolist() == \
        table[column(spec)].tolist()
    assert {path[-1] for path, _, _ in walked} == {"on-topic", "cites-source", "check",
                                                   "second-opinion"}

    with sqlite3.connect(tmp_path / "s.db") as db:
        rows = db.execute("SELECT value, extra, signature, request_keys FROM scores "
                          "ORDER BY rowid").fetchall()
    assert len(rows) == 24
    for (value, extra, signature, keys), (path, want, calls), drawn in zip(
            rows, walked, tags, strict=True):
        stored = json.loads(extra)
        assert value == want and stored["path"] == path
        assert [n["node"] for n in stored["nodes"]] == path
        assert signature.startswith("judge.dag@1|nodes:5:")
        assert len(json.loads(keys)) == calls  # every call of the path is linked
        for node in stored["nodes"]:
            assert node["status"] == "ok" and node["value"] is not None
            assert "model:judge" in node["signature"]
            assert "template:rubric:" in node["signature"]
        if "quality" in path:
            quality = stored["nodes"][path.index("quality")]
            assert [m["value"] for m in quality["members"]] == [drawn["coh"], drawn["flu"]]
            assert quality["value"] == (drawn["coh"] + drawn["flu"]) / 2
        assert stored["nodes"][0]["human"] == "human.on_topic"

    longest = max(range(len(walked)), key=lambda i: len(walked[i][0]))
    item = pd.read_csv(tmp_path / "out.csv")["item"][longest]
    logs = run_cli("logs", "--store", "s.db", "--item", str(item), cwd=tmp_path, env=env)
    assert logs.returncode == 0, logs.stderr
    path, value, calls = walked[longest]
    assert f"  path: {' -> '.join(path)}\n" in logs.stdout
    assert "    on-topic: 1  (people: human.on_topic)\n" in logs.stdout
    assert f"    {path[-1]}: {value:g}\n" in logs.stdout
    assert f"call {calls} of {calls} " in logs.stdout and '"nodes"' not in logs.stdout


def test_the_signature_names_the_nodes_judges_and_not_the_file_name(tmp_path: Path) -> None:
    from judgebench.plugins import build_host

    def signature(folder: Path, text: str) -> str:
        folder.mkdir()
        path = write_dag(folder, text)
        metric = build_host().metric("judge.dag").build(
            path=str(path), backend="openai_compat", model="judge", api_base=server.url)
        return str(metric.signature())

    with ScriptedJudge(reply=reply) as server:
        base = signature(tmp_path / "a", DAG)
        assert signature(tmp_path / "b", DAG) == base
        changed = [DAG.replace("how fluent?", "how fluent is it?"),
                   DAG.replace('when = "== 1"', 'when = ">= 1"'),
                   DAG.replace('combine = "mean"', 'combine = "max"'),
                   DAG.replace('sees = "quality"\n', "")]
        assert all(signature(tmp_path / f"c{i}", text) != base
                   for i, text in enumerate(changed))
        assert server.calls == 0


def test_a_plugin_declares_the_same_judge_in_python(tmp_path: Path) -> None:
    data, tags = tagged_samples(tmp_path, 6, seed=3)
    env = {**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    plugin = str(Path(__file__).parent / "dag_plugin.py")
    with ScriptedJudge(reply=reply) as server:
        spec = (f"judge.dag_example:backend=openai_compat,model=judge,api_base={server.url},"
                "api_key_env=JB_DAG_KEY")
        proc = run_cli("-p", plugin, "score", str(data), "-m", spec, "-o", "out.csv",
                       "--store", "s.db", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        with_path = run_cli("-p", plugin, "score", str(data), "-m", f"{spec},path=x.toml",
                            "-o", "bad.csv", cwd=tmp_path, env=env)
        no_path = run_cli("score", str(data), "-m", "judge.dag:backend=openai_compat",
                          "-o", "bad.csv", cwd=tmp_path, env=env)
    assert pd.read_csv(tmp_path / "out.csv")[column(spec)].tolist() == [
        expected(t)[1] for t in tags]
    assert with_path.returncode == 2 and "declares its graph" in with_path.stderr
    assert no_path.returncode == 2 and "give path=FILE" in no_path.stderr


def test_a_node_that_is_a_compound_judge_or_no_judge_is_refused(tmp_path: Path) -> None:
    from judgebench.plugins import build_host

    for judge, message in (("judge.dag:path=dag.toml", "'judge.dag' is a compound judge"),
                           ("lexical.bleu", "'lexical.bleu' is not a judge metric"),
                           ("judge.nothing", "unknown metric 'judge.nothing'")):
        path = write_dag(tmp_path, DAG.replace('judge = "judge.rubric"\ncriterion = "overall"',
                                               f'judge = "{judge}"\ncriterion = "overall"'))
        with pytest.raises(InputError) as caught:
            build_host().metric("judge.dag").build(path=str(path), backend="openai_compat",
                                                   model="judge", api_base="http://127.0.0.1:9")
        assert message in str(caught.value)
        assert caught.value.path == str(path)
        assert caught.value.field == "nodes.second-opinion"


# -- killed and resumed -----------------------------------------------------------------------
class Gate:
    """The scripted judge, answering the first `limit` calls and holding the next until
    released: `reached` is set when call limit + 1 arrives (the run cannot go further)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        self.arrived = 0
        self.answered: list[str] = []
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, system: str, user: str) -> str:
        with self.lock:
            self.arrived += 1
            held = self.limit is not None and self.arrived > self.limit
        if held:
            self.reached.set()
            self.release.wait(timeout=300)
            return "Feedback: the client is gone."
        with self.lock:
            self.answered.append(user)
        return reply(system, user)


def test_a_killed_run_resumes_without_paying_any_call_twice(tmp_path: Path) -> None:
    data, tags = tagged_samples(tmp_path, 16, seed=11)
    write_dag(tmp_path)
    walked = [expected(t) for t in tags]
    # the first run's server answers every sample's first node, then holds what comes next
    # (the second node's first call is the event the run is killed at) until the test ends:
    # a request the killed process sent but the server read late is never answered. The
    # resumed run asks the same server (the judge cache's key names the endpoint) with
    # another key (in no cache key), which tells the server its requests apart.
    gate = Gate(limit=len(tags))
    resumed = Gate(limit=10**9)
    env = {**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    resumed_key = KEY_ENV["JB_DAG_KEY"] + "-resumed"

    def route(system: str, user: str, key: str) -> str:
        return (resumed if key == resumed_key else gate)(system, user)

    route.by_key = True  # type: ignore[attr-defined]
    with ScriptedJudge(reply=route) as server:
        try:
            spec = dag_spec(server.url)
            args = ["score", str(data), "-o", "out.csv", "--store", "s.db"]
            child = subprocess.Popen(
                [sys.executable, "-m", "judgebench.cli", *args, "-m", spec], cwd=tmp_path,
                env={**os.environ, **env, "PYTHONPATH": PYTHONPATH},
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                assert gate.reached.wait(timeout=300), (
                    child.stderr.read() if child.stderr else "")
                child.kill()
                child.wait()
            finally:
                if child.stderr is not None:
                    child.stderr.close()
            assert child.returncode != 0
            first = list(gate.answered)
            assert len(first) == len(tags)
            proc = run_cli(*args, "-m", dag_spec(server.url), "--resume", cwd=tmp_path,
                           env={**env, "JB_DAG_KEY": resumed_key})
            assert proc.returncode == 0, proc.stderr
        finally:
            gate.release.set()
    assert gate.answered == first  # nothing the killed run sent was answered later
    again = set(first) & set(resumed.answered)
    assert not again, [re.findall(r"QUESTION=\w+", u) for u in again]  # none paid twice
    assert len(set(resumed.answered)) == len(resumed.answered)
    assert len(first) + len(resumed.answered) == sum(calls for _, _, calls in walked)
    assert pd.read_csv(tmp_path / "out.csv")[column(spec)].tolist() == [
        value for _, value, _ in walked]


# -- ensembles and failures -------------------------------------------------------------------
ENSEMBLE = """\
[defaults]
protocol = "text"

[nodes.jury]
members = ["judge.rubric:criterion=a,definition=QUESTION=coh",
           "judge.rubric:criterion=b,definition=QUESTION=flu",
           "judge.rubric:criterion=c,definition=QUESTION=overall"]
combine = "COMBINE"
"""


def _build(tmp_path: Path, text: str, url: str) -> Any:
    from judgebench.plugins import build_host

    tmp_path.mkdir(exist_ok=True)
    path = write_dag(tmp_path, text)
    return build_host().metric("judge.dag").build(path=str(path), backend="openai_compat",
                                                  model="judge", api_base=url,
                                                  api_key_env="JB_DAG_KEY")


@pytest.mark.parametrize("combine", ["vote", "mean", "max"])
def test_an_ensemble_combines_its_members_as_statistics_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, combine: str) -> None:
    import statistics

    from judgebench.models import Sample

    monkeypatch.setenv("JB_DAG_KEY", KEY_ENV["JB_DAG_KEY"])
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    rng = random.Random(13)
    tags = [draw_tags(rng) for _ in range(30)]
    samples = [Sample(item=f"i{k}", system="s", input="article", output=tagged("text", t))
               for k, t in enumerate(tags)]
    with ScriptedJudge(reply=reply) as server:
        outcomes = _build(tmp_path, ENSEMBLE.replace("COMBINE", combine), server.url
                          ).score(samples)
    for outcome, t in zip(outcomes, tags, strict=True):
        answers = [t["coh"], t["flu"], t["overall"]]
        if combine == "vote":
            want = statistics.fmean(statistics.multimode(answers))
        else:
            want = statistics.fmean(answers) if combine == "mean" else max(answers)
        assert outcome.value == pytest.approx(want, rel=1e-12)
        [node] = outcome.extra["nodes"]
        assert [m["value"] for m in node["members"]] == answers
    assert any(len(set(t[k] for k in ("coh", "flu", "overall"))) == 3 for t in tags)  # ties


def test_a_failed_node_or_member_fails_the_score_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judgebench.models import Sample, Status

    monkeypatch.setenv("JB_DAG_KEY", KEY_ENV["JB_DAG_KEY"])
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))

    def garbled(system: str, user: str) -> str:
        if "QUESTION=cites" in user or "QUESTION=flu" in user:
            return "I would rather not say."
        return reply(system, user)

    tags = {"on": 1, "cites": 1, "coh": 4, "flu": 2, "ok": 1, "overall": 3}
    sample = Sample(item="i", system="s", input="article", output=tagged("text", tags))
    with ScriptedJudge(reply=garbled) as server:
        [outcome] = _build(tmp_path / "dag", DAG, server.url).score([sample])
        [jury] = _build(tmp_path / "jury", ENSEMBLE.replace("COMBINE", "mean"),
                        server.url).score([sample])
    assert outcome.status == Status.PARSE_ERROR and outcome.value is None
    assert outcome.reason.startswith("node 'cites-source': ")
    assert outcome.extra["path"] == ["on-topic", "cites-source"]
    assert [n["status"] for n in outcome.extra["nodes"]] == ["ok", "parse_error"]
    assert jury.status == Status.PARSE_ERROR and jury.reason.startswith("node 'jury': member ")
    assert "QUESTION=flu" in jury.reason or "criterion:b" in jury.reason


DEBATE = """\
[defaults]
protocol = "text"

[nodes.pro]
judge = "judge.rubric"
criterion = "for"
definition = "QUESTION=coh argue for it"
routes = [{ when = "else", goto = "con" }]

[nodes.con]
judge = "judge.rubric"
criterion = "against"
definition = "QUESTION=flu argue against it"
routes = [{ when = "else", goto = "referee" }]

[nodes.referee]
judge = "judge.rubric"
criterion = "referee"
definition = "QUESTION=overall weigh both verdicts"
sees = ["pro", "con"]
"""


def test_a_debate_s_third_judge_sees_both_verdicts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judgebench.models import Sample

    monkeypatch.setenv("JB_DAG_KEY", KEY_ENV["JB_DAG_KEY"])
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    rng = random.Random(17)
    tags = [draw_tags(rng) for _ in range(10)]
    samples = [Sample(item=f"i{k}", system="s", input="article", output=tagged(f"text {k}", t))
               for k, t in enumerate(tags)]

    def referee(system: str, user: str) -> str:
        if "QUESTION=overall" not in user:
            return reply(system, user)
        shown = re.findall(r"\[The verdict of judge '(\w+)': (\d)\. Its reasons: read\.\]",
                           user)
        return f"Feedback: weighed. [RESULT] {len(shown)}"

    with ScriptedJudge(reply=referee) as server:
        outcomes = _build(tmp_path, DEBATE, server.url).score(samples)
        prompts = [p[-1]["content"] for p in server.prompts if "QUESTION=overall" in
                   p[-1]["content"]]
    assert [o.value for o in outcomes] == [2.0] * len(samples)
    for outcome, t in zip(outcomes, tags, strict=True):
        assert outcome.extra["path"] == ["pro", "con", "referee"]
        assert [n["value"] for n in outcome.extra["nodes"][:2]] == [t["coh"], t["flu"]]
    assert len(prompts) == len(samples)
    for prompt in prompts:  # each referee prompt shows its own sample's two verdicts
        t = tags_of(prompt)
        assert f"[The verdict of judge 'pro': {t['coh']}. Its reasons: read.]" in prompt
        assert f"[The verdict of judge 'con': {t['flu']}. Its reasons: read.]" in prompt


def test_each_draw_of_repeats_asks_every_node_anew(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judgebench.models import Sample

    monkeypatch.setenv("JB_DAG_KEY", KEY_ENV["JB_DAG_KEY"])
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    rng = random.Random(19)
    tags = [draw_tags(rng) for _ in range(6)]
    samples = [Sample(item=f"i{k}", system="s", input="article", output=tagged(f"t {k}", t))
               for k, t in enumerate(tags)]
    calls = sum(expected(t)[2] for t in tags)
    with ScriptedJudge(reply=reply) as server:
        first = _build(tmp_path / "a", DAG, server.url)
        first.score(samples)
        assert server.calls == calls
        second = _build(tmp_path / "b", DAG, server.url)
        second.repeat = 1
        again = second.score(samples)
        assert server.calls == 2 * calls  # draw 1 is not draw 0's cached answers
        second.score(samples)
        assert server.calls == 2 * calls  # draw 1 asked twice: its own cache
    assert all(j.repeat == 1 for judges in second.judges.values() for j in judges)
    assert [o.value for o in again] == [expected(t)[1] for t in tags]
