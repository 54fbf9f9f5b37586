"""The summaries of the audit of pairwise judges (`judgebench audit PAIRS --pairwise`, whose
report `judgebench.auditing.pairwise_report` builds).

PAIRS is a pairwise table (DESIGN.md: one row per compared pair, `human.*` preferences and
per judge `<spec>`, `<spec>.ab`, `<spec>.ba` verdicts). The report carries every statistic of
`meta-eval --pairwise` (accuracy per order, both-correct, consistency, tie rate, the kappas;
item-bootstrap CIs; per category and macro-averaged with `--by`; significance clusters of the
judges' accuracy) and a summary per human column that opens the report, next to the
judge-bias probes. There are no sentinels and no gate: a pairwise judge is compared with
people and with the other judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from meta_eval.pairwise_eval import CEILING

#: The statistics a summary names, in this order.
SUMMARY = ("accuracy", "both-correct", "consistency")


@dataclass(frozen=True)
class JudgeLine:
    judge: str
    values: dict[str, tuple[float | None, float | None, float | None]]  # value, ci_low, ci_high
    cluster: int | None


@dataclass(frozen=True)
class PairwiseSummary:
    """What the report opens with for one human column: its judges, most accurate first."""

    human: str
    judges: list[JudgeLine]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summaries(rows: Sequence[dict[str, Any]], humans: Sequence[str],
              cycles: Sequence[dict[str, Any]] | None = None,
              alpha: float = 0.05) -> list[PairwiseSummary]:
    """Per human column, each judge's accuracy, both-correct and consistency (overall, or the
    macro average over categories), best accuracy first, and a sentence saying it; with
    `cycles` (`audit --robustness`), a best judge whose verdicts no ranking explains (cyclic
    triples, or Bradley-Terry rejected at `alpha`) is said to be so first."""
    overall = [r for r in rows if r.get("category") in (None, "(macro)")]
    out = []
    for human in humans:
        judges: dict[str, JudgeLine] = {}
        for row in overall:
            if row["metric"] == CEILING or row["human"] not in (human, None):
                continue
            if row["statistic"] not in SUMMARY:
                continue
            line = judges.setdefault(row["metric"], JudgeLine(row["metric"], {}, None))
            line.values[row["statistic"]] = (row.get("value"), row.get("ci_low"),
                                             row.get("ci_high"))
            if row["statistic"] == "accuracy" and row.get("cluster") is not None:
                judges[row["metric"]] = JudgeLine(line.judge, line.values, row["cluster"])
        ranked = sorted(judges.values(), key=lambda j: -_value(j, "accuracy"))
        text = _sentence(human, ranked)
        found = {c["judge"]: c for c in cycles or [] if c.get("kind") == "judge"}
        if ranked and ranked[0].judge in found:
            c = found[ranked[0].judge]
            misfit = c.get("bt_p_value") is not None and c["bt_p_value"] <= alpha
            if c.get("cyclic_triples") or misfit:
                why = [f"{c['cyclic_triples']} of {c['triples']} system triples are cyclic"]
                if misfit:
                    why.append(f"Bradley-Terry is rejected (p={c['bt_p_value']:.3g})")
                text = (f"Not robust: {ranked[0].judge}'s verdicts rank no single order of "
                        f"the systems ({'; '.join(why)}). {text[0].upper()}{text[1:]}")
        out.append(PairwiseSummary(human, ranked, text))
    return out


def _value(line: JudgeLine, statistic: str) -> float:
    value = line.values.get(statistic, (None, None, None))[0]
    return float("-inf") if value is None else value


def percent(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "n/a"
    interval = f" [{100 * low:.1f}, {100 * high:.1f}]" if low is not None and high is not None \
        else ""
    return f"{100 * value:.1f}%{interval}"


def _sentence(human: str, ranked: Sequence[JudgeLine]) -> str:
    if not ranked:
        return f"no judge has a verdict to compare with {human}"
    best = ranked[0]
    accuracy = percent(*best.values.get("accuracy", (None, None, None)))
    consistency = percent(*best.values.get("consistency", (None, None, None)))
    tied = [j.judge for j in ranked[1:] if best.cluster is not None and j.cluster == best.cluster]
    text = (f"{best.judge} agrees best with {human}: accuracy {accuracy}, the same verdict in "
            f"both orders on {consistency} of pairs")
    if tied:
        text += f"; not significantly better than {', '.join(tied)}"
    elif best.cluster is not None and len(ranked) > 1:
        text += "; significantly better than every other judge"
    return text
