"""The plugin host, exercised the way users meet it: installed distributions found through
entry points, the allowlist, local plugin files, broken plugins and misspelt hooks."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli, write_jsonl

from judgebench.errors import PluginError
from judgebench.plugins import build_host
from judgebench.probe import Probe

WORDCOUNT_PLUGIN = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Outcome, Status

__version__ = "2.3.4"


class Shout(Metric):
    """Share of upper-case letters in the output; refuses empty outputs."""

    info = MetricInfo(name="acme.shout", kind="reference", requires=("output",),
                      value_range=(0.0, 1.0))

    def score(self, samples):
        results = []
        for s in samples:
            letters = [c for c in s.output if c.isalpha()]
            if not letters:
                results.append(Outcome.failed(Status.SKIPPED, "no letters"))
            else:
                results.append(sum(c.isupper() for c in letters) / len(letters))
        return results


@hookimpl
def register_metrics(register):
    register(Shout)
'''


def install_distribution(site: Path, dist: str, module: str, source: str,
                         entry_name: str | None = None) -> Path:
    """Install a one-module distribution for real: the module and a .dist-info folder with
    METADATA and entry_points.txt, which importlib.metadata reads from sys.path."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{dist}-2.3.4.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 2.3.4\n")
    (info / "entry_points.txt").write_text(
        f"[judgebench]\n{entry_name or dist} = {module}\n", encoding="utf-8")
    (info / "RECORD").write_text("")
    return site


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return tmp_path / "site"


def test_third_party_plugin_scores_through_the_cli(site: Path, tmp_path: Path) -> None:
    install_distribution(site, "acme-shout", "acme_shout", WORDCOUNT_PLUGIN, "acme")
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "a", "output": "HELLO world"},
        {"item": "1", "system": "b", "output": "HELLO WORLD"},
        {"item": "2", "system": "a", "output": "..."},
    ])
    env = {"PYTHONPATH": str(site)}
    listed = run_cli("plugins", "--json", env=env, check=True)
    acme = next(r for r in json.loads(listed.stdout) if r["name"] == "acme")
    assert acme["version"] == "2.3.4" and acme["hooks"] == ["register_metrics"]

    out = tmp_path / "scores.csv"
    run_cli("score", str(data), "-m", "acme.shout", "-o", str(out),
            "--store", str(tmp_path / "s.db"), env=env, check=True)
    import pandas as pd

    table = pd.read_csv(out)
    assert table["acme.shout"].tolist()[:2] == [0.5, 1.0]
    assert pd.isna(table["acme.shout"].iloc[2])  # skipped, with a reason, not a 0
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["columns"]["acme.shout"]["statuses"] == {"ok": 2, "skipped": 1}
    assert "plugin:acme 2.3.4" in meta["columns"]["acme.shout"]["signature"]


def test_allowlist_restricts_entry_points(site: Path) -> None:
    install_distribution(site, "acme-shout", "acme_shout", WORDCOUNT_PLUGIN, "acme")
    env = {"PYTHONPATH": str(site), "JUDGEBENCH_LOAD_PLUGINS": "lexical"}
    names = [r["name"] for r in json.loads(run_cli("metrics", "--json", env=env,
                                                   check=True).stdout)]
    assert "acme.shout" not in names and "lexical.bleu" in names
    env["JUDGEBENCH_LOAD_PLUGINS"] = "acme"
    names = [r["name"] for r in json.loads(run_cli("metrics", "--json", env=env,
                                                   check=True).stdout)]
    assert names == ["acme.shout"]


def test_broken_plugin_is_reported_and_the_others_keep_working(site: Path) -> None:
    install_distribution(site, "broken-thing", "broken_thing",
                         "import this_module_does_not_exist_anywhere\n", "broken")
    env = {"PYTHONPATH": str(site)}
    proc = run_cli("plugins", "--json", env=env, check=True)
    broken = next(r for r in json.loads(proc.stdout) if r["name"] == "broken")
    assert "this_module_does_not_exist_anywhere" in broken["error"]
    assert "plugin 'broken' failed" in proc.stderr
    metrics = run_cli("metrics", env=env, check=True).stdout
    assert "lexical.rouge2" in metrics


def test_plugin_that_raises_while_registering_is_isolated(site: Path) -> None:
    source = '''
from judgebench.hookspecs import hookimpl

@hookimpl
def register_metrics(register):
    raise RuntimeError("database of metrics is on fire")
'''
    install_distribution(site, "fiery", "fiery", source, "fiery")
    env = {"PYTHONPATH": str(site)}
    proc = run_cli("metrics", env=env, check=True)
    assert "lexical.bleu" in proc.stdout
    assert "fiery" in proc.stderr and "on fire" in proc.stderr


