"""The answer an audit opens with: per human criterion, which metrics pass the gate where.

`verdicts(data)` reads the report as data (`Report.to_dict()`, or an audit JSON read back)
and returns one `CriterionVerdict` per human column: per setting (statistic, level,
grouping) the metrics that pass the gate, the ones that do not beat the best sentinel, and a
one-line reason; per metric whether it passes everywhere, somewhere ("partial") or nowhere;
and the whole in words. Every renderer (JSON, Markdown, HTML) shows this one computation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from judgebench.auditing.conclusions import sentences

State = Literal["pass", "partial", "fail"]

#: What it means about the human scores when nothing beats this sentinel (by base name).
_FOLLOWS = {
    "sentinel.cand": "people's scores follow what the output alone shows (fluency, style, "
                     "a system's habits), not how it relates to the input or reference",
    "sentinel.length": "people's scores follow output length here",
    "sentinel.src": "people's scores follow the inputs here (which inputs are hard)",
    "sentinel.ref": "people's scores follow the references here (which items are hard)",
    "sentinel.random": "the items and systems are too few to tell the metrics from a random "
                       "score",
    "sentinel.constant": "the statistic credits predicting ties, and many human pairs tie",
}

#: The words for a state, as a heading says it.
STATE_WORDS: dict[str, str] = {"pass": "pass", "partial": "partial pass", "fail": "fail"}


@dataclass(frozen=True)
class FailedMetric:
    metric: str
    #: The gate's reason, e.g. "cluster 1: not significantly better than sentinel.cand
    #: (cluster 1)".
    reason: str


@dataclass(frozen=True)
class SettingVerdict:
    statistic: str
    level: str
    grouping: str
    #: The setting in words: "system level", "segment level, grouped by item".
    where: str
    state: State
    passed: list[str]
    failed: list[FailedMetric]
    #: Metrics with a row but no gate verdict here (a corpus score at system level).
    ungated: list[str]
    #: The best-placed defined sentinel: what a metric had to beat.
    sentinel: str | None
    reason: str


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    state: State
    passes: list[str]  # `where` of each setting it passes
    fails: list[str]  # `where` of each setting it fails


@dataclass(frozen=True)
class CriterionVerdict:
    human: str
    #: pass: a metric passes in every gated setting; partial: in some; fail: in none.
    state: State
    summary: str
    settings: list[SettingVerdict] = field(default_factory=list)
    metrics: list[MetricVerdict] = field(default_factory=list)
    #: The sentinels that gave no score for this criterion (a text sentinel without
    #: --samples), and what the verdict is then against: "blind sentinels only" when no
    #: generations were given, else "<the sentinels that ran> only"; None when all ran.
    sentinels_not_run: list[str] = field(default_factory=list)
    against: str | None = None
    #: `audit --alt-test`: per judge whether it can replace an annotator on this criterion
    #: ({"metric", "passed", "winning_rate", "advantage_probability", "epsilon",
    #: "epsilon_to_pass", "annotators"}).
    replacement: list[dict[str, Any]] = field(default_factory=list)
    #: `audit --power-for`: whether this study separates metrics DELTA apart.
    power: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def where(level: str, grouping: str, statistic: str | None = None) -> str:
    """A setting in words; the statistic is named when the audit has more than one."""
    text = ("system level" if level == "system" else
            "segment level, no grouping" if grouping == "none" else
            f"segment level, grouped by {grouping}")
    return f"{text} ({statistic})" if statistic else text


def follows(sentinel: str) -> str:
    """What it says about the human scores that nothing beats `sentinel`."""
    base = sentinel.split(":", 1)[0]
    return _FOLLOWS.get(base, f"{sentinel} ranks with the metrics here")


def state_of(passed: int, total: int) -> State:
    return "pass" if total and passed == total else "partial" if passed else "fail"


def verdicts(data: dict[str, Any]) -> list[CriterionVerdict]:
    """One verdict per human column of the report `data` (the JSON report's shape)."""
    statistics = data["settings"]["statistics"]
    order = [(st, x["level"], x["grouping"]) for st in statistics
             for x in data["settings"]["levels"]]
    out = []
    for human in data["humans"]:
        blocks = {(b["statistic"], b["level"], b["grouping"]): b for b in data["blocks"]
                  if b["human"] == human}
        settings = [_setting(blocks[key], human, len(statistics) > 1)
                    for key in order if key in blocks]
        metrics = _metrics(settings)
        gated = [s for s in settings if s.passed or s.failed]
        state = state_of(sum(1 for s in gated if s.passed), len(gated))
        summary = _summary(state, gated, metrics)
        fragile = _fragile(data, human, len(statistics) > 1)
        more, findings = sentences(data, human, lambda b: where(
            b["level"], b["grouping"], b["statistic"] if len(statistics) > 1 else None))
        fragile += more
        if findings:
            summary = f"{summary} {' '.join(findings)}"
        if fragile:  # a conclusion that is not robust says so first
            summary = f"Not robust: {'; '.join(fragile)}. {summary[0].upper()}{summary[1:]}"
        not_run, against, caveat = not_run_caveat(data, human)
        out.append(CriterionVerdict(human, state, f"{summary} {caveat}" if caveat else summary,
                                    settings, metrics, not_run, against,
                                    _replacement(data, human), _power(data, human)))
    return out


def heading(verdict: dict[str, Any]) -> str:
    """A verdict's state in words (a verdict as data), qualified when some sentinels did not
    run: "pass against blind sentinels only"."""
    words = STATE_WORDS[verdict["state"]]
    against = verdict.get("against")
    return f"{words} against {against}" if against else words


def not_run_caveat(data: dict[str, Any], human: str) -> tuple[list[str], str | None, str]:
    """The sentinels with no ok score for `human`, what the verdict is against then, and the
    sentence that says so (a sentinel that did not run is no bar a metric had to clear)."""
    sentinels = data.get("sentinels") or []
    not_run = [s["column"] for s in sentinels
               if not (s.get("statuses") or {}).get(human, {}).get("ok")]
    if not not_run:
        return [], None, ""
    ran = [s["column"] for s in sentinels if s["column"] not in not_run]
    no_text = (data.get("inputs") or {}).get("samples") is None
    against = ("blind sentinels only" if no_text and ran else
               f"{_join(ran)} only" if ran else "no sentinel")
    reasons = dict.fromkeys(reason for s in sentinels if s["column"] in not_run
                            for reason in ((s.get("reasons") or {}).get(human) or {}).values())
    why = (" (they read the text: give the generations with --samples)" if no_text
           else f" ({'; '.join(reasons)})" if reasons else "")
    them = "it" if len(not_run) == 1 else "them"
    caveat = (f"Against {against}: {_join(not_run)} did not run{why}, so no metric had to "
              f"beat {them}.")
    return not_run, against, caveat


def of_report(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's verdict as data: the one it carries, or computed for a report written
    before reports carried one."""
    found = data.get("verdict")
    return found if isinstance(found, list) else [v.to_dict() for v in verdicts(data)]


def _fragile(data: dict[str, Any], human: str, name_statistic: bool) -> list[str]:
    """What `audit --robustness` found could overturn this criterion's conclusions."""
    from judgebench.auditing.robustness import caveats

    return [c for b in data["blocks"] if b["human"] == human
            for c in caveats(b, where(b["level"], b["grouping"],
                                      b["statistic"] if name_statistic else None))]


def _replacement(data: dict[str, Any], human: str) -> list[dict[str, Any]]:
    return [{"metric": r["metric"], "passed": r["passed"],
             "winning_rate": r["alt-test-winning-rate"],
             "advantage_probability": r["alt-test-advantage-probability"],
             "epsilon": r["epsilon"], "epsilon_to_pass": r.get("epsilon_to_pass"),
             "annotators": r["annotators"]}
            for r in data.get("alt_test") or [] if r["human"] == human and r.get("metric")]


def _power(data: dict[str, Any], human: str) -> dict[str, Any] | None:
    found = next((p for p in data.get("power") or [] if p["human"] == human), None)
    return None if found is None else {k: found[k] for k in (
        "separates", "delta", "alpha", "n", "target_power", "weakest")}


def _setting(block: dict[str, Any], human: str, name_statistic: bool) -> SettingVerdict:
    at = where(block["level"], block["grouping"],
               block["statistic"] if name_statistic else None)
    gate = block["gate"]
    passed = [g["metric"] for g in gate if g["passed"]]
    failed = [FailedMetric(g["metric"], g["reason"]) for g in gate if not g["passed"]]
    gated = {g["metric"] for g in gate}
    ungated = [r["metric"] for r in block["rows"]
               if r["kind"] == "metric" and r["metric"] not in gated]
    sentinel = next((g["sentinel"] for g in gate if g.get("sentinel")), None)
    state = state_of(len(passed), len(gate))
    if not gate:
        reason = f"no metric is gated at {at}"
    elif state == "pass":
        every = "every gated metric" if ungated else "every metric"
        reason = (f"{every} beats {sentinel}, the best sentinel, at {at}" if sentinel
                  else f"no sentinel has a defined statistic at {at}: nothing to beat")
    elif state == "partial":
        beat = f"beat {sentinel}" if sentinel else "have a defined statistic"
        reason = (f"{_names(passed)} {_verb(passed, beat)} at {at}; "
                  f"{_names([f.metric for f in failed])} {_verb(failed, 'do')} not")
    elif sentinel is None:
        reason = f"{block['statistic']} is undefined for every metric at {at}"
    else:
        reason = f"nothing beats {sentinel} at {at} for {human}: {follows(sentinel)}"
    return SettingVerdict(block["statistic"], block["level"], block["grouping"], at, state,
                          passed, failed, ungated, sentinel, reason)


def _metrics(settings: Sequence[SettingVerdict]) -> list[MetricVerdict]:
    names = list(dict.fromkeys(m for s in settings
                               for m in (*s.passed, *(f.metric for f in s.failed))))
    out = []
    for name in names:
        passes = [s.where for s in settings if name in s.passed]
        fails = [s.where for s in settings if name in {f.metric for f in s.failed}]
        out.append(MetricVerdict(name, state_of(len(passes), len(passes) + len(fails)),
                                 passes, fails))
    return out


def _summary(state: State, settings: Sequence[SettingVerdict],
             metrics: Sequence[MetricVerdict]) -> str:
    if not settings:
        return "no metric is gated in any setting."
    head = {"pass": "some metric passes the gate in every setting",
            "partial": "metrics pass the gate in some settings, not in others",
            "fail": "no metric passes the gate in any setting"}[state]
    by_places: dict[tuple[str, ...], list[str]] = {}
    for m in metrics:
        if m.passes:
            by_places.setdefault(tuple(m.passes), []).append(m.metric)
    parts = [f"{_join(names)} {_verb(names, 'pass')} at {_join(list(places), 'at ')}"
             for places, names in by_places.items()]
    nowhere = [s for s in settings if not s.passed]
    by_sentinel: dict[str | None, list[SettingVerdict]] = {}
    for s in nowhere:
        by_sentinel.setdefault(s.sentinel, []).append(s)
    for sentinel, group in by_sentinel.items():
        at = _join([s.where for s in group], "at ")
        parts.append(f"nothing beats {sentinel} at {at}: {follows(sentinel)}" if sentinel
                     else f"the statistic is undefined for every metric at {at}")
    return f"{head} — " + "; ".join(parts) + "."


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def _verb(items: Sequence[object], verb: str) -> str:
    """`verb` (plural) agreeing with how many `items` there are: do -> does, beat -> beats."""
    if len(items) != 1:
        return verb
    first, _, rest = verb.partition(" ")
    first = {"do": "does", "have": "has", "pass": "passes"}.get(first, first + "s")
    return f"{first} {rest}".rstrip()


def _join(texts: Sequence[str], again: str = "") -> str:
    """a, b and c; with `again` ("at "): a, at b and at c."""
    if len(texts) == 1:
        return texts[0]
    return f", {again}".join(texts[:-1]) + f" and {again}" + texts[-1]
