"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py /path/to/LLMBar.git [commit]

reads a git mirror of princeton-nlp/LLMBar (default commit 900616b) at
`Dataset/Processed/MT-Bench/`: `dataset.json` (input, output_1, output_2, the gold `label`
LLMBar took from the majority of MT-Bench's expert votes) and, per stored evaluator, the
winner of the last round (`results[-1]`, as LLMBar's evaluate.py reads it) with output_1
shown first (`swap = False` -> `<judge>.ab`) and output_2 shown first (`swap = True`, mapped
back to the original outputs by LLMBar -> `<judge>.ba`); a winner LLMBar could not parse
(null) is `failed`. Its `statistics.json` gives the published numbers: `correct_average`
(Acc.) and `equal` (Agr.). `llmeval2/build.py` runs the same conversion on
`Dataset/Processed/LLMEval^2/` (`SETS`). gzip is written with mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent
COMMIT = "900616bff90b6c6c8e1681f7d079250637c55992"
REPOSITORY = "https://github.com/princeton-nlp/LLMBar"
#: column -> (LLMBar's evaluator folder, what the paper calls it)
EVALUATORS = {
    "gpt4-vanilla": ("GPT-4/Vanilla_NoRules", "GPT-4 Vanilla"),
    "gpt4-metrics-reference": ("GPT-4/Metrics_Reference", "GPT-4 Rules+Metrics+Reference"),
    "chatgpt-vanilla": ("ChatGPT/Vanilla_NoRules", "ChatGPT Vanilla"),
    "chatgpt-metrics-reference": ("ChatGPT/Metrics_Reference",
                                  "ChatGPT Rules+Metrics+Reference"),
    "llama2-vanilla": ("LLaMA2/Vanilla_NoRules", "LLaMA2 Vanilla"),
    "llama2-metrics-reference": ("LLaMA2/Metrics_Reference", "LLaMA2 Rules+Metrics+Reference"),
    "palm2-vanilla": ("PaLM2/Vanilla_NoRules", "PaLM2 Vanilla"),
    "palm2-metrics-reference": ("PaLM2/Metrics_Reference", "PaLM2 Rules+Metrics+Reference"),
}
LABEL = {"1": "a", "2": "b", None: "failed"}
LLMBAR_CITATION = """@inproceedings{zeng2024llmbar,
  title = {Evaluating Large Language Models at Evaluating Instruction Following},
  author = {Zeng, Zhiyuan and Yu, Jiatong and Gao, Tianyu and Meng, Yu and Goyal, Tanya
            and Chen, Danqi},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2024}
}"""
SETS: dict[str, dict[str, Any]] = {
    "mt-bench": {
        "folder": "MT-Bench",
        "title": "MT-Bench (chat assistants, expert pairwise votes)",
        "description": (
            "200 pairs of chat-assistant answers to MT-Bench questions (75 distinct "
            "first-turn questions), labelled by the majority of the MT-Bench expert votes "
            "(Zheng et al. 2023), as LLMBar processed them: ties removed, 200 pairs sampled "
            "at random (the model names are not kept). Stored verdicts of four LLMs under "
            "two prompting strategies (Vanilla; Rules+Metrics+Reference), both presentation "
            "orders, are in the human table."),
        "licence": "CC-BY-4.0 (MT-Bench human judgments); MIT (LLMBar's processing)",
        "licence_url": "https://huggingface.co/datasets/lmsys/mt_bench_human_judgments",
        "citation": LLMBAR_CITATION + """
@inproceedings{zheng2023judging,
  title = {Judging {LLM}-as-a-Judge with {MT}-Bench and Chatbot Arena},
  author = {Zheng, Lianmin and Chiang, Wei-Lin and Sheng, Ying and Zhuang, Siyuan and Wu,
            Zhanghao and Zhuang, Yonghao and Lin, Zi and Li, Zhuohan and Li, Dacheng and
            Xing, Eric and Zhang, Hao and Gonzalez, Joseph E. and Stoica, Ion},
  booktitle = {Advances in Neural Information Processing Systems (Datasets and Benchmarks)},
  year = {2023}
}""",
    },
    "llmeval2": {
        "folder": "LLMEval^2",
        "title": "LLMEval^2 (instruction responses, human preference)",
        "description": (
            "200 pairs of LLM responses from LLMEval^2 (Zhang et al. 2023) with the human "
            "preference label, as LLMBar processed them: instances with an empty or "
            "non-English instruction and ties removed, the task description put before the "
            "raw input to form the instruction, 200 pairs sampled at random. Stored verdicts "
            "of four LLMs under two prompting strategies (Vanilla; "
            "Rules+Metrics+Reference), both presentation orders, are in the human table."),
        "licence": "MIT (LLMEval^2, AlibabaResearch/DAMO-ConvAI; LLMBar's processing)",
        "licence_url": "https://github.com/AlibabaResearch/DAMO-ConvAI/blob/main/LICENSE",
        "citation": LLMBAR_CITATION + """
@article{zhang2023wider,
  title = {Wider and Deeper {LLM} Networks are Fairer {LLM} Evaluators},
  author = {Zhang, Xinghua and Yu, Bowen and Yu, Haiyang and Lv, Yangyu and Liu, Tingwen
            and Huang, Fei and Xu, Hongbo and Li, Yongbin},
  journal = {arXiv preprint arXiv:2308.01862},
  year = {2023}
}""",
    },
}


def show(git_dir: str, commit: str, path: str) -> Any:
    text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def gz(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        for row in rows:
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    return buffer.getvalue()


def percent(text: str) -> float:
    """The share in `"a / n = p%"` or `"p%"` as a fraction, exact where it is a / n."""
    match = re.fullmatch(r"\s*(\d+) / (\d+) = [\d.]+%\s*", text)
    if match:
        return int(match[1]) / int(match[2])
    return float(text.rstrip("%")) / 100


def build(name: str, git_dir: str, commit: str = COMMIT) -> None:
    config = SETS[name]
    base = f"Dataset/Processed/{config['folder']}"
    dataset = show(git_dir, commit, f"{base}/dataset.json")
    samples, human, published = [], [], []
    for k, x in enumerate(dataset):
        item = str(k)
        samples.append({"item": item, "input": x["input"], "system_a": "output_1",
                        "output_a": x["output_1"], "system_b": "output_2",
                        "output_b": x["output_2"]})
        human.append({"item": item, "system_a": "output_1", "system_b": "output_2",
                      "human.preference": LABEL[str(x["label"])]})
    for column, (evaluator, label) in EVALUATORS.items():
        result = show(git_dir, commit, f"{base}/evaluators/{evaluator}/result.json")
        assert len(result) == len(dataset)
        for row, x, gold in zip(human, result, dataset, strict=True):
            assert (x["input"], x["output_1"], x["label"]) == (
                gold["input"], gold["output_1"], gold["label"])
            last = x["results"][-1]
            row[f"{column}.ab"] = LABEL[last["swap = False"]["winner"]]
            row[f"{column}.ba"] = LABEL[last["swap = True"]["winner"]]
        stats = show(git_dir, commit, f"{base}/evaluators/{evaluator}/statistics.json")
        for statistic, key, word in (("accuracy", "correct_average", "Acc."),
                                     ("consistency", "equal", "Agr.")):
            published.append({
                "metric": label, "spec": None, "protocol": "preference",
                "statistic": statistic, "value": round(percent(stats[key]), 4),
                "precision": 4,
                "table": f"Zeng et al. 2024, LLMBar's statistics.json ({key}: {word}; "
                         f"{config['folder']}, {evaluator})",
                "verdicts_column": column})
    folder = DATA / name
    files = {}
    for file, data in (("samples.jsonl.gz", gz(samples)), ("human.jsonl.gz", gz(human))):
        (folder / file).write_bytes(data)
        files[file] = "sha256:" + hashlib.sha256(data).hexdigest()
    info = {
        "name": name, "title": config["title"], "description": config["description"],
        "kind": "pairwise", "criteria": ["preference"], "annotators": {}, "subsets": {},
        "protocols": [{"name": "preference", "criterion": "preference", "level": "pair",
                       "grouping": None, "statistics": ["accuracy", "consistency"],
                       "human": "human.preference", "ties": "drop", "failed_as": "wrong",
                       "by": None}],
        "published": published,
        "licence": config["licence"], "licence_url": config["licence_url"],
        "citation": config["citation"],
        "source": {"repository": REPOSITORY, "commit": commit,
                   "files": [f"{base}/dataset.json",
                             *(f"{base}/evaluators/{e}/{f}" for e, _ in EVALUATORS.values()
                               for f in ("result.json", "statistics.json"))]},
        "files": files,
    }
    (folder / "suite.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")


if __name__ == "__main__":
    build("mt-bench", *sys.argv[1:])
