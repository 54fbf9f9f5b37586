"""Rebuild the fixtures of this folder from a clone of tatsu-lab/alpaca_eval.

    python tests/data/alpaca_eval/convert.py /path/to/alpaca_eval [COMMIT]

Reads results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json at COMMIT (default
HEAD) with `git show` and writes <model>.csv here: one row per instruction with item (the
annotation's position, the same instruction order in every model's file), system_a = the
baseline (generator_1, AlpacaEval's output_1), system_b = the model (generator_2,
output_2), preference = P(A is better) and the outputs' lengths in characters.

AlpacaEval's preference p is in [1, 2]: 1 = output_1 (the baseline) is better, 2 = output_2
(the model) is better, fractional in between (the judge's probability, shifted by 1); 0 is
an old encoding of a draw and means 1.5. So P(model better) = p - 1 and, with A = the
baseline, P(A is better) = 2 - p (both exact in floating point for p in [1, 2]).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

MODELS = ("jina-chat", "alpaca-7b")
ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"


def convert(repo: str, model: str, commit: str = "HEAD") -> pd.DataFrame:
    path = f"results/{model}/{ANNOTATOR}/annotations.json"
    text = subprocess.check_output(["git", "-C", repo, "show", f"{commit}:{path}"])
    frame = pd.DataFrame(json.loads(text))
    p = frame["preference"].astype(float).replace({0.0: 1.5})
    return pd.DataFrame({
        "item": range(len(frame)),
        "system_a": frame["generator_1"],
        "system_b": frame["generator_2"],
        "preference": 2.0 - p,
        "length_a": frame["output_1"].str.len(),
        "length_b": frame["output_2"].str.len(),
    })


def main() -> None:
    repo = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    here = Path(__file__).parent
    for model in MODELS:
        convert(repo, model, commit).to_csv(here / f"{model}.csv", index=False)


if __name__ == "__main__":
    main()
