"""The sentinel gate: a metric passes only if it is significantly better than every sentinel.

Given a significance-cluster ranking of metrics and sentinels together (meta_eval's
`significance_clusters`: sorted by the statistic, a new cluster opens when a metric is
significantly worse than a member of the current one), a metric passes at that level and
grouping when

    cluster(metric) < min over defined sentinels s of cluster(s),

i.e. it lands in a strictly better cluster than the best sentinel (Perrella et al. 2024,
"Guardians of the Machine Translation Meta-Evaluation: Sentinel Metrics Fall In!"). A
sentinel whose statistic is undefined (a constant under a correlation; an input-only
regressor within items) cannot be compared and does not block; a metric whose statistic is
undefined fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from meta_eval import Ranking, statistics


def credits_ties(statistic: str) -> bool:
    """Whether `statistic` can count a metric tie as right (so a constant metric gets a
    value), from meta_eval's table of statistics."""
    return statistics.get(statistic).credits_ties


@dataclass(frozen=True)
class GateResult:
    metric: str
    passed: bool
    cluster: int | None
    #: The best-placed defined sentinel, which the metric had to beat.
    sentinel: str | None
    sentinel_cluster: int | None
    reason: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def gate(ranking: Ranking, *, metrics: Sequence[str], sentinels: Sequence[str]
         ) -> list[GateResult]:
    """The gate result of each metric in `metrics` under `ranking`."""
    placed = {m.metric: m for m in ranking.metrics}
    defined = [placed[s] for s in sentinels if s in placed and math.isfinite(placed[s].value)]
    goodness = statistics.get(ranking.statistic or "pearson").goodness
    best = min(defined, key=lambda m: (m.cluster, -goodness(m.value)), default=None)
    out = []
    for name in metrics:
        entry = placed[name]
        if not math.isfinite(entry.value):
            out.append(GateResult(name, False, None, best.metric if best else None,
                                  best.cluster if best else None,
                                  "the statistic is undefined for this metric"))
        elif best is None:
            out.append(GateResult(name, True, entry.cluster, None, None,
                                  "no sentinel has a defined statistic here"))
        elif entry.cluster < best.cluster:
            out.append(GateResult(name, True, entry.cluster, best.metric, best.cluster,
                                  f"cluster {entry.cluster}, better than {best.metric} "
                                  f"(cluster {best.cluster})"))
        else:
            relation = ("not significantly better than" if entry.cluster == best.cluster
                        else "significantly worse than")
            out.append(GateResult(name, False, entry.cluster, best.metric, best.cluster,
                                  f"cluster {entry.cluster}: {relation} {best.metric} "
                                  f"(cluster {best.cluster})"))
    return out


def explain(sentinel: str, *, level: str, grouping: str, statistic: str,
            value: float, beaten: bool) -> str | None:
    """What it means when `sentinel` looks good (or, for some, when it is undefined).

    `beaten` is False when the sentinel ties with or beats at least one metric. Returns None
    when there is nothing to say.
    """
    base = sentinel.split(":", 1)[0]
    segment_none = level == "segment" and grouping == "none"
    if not math.isfinite(value):
        if base == "sentinel.constant" and not credits_ties(statistic):
            return (f"{statistic} is undefined for a constant metric: it cannot credit a "
                    "metric for predicting ties. With metrics that tie often (judges on a "
                    "1-5 scale), prefer acc-eq, whose tie calibration removes the advantage "
                    "continuous metrics get from never tying (Deutsch et al. 2023).")
        if base in ("sentinel.src", "sentinel.ref") and grouping == "item":
            return (f"{base} gives every system the same score within an item, so it is "
                    "undefined when correlating within items: this grouping cannot reward "
                    "knowing which inputs are hard.")
        if base in ("sentinel.src", "sentinel.ref") and level == "system":
            return (f"{base} is undefined at system level: every system was scored on the "
                    "same inputs, so every system mean of an input-only score is the same.")
        return None
    if beaten:
        return None
    if base in ("sentinel.src", "sentinel.ref"):
        if segment_none:
            return (f"{base} sees only the {'input' if base.endswith('src') else 'reference'}"
                    " yet ranks with the metrics: segment correlations without grouping "
                    "reward predicting which inputs are hard (all systems do well or badly on "
                    "the same items). Prefer grouping by item.")
        if level == "system":
            return (f"{base} ranks with the metrics at system level: with few systems, or "
                    "systems that saw different inputs, the ranking is fragile; a blind "
                    "sentinel should not be able to do this.")
        return (f"{base} ranks with the metrics under grouping '{grouping}': items differ "
                "in difficulty and this grouping lets a metric gain from knowing which.")
    if base == "sentinel.cand":
        return ("sentinel.cand reads only the output and ranks with the metrics: surface "
                "cues (style, fluency, length, a system's habits) predict the human scores "
                "as well as they do; their agreement may not come from comparing with the "
                "input or reference.")
    if base == "sentinel.length":
        return ("output length alone ranks with the metrics: people's scores follow length "
                "here, so a metric correlated with length looks good for the wrong reason.")
    if base == "sentinel.random":
        return ("a random score per system is not significantly worse than some metrics: "
                "the data (items, systems) are too few to separate them, or those metrics "
                "carry no signal at this level.")
    if base == "sentinel.constant" and statistics.get(statistic).on_scale:
        return (f"a constant score ranks with the metrics under {statistic}: on the human "
                "scale, always giving one score is as close to people as these metrics are.")
    if base == "sentinel.constant":
        return (f"a constant (all ties) ranks with the metrics under {statistic}: many "
                "pairs are human ties and this statistic credits predicting ties; "
                "continuous metrics never tie and lose those pairs.")
    return f"{base} ranks with the metrics at this level and grouping."
