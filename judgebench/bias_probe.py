"""The BiasProbe base class: a judge-bias probe for `judgebench audit --judge`.

A bias probe edits a judged answer in a way that must not change its quality (padding that
adds no content, a fake citation, a note that most people prefer it, ...) and the audit
measures how much the judge moves (judgebench.auditing.bias_battery). Plugins register bias
probes through the same `register_probes` hook as the metamorphic probes (a subclass of
`BiasProbe`, or an instance of one). A probe runs on the modes it names:

- "pointwise": each sample scored as given and with its output edited;
- "pairwise":  each answer judged against its edited copy, in both orders.

`edit(text, rng)` returns the edited text, or None where the probe does not apply (counted as
skipped). It must change only what `description` says, and draw any randomness from `rng`
(seeded by the audit's seed, the probe, the item and the system). `expect` says what a fair
judge does: "same" (the edit keeps the quality: it must not move) or "lower" (the edit adds
a flaw, e.g. a fallacy: it must move down by at least `threshold`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    import numpy as np

Mode = Literal["pointwise", "pairwise"]
MODES: tuple[Mode, ...] = ("pointwise", "pairwise")
#: "same": the edit keeps the answer's quality, so a fair judge does not move; "lower": the
#: edit makes the answer worse (a flaw kept in a right answer), so a fair judge moves down.
BiasExpect = Literal["same", "lower"]
BIAS_EXPECTS: tuple[BiasExpect, ...] = ("same", "lower")


class BiasProbe:
    """One judge-bias probe. Subclasses set `name`, `description`, `modes` and `threshold`
    and implement `edit`."""

    #: Unique among registered probes; the report's `probe` field and `bias:NAME` in --fail-on.
    name: ClassVar[str]
    #: One line for the report: the edit made.
    description: ClassVar[str]
    #: The kinds of judge it applies to.
    modes: ClassVar[tuple[Mode, ...]] = MODES
    #: What a fair judge does: "same" (does not move) or "lower" (moves down).
    expect: ClassVar[BiasExpect] = "same"
    #: X in [0, 1), unless `--fail-on bias:NAME>X` gives another: with expect "same" the
    #: |shift| above which the judge is biased; with "lower" the fall it must at least show.
    threshold: ClassVar[float] = 0.1

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        """The edited text, or None where the probe does not apply."""
        raise NotImplementedError(f"bias probe {self.name} implements no edit")
