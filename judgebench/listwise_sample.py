"""A listwise sample: one prompt and its N candidates, judged at once (best of N).

`score` groups a listwise file's rows (item, candidate, output) by item into one Sample per
item (`judgebench.engine.listwise_table`): its `system` is `LISTWISE_SYSTEM` and its `output`
the candidates as canonical JSON (`candidates_output`), so the store's content hash covers
every candidate and `--resume` rejudges an item whose candidates changed. A listwise judge
reads them back with `listwise_candidates`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from judgebench.models import Sample

#: The `system` of every listwise sample (a table keyed by item and candidate has no system).
LISTWISE_SYSTEM = "candidates"


def candidates_output(candidates: Sequence[tuple[str, str]]) -> str:
    """(id, output) pairs, in the input's order, as a listwise sample's `output`."""
    return json.dumps({"candidates": [{"id": cid, "output": text} for cid, text in candidates]},
                      ensure_ascii=False, sort_keys=True)


def listwise_candidates(sample: Sample) -> list[tuple[str, str]]:
    """A listwise sample's (id, output) pairs, in the input's order. ValueError for a sample
    that is not one (its output is not `candidates_output`'s)."""
    try:
        data = json.loads(sample.output or "")
        pairs = [(str(c["id"]), str(c["output"])) for c in data["candidates"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"sample {sample.item}/{sample.system} is not a listwise sample (one "
                         "prompt's candidates, grouped by `score` from a listwise file's "
                         f"item/candidate/output rows): {exc}") from None
    return pairs
