"""The Sentinel base class: a baseline metric for `judgebench audit` that must never look good.

Plugins register subclasses through the `register_sentinels` hook (the host rejects anything
else). A sentinel is a Metric (`info.kind == "sentinel"`) with two more parts of its contract:

- `trained` (class attribute): False for a blind sentinel, scored once and shared by every
  human column; True for one that learns from the human scores, fitted once per human column.
- `fit_predict(samples, human)`: scores for `samples` given the human scores of the same
  samples (`human[i]` for `samples[i]`, None where missing), one result per sample, in order
  (a float or an Outcome, read by `judgebench.metric.outcome_of` as the runner reads a
  metric's). The audit always scores a sentinel through it. The default ignores `human` and
  returns `score(samples)`; a trained sentinel overrides it and must never let a sample's own
  human score (or its item's) decide that sample's score, e.g. by cross-fitting over items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from judgebench.metric import Metric, OptionsT
from judgebench.models import Outcome, Sample


class Sentinel(Metric[OptionsT]):
    """A baseline metric for the audit. `trained` sentinels need human scores to score."""

    trained: ClassVar[bool] = False
    batch_size: ClassVar[int] = 4096

    def fit_predict(self, samples: Sequence[Sample],
                    human: Sequence[float | None]) -> Sequence[float | Outcome | None]:
        """Scores for `samples`; `human[i]` is the human score of `samples[i]` or None."""
        if len(human) != len(samples):
            raise ValueError(f"{len(samples)} samples but {len(human)} human scores")
        return list(self.score(samples))
