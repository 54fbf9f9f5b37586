"""There is no process-wide plugin host: two hosts built with different local plugins, used
alternately in one process, each resolve metrics, backends, a judge panel's members and
commands in their own registry; `make_cli(host)` is a group of that host's own, and
`judgebench.cli.main` changes nothing at module level."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import run_cli, write_jsonl

import judgebench.cli as cli_module
from judgebench import plugins
from judgebench.backends import Request
from judgebench.engine.store import Store
from judgebench.errors import PluginError
from judgebench.models import Outcome, Sample
from judgebench.plugins import PluginHost, build_host
from judgebench.spec import parse_spec

# One plugin, written twice with a different answer: the same metric name, the same backend
# name and a command of its own, so a lookup in the wrong host gives the wrong number.
PLUGIN = '''
import click

from judgebench.plugin_api import Backend, Metric, MetricInfo, Response, hookimpl

ANSWER = {answer}


class Which(Metric):
    info = MetricInfo(name="local.which", kind="reference", requires=("output",))

    def score(self, samples):
        return [float(ANSWER) for _ in samples]


class Fixed(Backend):
    name = "fixed"

    def generate_sync(self, requests):
        return [Response(text=f"ok [RESULT] {{ANSWER}}", tokens_in=1, tokens_out=1,
                         cost_usd=0.0) for _ in requests]


@hookimpl
def register_metrics(register):
    register(Which)


@hookimpl
def register_backends(register):
    register("fixed", Fixed)


@hookimpl
def register_commands(cli):
    @cli.command("only-{answer}")
    def only():
        """A command of this plugin alone."""
        click.echo(f"answer {{ANSWER}}")
'''

QA = Sample(item="q", system="s", input="What is 2+2?", output="4", reference="four")


def _plugin(folder: Path, name: str, answer: int) -> Path:
    path = folder / f"{name}.py"
    path.write_text(PLUGIN.format(answer=answer), encoding="utf-8")
    return path


@pytest.fixture
def two_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PluginHost, PluginHost]:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return (build_host([str(_plugin(tmp_path, "plugin_two", 2))]),
            build_host([str(_plugin(tmp_path, "plugin_four", 4))]))


def _panel_value(host: PluginHost) -> float | None:
    panel = host.metric("judge.panel").build(judge="judge.rubric", models="m1;m2",
                                             backends="fixed", protocol="text", cache=False)
    assert all(member.host is host for member in panel.members)  # type: ignore[attr-defined]
    outcome = panel.score([QA])[0]
    assert isinstance(outcome, Outcome)
    return outcome.value


def test_two_hosts_used_alternately_resolve_each_in_its_own(
        two_hosts: tuple[PluginHost, PluginHost], tmp_path: Path) -> None:
    from judgebench.engine import runner

    two, four = two_hosts
    for _ in range(2):  # alternately, twice: nothing one host did is seen by the other
        for host, answer in ((two, 2.0), (four, 4.0)):
            metric = host.metric("local.which").build()
            assert metric.host is host and metric.score([QA]) == [answer]
            reply = host.backend("fixed", model="m").generate(
                [Request.chat(("user", "hello"), max_tokens=8)])[0].text
            assert reply == f"ok [RESULT] {int(answer)}"
            assert _panel_value(host) == answer
            with Store(tmp_path / f"{int(answer)}.db") as store:
                table = runner.run([QA], [parse_spec("local.which")], store=store,
                                   host=host).table
            assert table["local.which"].tolist() == [answer]


def test_a_panel_built_by_one_host_never_sees_the_others_backend(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with_fixed = build_host([str(_plugin(tmp_path, "plugin_three", 3))])
    without = build_host()
    assert _panel_value(with_fixed) == 3.0
    panel = without.metric("judge.panel").build(judge="judge.rubric", models="m1",
                                                backends="fixed", protocol="text", cache=False)
    from judgebench.errors import InputError

    with pytest.raises(InputError, match="unknown backend 'fixed'"):
        panel.score([QA])
    assert _panel_value(with_fixed) == 3.0  # and the first is as it was


def test_make_cli_has_its_hosts_commands_only(two_hosts: tuple[PluginHost, PluginHost]) -> None:
    two, four = two_hosts
    first, second = cli_module.make_cli(two), cli_module.make_cli(four)
    with click.Context(first) as ctx:
        names = first.list_commands(ctx)
    assert "only-2" in names and "only-4" not in names and "score" in names
    with click.Context(second) as ctx:
        assert "only-4" in second.list_commands(ctx)
        assert "only-2" not in second.list_commands(ctx)
    runner = CliRunner()
    assert runner.invoke(first, ["only-2"]).output == "answer 2\n"
    assert runner.invoke(second, ["only-4"]).output == "answer 4\n"
    assert runner.invoke(first, ["only-4"]).exit_code == 2
    assert "only-2" not in cli_module.cli.commands and "only-4" not in cli_module.cli.commands


def test_each_group_runs_its_commands_with_its_host(two_hosts: tuple[PluginHost, PluginHost],
                                                    tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [QA.model_dump(exclude_none=True)])
    runner = CliRunner()
    for host, answer in (*zip(two_hosts, ("2.0", "4.0"), strict=True),) * 2:
        out = tmp_path / f"{answer}.csv"
        result = runner.invoke(cli_module.make_cli(host), [
            "score", str(data), "-m", "local.which", "--store", str(tmp_path / "s.db"),
            "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert out.read_text(encoding="utf-8").splitlines()[1].endswith(f",{answer}")


def _module_state() -> dict[str, object]:
    group = cli_module.cli
    return {
        "names": {name: id(value) for name, value in vars(cli_module).items()},
        "commands": dict(group.commands),
        "params": list(group.params),
        "callback": group.callback,
        "plugins module": {name: id(value) for name, value in vars(plugins).items()},
    }


def test_main_changes_nothing_at_module_level(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "plugin_five", 5)
    data = write_jsonl(tmp_path / "in.jsonl", [QA.model_dump(exclude_none=True)])
    before = _module_state()
    assert run_cli("-p", str(plugin), "only-5").stdout == "answer 5\n"
    scored = run_cli("-p", str(plugin), "score", str(data), "-m", "local.which", "--store",
                     str(tmp_path / "s.db"), "-o", str(tmp_path / "out.csv"))
    assert scored.returncode == 0, scored.stderr
    assert run_cli("metrics").returncode == 0
    assert run_cli("meta-eval", "--help").returncode == 0
    assert _module_state() == before
    assert not any(isinstance(v, PluginHost) for v in vars(plugins).values())
    assert not any(isinstance(v, PluginHost) for v in vars(cli_module).values())
    gone = run_cli("only-5")  # the plugin's command was its call's group's alone
    assert gone.returncode == 2 and "No such command 'only-5'" in gone.stderr


def test_a_metric_built_directly_has_no_host_until_given_one() -> None:
    entry = build_host().metric("lexical.length")
    direct = entry.factory()
    with pytest.raises(PluginError, match=r"metric 'lexical.length' has no plugin host: "
                       r"build it through one .*metric.host = judgebench.plugins.build_host"):
        _ = direct.host
    given = build_host()
    direct.host = given
    assert direct.host is given
    assert entry.build().host is entry.host


def test_the_group_text_is_the_same_for_every_host(
        two_hosts: tuple[PluginHost, PluginHost]) -> None:
    runner = CliRunner()
    plain = runner.invoke(cli_module.cli, ["--help"]).output
    with_two = runner.invoke(cli_module.make_cli(two_hosts[0]), ["--help"]).output
    assert "only-2" in with_two
    assert [line for line in with_two.splitlines() if "only-2" not in line] == (
        plain.splitlines())


POOLING_PLUGIN = '''
from judgebench.plugin_api import Backend, hookimpl


class PoolLocal(Backend):
    """A pooling backend: each text's length, and 1."""

    name = "pool_local"

    def __init__(self, model, revision=None, runner=None, **engine):
        super().__init__(model, revision)
        self.runner = runner

    def generate_sync(self, requests):
        raise NotImplementedError

    def pool(self, task, inputs):
        return [[float(len(t)), 1.0] for t in inputs]

    def identity(self):
        return {"backend": "pool_local", "model": self.model, "runner": str(self.runner)}


@hookimpl
def register_backends(register):
    register("pool_local", PoolLocal)
'''


def test_a_pooling_metric_finds_its_backend_in_the_host_that_built_it(tmp_path: Path) -> None:
    from judgebench.errors import InputError

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    (model / "model.safetensors").write_bytes(b"weights")
    plugin = tmp_path / "pool_plugin.py"
    plugin.write_text(POOLING_PLUGIN, encoding="utf-8")
    options = {"backend": "pool_local", "model": str(model)}
    host = build_host([str(plugin)])
    metric = host.metric("neural.embedding-cosine").build(**options)
    sample = Sample(item="1", system="s", output="abc", reference="abcd")
    assert metric.score([sample]) == [pytest.approx((12 + 1) / (10**0.5 * 17**0.5))]
    assert "runner:pooling" in str(metric.signature())  # backend_accepts asked that host too
    elsewhere = build_host().metric("neural.embedding-cosine").build(**options)
    with pytest.raises(InputError, match="unknown backend 'pool_local'"):
        elsewhere.signature()
