"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py [PATH/TO/data/summeval/summeval.jsonl.gz [OUTPUT_FOLDER]]

The source is the SummEval copy vendored in judgebench's repository (data/summeval/, whose
SOURCE.md gives its provenance); default: that file in the checkout this folder is part of,
written into this folder. Per SummEval document, 4 of its 16 system summaries are drawn: the
4 systems with the smallest sha256 of "summeval-best-of-4:<seed>:<item>:<system>" (a draw
fixed by SEED that depends on no library's random generator), listed in that order. People's
best is the highest total expert rating: the sum over the 3 experts and the 4 criteria
(coherence, consistency, fluency, relevance; 12 ratings of 1-5, so 12..60, computed exactly
from the vendored means, which are thirds); candidates tied for that total are all marked 1.
A document whose 4 drawn summaries all tie would have no incorrect candidate: the build
stops (none does with SEED). gzip is written with mtime 0 and no file name.
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
SEED = 45
N = 4

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


def draw_key(item: str, system: str) -> str:
    return hashlib.sha256(f"summeval-best-of-4:{SEED}:{item}:{system}".encode()).hexdigest()


def total(human: dict) -> int:
    """The sum of the 12 expert ratings: each criterion's vendored mean of 3 experts, x 3."""
    out = 0
    for c in CRITERIA:
        thrice = 3 * human[c]
        assert abs(thrice - round(thrice)) < 1e-9, f"{human}: not a mean of 3 ratings"
        out += round(thrice)
    return out


def info(files: dict[str, str], documents: int, tied: dict[int, int]) -> dict:
    ties = ", ".join(f"{n} with {k} tied" for k, n in sorted(tied.items()) if k > 1)
    return {
        "name": "summeval-best-of-4",
        "title": "SummEval best of 4 (CNN/DailyMail summaries, expert ratings)",
        "description": (f"{documents} CNN/DailyMail articles, each with 4 of its 16 SummEval "
                        "system summaries drawn with a fixed seed; people's best is the "
                        "summary with the highest total expert rating (3 experts x coherence, "
                        "consistency, fluency and relevance, 1-5 each), several when tied "
                        f"({ties}). A judge picks the best of the 4; the statistic is "
                        "best-of-N accuracy (RewardBench 2's rule) with its Wilson interval "
                        "and a random ranking's. Built by judgebench from the summeval "
                        "suite's data: no published number exists for it."),
        "kind": "listwise",
        "criteria": ["overall"],
        "annotators": {},
        "subsets": {},
        "protocols": [{"name": "best-of-4", "criterion": "overall", "level": "prompt",
                       "grouping": None, "statistics": ["accuracy"], "human": "human.best",
                       "ties": None, "failed_as": None, "by": None}],
        "published": [],
        "licence": "MIT",
        "licence_url": "https://github.com/Yale-LILY/SummEval/blob/master/LICENSE",
        "citation": CITATION,
        "source": {"repository": "https://github.com/neulab/BARTScore",
                   "commit": "judgebench data/summeval (sha256 " + SOURCE_SHA256 + ")",
                   "files": ["SUM/SummEval/data.pkl"]},
        "files": files,
    }


def main(source: str | None = None, output: str | None = None) -> None:
    path = Path(source) if source else HERE.parents[4] / "data" / "summeval" / "summeval.jsonl.gz"
    out = Path(output) if output else HERE
    raw = gzip.decompress(path.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == SOURCE_SHA256, f"{path}: not the vendored copy"
    documents: dict[str, list[dict]] = {}
    for line in raw.decode().splitlines():
        row = json.loads(line)
        documents.setdefault(row["item"], []).append(row)
    samples: list[dict] = []
    human: list[dict] = []
    tied: dict[int, int] = {}
    for item, rows in documents.items():
        drawn = sorted(rows, key=lambda r: draw_key(item, r["system"]))[:N]
        totals = [total(r["human"]) for r in drawn]
        best = max(totals)
        k = totals.count(best)
        assert k < N, f"{item}: all {N} drawn summaries tie for best"
        tied[k] = tied.get(k, 0) + 1
        for r, t in zip(drawn, totals, strict=True):
            samples.append({"item": item, "candidate": r["system"], "input": r["input"],
                            "output": r["output"]})
            human.append({"item": item, "candidate": r["system"],
                          "human.best": int(t == best), "expert_total": t})
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = gz(rows)
        (out / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    (out / "suite.json").write_text(json.dumps(info(files, len(documents), tied), indent=1,
                                               ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
