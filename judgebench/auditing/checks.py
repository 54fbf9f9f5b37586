"""`--fail-on`: the checks that make `judgebench audit` fail a CI job.

    gate            a metric fails the sentinel gate in some (human, statistic, setting)
    parse-rate>X    a metric's share of scores that are not ok exceeds X (0 <= X < 1, or a
                    percentage: 5%): missing values in the scores table, the statuses the
                    table's .meta.json counted, and, with --store, the statuses the store
                    holds for the column's signature (the table's rows only); the worst of
                    the shares known counts
    flaky>X         a judge drawn with `score --repeats K` flips its verdict between draws on
                    more than a share X of its items (0 <= X < 1, or 5%): the report's
                    `repeats` section (judgebench.services.repeats); a report with no
                    repeated judge fails it (nothing to check)
    cluster-drop    a metric fell to a worse significance cluster than in a previous audit
                    (--previous: its JSON report or its --json output), per human criterion,
                    statistic, level and grouping
    bias:NAME>X     a judge's shift under the bias probe NAME (judgebench.auditing.
                    bias_battery) is significantly larger than X in size: its interval lies
                    wholly outside [-X, X] (0 <= X < 1, or 10%); for a probe whose edit adds
                    a flaw (expect "lower"), it lies wholly above -X (the judge does not fall
                    by X); a report with no shift of NAME fails it (nothing to check)

`parse_checks` turns the expressions into `Check`s before any work (a bad one is an
InputError naming it); `failures` runs them on the finished report. Each `Failure` is one
line on stderr (`FAIL metric: message`) and one object in the JSON report.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from judgebench.auditing.verdict import where
from judgebench.errors import InputError

if TYPE_CHECKING:
    from judgebench.auditing.report import MetricCard, Report

Kind = Literal["gate", "parse-rate", "flaky", "cluster-drop", "bias"]
USAGE = ("use gate, parse-rate>X, flaky>X (X a share such as 0.05, or 5%), cluster-drop or "
         "bias:NAME>X (X a shift such as 0.1)")
_RATE = re.compile(r"(?P<kind>parse-rate|flaky|bias:(?P<probe>[a-z0-9][a-z0-9_.-]*))\s*>\s*"
                   r"(?P<value>[^%\s]+)\s*(?P<percent>%?)")

#: (human, statistic, level, grouping, metric) -> significance cluster, of a previous audit.
Clusters = dict[tuple[str, str, str, str, str], int]


@dataclass(frozen=True)
class Check:
    kind: Kind
    expression: str
    threshold: float | None = None
    #: The bias probe a `bias:NAME>X` check reads.
    probe: str | None = None


@dataclass(frozen=True)
class Failure:
    check: str  # the --fail-on expression
    metric: str
    message: str
    human: str | None = None
    statistic: str | None = None
    level: str | None = None
    grouping: str | None = None

    @property
    def line(self) -> str:
        return f"FAIL {self.metric}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_checks(expressions: Sequence[str]) -> list[Check]:
    """The checks of `expressions` (each a --fail-on value), in order, each once."""
    out: list[Check] = []
    for expression in dict.fromkeys(expressions):
        text = expression.strip().lower()
        if text in ("gate", "cluster-drop"):
            out.append(Check("gate" if text == "gate" else "cluster-drop", expression))
            continue
        match = _RATE.fullmatch(text)
        if match is None:
            raise InputError(f"'{expression}' is not a check; {USAGE}", field="--fail-on")
        try:
            value = float(match["value"])
        except ValueError:
            raise InputError(f"'{expression}': '{match['value']}' is not a number",
                             field="--fail-on") from None
        share = value / 100 if match["percent"] else value
        if match["probe"] is not None:
            if not 0 <= share < 1 or not math.isfinite(share):
                raise InputError(f"'{expression}': the threshold is a size of shift, from 0 "
                                 "to below 1 (or 0% to below 100%)", field="--fail-on")
            out.append(Check("bias", expression, share, match["probe"]))
            continue
        if not 0 <= share < 1 or not math.isfinite(share):
            raise InputError(f"'{expression}': the threshold is a share of the "
                             f"{'items' if match['kind'] == 'flaky' else 'scores'}, from "
                             "0 (no failure allowed) to below 1 (or 0% to below 100%)",
                             field="--fail-on")
        out.append(Check("flaky" if match["kind"] == "flaky" else "parse-rate", expression,
                         share))
    return out


def read_previous(path: Path) -> Clusters:
    """The clusters of a previous audit: its JSON report (`--report x.json`) or what its
    `--json` printed. A file that is neither is an InputError naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=str(path), field="--previous") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not an audit JSON: {exc}", path=str(path),
                         field="--previous") from None
    if isinstance(data, dict) and data.get("format") == "judgebench-audit":
        rows = [{**r, **{k: b.get(k) for k in ("human", "statistic", "level", "grouping")}}
                for b in data.get("blocks", []) for r in b.get("rows", [])]
    elif isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict) and r.get("type") == "correlation"]
    else:
        raise InputError("not an audit JSON: neither a report (format judgebench-audit) nor "
                         "the array `judgebench audit --json` prints", path=str(path),
                         field="--previous")
    out: Clusters = {}
    for number, row in enumerate(rows, start=1):
        names = [row.get(k) for k in ("human", "statistic", "level", "grouping", "metric")]
        if not all(isinstance(name, str) for name in names):
            raise InputError("a result has no human, statistic, level, grouping or metric",
                             path=str(path), row=number, field="--previous")
        human, statistic, level, grouping, metric = (str(name) for name in names)
        cluster = row.get("cluster")
        if row.get("kind", "metric") == "metric" and isinstance(cluster, int):
            out[(human, statistic, level, grouping, metric)] = cluster
    return out


