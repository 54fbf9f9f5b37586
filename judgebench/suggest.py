""""Did you mean ...?": the closest registered names to a name nobody registered.

One rule for every unknown name the user can type (a metric, a metric option, a column, an
aggregation rule, a plugin's hook): `difflib.get_close_matches` over the known names, after a
case-insensitive pass (`lexical.rougel` -> `lexical.rougeL`), and also against the part after
a namespace dot, so `bleu` finds `lexical.bleu` and `coherence` finds `human.coherence`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How similar (difflib's ratio, 0..1) a known name must be to be suggested.
CUTOFF = 0.6
#: Names this much less similar than the closest one are not worth showing beside it.
MARGIN = 0.05


def close_matches(word: str, known: Iterable[object], n: int = 3) -> list[str]:
    """Up to `n` names of `known` closest to `word`, best first; [] when none is close."""
    names = [name for name in dict.fromkeys(str(k) for k in known) if name != word]
    folded = word.casefold()
    same = [name for name in names if name.casefold() == folded]
    if same:  # only the case differs: nothing else is as likely
        return same[:n]
    by_key: dict[str, list[str]] = {}
    for name in names:
        by_key.setdefault(name.casefold(), []).append(name)
        _, dot, tail = name.partition(".")
        if dot and tail:
            by_key.setdefault(tail.casefold(), []).append(name)
    keys = difflib.get_close_matches(folded, list(by_key), n=n, cutoff=CUTOFF)
    if not keys:
        return []
    best = _ratio(folded, keys[0])
    found = [name for key in keys if _ratio(folded, key) >= best - MARGIN for name in by_key[key]]
    return list(dict.fromkeys(found))[:n]


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def did_you_mean(word: str, known: Iterable[object]) -> str:
    """"; did you mean 'x'?" (or "'x' or 'y'") to end an error message, or "" when no known
    name is close to `word`."""
    matches = close_matches(word, known)
    if not matches:
        return ""
    return f"; did you mean {' or '.join(repr(m) for m in matches)}?"
