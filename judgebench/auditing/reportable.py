"""The audit's section "What you can report": where a human column labels only some rows,
people's mean per system with each audited metric standing in as the judge on the rest.

Per human column with labels on some rows and not on others, per metric column and per
system: the PPI++ estimate of the system's human mean (Angelopoulos, Duchi, Zrnic 2023;
`meta_eval.estimation.ppi_mean`, the metric negated where lower is better) and its interval
at the audit's confidence level, beside the human-only interval of the labelled rows alone
(`human_only_mean`), and what the metric was worth in labels: the effective labels (how many
human labels alone would give the same interval) and that minus the labels used. A system
with fewer than 2 labels, or whose metric is missing on some of its rows (failed or not
scored: the estimate needs the judge on every row), gets the sentence saying so instead of a
number. `judgebench estimate` gives the rest (pass rates, strata, weights, target widths).
A fully labelled human column has no section: report its mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judgebench.services.estimate_result import signature
from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:
    import numpy as np

    from judgebench.tables.prepared import PreparedTable
    from meta_eval.estimation import Estimate


def reportable(prepared: PreparedTable, *, humans: Sequence[str], metrics: Sequence[str],
               confidence: float) -> list[dict[str, Any]]:
    """One row per (human column labelled on a subset, metric column, system), as above."""
    import numpy as np

    frame = prepared.frame
    systems = frame["system"].astype(str).to_numpy()
    out: list[dict[str, Any]] = []
    for human in humans:
        labels = frame[human].to_numpy(dtype=float)
        labelled = np.isfinite(labels)
        if labelled.all() or not labelled.any():
            continue
        for metric in metrics:
            if metric not in frame.columns:  # a corpus-only metric has no rows
                continue
            judge = frame[metric].to_numpy(dtype=float)
            settings = {"statistic": "mean", "judge": metric, "human": human,
                        "by": "system", "confidence": f"{confidence:g}"}
            if not prepared.infos[metric].higher_is_better:  # PPI++ tunes lam in [0, 1]
                judge = -judge
                settings["judge_sign"] = "negated"
            for system in dict.fromkeys(systems.tolist()):
                rows = systems == system
                out.append(_row(human, metric, system, judge[rows], labels[rows], confidence,
                                settings))
    return out


def _row(human: str, metric: str, system: str, judge: np.ndarray, labels: np.ndarray,
         confidence: float, settings: dict[str, str]) -> dict[str, Any]:
    import numpy as np

    from meta_eval.estimation import human_only_mean, ppi_mean

    count = int(np.isfinite(labels).sum())
    row: dict[str, Any] = {"human": human, "metric": metric, "system": system,
                           "items": int(labels.size), "labels": count,
                           "confidence": confidence}
    missing = int((~np.isfinite(judge)).sum())
    if count < 2 or missing:
        row["undefined"] = (f"{count} of its {labels.size} rows labelled: an estimate needs "
                            "at least 2" if count < 2 else
                            f"{metric} has no score on {missing} of its {labels.size} rows: "
                            "the estimate needs the judge on every row")
        return row
    alone = human_only_mean(human=labels, confidence=confidence)
    corrected = ppi_mean(judge=judge, human=labels, confidence=confidence)
    row.update(_numbers(corrected), human_only=_interval(alone), lam=corrected.lam,
               effective_labels=finite_or_none(corrected.effective_labels),
               labels_worth=finite_or_none(corrected.labels_worth), undefined=None,
               signature=signature("ppi++", settings))
    return row


def _interval(estimate: Estimate) -> dict[str, float | None]:
    return {"point": finite_or_none(estimate.point), "lower": finite_or_none(estimate.lower),
            "upper": finite_or_none(estimate.upper)}


def _numbers(estimate: Estimate) -> dict[str, float | None]:
    return {**_interval(estimate), "standard_error": finite_or_none(estimate.standard_error)}
