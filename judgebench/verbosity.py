"""What third-party libraries may print on the terminal: by default only their errors;
with `judgebench -v` their warnings and progress bars too (transformers' tokenizer warnings
and weight-loading bars, huggingface_hub's download bars, sacrebleu's "tokenized period"
warning, HTTP client chatter). judgebench's own progress bar and messages are not affected.

The libraries read some of these settings when they are first imported, so they are set in
the environment (before any heavy import: plugins import their model libraries only when a
metric is used) and, for a library already imported, through its own switches. A run's
worker processes (`--workers`) start with the same choice (`chosen`): sacrebleu warns there
once per batch.
"""

from __future__ import annotations

import logging
import os
import sys

#: Loggers of libraries that metric and backend plugins use.
THIRD_PARTY_LOGGERS = ("transformers", "huggingface_hub", "sentence_transformers", "datasets",
                       "sacrebleu", "absl", "filelock", "urllib3", "httpx", "httpcore",
                       "LiteLLM", "litellm", "vllm", "torch", "bert_score", "comet")

#: Read by transformers and huggingface_hub when they are imported.
QUIET_ENVIRONMENT = {"TRANSFORMERS_VERBOSITY": "error", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
                     "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


_chosen: bool | None = None  # the process's last choice (None: never made)


def chosen() -> bool | None:
    """What `set_third_party_output` last chose in this process (None: it was not called):
    the worker processes of a run (judgebench.engine.pool) make the same choice."""
    return _chosen


def set_third_party_output(verbose: bool) -> None:
    """Quiet third-party libraries (errors only, no progress bars), or with `verbose` let
    them print their warnings and bars. A variable of QUIET_ENVIRONMENT the user set (not
    empty) is kept."""
    global _chosen
    _chosen = verbose
    level = logging.WARNING if verbose else logging.ERROR
    for name in THIRD_PARTY_LOGGERS:
        logging.getLogger(name).setLevel(level)
    if not verbose:
        for name, value in QUIET_ENVIRONMENT.items():
            if not os.environ.get(name):
                os.environ[name] = value
    # Only libraries already imported are switched (the host imports no model library).
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        transformers_logging.set_verbosity(level)
        (transformers_logging.enable_progress_bar if verbose
         else transformers_logging.disable_progress_bar)()
    hub_utils = sys.modules.get("huggingface_hub.utils")
    if hub_utils is not None:
        (hub_utils.enable_progress_bars if verbose else hub_utils.disable_progress_bars)()