def failures(report: Report, checks: Sequence[Check], *, previous: Clusters | None = None,
             store_shares: Mapping[str, tuple[int, int]] | None = None) -> list[Failure]:
    """What each check finds in `report`. `store_shares`: per metric column, (not ok, all)
    scores in the store."""
    out: list[Failure] = []
    several = len(report.settings.get("statistics", ())) > 1
    for check in checks:
        if check.kind == "gate":
            out += _gate(report, check, several)
        elif check.kind == "parse-rate":
            assert check.threshold is not None  # parse_checks sets it
            out += [f for card in report.metrics
                    if (f := _rate(card, check, check.threshold, store_shares or {}))]
        elif check.kind == "flaky":
            assert check.threshold is not None
            out += _flaky(report.repeats, check, check.threshold)
        elif check.kind == "bias":
            assert check.threshold is not None and check.probe is not None
            out += _bias(report.bias, check, check.probe, check.threshold)
        else:
            out += _drops(report, check, previous or {}, several)
    return out


def _flaky(repeats: Sequence[Mapping[str, Any]], check: Check, threshold: float
           ) -> list[Failure]:
    if not repeats:
        return [Failure(check.expression, "(repeats)", "nothing to check: no column of the "
                        "table was drawn more than once (score --repeats K)")]
    out = []
    for row in repeats:
        share = row.get("flip_share")
        if share is not None and share > threshold:
            out.append(Failure(check.expression, str(row["metric"]),
                               f"its verdict flips between its {row['repeats']} draws on "
                               f"{share:.1%} of {row['n']} items, above {threshold:.1%}"))
    return out


