"""What answered a run's judges, and when it changed under them.

A signature says what was asked for (`judge.rubric:model=gpt-4o`); a fingerprint says what
answered (`Response.fingerprint`: the model name the answer returned, the API's
``system_fingerprint``, the served checkpoint or the weights' hash), kept beside each score
in the store's `fingerprint` column. Two warnings come of it, for `score` (on stderr) and
`runs`:

- changed mid-run: one run's scores of one signature came from more than one fingerprint;
- changed between runs: a run's fingerprints of a signature differ from those of the latest
  earlier run of the same signature in the store.

A cached answer keeps the fingerprint of the call that made it, so a replay never warns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from judgebench.engine.store import FingerprintCounts


def describe(text: str) -> str:
    """A fingerprint (canonical JSON text) as `model=..., system_fingerprint=...`."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict):
        return text
    return ", ".join(f"{key}={value[key]}" for key in sorted(value)) or "-"


def _listed(counts: Mapping[str, int]) -> str:
    return "; ".join(f"{describe(text)} ({n} score{'s' if n != 1 else ''})"
                     for text, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def warnings(found: FingerprintCounts, run_id: int | None, columns: Mapping[str, str]
             ) -> list[str]:
    """The fingerprint warnings of run `run_id` (module docstring), for its `columns`
    ({column: signature}), from the store's counts (`Store.fingerprints`)."""
    out: list[str] = []
    if run_id is None:
        return out
    for column, signature in columns.items():
        runs = found.get(signature, {})
        mine = runs.get(run_id)
        if not mine:
            continue
        if len(mine) > 1:
            out.append(f"{column}: what answered changed during run {run_id}: {_listed(mine)}")
        earlier = [r for r in runs if r is not None and r < run_id]
        if earlier:
            previous = max(earlier)
            if set(runs[previous]) != set(mine):
                out.append(f"{column}: run {run_id} was answered by {_listed(mine)}, but run "
                           f"{previous} of the same signature by {_listed(runs[previous])}")
    return out