def test_misspelt_hook_is_an_error_naming_plugin_and_hook(site: Path) -> None:
    source = '''
from judgebench.hookspecs import hookimpl

@hookimpl
def register_metric(register):
    pass
'''
    install_distribution(site, "typo-plugin", "typo_plugin", source, "typo")
    proc = run_cli("metrics", env={"PYTHONPATH": str(site)})
    assert proc.returncode == 1
    assert "typo" in proc.stderr and "register_metric" in proc.stderr


def test_local_plugin_file_with_dash_p(tmp_path: Path) -> None:
    plugin = tmp_path / "shout_plugin.py"
    plugin.write_text(WORDCOUNT_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "in.jsonl", [{"item": "1", "system": "a", "output": "ABc"}])
    proc = run_cli("-p", str(plugin), "score", str(data), "-m", "acme.shout",
                   "--store", str(tmp_path / "s.db"), check=True)
    assert proc.stdout.splitlines()[1].endswith(",0.6666666666666666")


def test_missing_local_plugin_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("-p", str(tmp_path / "nope.py"), "metrics")
    assert proc.returncode == 2 and "nope.py" in proc.stderr


def test_two_plugins_registering_one_name_is_an_error(tmp_path: Path) -> None:
    plugin = tmp_path / "clash.py"
    plugin.write_text(textwrap.dedent('''
        from judgebench.hookspecs import hookimpl
        from judgebench_lexical.metrics import Bleu

        @hookimpl
        def register_metrics(register):
            register(Bleu)
    '''), encoding="utf-8")
    with pytest.raises(PluginError, match=r"'lexical\.bleu', already registered by"):
        build_host([str(plugin)])


def test_import_judgebench_loads_no_heavy_library() -> None:
    import subprocess
    import sys

    code = ("import sys, judgebench; heavy = {'pandas', 'torch', 'transformers', 'litellm',"
            " 'vllm', 'sacrebleu', 'rouge_score', 'pluggy'} & set(sys.modules);"
            " print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_readme_example_plugin_installs_with_pip_and_scores(tmp_path: Path) -> None:
    """The plugin of the README, installed by pip into a folder on PYTHONPATH."""
    import subprocess
    import sys

    example = Path(__file__).resolve().parent.parent / "examples" / "judgebench-wordcount"
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(example)],
                   check=True, capture_output=True)
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "a", "output": "one two three", "reference": ["one two", "x"]},
        {"item": "2", "system": "a", "output": "abc", "reference": [""]},
    ])
    proc = run_cli("score", str(data), "-m", "wordcount.ratio:unit=chars", "--store",
                   str(tmp_path / "s.db"), env={"PYTHONPATH": str(site)}, check=True)
    lines = proc.stdout.splitlines()
    assert lines[0] == "item,system,wordcount.ratio:unit=chars"
    assert lines[1] == "1,a,13.0" and lines[2] == "2,a,"
    assert "wordcount.ratio:unit=chars: 1 ok, 1 skipped" in proc.stderr


def test_readme_shows_the_example_plugin_verbatim() -> None:
    repo = Path(__file__).resolve().parent.parent
    readme = (repo / "docs" / "tutorials" / "write-a-plugin.md").read_text(encoding="utf-8")
    shown = readme.split("# judgebench_wordcount.py\n", 1)[1].split("```", 1)[0]
    source = (repo / "examples" / "judgebench-wordcount" / "judgebench_wordcount.py").read_text()
    assert source.split('"""\n\n', 1)[1] == shown


