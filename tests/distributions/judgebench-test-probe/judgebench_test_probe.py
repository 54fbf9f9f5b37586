"""A third-party metamorphic probe: the output without its last word must score lower.

It subclasses the host's Probe and registers through `register_probes`, as any plugin's.
"""

from __future__ import annotations

from judgebench.hookspecs import hookimpl
from judgebench.models import Sample
from judgebench.probe import Context, Probe
from judgebench.registry import ProbeRegister


class DropLastWord(Probe):
    """drop-last-word: the output without its last word; must lower the score."""

    name = "drop-last-word"
    expect = "lower"
    description = "the last word removed"

    def transform(self, sample: Sample, ctx: Context) -> str | None:
        words = (sample.output or "").split()
        return " ".join(words[:-1]) if len(words) >= 2 else None


@hookimpl
def register_probes(register: ProbeRegister) -> None:
    register(DropLastWord)
