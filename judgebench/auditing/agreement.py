"""The report's "Agreement, error and calibration" section: confusion tables and reliability
diagrams, as data (`scale_section`); judgebench.render.html and judgebench.render.markdown
render it.

Computed on the metric columns as they are (never negated: these statistics compare values
with the human scale), over every unit where both are present:

- a confusion table (judge category x human category, `meta_eval.agreement.confusion_table`,
  human scores rounded half up) per human column and metric, when a categorical statistic
  (kappa, kappa-linear, qwk, krippendorff-ordinal, krippendorff-nominal) is asked for;
- a reliability diagram (`meta_eval.reliability.reliability_curve`: per bin, mean predicted
  probability against observed frequency of label 1, with the diagonal of perfect
  calibration) per human column and metric, when brier, ece or ece-mass is asked for: one per
  binning asked (equal-width for brier and ece, equal-mass for ece-mass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from meta_eval.agreement import confusion_table
from meta_eval.reliability import reliability_curve
from meta_eval.statistics import get

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray


def scale_section(*, matrices: Mapping[str, FloatArray], human: str, metrics: Sequence[str],
                  statistics: Sequence[str]) -> list[dict[str, Any]]:
    """Entries of the section for one human column: `matrices` maps the human column and each
    metric to its raw (items, systems) matrix."""
    specs = [get(s) for s in statistics]
    out: list[dict[str, Any]] = []
    if any(s.categorical for s in specs):
        for name in metrics:
            table = confusion_table(human=matrices[human], metric=matrices[name])
            out.append({"type": "confusion", "human": human, "metric": name,
                        **table.to_dict()})
    binnings = [b for b, wanted in (("width", any(s.name in ("brier", "ece") for s in specs)),
                                    ("mass", any(s.name == "ece-mass" for s in specs)))
                if wanted]
    for name in metrics:
        for binning in binnings:
            curve = reliability_curve(human=matrices[human], metric=matrices[name],
                                      binning=binning)
            out.append({"type": "reliability", "human": human, "metric": name,
                        **curve.to_dict()})
    return out
