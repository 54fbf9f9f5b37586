"""judgebench: score generated text with pluggable metrics and audit them against people.

The Python API is `judgebench.api`, re-exported here: one function per command (`score`,
`meta_eval`, `meta_eval_pairwise`, `audit`, `aggregate`, `combine`, `estimate`, `escalate`,
`fit`, `items`, `compare_judges`, `diff`, `runs`, `logs`, `bench`, `suites`, `meta_eval_spans`,
`meta_eval_reliability`, `label_sample`), each returning a result with `to_pandas()` and
`to_json()`, and people's labels in a store (`define_criterion`, `save_label`,
`current_labels`, ...: `judgebench.engine.labels`). Importing this package is cheap: the
API, pandas, the plugins and any model library load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from judgebench._version import __version__

if TYPE_CHECKING:
    from judgebench.api import (
        aggregate,
        audit,
        bench,
        combine,
        compare_judges,
        current_labels,
        define_criterion,
        diff,
        escalate,
        estimate,
        fit,
        get_criterion,
        get_sample,
        items,
        label_history,
        label_sample,
        labelled_items,
        logs,
        meta_eval,
        meta_eval_pairwise,
        meta_eval_reliability,
        meta_eval_spans,
        record_sample,
        runs,
        save_label,
        save_labels,
        score,
        suites,
        withdraw_label,
    )

__all__ = ["__version__", "aggregate", "audit", "bench", "combine", "compare_judges",
           "current_labels", "define_criterion", "diff", "escalate", "estimate", "fit",
           "get_criterion", "get_sample", "items", "label_history", "label_sample",
           "labelled_items", "logs", "meta_eval", "meta_eval_pairwise", "meta_eval_reliability",
           "meta_eval_spans", "record_sample", "runs", "save_label", "save_labels", "score",
           "suites", "withdraw_label"]
API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in API:
        from judgebench import api

        return getattr(api, name)
    raise AttributeError(f"module 'judgebench' has no attribute {name!r}")
