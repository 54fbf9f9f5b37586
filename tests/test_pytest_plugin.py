"""The pytest plugin (judgebench.pytest_plugin): a test file that audits a SummEval scores
table with the `judgebench_audit` fixture, run by pytest's own `pytester`; and the `pytest11`
entry point that installs it."""

from __future__ import annotations

import os
import re
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from judgebench.pytest_plugin import Audit, Auditor

pytest_plugins = ["pytester"]

PLUGIN = "judgebench.pytest_plugin"


@pytest.fixture(scope="module")
def scored(summeval_token_f1_bleu: tuple[Path, Path, Path]) -> tuple[Path, Path, Audit]:
    """The table, and an audit of it made here: besides its use in tests, it imports what an
    audit needs before pytester runs a file in this process (pytester forgets the modules a
    run imported, and numpy's extension modules cannot be imported twice)."""
    samples, scores, _ = summeval_token_f1_bleu
    audit = Auditor()(scores, human="human.relevance", samples=samples, levels=["system"],
                      resamples=100)
    return samples, scores, audit


def _test_file(samples: Path, scores: Path, *_: object) -> str:
    return textwrap.dedent(f"""
        SCORES, SAMPLES = {str(scores)!r}, {str(samples)!r}

        def audit(judgebench_audit):
            return judgebench_audit(SCORES, humans=["human.relevance", "human.coherence"],
                                    samples=SAMPLES, levels=["system"], resamples=200)

        def test_token_f1_tracks_relevance(judgebench_audit):
            audit(judgebench_audit).assert_passes("lexical.token_f1",
                                                  human="human.relevance", level="system")

        def test_token_f1_tracks_coherence(judgebench_audit):
            audit(judgebench_audit).assert_passes("lexical.token_f1",
                                                  human="human.coherence", level="system")

        def test_one_audit_for_both(judgebench_audit):
            assert audit(judgebench_audit) is audit(judgebench_audit)
            assert not audit(judgebench_audit).passes(
                "lexical.token_f1", human="human.coherence")
    """)


def test_a_test_file_asserts_on_the_gate_with_the_fixture(pytester: pytest.Pytester,
                                                          scored: tuple[Path, Path, Audit]) -> None:
    pytester.makepyfile(test_metric=_test_file(*scored))
    result = pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    # The failure says why, in the verdict's words.
    result.stdout.fnmatch_lines([
        "*AssertionError: lexical.token_f1 does not pass the gate for human.coherence: at "
        "system level (pearson): cluster 1: not significantly better than sentinel.cand "
        "(cluster 1); nothing beats sentinel.cand at system level for human.coherence: "
        "people's scores follow what the output alone shows*",
        "*FAILED test_metric.py::test_token_f1_tracks_coherence*"])
    assert "test_token_f1_tracks_relevance PASSED" not in result.stdout.str()  # -q default


def test_without_the_plugin_there_is_no_fixture(pytester: pytest.Pytester,
                                                scored: tuple[Path, Path, Audit]) -> None:
    pytester.makepyfile(test_metric=_test_file(*scored))
    result = pytester.runpytest("-p", f"no:{PLUGIN}", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*fixture 'judgebench_audit' not found*"])


def test_wrong_names_are_usage_errors_that_say_what_was_audited(
        scored: tuple[Path, Path, Audit]) -> None:
    audit = scored[2]
    with pytest.raises(ValueError, match=r"'lexical\.nope' was not audited; audited "
                                         r"metrics: lexical\.token_f1, lexical\.bleu"):
        audit.assert_passes("lexical.nope", human="human.relevance")
    with pytest.raises(ValueError, match=re.escape("'human.nope' was not audited; audited: "
                                                   "human.relevance")):
        audit.assert_passes("lexical.token_f1", human="human.nope")
    with pytest.raises(ValueError, match="no audited setting is segment level, grouping "
                                         "item; audited: pearson at system level"):
        audit.assert_passes("lexical.token_f1", human="human.relevance", level="segment",
                            grouping="item")
    # BLEU has a corpus score at system level: not gated there, and the message says so.
    with pytest.raises(AssertionError, match="at system level it is not gated: its system "
                                             "score is a corpus score"):
        audit.assert_passes("lexical.bleu", human="human.relevance")


def test_fail_on_checks_from_the_fixture(scored: tuple[Path, Path, Audit]) -> None:
    samples, scores, audit = scored
    with pytest.raises(ValueError, match="no check was asked for"):
        audit.assert_no_failures()
    checked = Auditor()(scores, humans=["human.relevance", "human.coherence"],
                        samples=samples, levels=["system"], resamples=100,
                        fail_on=["gate", "parse-rate>0.05"])
    with pytest.raises(AssertionError) as failed:
        checked.assert_no_failures()
    assert str(failed.value) == (
        "FAIL lexical.token_f1: does not beat sentinel.cand at system level for "
        "human.coherence (cluster 1: not significantly better than sentinel.cand (cluster 1))")
    passing = Auditor()(scores, human="human.relevance", samples=samples, levels=["system"],
                        resamples=100, fail_on=["gate", "parse-rate>0.05"])
    passing.assert_no_failures()


def test_pyproject_declares_the_pytest11_entry_point() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {PLUGIN: PLUGIN}


@pytest.mark.slow  # two pytest processes
def test_the_declared_entry_point_loads_once_with_or_without_p(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed as pyproject declares it (a dist-info on the path), the plugin loads by
    itself, and `-p judgebench.pytest_plugin` does not register it a second time."""
    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    site = pytester.mkdir("site")
    info = site / "judgebench_entry_check-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: judgebench-entry-check\n"
                                   "Version: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in entry["pytest11"].items()))
    pytester.makepyfile(test_fixture="""
        def test_fixture(judgebench_audit):
            assert type(judgebench_audit).__name__ == "Auditor"
    """)
    paths = [str(site), str(REPO), str(REPO / "plugins"), *sys.path]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    for args in ((), ("-p", PLUGIN)):
        result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
        assert "already registered" not in result.stderr.str()
