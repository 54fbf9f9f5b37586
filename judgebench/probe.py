"""The Probe base class: a metamorphic probe for `judgebench audit --probe`.

A probe changes what a metric is shown in a known way and states how the score must move.
Plugins register probes through the `register_probes` hook (subclasses of `Probe`, or
instances of them); the audit runs every registered probe, in registration order, on every
probed metric, with scores oriented so that higher is better (see judgebench.auditing.probes):

    expect "lower":  right when score(changed) < score(original)          (a tie is not a move)
    expect "same":   right when |score(changed) - score(original)| <= atol + rtol |original|
    expect "best":   right when score(changed) >= the best score among the item's systems,
                     all scored against the changed sample's references (one changed sample
                     per item)

Two scopes:

- `scope = "sample"`: `perturb(sample, ctx)` returns the changed sample, or None where the
  probe does not apply (it is then counted as skipped). The default replaces the output with
  `transform(sample, ctx)`, so most probes implement `transform` only. Changed samples are
  scored in the same run as the originals.
- `scope = "run"`: `rerun(samples, seed)` returns the samples to score in a separate run and,
  for each, the index of the original it stands for (renaming every system, another batch
  order); `expect` is then "same".

A probe must be deterministic given its inputs: randomness comes from `seeded_rng`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from judgebench.models import Sample

if TYPE_CHECKING:
    import numpy as np

Expect = Literal["lower", "same", "best"]
Scope = Literal["sample", "run"]
EXPECTS: tuple[Expect, ...] = ("lower", "same", "best")
#: Where a sentence ends (for probes and bias probes that work on sentences).
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def seeded_rng(*key: object) -> np.random.Generator:
    """A generator determined only by `key` (not by call order or process)."""
    import numpy as np

    digest = hashlib.sha256("\x1f".join(map(str, key)).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


@dataclass(frozen=True)
class Context:
    """What a perturbation may look at besides its sample: every probed sample, and a seed."""

    samples: Sequence[Sample]
    seed: int


def against(sample: Sample, references: Sequence[str]) -> Sample:
    """`sample` with `references` as its references (unchanged if they already are)."""
    refs = list(references)
    if sample.references == refs:
        return sample
    return sample.model_copy(update={"reference": refs[0] if len(refs) == 1 else refs})


class Probe:
    """One metamorphic probe. Subclasses set `name`, `description`, `perturbs` and `expect`
    and implement `transform` (or `perturb`), or, with `scope = "run"`, `rerun`."""

    #: Unique among registered probes; the report's `probe` field.
    name: ClassVar[str]
    #: One line for the report: the change made.
    description: ClassVar[str]
    #: What the change touches, e.g. "output", "output and reference", "system", "order".
    perturbs: ClassVar[str] = "output"
    #: How the oriented score must move: "lower", "same" or "best".
    expect: ClassVar[Expect]
    scope: ClassVar[Scope] = "sample"

    def transform(self, sample: Sample, ctx: Context) -> str | None:
        """The changed output, or None where the probe does not apply."""
        raise NotImplementedError(f"probe {self.name} implements neither transform nor perturb")

    def perturb(self, sample: Sample, ctx: Context) -> Sample | None:
        """The changed sample, or None where the probe does not apply. Default: the sample
        with its output replaced by `transform(sample, ctx)`."""
        from judgebench.conversation import with_output

        text = self.transform(sample, ctx)
        return None if text is None else with_output(sample, text)

    def rerun(self, samples: Sequence[Sample], seed: int) -> tuple[list[Sample], list[int]]:
        """For `scope = "run"`: the samples of the separate run, and per sample the index of
        the original in `samples` it stands for (each original at most once)."""
        raise NotImplementedError(f"probe {self.name} has no separate run")
