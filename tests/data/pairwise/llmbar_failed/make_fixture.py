"""Rebuild pairs.csv and statistics.json from a git mirror of princeton-nlp/LLMBar: three
evaluators whose verdicts include parse failures (a `winner` of null, written `failed`).

    python make_fixture.py /path/to/LLMBar.git [commit]

As ../llmbar/make_fixture.py: one row per LLMBar instance (item = subset/index), the gold
label as human.gold and, per evaluator, the winner of results[-1] in each order (`swap =
False` -> .ab, `swap = True` -> .ba, already mapped back to the original outputs by LLMBar);
statistics.json: the evaluators' own statistics.json, as stored.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EVALUATORS = {"palm2-vanilla-norules": "PaLM2/Vanilla_NoRules",
              "palm2-reference": "PaLM2/Reference",
              "llama2-vanilla-1shot": "LLaMA2/Vanilla_1shot"}
LABEL = {"1": "a", "2": "b", None: "failed"}


def main(git_dir: str, commit: str = "HEAD") -> None:
    here = Path(__file__).parent
    spec = importlib.util.spec_from_file_location("llmbar_fixture",
                                                  here.parent / "llmbar" / "make_fixture.py")
    assert spec is not None and spec.loader is not None
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    fixture.build(git_dir, commit, EVALUATORS, LABEL, here)


if __name__ == "__main__":
    main(*sys.argv[1:])
