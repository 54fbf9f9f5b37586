"""Rebuild pairs.csv and statistics.json from a git mirror of princeton-nlp/LLMBar.

    python make_fixture.py /path/to/LLMBar.git [commit]

pairs.csv: one row per LLMBar instance (item = subset/index), the gold label as human.gold
and, per evaluator, the winner of the first round in each order (`swap = False`: output_1
shown first -> .ab; `swap = True`: output_2 shown first, already mapped back to the original
outputs by LLMBar -> .ba); results[-1] is read, as LLMBar's evaluate.py does.
statistics.json: the evaluators' own statistics.json, as stored.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SUBSETS = ("Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut",
           "Adversarial/Manual")
EVALUATORS = {"gpt4-vanilla": "GPT-4/Vanilla", "chatgpt-vanilla": "ChatGPT/Vanilla",
              "gpt4-swap-cot": "GPT-4/Swap_CoT"}
LABEL = {"1": "a", "2": "b"}


def show(git_dir: str, commit: str, path: str) -> object:
    text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def main(git_dir: str, commit: str = "HEAD") -> None:
    build(git_dir, commit, EVALUATORS, LABEL, Path(__file__).parent)


def build(git_dir: str, commit: str, evaluators: dict[str, str], label: dict[Any, str],
          here: Path) -> None:
    """pairs.csv and statistics.json in `here` for `evaluators` ({column: LLMBar's folder}),
    each winner written as `label` maps it."""
    rows: list[dict[str, str]] = []
    stats: dict[str, dict[str, object]] = {}
    for subset in SUBSETS:
        base = f"Dataset/LLMBar/{subset}"
        dataset = show(git_dir, commit, f"{base}/dataset.json")
        assert isinstance(dataset, list)
        subset_rows = [{"item": f"{subset}/{k}", "system_a": "output_1",
                        "system_b": "output_2", "category": subset.split("/")[-1],
                        "human.gold": label[str(x["label"])]} for k, x in enumerate(dataset)]
        for name, evaluator in evaluators.items():
            result = show(git_dir, commit, f"{base}/evaluators/{evaluator}/result.json")
            assert isinstance(result, list) and len(result) == len(dataset)
            for row, x, gold in zip(subset_rows, result, dataset, strict=True):
                assert x["output_1"] == gold["output_1"] and x["label"] == gold["label"]
                last = x["results"][-1]
                row[f"{name}.ab"] = label[last["swap = False"]["winner"]]
                row[f"{name}.ba"] = label[last["swap = True"]["winner"]]
            stats.setdefault(subset, {})[name] = show(
                git_dir, commit, f"{base}/evaluators/{evaluator}/statistics.json")
        rows += subset_rows
    with open(here / "pairs.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (here / "statistics.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
