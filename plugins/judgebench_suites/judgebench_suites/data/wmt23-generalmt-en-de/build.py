"""Rebuild the WMT23 generalMT en-de side-by-side MQM suite folder (three ratings per segment)
from google/wmt-mqm-human-evaluation.

    python build.py SOURCE_GIT_DIR

SOURCE_GIT_DIR is a clone (its .git) or a bare mirror of
https://github.com/google/wmt-mqm-human-evaluation; ARCHIVE is read at wmt21-tedtalks-en-de/
build.py's COMMIT with `git show` and its one TSV unpacked in memory. Writes samples.jsonl.gz,
human.jsonl.gz, spans.jsonl.gz and suite.json beside this script (gzip mtime 0, keys sorted,
rows by segment then system) with each file's sha256 in suite.json (wmt21-tedtalks-en-de/
build.py's `write_gz` and `suite_json`).

The source has one row per error (or one "No-error" row) per rating: `rater` rated the
`system`'s translation of segment `globalSegId`; every segment has three raters, each of whom
rated all ten translations of it, two at a time side by side (GPT4-5shot twice: beside refA
and beside ONLINE-W, named `GPT4-5shot_with_refA` and `GPT4-5shot_with_ONLINE-W`). A rating's
MQM penalty is the sum of its errors' weights under Marot's default weights (the viewer the
file's header names). human.jsonl.gz's `marot_mqm` is the per-segment MQM that Marot stored
in the file's `metadata` column (null where no row of the translation carries one), which the
suite's test recomputes from the raters' columns.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent / "wmt21-tedtalks-en-de" / "build.py"
ARCHIVE = "generalMT2023/ende/sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz"
MEMBER = "sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv"
COLUMNS = ["system", "doc", "docSegId", "globalSegId", "rater", "source", "target", "category",
           "severity", "metadata"]
REFERENCE = "refA"
RATERS_PER_SEGMENT = 3
#: Marot's default MQM weights (marot.js `mqmDefaultWeights`): the first pattern that matches
#: "severity:category" (case-insensitively) gives the weight; no match weighs 0
WEIGHTS = [(0.1, "minor:.*punctuation|trivial:"), (0.0, ":.*reinterpretation"),
           (0.0, ":source"), (25.0, "non.translation"), (1.0, "minor:"), (5.0, "major:"),
           (5.0, "critical:")]
#: hands-on-the-wheel checks (an error planted in the translation, `Found` or `Missed`):
#: a test of the rater, not a rating of the translation
ATTENTION_CHECK = "HOTW-test"


def shared() -> Any:
    spec = importlib.util.spec_from_file_location("wmt21_en_de_build", SHARED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tenths(category: str, severity: str) -> int:
    """An error's weight in tenths (integers: a penalty's sum carries no float noise)."""
    text = f"{severity}:{category}".lower()
    for weight, pattern in WEIGHTS:
        if re.search(pattern, text):
            return round(weight * 10)
    return 0


def unmarked(text: str) -> str:
    return text.replace("<v>", "").replace("</v>", "")


def majority(texts: Counter[str], where: str) -> str:
    """The text most rows give (a few rows carry a stray trailing space from marking)."""
    (text, count), *_ = texts.most_common(1)
    if 2 * count <= sum(texts.values()):
        raise ValueError(f"{where}: no text is given by most of its rows: {texts}")
    return text


def read(git_dir: str, commit: str) -> list[dict[str, str]]:
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{ARCHIVE}"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        member = tar.extractfile(MEMBER)
        if member is None:
            raise ValueError(f"{ARCHIVE}: no file {MEMBER}")
        text = member.read().decode("utf-8")
    reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader)
    if header[:len(COLUMNS)] != COLUMNS:
        raise ValueError(f"{MEMBER}: unexpected header {header}")
    return [dict(zip(COLUMNS, values, strict=True)) for values in reader]


def build(git_dir: str) -> None:
    en_de = shared()
    rows = read(git_dir, en_de.COMMIT)
    penalty: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    sources: dict[int, Counter[str]] = defaultdict(Counter)
    targets: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    docs: dict[int, tuple[str, int]] = {}
    marot: dict[tuple[int, str], float] = {}
    errors: list[tuple[str, int, str, dict[str, str], int]] = []
    for line, row in enumerate(rows, start=2):
        where = f"{MEMBER}:{line}"
        seg, system = int(row["globalSegId"]), row["system"]
        if docs.setdefault(seg, (row["doc"], int(row["docSegId"]))) != (
                row["doc"], int(row["docSegId"])):
            raise ValueError(f"{where}: doc differs from the segment's other rows")
        if row["severity"] == ATTENTION_CHECK:
            continue
        computed = json.loads(row["metadata"]).get("segment", {}).get("metrics", {}).get("MQM")
        if computed is not None and marot.setdefault((seg, system), computed) != computed:
            raise ValueError(f"{where}: Marot's MQM differs from the translation's other rows")
        sources[seg][unmarked(row["source"])] += 1
        targets[(seg, system)][unmarked(row["target"])] += 1
        rating = penalty[(seg, system)]
        weight = tenths(row["category"], row["severity"])
        rating[row["rater"]] = rating.get(row["rater"], 0) + weight
        if row["severity"] != "No-error":
            errors.append((where, seg, system, row, weight))
    segments = sorted(sources)
    systems = sorted({s for _, s in penalty} - {REFERENCE})
    raters = sorted({r for rating in penalty.values() for r in rating},
                    key=lambda r: int(r.removeprefix("rater")))
    for seg in segments:
        for system in [*systems, REFERENCE]:
            if len(penalty.get((seg, system), {})) != RATERS_PER_SEGMENT:
                raise ValueError(f"{MEMBER}: segment {seg}, {system}: not "
                                 f"{RATERS_PER_SEGMENT} raters")
    texts = {(seg, system): majority(counts, f"{MEMBER}: segment {seg}, {system}")
             for (seg, system), counts in targets.items()}
    samples, human = [], []
    for seg in segments:
        source = majority(sources[seg], f"{MEMBER}: segment {seg}'s source")
        reference = texts[(seg, REFERENCE)]
        doc, doc_seg = docs[seg]
        for system in systems:
            key = {"item": str(seg), "system": system}
            output = texts[(seg, system)]
            samples.append({**key, "source": source, "output": output, "reference": reference,
                            "metadata": {"doc": doc, "doc_seg": doc_seg}})
            rating = penalty[(seg, system)]
            record: dict[str, Any] = {
                **key, "human.mqm": -sum(rating.values()) / (10 * len(rating)) + 0.0,
                "marot_mqm": marot.get((seg, system))}
            record |= {f"human.mqm.{r}": -rating[r] / 10 + 0.0 if r in rating else None
                       for r in raters}
            human.append(record)
    stored: dict[str, dict[Any, str]] = {
        "source": {seg: majority(sources[seg], f"segment {seg}") for seg in segments},
        "target": dict(texts)}
    spans = [span_row(en_de, error, stored) for error in errors]
    spans.sort(key=lambda r: (int(r["item"]), r["system"], int(r["rater"].removeprefix("rater"))))
    files = {"samples.jsonl.gz": en_de.write_gz(HERE / "samples.jsonl.gz", samples),
             "human.jsonl.gz": en_de.write_gz(HERE / "human.jsonl.gz", human),
             "spans.jsonl.gz": en_de.write_gz(HERE / "spans.jsonl.gz", spans)}
    info = suite_json(en_de, files, segments, systems, raters)
    (HERE / "suite.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


def span_row(en_de: Any, error: tuple[str, int, str, dict[str, str], int],
             stored: dict[str, dict[Any, str]]) -> dict[str, Any]:
    """One error: its span located in the stored text of its side (each error row marks one
    span, in the target or, for source issues and omissions, in the source)."""
    where, seg, system, row, weight = error
    side = "source" if "<v>" in row["source"] else "target"
    text, span = en_de.unmark(row[side], where)
    if span is None:
        raise ValueError(f"{where}: an error marks no span")
    kept = stored[side][seg if side == "source" else (seg, system)]
    if text != kept and text.startswith(kept) and text[len(kept):].isspace():
        # the row's text ends in a space the stored text lacks: the span ends with the text
        span = (min(span[0], len(kept)), min(span[1], len(kept)))
    if kept[span[0]:span[1]] != text[span[0]:span[1]]:
        raise ValueError(f"{where}: the span is not at the same place in the stored text")
    return {"item": str(seg), "system": system, "rater": row["rater"],
            "category": row["category"], "severity": row["severity"], "weight": weight / 10,
            "side": side, "start": span[0], "end": span[1], "span": kept[span[0]:span[1]]}


def suite_json(en_de: Any, files: dict[str, str], segments: list[int], systems: list[str],
               raters: list[str]) -> dict[str, Any]:
    info: dict[str, Any] = en_de.suite_json(files, len(segments), len(systems))
    distinct = {s.split("_with_")[0] for s in systems}
    info.update({
        "name": "wmt23-generalmt-en-de",
        "title": "WMT23 generalMT English-German, side-by-side expert MQM, three raters",
        "description": (
            f"WMT23 general MT task, English to German, side-by-side MQM with three ratings "
            f"per segment: {len(segments)} segments (the whole file), {len(distinct)} MT "
            f"systems, {len(raters)} professional translators, three of whom rated every "
            "translation of each segment, two translations side by side. GPT4-5shot was "
            "rated twice by the same raters, beside refA and beside ONLINE-W; both ratings "
            f"are kept as the source names them, so {len(systems)} systems are scored (the "
            "same output twice). The reference is refA (mt-metrics-eval's std_ref for "
            "wmt23 en-de), so refA is not a scored system. human.mqm is minus the mean of "
            "the three raters' MQM penalties (Marot's weights: Major 5, Minor 1, Minor "
            "punctuation 0.1, Non-translation 25, Source issue and Creative "
            "Reinterpretation 0; the attention-check HOTW-test rows left out), and "
            "human.mqm.<rater> is each rater's own score (null where that rater did not "
            "rate the segment): the human ceiling is each rater against the mean of the "
            "other raters of the same translations, under each protocol. spans.jsonl.gz: "
            "one row per error of each rater (category, severity, Marot weight, side, "
            "[start, end) in code points of the stored text; refA's too, into the "
            "reference). No metric scores "
            "ship with the source, so there is no published metric baseline; the "
            "per-segment MQM that Marot stored in the source file is reproduced from these "
            "files in the suite's test (SOURCE.md)."),
        "annotators": {"mqm": raters},
        "licence_url": f"{en_de.REPOSITORY}/blob/{en_de.COMMIT}/LICENSE",
        "citation": (
            "@inproceedings{freitag2023results,\n"
            "  title={Results of {WMT}23 Metrics Shared Task: Metrics Might Be Guilty but "
            "References Are Not Innocent},\n"
            "  author={Markus Freitag and Nitika Mathur and Chi-kiu Lo and Eleftherios "
            "Avramidis and Ricardo Rei and Brian Thompson and Tom Kocmi and Frederic Blain "
            "and Daniel Deutsch and Craig Stewart and Chrysoula Zerva and Sheila Castilho "
            "and Alon Lavie and George Foster},\n"
            "  booktitle={Proceedings of the Eighth Conference on Machine Translation},\n"
            "  pages={578--628},\n  year={2023}\n}\n"
            "@article{freitag2021experts,\n"
            "  title={Experts, Errors, and Context: A Large-Scale Study of Human Evaluation "
            "for Machine Translation},\n"
            "  author={Markus Freitag and George Foster and David Grangier and Viresh Ratnakar "
            "and Qijun Tan and Wolfgang Macherey},\n"
            "  journal={Transactions of the Association for Computational Linguistics},\n"
            "  volume={9},\n  pages={1460--1474},\n  year={2021}\n}"),
    })
    info["source"]["files"] = [ARCHIVE]
    return info


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
