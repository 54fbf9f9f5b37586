"""Rebuild the JudgeBench suite folder from ScalerLab/JudgeBench, byte for byte.

    python build.py SOURCE_GIT_DIR

SOURCE_GIT_DIR is a clone (its .git) or a bare mirror of https://github.com/ScalerLab/JudgeBench;
the files are read at COMMIT with `git show`, so the checkout's state does not matter. Writes
samples.jsonl.gz, human.jsonl.gz and suite.json beside this script (gzip with mtime 0, rows in
the source's order, keys sorted), and the sha256 of each file's bytes into suite.json.
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
REPOSITORY = "https://github.com/ScalerLab/JudgeBench"
COMMIT = "e2c52c284e735e139b3daa61c206ee208f36c461"
PAIRS = "data/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"
OUTPUTS = ("outputs/dataset=judgebench,response_model=gpt-4o-2024-05-13,"
           "judge_name={judge},judge_model={model}.jsonl")

#: column name -> (judge_name, judge_model as in the output file name, label as the paper prints it)
JUDGES = {
    "skywork-reward-gemma-2-27b": ("reward_model", "Skywork_Skywork-Reward-Gemma-2-27B",
                                   "Skywork-Reward-Gemma-2-27B"),
    "skywork-reward-llama-3.1-8b": ("reward_model", "Skywork_Skywork-Reward-Llama-3.1-8B",
                                    "Skywork-Reward-Llama-3.1-8B"),
    "internlm2-20b-reward": ("reward_model", "internlm_internlm2-20b-reward",
                             "InternLM2-20B-Reward"),
    "internlm2-7b-reward": ("reward_model", "internlm_internlm2-7b-reward", "InternLM2-7B-Reward"),
    "grm-gemma-2b": ("reward_model", "Ray2333_GRM-Gemma-2B-rewardmodel-ft", "GRM-Gemma-2B"),
    "arena-hard-o1-mini": ("arena_hard", "o1-mini-2024-09-12", "Arena-Hard Judge (o1-mini)"),
}

#: JudgeBench paper (Tan et al. 2024), Table 3 (reward models on the GPT-4o pairs), as printed.
PUBLISHED = {
    "skywork-reward-gemma-2-27b": (59.74, 66.33, 83.93, 50.00, 64.29),
    "skywork-reward-llama-3.1-8b": (59.09, 64.29, 76.79, 50.00, 62.29),
    "internlm2-20b-reward": (62.34, 69.39, 66.07, 50.00, 63.43),
    "internlm2-7b-reward": (56.49, 61.22, 71.43, 50.00, 59.43),
    "grm-gemma-2b": (62.99, 53.06, 64.29, 54.76, 59.43),
}
CATEGORIES = ("knowledge", "reasoning", "math", "coding")


def category(source: str) -> str:
    """The paper's category of a pair, from its `source` (run_judge.py's prefixes)."""
    for prefix, name in (("mmlu-pro", "knowledge"), ("livebench-reasoning", "reasoning"),
                         ("livebench-math", "math"), ("livecodebench", "coding")):
        if source.startswith(prefix):
            return name
    raise ValueError(f"{PAIRS}: unknown source {source!r}")


def verdict(decision: object, swapped: bool) -> str | None:
    """A stored decision ("A>B", "B>A", "A=B", None) as a, b, tie or None, in terms of the
    original A and B (`swapped`: the decision was made with B shown first)."""
    if decision is None:
        return None
    flips = {"A>B": "b", "B>A": "a"} if swapped else {"A>B": "a", "B>A": "b"}
    if decision in flips:
        return flips[decision]
    if decision == "A=B":
        return "tie"
    raise ValueError(f"unknown decision {decision!r}")


def combined(ab: str | None, ba: str | None) -> str:
    """JudgeBench's two-order verdict (utils/metrics.py, compute_final_metrics): +1 for each
    order that picks a side, -1 for the other side; the sign decides, 0 is a tie (so one
    decided order and one tie or failure give that order's verdict)."""
    count = sum({"a": 1, "b": -1}.get(v or "", 0) for v in (ab, ba))
    return "a" if count > 0 else "b" if count < 0 else "tie"


def show(git_dir: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{COMMIT}:{path}"],
                          check=True, capture_output=True).stdout.decode("utf-8")


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_gz(path: Path, rows: list[dict]) -> str:
    raw = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(raw.encode("utf-8"))
    path.write_bytes(buffer.getvalue())
    return "sha256:" + hashlib.sha256(buffer.getvalue()).hexdigest()


def build(git_dir: str) -> None:
    pairs = jsonl(show(git_dir, PAIRS))
    samples, human = [], []
    judged = {}
    for column, (judge, model, _) in JUDGES.items():
        rows = jsonl(show(git_dir, OUTPUTS.format(judge=judge, model=model)))
        judged[column] = {r["pair_id"]: r["judgments"] for r in rows}
    for pair in pairs:
        subset = category(pair["source"])
        key = {"item": pair["pair_id"], "system_a": "A", "system_b": "B"}
        samples.append({**key, "input": pair["question"], "output_a": pair["response_A"],
                        "output_b": pair["response_B"], "subset": subset,
                        "metadata": {"source_dataset": pair["source"],
                                     "original_id": pair["original_id"],
                                     "response_model": pair["response_model"]}})
        label = {"A>B": "a", "B>A": "b"}[pair["label"]]
        row: dict = {**key, "subset": subset, "human.correct": label}
        for column, by_pair in judged.items():
            first, second = by_pair[pair["pair_id"]]
            ab = verdict(first["decision"] if first else None, swapped=False)
            ba = verdict(second["decision"] if second else None, swapped=True)
            row[f"verdict.{column}"] = combined(ab, ba)
            row[f"orders.{column}.ab"] = ab
            row[f"orders.{column}.ba"] = ba
        human.append(row)
    files = {"samples.jsonl.gz": write_gz(HERE / "samples.jsonl.gz", samples),
             "human.jsonl.gz": write_gz(HERE / "human.jsonl.gz", human)}
    suite = suite_json(files)
    (HERE / "suite.json").write_text(json.dumps(suite, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


def suite_json(files: dict[str, str]) -> dict:
    published = []
    for column, values in PUBLISHED.items():
        label = JUDGES[column][2]
        for subset, value in zip((*CATEGORIES, None), values, strict=True):
            # printed as a percentage with two decimals: a fraction with four
            entry = {"metric": label, "spec": None, "protocol": "accuracy",
                     "statistic": "accuracy-vote", "value": round(value / 100, 4), "precision": 4,
                     "table": "Tan et al. 2024 (JudgeBench), Table 3 (percent, 2 decimals)",
                     "verdicts_column": f"verdict.{column}"}
            if subset:
                entry["subset"] = subset
            published.append(entry)
    return {
        "name": "judgebench",
        "title": "JudgeBench (GPT-4o response pairs)",
        "description": (
            "350 pairs of GPT-4o answers to hard questions (MMLU-Pro, LiveBench, LiveCodeBench), "
            "one correct and one wrong; the label is objective correctness, not a human "
            "preference, and there are no ties. The Claude-3.5-Sonnet pairs (270) are left out. "
            "Stored verdicts of six judges from the source repository's outputs/ "
            "(five reward models, Arena-Hard with o1-mini) are columns of human.jsonl.gz: "
            "verdict.<judge> is JudgeBench's two-order verdict, orders.<judge>.ab/.ba the "
            "verdict of each order in terms of the original A and B. Accuracy as the paper "
            "reports it is the accuracy of verdict.<judge> with ties counted wrong: the "
            "statistic accuracy-vote, which combines a judge run in both orders by the same "
            "vote (a decided order and a tie give the decided one, opposite orders a tie) "
            "before counting."),
        "kind": "pairwise",
        "criteria": ["correct"],
        "annotators": {},
        "subsets": {
            "knowledge": "MMLU-Pro, 14 subjects (154 pairs)",
            "reasoning": "LiveBench reasoning (98 pairs)",
            "math": "LiveBench math (56 pairs)",
            "coding": "LiveCodeBench (42 pairs)",
        },
        "protocols": [
            {"name": "accuracy", "criterion": "correct", "level": "pair", "grouping": None,
             "statistics": ["accuracy-vote"], "human": "human.correct", "ties": "drop",
             "failed_as": "wrong", "by": "subset"},
        ],
        "published": published,
        "licence": "MIT",
        "licence_url": "https://huggingface.co/datasets/ScalerLab/JudgeBench",
        "citation": (
            "@inproceedings{tan2025judgebench,\n"
            "  title={JudgeBench: A Benchmark for Evaluating LLM-Based Judges},\n"
            "  author={Sijun Tan and Siyuan Zhuang and Kyle Montgomery and William Y. Tang and "
            "Alejandro Cuadron and Chenguang Wang and Raluca Ada Popa and Ion Stoica},\n"
            "  booktitle={International Conference on Learning Representations},\n"
            "  year={2025},\n"
            "  url={https://arxiv.org/abs/2410.12784}\n}"),
        "source": {"repository": REPOSITORY, "commit": COMMIT,
                   "files": [PAIRS] + [OUTPUTS.format(judge=j, model=m)
                                       for j, m, _ in JUDGES.values()]},
        "files": files,
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
