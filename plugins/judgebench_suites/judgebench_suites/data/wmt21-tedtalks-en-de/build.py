"""Rebuild the WMT21 TED talks en-de MQM suite folder from google/wmt-mqm-human-evaluation.

    python build.py SOURCE_GIT_DIR

SOURCE_GIT_DIR is a clone (its .git) or a bare mirror of
https://github.com/google/wmt-mqm-human-evaluation; the file is read at COMMIT with `git show`.
Writes samples.jsonl.gz, human.jsonl.gz, spans.jsonl.gz and suite.json beside this script
(gzip with mtime 0, rows sorted by segment then system, keys sorted) and the sha256 of each
file's bytes into suite.json.

The source has one row per error (or one "No-error" row per rated translation) with the error
span marked <v>...</v> in the target (in the source for Accuracy/Omission). A translation's MQM
penalty is the sum of its errors' weights (the source README: Major 5, Minor 1, Minor
Fluency/Punctuation 0.1, Non-translation 25, Neutral 0); human.mqm is minus the penalty, as
mt-metrics-eval stores MQM (higher is better).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPOSITORY = "https://github.com/google/wmt-mqm-human-evaluation"
COMMIT = "7fadea281aff8db61cc72fc3d469a4dca78b82a6"
TSV = "ted/ende/mqm_ted_ende.tsv"
COLUMNS = ["system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category",
           "severity", "comment"]
#: the source's name for the reference translation -> mt-metrics-eval's (and the avg file's)
SYSTEM_NAMES = {"ref": "ref-A"}
REFERENCE = "ref-A"




def weight(category: str, severity: str) -> float:
    """An error's MQM weight (the source README, "Multidimensional Quality Metric")."""
    if severity in ("No-error", "Neutral"):
        return 0.0
    if category.startswith("Non-translation"):
        return 25.0
    if severity == "Major":
        return 5.0
    if severity == "Minor":
        return 0.1 if category == "Fluency/Punctuation" else 1.0
    raise ValueError(f"{TSV}: unknown severity {severity!r}")


def unmark(text: str, where: str) -> tuple[str, tuple[int, int] | None]:
    """The text without <v>...</v> and the marked span's [start, end) in it (code points)."""
    if "<v>" not in text:
        if "</v>" in text:
            raise ValueError(f"{where}: </v> without <v>")
        return text, None
    start = text.index("<v>")
    if "</v>" not in text[start:]:
        # One source row (a final "?") opens <v> and never closes it: the span runs to the end.
        clean = text.replace("<v>", "", 1)
        return clean, (start, len(clean))
    end = text.index("</v>", start) - len("<v>")
    clean = text.replace("<v>", "", 1).replace("</v>", "", 1)
    if "<v>" in clean or "</v>" in clean:
        raise ValueError(f"{where}: more than one marked span")
    return clean, (start, end)


def show(git_dir: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{COMMIT}:{path}"],
                          check=True, capture_output=True).stdout.decode("utf-8")


def write_gz(path: Path, rows: list[dict]) -> str:
    raw = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(raw.encode("utf-8"))
    path.write_bytes(buffer.getvalue())
    return "sha256:" + hashlib.sha256(buffer.getvalue()).hexdigest()


