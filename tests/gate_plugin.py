"""A metric plugin (`judgebench -p tests/gate_plugin.py ...`) whose one score call waits at
a gate until the test opens it: `gate.words`, the output's length in words, scored a whole
run's samples at a time (one call per run).

`$GATE_FIFO` names a named pipe (os.mkfifo) and `$GATE_CALL` which of the process's score
calls waits (1 = the first): that call opens the pipe for reading, which blocks until the
test opens it for writing, and goes on once the test has closed it. A test starts the command
in a process of its own, reads its stderr until the line it waits for comes (the run is held
at the gate, so nothing else is written and the progress line comes after its interval), then
opens the gate: no clock is involved.
"""

from __future__ import annotations

import os
from typing import ClassVar

from judgebench.plugin_api import MAX_BATCH, EmptyText, Metric, MetricInfo, hookimpl

_calls = 0


class GatedWords(Metric):
    info = MetricInfo(name="gate.words", kind="reference", requires=("output",),
                      value_range=(0.0, None), description="output length in words; one "
                      "score call waits at a gate (tests/gate_plugin.py)",
                      empty_text=EmptyText(output="scored"))
    batch_size: ClassVar[int] = MAX_BATCH
    parallel_safe: ClassVar[bool | None] = False  # the count of calls is this process's

    def score(self, samples):
        global _calls
        _calls += 1
        if _calls == int(os.environ.get("GATE_CALL", "0")):
            with open(os.environ["GATE_FIFO"], encoding="utf-8") as gate:
                gate.read()
        return [float(len((s.output or "").split())) for s in samples]


@hookimpl
def register_metrics(register):
    register(GatedWords)
