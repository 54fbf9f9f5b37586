"""judgebench's pytest plugin: audit a scores table in a test and assert on the sentinel gate.

Installed with judgebench (entry point `pytest11`), or loaded with `-p judgebench.pytest_plugin`.
The `judgebench_audit` fixture runs `judgebench.services.audit` and returns an `Audit`:

    def test_chrf_tracks_relevance(judgebench_audit):
        audit = judgebench_audit("scores.csv", humans=["human.relevance"],
                                 samples="gen.jsonl")
        audit.assert_passes("lexical.chrf", human="human.relevance", level="system")

A failed assertion says why, in the verdict's words (judgebench.auditing.verdict): which
sentinel the metric did not beat, in which cluster, and what that says about the human
scores. Audits are cached for the session per arguments (and the table's modification time),
so several assertions on one table audit it once. Bootstrap CIs are off unless asked for
(`bootstrap=1000`): the gate does not use them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from judgebench.auditing.report import Report

#: Keyword arguments that set `judgebench.auditing.blocks.Options` rather than the service.
OPTION_NAMES = ("bootstrap", "ci", "seed", "alpha", "method", "resamples", "epsilon",
                "permutations", "robustness", "sequential")


@dataclass
class Audit:
    """A finished audit and assertions on its verdict."""

    report: Report
    data: dict[str, Any]

    def verdict(self, human: str) -> dict[str, Any]:
        """The verdict (judgebench.auditing.verdict, as data) of the human column `human`."""
        for v in self.data["verdict"]:
            if v["human"] == human:
                return v
        raise ValueError(f"{human!r} was not audited; audited: {', '.join(self.data['humans'])}")

    def passes(self, metric: str, *, human: str, level: str = "system",
               grouping: str | None = None, statistic: str | None = None) -> bool:
        """Whether `metric` passes the gate for `human` in every matching setting."""
        return not self._why_not(metric, human, level, grouping, statistic)

    def assert_passes(self, metric: str, *, human: str, level: str = "system",
                      grouping: str | None = None, statistic: str | None = None) -> None:
        """Fail the test unless `metric` passes the gate for `human` at `level` (at segment
        level: with `grouping`, or with every audited grouping when it is None) under
        `statistic` (every audited one when None)."""
        __tracebackhide__ = True
        reasons = self._why_not(metric, human, level, grouping, statistic)
        if reasons:
            raise AssertionError(f"{metric} does not pass the gate for {human}: "
                                 + " ".join(reasons))

    def assert_no_failures(self) -> None:
        """Fail the test if a `fail_on` check given to the fixture found something; the
        message is the FAIL lines `judgebench audit --fail-on` prints."""
        __tracebackhide__ = True
        if not self.data["fail_on"]:
            raise ValueError("no check was asked for: give the fixture fail_on=[...], e.g. "
                             "fail_on=['gate', 'parse-rate>0.05']")
        if self.report.failures:
            raise AssertionError("\n".join(f"FAIL {f['metric']}: {f['message']}"
                                           for f in self.report.failures))

    def _why_not(self, metric: str, human: str, level: str, grouping: str | None,
                 statistic: str | None) -> list[str]:
        if level not in ("system", "segment"):
            raise ValueError(f"level {level!r}: use 'system' or 'segment'")
        if level == "system":
            grouping = "none"
        settings = [s for s in self.verdict(human)["settings"]
                    if s["level"] == level and grouping in (None, s["grouping"])
                    and statistic in (None, s["statistic"])]
        if not settings:
            audited = "; ".join(f"{s['statistic']} at {s['where']}"
                                for s in self.verdict(human)["settings"])
            raise ValueError(f"no audited setting is {level} level"
                             + (f", grouping {grouping}" if grouping else "")
                             + (f", {statistic}" if statistic else "")
                             + f"; audited: {audited}")
        reasons = []
        for s in settings:
            failed = {f["metric"]: f["reason"] for f in s["failed"]}
            if metric in s["passed"]:
                continue
            if metric in failed:
                reasons.append(f"at {s['where']} ({s['statistic']}): {failed[metric]}; "
                               f"{s['reason']}.")
            elif metric in s["ungated"]:
                reasons.append(f"at {s['where']} it is not gated: its system score is a "
                               "corpus score, and the significance test behind the gate "
                               "resamples segment scores.")
            else:
                names = [*s["passed"], *failed, *s["ungated"]]
                raise ValueError(f"{metric!r} was not audited; audited metrics: "
                                 f"{', '.join(names)}")
        return reasons


class Auditor:
    """What the `judgebench_audit` fixture gives: call it like `judgebench.services.audit`."""

    def __init__(self) -> None:
        self._done: dict[str, Audit] = {}

    def __call__(self, scores: str | Path, *, humans: Sequence[str] = (),
                 human: str | None = None, **kwargs: Any) -> Audit:
        """Audit `scores` against `humans` (or the one `human`). Keyword arguments are those
        of `judgebench.services.audit` (samples, metrics, levels, groupings, statistics,
        sentinels, ...) and of its Options (bootstrap, resamples, alpha, seed, ...)."""
        from judgebench.auditing.blocks import Options
        from judgebench.services.audit import audit

        columns = [*humans, *([human] if human else [])]
        if not columns:
            raise ValueError("name the human column(s): human='human.x' or humans=[...]")
        options = {k: kwargs.pop(k) for k in OPTION_NAMES if k in kwargs}
        options.setdefault("bootstrap", 0)
        key = repr((str(scores), _mtime(scores), columns, sorted(options.items()),
                    sorted(kwargs.items())))
        if key not in self._done:
            report = audit(scores, humans=columns, options=Options(**options), **kwargs)
            self._done[key] = Audit(report, report.to_dict())
        return self._done[key]


def _mtime(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None  # the service reports the missing file


@pytest.fixture(scope="session")
def judgebench_audit() -> Auditor:
    """Audit a scores table: `judgebench_audit("scores.csv", humans=[...], ...)` returns an
    `Audit` with `assert_passes(metric, human=..., level=..., grouping=...)`."""
    return Auditor()
