"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py /path/to/LLMBar.git [commit]

reads a git mirror of princeton-nlp/LLMBar (default commit 900616b) as
tests/data/pairwise/llmbar/make_fixture.py does: per subset, `dataset.json` (input,
output_1, output_2, gold `label`) and, per stored evaluator, the winner of the last round
(`results[-1]`, as LLMBar's evaluate.py reads it) with output_1 shown first (`swap = False`
-> `<judge>.ab`) and with output_2 shown first (`swap = True`, already mapped back to the
original outputs by LLMBar -> `<judge>.ba`), and its `statistics.json` (`correct_average` is
the paper's Acc.). gzip is written with mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMIT = "900616bff90b6c6c8e1681f7d079250637c55992"
SUBSETS = {"Natural": "Natural", "Neighbor": "Adversarial/Neighbor",
           "GPTInst": "Adversarial/GPTInst", "GPTOut": "Adversarial/GPTOut",
           "Manual": "Adversarial/Manual"}
DESCRIPTIONS = {
    "Natural": "instances from existing human-preference sets, filtered and relabelled",
    "Neighbor": "adversarial: the worse output answers a neighbouring instruction",
    "GPTInst": "adversarial: the worse output answers an instruction GPT-4 rewrote",
    "GPTOut": "adversarial: the worse output is GPT-4's off-instruction answer",
    "Manual": "adversarial: constructed by the authors",
}
#: column -> (LLMBar's evaluator folder, the label the paper gives it)
EVALUATORS = {"gpt4-vanilla": ("GPT-4/Vanilla", "GPT-4 Vanilla+Rules"),
              "chatgpt-vanilla": ("ChatGPT/Vanilla", "ChatGPT Vanilla+Rules"),
              "gpt4-swap-cot": ("GPT-4/Swap_CoT", "GPT-4 Swap+CoT")}
LABEL = {"1": "a", "2": "b"}

CITATION = """@inproceedings{zeng2024llmbar,
  title = {Evaluating Large Language Models at Evaluating Instruction Following},
  author = {Zeng, Zhiyuan and Yu, Jiatong and Gao, Tianyu and Meng, Yu and Goyal, Tanya
            and Chen, Danqi},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2024}
}"""


def show(git_dir: str, commit: str, path: str) -> object:
    text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def gz(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        for row in rows:
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    return buffer.getvalue()


def main(git_dir: str, commit: str = COMMIT) -> None:
    samples, human, published = [], [], []
    for subset, base in SUBSETS.items():
        folder = f"Dataset/LLMBar/{base}"
        dataset = show(git_dir, commit, f"{folder}/dataset.json")
        assert isinstance(dataset, list)
        rows = []
        for k, x in enumerate(dataset):
            item = f"{subset}/{k}"
            samples.append({"item": item, "input": x["input"], "system_a": "output_1",
                            "output_a": x["output_1"], "system_b": "output_2",
                            "output_b": x["output_2"], "subset": subset})
            rows.append({"item": item, "system_a": "output_1", "system_b": "output_2",
                         "subset": subset, "human.gold": LABEL[str(x["label"])]})
        for column, (evaluator, label) in EVALUATORS.items():
            result = show(git_dir, commit, f"{folder}/evaluators/{evaluator}/result.json")
            assert isinstance(result, list) and len(result) == len(dataset)
            for row, x, gold in zip(rows, result, dataset, strict=True):
                assert x["output_1"] == gold["output_1"] and x["label"] == gold["label"]
                last = x["results"][-1]
                row[f"{column}.ab"] = LABEL[last["swap = False"]["winner"]]
                row[f"{column}.ba"] = LABEL[last["swap = True"]["winner"]]
            stats = show(git_dir, commit, f"{folder}/evaluators/{evaluator}/statistics.json")
            assert isinstance(stats, dict)
            percent = float(str(stats["correct_average"]).rstrip("%"))
            published.append({"metric": label, "spec": None, "protocol": "preference",
                              "statistic": "accuracy", "subset": subset,
                              "value": round(percent / 100, 3), "precision": 3,
                              "table": "Zeng et al. 2024, main results (Acc.; LLMBar's "
                                       f"statistics.json, {evaluator})",
                              "verdicts_column": column})
        human += rows
    files = {}
    for name, data in (("samples.jsonl.gz", gz(samples)), ("human.jsonl.gz", gz(human))):
        (HERE / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {
        "name": "llmbar",
        "title": "LLMBar (instruction following, pairwise)",
        "description": ("419 instructions, each with two outputs of which exactly one follows "
                        "the instruction (gold label by the authors, no ties): Natural (100) "
                        "and the four Adversarial sets Neighbor (134), GPTInst (92), GPTOut "
                        "(47) and Manual (46). Stored verdicts of three published judges "
                        "(both presentation orders) are in the human table."),
        "kind": "pairwise",
        "criteria": ["preference"],
        "annotators": {},
        "subsets": DESCRIPTIONS,
        "protocols": [{"name": "preference", "criterion": "preference", "level": "pair",
                       "grouping": None, "statistics": ["accuracy", "consistency"],
                       "human": "human.gold", "ties": "drop", "failed_as": "wrong",
                       "by": "subset"}],
        "published": published,
        "licence": "MIT",
        "licence_url": "https://github.com/princeton-nlp/LLMBar/blob/main/LICENSE",
        "citation": CITATION,
        "source": {"repository": "https://github.com/princeton-nlp/LLMBar", "commit": commit,
                   "files": [f"Dataset/LLMBar/{b}/{f}" for b in SUBSETS.values()
                             for f in ("dataset.json", *(f"evaluators/{e}/result.json"
                                                         for e, _ in EVALUATORS.values()))]},
        "files": files,
    }
    (HERE / "suite.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