def _bias(rows: Sequence[Mapping[str, Any]], check: Check, probe: str, threshold: float
          ) -> list[Failure]:
    shifts = [r for r in rows if r.get("probe") == probe and r.get("measure") == "shift"]
    if not shifts:
        return [Failure(check.expression, "(bias)", f"nothing to check: no judge was probed "
                        f"for {probe} (audit --judge SPEC --bias-probe {probe})")]
    out = []
    for row in shifts:
        extra = row.get("extra", {})
        # a probe with one row per criterion (criteria-order) names it
        it = f"its {extra['criterion']}" if extra.get("criterion") else "it"
        low, high = extra.get("ci_low"), extra.get("ci_high")
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            out.append(Failure(check.expression, str(row["judge"]),
                               f"{probe}: no interval for its shift ({row['n']} unit(s) with "
                               "a move), so it cannot be cleared"))
        elif extra.get("expect") == "lower" and low > -threshold:
            out.append(Failure(check.expression, str(row["judge"]),
                               f"{probe} moves it by {row['value']:+.3f} "
                               f"({extra.get('confidence', 0.95):.0%} CI {low:+.3f} to "
                               f"{high:+.3f}, n={row['n']}, {extra.get('mode')}): it does "
                               f"not fall by {threshold:g} for the flaw"))
        elif extra.get("expect") != "lower" and (low > threshold or high < -threshold):
            out.append(Failure(check.expression, str(row["judge"]),
                               f"{probe} moves {it} by {row['value']:+.3f} "
                               f"({extra.get('confidence', 0.95):.0%} CI {low:+.3f} to "
                               f"{high:+.3f}, n={row['n']}, {extra.get('mode')}), beyond "
                               f"+-{threshold:g}"))
    return out


def _gate(report: Report, check: Check, several: bool) -> list[Failure]:
    out = []
    for block in report.blocks:
        at = where(block.level, block.grouping, block.statistic if several else None)
        for g in block.gate:
            if g.passed:
                continue
            if g.cluster is None:
                message = f"its {block.statistic} is undefined at {at} for {block.human}"
            else:
                message = (f"does not beat {g.sentinel} at {at} for {block.human} "
                           f"({g.reason})")
            out.append(Failure(check.expression, g.metric, message, block.human,
                               block.statistic, block.level, block.grouping))
    return out


def _rate(card: MetricCard, check: Check, threshold: float,
          store_shares: Mapping[str, tuple[int, int]]) -> Failure | None:
    shares = [(card.missing, card.rows, "missing values in the scores table")]
    if card.statuses:
        total = sum(card.statuses.values())
        shares.append((total - card.statuses.get("ok", 0), total,
                       "statuses in the table's .meta.json"))
    if card.column in store_shares:
        bad, total = store_shares[card.column]
        shares.append((bad, total, "statuses in the store"))
    bad, total, source = max(shares, key=lambda s: s[0] / s[1] if s[1] else 0.0)
    if not total or bad / total <= threshold:
        return None
    return Failure(check.expression, card.column,
                   f"{bad / total:.1%} of its scores are not ok ({bad} of {total}, from the "
                   f"{source}), above {threshold:.1%}")


def _drops(report: Report, check: Check, previous: Clusters, several: bool) -> list[Failure]:
    out, compared = [], 0
    for block in report.blocks:
        at = where(block.level, block.grouping, block.statistic if several else None)
        for row in block.rows:
            before = previous.get((block.human, block.statistic, block.level, block.grouping,
                                   row.column))
            if row.kind != "metric" or before is None:
                continue
            compared += 1
            if row.cluster is None:
                message = (f"was in cluster {before} at {at} for {block.human}; now its "
                           f"{block.statistic} is undefined")
            elif row.cluster > before:
                message = (f"fell from cluster {before} to cluster {row.cluster} at {at} "
                           f"for {block.human}")
            else:
                continue
            out.append(Failure(check.expression, row.column, message, block.human,
                               block.statistic, block.level, block.grouping))
    if not compared:
        out.append(Failure(check.expression, "(previous audit)",
                           "nothing to compare: the previous audit has none of these metrics "
                           "in these settings"))
    return out


def store_shares(store_path: Path, cards: Sequence[MetricCard],
                 keys: set[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Per metric column with a signature: (not ok, all) of the store's scores of that
    signature on the (item, system) rows in `keys` (the table's)."""
    from judgebench.engine.store import Store

    out: dict[str, tuple[int, int]] = {}
    with Store(store_path, readonly=True) as store:
        for card in cards:
            if not card.signature:
                continue
            statuses = [str(s.status) for s in store.scores(card.signature)
                        if (s.item, s.system) in keys]
            if statuses:
                out[card.column] = (sum(1 for s in statuses if s != "ok"), len(statuses))
    return out
