"""A metric's direction without importing plugins: the cached registry gives what the plugin
host gives, is rebuilt when what decides the registry changes, and a sidecar-less meta-eval
that finds it imports no plugin module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from judgebench import plugins
from judgebench.tables import directions


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(folder))
    monkeypatch.delenv(plugins.ALLOWLIST_ENV, raising=False)
    return folder


def host_directions() -> dict[str, bool]:
    host = plugins.build_host()
    return {name: bool(e.info.higher_is_better) for name, e in host.metrics().items()}


def test_the_cache_holds_the_hosts_directions(cache: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    want = host_directions()
    assert want["lexical.ter"] is False and want["lexical.bleu"] is True
    assert directions.metric_directions(None) == want  # builds the host, writes the cache
    assert directions.cache_path().is_file()
    built: list[int] = []
    monkeypatch.setattr(plugins, "build_host", lambda *a, **k: built.append(1))
    assert directions.metric_directions(None) == want
    assert built == []


def test_a_given_or_built_host_answers_without_the_cache(cache: Path) -> None:
    host = plugins.build_host()
    assert directions.metric_directions(host) == host_directions()
    assert not cache.exists()


def test_the_key_changes_with_the_allowlist_and_a_plugin_file(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = directions.registry_key()
    assert directions.registry_key() == base
    monkeypatch.setenv(plugins.ALLOWLIST_ENV, "lexical")
    assert directions.registry_key() != base
    monkeypatch.delenv(plugins.ALLOWLIST_ENV)
    # A plugin package edited in place (an editable install keeps its version).
    package = tmp_path / "src" / "fake_plugin_pkg"
    package.mkdir(parents=True)
    module = package / "__init__.py"
    module.write_text("x = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    before = directions._package_files("fake_plugin_pkg")
    os.utime(module, ns=(1, 1))
    assert directions._package_files("fake_plugin_pkg") != before
    assert "fake_plugin_pkg" not in sys.modules
    assert directions._package_files("no_such_module_here") == ["\0no_such_module_here: "
                                                                  "not found"]


def test_the_entry_points_are_the_hosts() -> None:
    assert (directions.ENTRY_POINT_GROUP, directions.ALLOWLIST_ENV) == (
        plugins.ENTRY_POINT_GROUP, plugins.ALLOWLIST_ENV)
    assert [ep.name for ep in directions._entry_points()] == [
        ep.name for ep in plugins._entry_points()]


def test_a_bad_cache_file_is_rebuilt(cache: Path) -> None:
    path = directions.cache_path()
    path.parent.mkdir(parents=True)
    for text in ("not json", json.dumps({"format": 1, "metrics": {"lexical.ter": "no"}}),
                 json.dumps({"format": 99, "metrics": {}})):
        path.write_text(text, encoding="utf-8")
        assert directions.metric_directions(None) == host_directions()
    assert json.loads(path.read_text(encoding="utf-8"))["metrics"] == host_directions()


def test_a_failed_plugin_is_not_cached(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = plugins.build_host

    def failing(*args: object, **kwargs: object) -> plugins.PluginHost:
        host = real()
        host.failures.append(plugins.PluginFailure("neural", "import: boom"))
        return host

    monkeypatch.setattr(plugins, "build_host", failing)
    assert directions.metric_directions(None)["lexical.ter"] is False
    assert not directions.cache_path().exists()


def test_sidecar_less_meta_eval_imports_no_plugin_once_cached(tmp_path: Path) -> None:
    rows = [{"item": f"i{i}", "system": f"s{s}", "human.q": float((i * s) % 5),
             "lexical.ter": (i + 2 * s) % 7 / 7, "lexical.bleu": (3 * i + s) % 11 / 11,
             "other": (i * 7 + s) % 13 / 13} for i in range(12) for s in range(6)]
    table = tmp_path / "plain.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('PLUGINS', sorted(m for m in sys.modules "
            "if m.startswith('judgebench_') or m == 'pydantic'), file=sys.stderr))\n"
            "from judgebench.cli import main\n"
            "main(['meta-eval', sys.argv[1], '--human', 'human.q', '--json'])")
    env = {**os.environ, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(plugins.ALLOWLIST_ENV, None)
    runs = [subprocess.run([sys.executable, "-c", code, str(table)], capture_output=True,
                           text=True, check=True, env=env) for _ in range(2)]
    loaded = [r.stderr.strip().splitlines()[-1] for r in runs]
    assert loaded[0] != "PLUGINS []"  # the first run builds the host and the cache
    assert loaded[1] == "PLUGINS []", runs[1].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert first == second
    want = host_directions()
    got = {row["metric"]: (row["higher_is_better"], row["direction_from"]) for row in second}
    assert got == {"lexical.ter": (want["lexical.ter"], "metric"),
                   "lexical.bleu": (want["lexical.bleu"], "metric"),
                   "other": (True, "default")}