# -- registration checks: a plugin file that breaks a rule is a PluginError naming it ----------
BROKEN_PLUGINS = {
    "corpus": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class Corpusless(Metric):
            info = MetricInfo(name="acme.corpusless", kind="reference", level="corpus")

        @hookimpl
        def register_metrics(register):
            register(Corpusless)
    ''', r"registers 'acme\.corpusless' with level='corpus', but Corpusless does not implement "
         r"corpus_score"),
    "has_corpus": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class Both(Metric):
            info = MetricInfo(name="acme.both", kind="reference", has_corpus=True)

            def score(self, samples):
                return [1.0] * len(samples)

        @hookimpl
        def register_metrics(register):
            register(Both)
    ''', r"registers 'acme\.both' with has_corpus=True, but Both does not implement corpus_score"),
    "scoreless": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class Silent(Metric):
            info = MetricInfo(name="acme.silent", kind="reference")

        @hookimpl
        def register_metrics(register):
            register(Silent)
    ''', r"registers 'acme\.silent' with level 'segment', but Silent implements neither score "
         r"nor score_stream"),
    "options": ('''
        from pydantic import BaseModel
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class Loose(BaseModel):
            unit: str = "words"

        class Lax(Metric[Loose]):
            info = MetricInfo(name="acme.lax", kind="reference")
            Options = Loose

        @hookimpl
        def register_metrics(register):
            register(Lax)
    ''', r"registers 'acme\.lax': its Options model Loose ignores unknown options"
         r".*extra=\"forbid\""),
    "sentinel": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class NotASentinel(Metric):
            info = MetricInfo(name="sentinel.fake", kind="sentinel")

        @hookimpl
        def register_sentinels(register):
            register(NotASentinel)
    ''', r"registered <class '.*NotASentinel'> as a sentinel: a sentinel is a subclass of "
         r"judgebench\.sentinel\.Sentinel"),
    "probe": ('''
        from judgebench.hookspecs import hookimpl

        class NotAProbe:
            name = "fake"

        @hookimpl
        def register_probes(register):
            register(NotAProbe)
    ''', r"registered <class '.*NotAProbe'> as a probe: a probe is a subclass of "
         r"judgebench\.probe\.Probe"),
    "expect": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench.probe import Probe

        class Upward(Probe):
            name = "upward"
            description = "the score must rise"
            expect = "higher"

        @hookimpl
        def register_probes(register):
            register(Upward)
    ''', r"registers probe 'upward' with expect='higher'; one of lower, same, best"),
    "probe-clash": ('''
        from judgebench.hookspecs import hookimpl
        from judgebench_audit.probes import Truncation

        @hookimpl
        def register_probes(register):
            register(Truncation)
    ''', r"registers 'truncation', already registered by plugin 'audit'"),
}


@pytest.mark.parametrize("rule", sorted(BROKEN_PLUGINS))
def test_a_registration_that_breaks_the_contract_is_an_error(tmp_path: Path, rule: str) -> None:
    source, message = BROKEN_PLUGINS[rule]
    plugin = tmp_path / f"broken_{rule.replace('-', '_')}.py"
    plugin.write_text(textwrap.dedent(source), encoding="utf-8")
    with pytest.raises(PluginError, match=f"plugin '{re.escape(str(plugin))}' {message}"):
        build_host([str(plugin)])


def test_the_registering_plugin_reaches_the_metric_not_its_class() -> None:
    from judgebench_lexical.metrics import Bleu

    host = build_host()
    built = host.metric("lexical.bleu").build()
    assert built.plugin == f"lexical {host.versions['lexical']}"
    assert "plugin" not in Bleu.__dict__  # no class attribute stamped by the host
    assert "plugin" not in Bleu().signature().fields  # built directly: no plugin is known
    assert built.signature().fields["plugin"] == built.plugin


def test_optional_behaviour_is_declared_on_the_base_classes() -> None:
    from judgebench.metric import LOCAL_ESTIMATE, Metric, NoOptions
    from judgebench.models import MetricInfo, Sample
    from judgebench.sentinel import Sentinel

    class Plain(Metric[NoOptions]):
        info = MetricInfo(name="acme.plain", kind="reference")

        def score(self, samples):
            return [float(len(s.output or "")) for s in samples]

    class Blind(Sentinel[NoOptions]):
        info = MetricInfo(name="sentinel.blind", kind="sentinel")

        def score(self, samples):
            return [1.0] * len(samples)

    samples = [Sample(item="1", system="a", output="abc")]
    assert Plain().estimate(samples) == LOCAL_ESTIMATE
    assert Blind.trained is False and Sentinel.trained is False
    assert Blind().fit_predict(samples, [0.5]) == [1.0]
    with pytest.raises(ValueError, match="1 samples but 2 human scores"):
        Blind().fit_predict(samples, [0.5, 0.1])


def test_builtin_probes_register_in_report_order() -> None:
    probes = build_host().probes()
    assert list(probes) == ["identity", "truncation", "shuffle", "drop-sentence", "unrelated",
                            "repetition", "negation", "numbers", "case", "whitespace",
                            "rename-systems", "batch-order"]
    assert {entry.plugin for entry in probes.values()} == {"audit"}
    metamorphic = [probes[n].probe for n in ("identity", "batch-order")]
    assert all(isinstance(p, Probe) for p in metamorphic)
    assert [p.scope for p in metamorphic if isinstance(p, Probe)] == ["sample", "run"]
