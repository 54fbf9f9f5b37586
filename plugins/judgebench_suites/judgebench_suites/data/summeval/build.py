"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py [PATH/TO/data/summeval/summeval.jsonl.gz]

The source is the SummEval copy vendored in judgebench's repository (data/summeval/, whose
SOURCE.md gives its provenance: neulab/BARTScore's SUM/SummEval/data.pkl, converted without
executing the pickle); default: that file in the checkout this folder is part of.
gzip is written with mtime 0 and no file name, so the bytes depend on the content alone.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CRITERIA = ("coherence", "consistency", "fluency", "relevance")
SOURCE_SHA256 = "c1d5d1067a222edea8f3a8d05eea3295f363cfbe022d14f89fd143e382ab7e84"

# G-Eval (Liu et al. 2023), Table 1, which reprints UniEval's (Zhong et al. 2022) ROUGE rows:
# summary-level Spearman rho / Kendall tau per criterion.
ROUGE2 = {"coherence": (0.184, 0.139), "consistency": (0.187, 0.155),
          "fluency": (0.159, 0.128), "relevance": (0.290, 0.219)}
GEVAL4 = {"coherence": (0.582, 0.457), "consistency": (0.507, 0.425),
          "fluency": (0.455, 0.378), "relevance": (0.547, 0.433)}

CITATION = """@article{fabbri2021summeval,
  title = {{SummEval}: Re-evaluating Summarization Evaluation},
  author = {Fabbri, Alexander R. and Kry{\\'s}ci{\\'n}ski, Wojciech and McCann, Bryan
            and Xiong, Caiming and Socher, Richard and Radev, Dragomir},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {9}, pages = {391--409}, year = {2021}
}"""


def gz(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        for row in rows:
            f.write((json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n").encode())
    return buffer.getvalue()


def published() -> list[dict]:
    rows = []
    for label, spec, table in (("ROUGE-2", "lexical.rouge2:multi_ref=mean", ROUGE2),
                               ("G-Eval-4 (GPT-4)", None, GEVAL4)):
        for criterion, (rho, tau) in table.items():
            for statistic, value in (("spearman", rho), ("kendall", tau)):
                rows.append({"metric": label, "spec": spec, "protocol": f"summary-{criterion}",
                             "statistic": statistic, "value": value, "precision": 3,
                             "table": "Liu et al. 2023 (G-Eval), Table 1"})
    return rows


def info(files: dict[str, str]) -> dict:
    protocols = []
    for c in CRITERIA:
        protocols.append({"name": f"summary-{c}", "criterion": c, "level": "item",
                          "grouping": "item", "statistics": ["spearman", "kendall"],
                          "human": f"human.{c}", "ties": None, "failed_as": None, "by": None})
    for c in CRITERIA:
        protocols.append({"name": f"system-{c}", "criterion": c, "level": "system",
                          "grouping": None, "statistics": ["kendall", "pearson"],
                          "human": f"human.{c}", "ties": None, "failed_as": None, "by": None})
    return {
        "name": "summeval",
        "title": "SummEval (CNN/DailyMail summaries, expert ratings)",
        "description": ("100 CNN/DailyMail articles x 16 summarisation systems (1,600 "
                        "summaries), 11 reference summaries each, rated 1-5 by 3 experts on "
                        "coherence, consistency, fluency and relevance; the human columns are "
                        "the mean of the 3 experts (the per-expert ratings are not in the "
                        "vendored copy, so this suite has no human ceiling). Text is "
                        "PTB-tokenised as published."),
        "kind": "pointwise",
        "criteria": list(CRITERIA),
        "annotators": {},
        "subsets": {},
        "protocols": protocols,
        "published": published(),
        "licence": "MIT",
        "licence_url": "https://github.com/Yale-LILY/SummEval/blob/master/LICENSE",
        "citation": CITATION,
        "source": {"repository": "https://github.com/neulab/BARTScore",
                   "commit": "judgebench data/summeval (sha256 " + SOURCE_SHA256 + ")",
                   "files": ["SUM/SummEval/data.pkl"]},
        "files": files,
    }


def main(source: str | None = None) -> None:
    path = Path(source) if source else HERE.parents[4] / "data" / "summeval" / "summeval.jsonl.gz"
    raw = gzip.decompress(path.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == SOURCE_SHA256, f"{path}: not the vendored copy"
    samples, human = [], []
    for line in raw.decode().splitlines():
        row = json.loads(line)
        samples.append({"item": row["item"], "system": row["system"], "input": row["input"],
                        "output": row["output"], "reference": row["reference"]})
        human.append({"item": row["item"], "system": row["system"],
                      **{f"human.{c}": row["human"][c] for c in CRITERIA}})
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = gz(rows)
        (HERE / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    (HERE / "suite.json").write_text(json.dumps(info(files), indent=1, ensure_ascii=False)
                                     + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