def build(git_dir: str) -> None:
    reader = csv.reader(io.StringIO(show(git_dir, TSV)), delimiter="\t",
                        quoting=csv.QUOTE_NONE)
    header = next(reader)
    if header != COLUMNS:
        raise ValueError(f"{TSV}: unexpected header {header}")
    ratings: dict[tuple[int, str], dict[str, Any]] = {}
    sources: dict[int, str] = {}
    spans: list[dict[str, Any]] = []
    for line, values in enumerate(reader, start=2):
        row = dict(zip(COLUMNS, values, strict=True))
        where = f"{TSV}:{line}"
        system = SYSTEM_NAMES.get(row["system"], row["system"])
        seg = int(row["seg_id"])
        source, in_source = unmark(row["source"], where)
        target, in_target = unmark(row["target"], where)
        if sources.setdefault(seg, source) != source:
            raise ValueError(f"{where}: source differs from the segment's other rows")
        rating = ratings.setdefault((seg, system), {
            "doc": row["doc"], "doc_seg": int(row["doc_id"]), "rater": row["rater"],
            "target": target, "penalty": 0.0, "errors": 0})
        if (rating["target"], rating["rater"]) != (target, row["rater"]):
            raise ValueError(f"{where}: target or rater differs from the translation's other rows")
        w = weight(row["category"], row["severity"])
        rating["penalty"] += w
        if row["severity"] == "No-error":
            if in_source or in_target:
                raise ValueError(f"{where}: a No-error row marks a span")
            continue
        side, span = ("source", in_source) if in_source else ("target", in_target)
        text = source if side == "source" else target
        rating["errors"] += 1
        spans.append({"item": str(seg), "system": system, "rater": row["rater"],
                      "category": row["category"], "severity": row["severity"], "weight": w,
                      "side": side if span else None,
                      "start": span[0] if span else None, "end": span[1] if span else None,
                      "span": text[span[0]:span[1]] if span else None,
                      "comment": row["comment"] or None})
    systems = sorted({s for _, s in ratings})
    segments = sorted(sources)
    missing = [(g, s) for g in segments for s in systems if (g, s) not in ratings]
    if missing:
        raise ValueError(f"{TSV}: translations without a rating, e.g. {missing[:3]}")
    samples, human = [], []
    for seg in segments:
        for system in systems:
            if system == REFERENCE:
                continue
            rating = ratings[(seg, system)]
            key = {"item": str(seg), "system": system}
            samples.append({**key, "source": sources[seg], "output": rating["target"],
                            "reference": ratings[(seg, REFERENCE)]["target"],
                            "metadata": {"doc": rating["doc"], "doc_seg": rating["doc_seg"]}})
            human.append({**key, "human.mqm": score(rating["penalty"]), "rater": rating["rater"],
                          "errors": rating["errors"]})
    spans.sort(key=lambda r: (int(r["item"]), r["system"]))
    files = {"samples.jsonl.gz": write_gz(HERE / "samples.jsonl.gz", samples),
             "human.jsonl.gz": write_gz(HERE / "human.jsonl.gz", human),
             "spans.jsonl.gz": write_gz(HERE / "spans.jsonl.gz", spans)}
    suite = suite_json(files, len(segments), len(systems) - 1)
    (HERE / "suite.json").write_text(json.dumps(suite, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


def score(penalty: float) -> float:
    """Minus the penalty, rounded to the 0.1 steps of the weights (no float sums' noise)."""
    return round(-penalty, 1) + 0.0


def suite_json(files: dict[str, str], n_segments: int, n_systems: int) -> dict:
    human = "human.mqm"
    return {
        "name": "wmt21-tedtalks-en-de",
        "title": "WMT21 TED talks English-German, expert MQM",
        "description": (
            f"WMT21 Metrics task TED talks test suite, English to German: {n_systems} MT "
            f"systems on the {n_segments} segments the MQM file rates (talks 1 and 3-6; talk 2 "
            "has no MQM ratings), each translation rated by one of four professional "
            "translators (no translation has two ratings, so there is no inter-annotator "
            "ceiling). human.mqm is minus the MQM penalty (Major 5, Minor 1, Minor "
            "Fluency/Punctuation 0.1, Non-translation 25), as mt-metrics-eval stores it; the "
            "rater of each translation is in human.jsonl.gz's `rater`. The reference is ref-A "
            "(mt-metrics-eval's std_ref for wmt21.tedtalks en-de), so ref-A is not a scored "
            "system; its ratings are in spans.jsonl.gz. spans.jsonl.gz: one row per error "
            "(category, severity, weight, side, [start, end) in code points of the unmarked "
            "text, rater, comment). The source ships no metric scores, so there is no "
            "published metric baseline; the source README's system MQM averages are "
            "reproduced from these files in the suite's test (SOURCE.md)."),
        "kind": "pointwise",
        "criteria": ["mqm"],
        "annotators": {},
        "protocols": [
            {"name": "system-pearson", "criterion": "mqm", "level": "system", "grouping": None,
             "statistics": ["pearson"], "human": human, "ties": None, "failed_as": None,
             "by": None},
            {"name": "segment-pearson", "criterion": "mqm", "level": "global", "grouping": None,
             "statistics": ["pearson"], "human": human, "ties": None, "failed_as": None,
             "by": None},
            {"name": "segment-acc-eq", "criterion": "mqm", "level": "item", "grouping": "item",
             "statistics": ["acc-eq"], "human": human, "ties": None, "failed_as": None,
             "by": None},
            {"name": "segment-kendall-by-item", "criterion": "mqm", "level": "item",
             "grouping": "item", "statistics": ["kendall"], "human": human, "ties": None,
             "failed_as": None, "by": None},
        ],
        "published": [],
        "licence": "Apache-2.0",
        "licence_url": f"{REPOSITORY}/blob/{COMMIT}/LICENSE",
        "citation": (
            "@article{freitag2021experts,\n"
            "  title={Experts, Errors, and Context: A Large-Scale Study of Human Evaluation "
            "for Machine Translation},\n"
            "  author={Markus Freitag and George Foster and David Grangier and Viresh Ratnakar "
            "and Qijun Tan and Wolfgang Macherey},\n"
            "  journal={Transactions of the Association for Computational Linguistics},\n"
            "  volume={9},\n  pages={1460--1474},\n  year={2021}\n}\n"
            "@inproceedings{freitag2021results,\n"
            "  title={Results of the {WMT}21 Metrics Shared Task: Evaluating Metrics with "
            "Expert-based Human Evaluations on {TED} and News Domain},\n"
            "  author={Markus Freitag and Ricardo Rei and Nitika Mathur and Chi-kiu Lo and "
            "Craig Stewart and George Foster and Alon Lavie and Ond{\\v{r}}ej Bojar},\n"
            "  booktitle={Proceedings of the Sixth Conference on Machine Translation},\n"
            "  pages={733--774},\n  year={2021}\n}"),
        "source": {"repository": REPOSITORY, "commit": COMMIT, "files": [TSV]},
        "files": files,
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
