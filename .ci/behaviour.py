"""Run a fixed list of CLI invocations against a source tree and record what a user sees.

A restructuring must not change behaviour: run this on the tree before and after, then
compare. Each invocation's stdout, stderr and exit code are kept, and after the whole list
every table of every SQLite store it wrote, row by row. What differs between two runs of the
same tree (the work folder, ports, clocks, durations, run ids' timestamps) is normalised.

    python .ci/behaviour.py record TREE OUT.json   # TREE: a checkout (or `git archive` of one)
    python .ci/behaviour.py compare BEFORE.json AFTER.json

A command line the step renamed (`meta-eval --pairwise` -> `meta-eval pairwise`) is listed in
RENAMED with its new form: the old form stays in the list (an alias now, which adds one
deprecation warning to stderr, the only difference `compare` lets through), and the new form
runs after the list; `compare` checks its stdout and exit code against what the old form gave
before, byte for byte (its stderr's usage lines name the subcommand).

The tree runs with this interpreter and `PYTHONPATH=TREE:TREE/plugins`; the judges answer
from the loopback fault server of TREE/tests (a deterministic reply per prompt).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLE = "examples/summeval-sample.jsonl"
LLMBAR = "tests/data/pairwise/llmbar/pairs.csv"
LLMBAR_FAILED = "tests/data/pairwise/llmbar_failed/pairs.csv"
WORDCOUNT = "examples/judgebench-wordcount/judgebench_wordcount.py"


def invocations(tree: str, url: str) -> list[list[str]]:
    ex = f"{tree}/{EXAMPLE}"
    bar = f"{tree}/{LLMBAR}"
    judge = f"judge.rubric:backend=openai_compat,model=m,api_base={url}"
    return [
        ["--help"],
        ["--version"],
        ["nosuchcommand"],
        ["scor", "x"],
        ["plugins"],
        ["plugins", "--json"],
        ["metrics"],
        ["metrics", "--json"],
        ["metrics", "lexical.chrf"],
        ["metrics", "lexical.chrff"],
        ["score", "--help"],
        ["score", ex, "-m", "lexical.rouge2", "-m", "lexical.chrf", "-o", "s.csv",
         "--store", "runs.db"],
        ["score", ex, "-m", "lexical.bleu", "-m", "lexical.rougeL", "-o", "s.parquet",
         "--store", "runs.db", "--corpus", "corpus.csv"],
        ["score", ex, "-m", "lexical.rouge2", "-o", "s_r2.csv", "--no-csv-safe"],
        ["score", ex, "-m", "lexical.rouge2", "-m", "lexical.chrf", "-o", "s2.jsonl",
         "--store", "runs.db", "--resume", "--json"],
        ["score", ex, "-m", judge, "-o", "j.csv", "--store", "runs.db", "--cache", "cache"],
        ["score", ex, "-m", judge, "-o", "j2.csv", "--dry-run"],
        ["score", "missing.jsonl", "-m", "lexical.bleu", "-o", "x.csv"],
        ["score", ex, "-m", "nosuch.metric", "-o", "x.csv"],
        ["score", ex, "-m", "lexical.bleu:nosuchoption=1", "-o", "x.csv"],
        ["score", ex, "-m", "lexical.bleu", "--limit", "5", "--workers", "2"],
        ["-p", f"{tree}/{WORDCOUNT}", "score", ex, "-m", "wordcount.ratio:unit=chars",
         "-o", "ratio.csv", "--store", "runs.db"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "--level", "system",
         "--statistic", "kendall", "--statistic", "pearson"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "--level", "system",
         "--statistic", "kendall", "--json"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "--human", "human.coherence",
         "--grouping", "item", "--statistic", "acc-eq", "--statistic", "kendall-c"],
        ["meta-eval", "s.parquet", "--human", "human.relevance", "--corpus", "corpus.csv",
         "--level", "system", "-f", "markdown"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "-f", "csv"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "-f", "latex"],
        ["meta-eval", "s.csv", "--human", "human.relevance", "--bootstrap", "200",
         "--compare", "--resamples", "200"],
        ["meta-eval", "j.csv", "--human", "human.relevance", "--failed-as", "missing"],
        ["meta-eval", "s.csv", "--human", "human.nosuch"],
        ["meta-eval", bar, "--pairwise", "--human", "human.gold", "--by", "category"],
        ["meta-eval", bar, "--pairwise", "--human", "human.gold", "--json"],
        ["meta-eval", f"{tree}/{LLMBAR_FAILED}", "--pairwise", "--human", "human.gold",
         "--failed-as", "wrong", "--json"],
        *(alias for alias, _ in renamed(tree)[3:]),
        ["aggregate", "s.csv", "--metric", "lexical.rouge2", "--human", "human.relevance",
         "-r", "all"],
        ["aggregate", f"{tree}/tests/data/alpaca_eval/leaderboard.csv", "-r", "borda",
         "-r", "copeland", "-r", "kemeny", "--system-column", "model", "--column", "win_rate",
         "--column", "length_controlled_winrate", "--json"],
        ["aggregate", f"{tree}/tests/data/alpaca_eval/jina-chat.csv",
         "-r", "win-rate:baseline=gpt4_1106_preview"],
        ["aggregate", "--list-rules"],
        ["audit", "s.csv", "--human", "human.relevance", "--human", "human.coherence"],
        ["audit", "s.csv", "--human", "human.relevance", "--json"],
        ["audit", "s.csv", "--human", "human.relevance", "--report", "report.md"],
        ["audit", "s.csv", "--human", "human.relevance", "--report", "report.html"],
        ["audit", "s.csv", "--human", "human.relevance", "--fail-on", "gate"],
        ["audit", bar, "--pairwise", "--human", "human.gold"],
        ["compare-judges", bar, "--a", "gpt4-vanilla.ab", "--b", "chatgpt-vanilla.ab",
         "--human", "human.gold"],
        ["compare-judges", "s.csv", "--a", "lexical.rouge2", "--b", "lexical.chrf",
         "--human", "human.relevance", "--json"],
        ["items", "s.csv", "--metric", "lexical.rouge2", "--threshold", "0.15",
         "--subset", "4"],
        ["items", "s.csv", "--metric", "lexical.rouge2", "--threshold", "0.15", "--json"],
        ["combine", "s.csv", "--human", "human.relevance", "--metric", "lexical.rouge2",
         "--metric", "lexical.chrf", "-o", "combined.csv", "--folds", "2"],
        ["runs", "--store", "runs.db"],
        ["runs", "--store", "runs.db", "--json"],
        ["logs", "1", "--store", "runs.db", "-n", "5"],
        ["logs", "4", "--store", "runs.db", "--metric",
         "judge.rubric:backend=openai_compat,model=m", "--system", "M1", "--cache", "cache"],
        ["logs", "--store", "runs.db", "--failed", "--json"],
        ["logs", "99", "--store", "runs.db"],
        ["runs", "--store", "nosuch.db"],
    ]


def renamed(tree: str) -> list[tuple[list[str], list[str]]]:
    """(old form, new form) of each renamed command line; the first three are in the list
    from before the renaming, the others were added with it."""
    bar = f"{tree}/{LLMBAR}"
    pairs = f"{tree}/examples/summeval-pairs.csv"
    return [
        (["meta-eval", bar, "--pairwise", "--human", "human.gold", "--by", "category"],
         ["meta-eval", "pairwise", bar, "--human", "human.gold", "--by", "category"]),
        (["meta-eval", bar, "--pairwise", "--human", "human.gold", "--json"],
         ["meta-eval", "pairwise", bar, "--human", "human.gold", "--json"]),
        (["meta-eval", f"{tree}/{LLMBAR_FAILED}", "--pairwise", "--human", "human.gold",
          "--failed-as", "wrong", "--json"],
         ["meta-eval", "pairwise", f"{tree}/{LLMBAR_FAILED}", "--human", "human.gold",
          "--failed-as", "wrong", "--json"]),
        (["meta-eval", pairs, "--pairwise", "--transitivity", "--human", "human.relevance",
          "--bootstrap", "50", "--json"],
         ["meta-eval", "transitivity", pairs, "--human", "human.relevance", "--bootstrap",
          "50", "--json"]),
        (["meta-eval", "s.csv", "--alt-test", "--epsilon", "0.2", "--alt-score", "neg-rmse",
          "--alt-min-items", "10"],
         ["meta-eval", "alt-test", "s.csv", "--epsilon", "0.2", "--alt-score", "neg-rmse",
          "--alt-min-items", "10"]),
        (["meta-eval", "s.csv", "--construct", "lexical.chrf=human.relevance", "--human",
          "human.coherence", "--resamples", "100", "--json"],
         ["meta-eval", "construct", "s.csv", "--intended", "lexical.chrf=human.relevance",
          "--human", "human.coherence", "--resamples", "100", "--json"]),
        (["meta-eval", "s.csv", "--human", "human.relevance", "--power-for", "0.2"],
         ["meta-eval", "power", "s.csv", "--human", "human.relevance", "--delta", "0.2"]),
        (["meta-eval", "j.csv", "--spans", f"{tree}/examples/ted-mqm-spans.jsonl", "--store",
          "runs.db"],
         ["meta-eval", "spans", "j.csv", f"{tree}/examples/ted-mqm-spans.jsonl", "--store",
          "runs.db"]),
    ]


#: The line an old form (an alias now) adds to stderr.
DEPRECATION = re.compile(r"^meta-eval: warning: --[a-z-]+ is deprecated .*\n", re.M)


def normalise(text: str, work: str, tree: str, port: int) -> str:
    text = text.replace(work, "<WORK>").replace(tree, "<TREE>")
    text = re.sub(r"/tmp/[\w./-]+", "<TMP>", text)
    text = text.replace(str(port), "<PORT>")
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?", "<TS>", text)
    text = re.sub(r"\b\d+(\.\d+)?\s?(s|ms|seconds)\b", "<DUR>", text)
    text = re.sub(r'"(elapsed|duration|seconds|latency|wall|cpu|pid)([a-z_]*)": [\d.e-]+',
                  r'"\1\2": <N>', text)
    return text


def store_rows(path: Path, work: str, tree: str, port: int) -> dict[str, list[str]]:
    con = sqlite3.connect(path)
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    out: dict[str, list[str]] = {}
    for table in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info('{table}')")]
        timed = {c for c in cols if re.search(r"time|_at$|started|finished|elapsed|duration|"
                                              r"latency|seconds|created|wall|cpu|pid", c)}
        rows = []
        for row in con.execute(f"SELECT * FROM '{table}'"):
            cells = {c: ("<T>" if c in timed else v) for c, v in zip(cols, row, strict=True)}
            rows.append(normalise(json.dumps(cells, default=repr), work, tree, port))
        out[table] = sorted(rows)  # concurrent judge calls commit in any order
    con.close()
    return out


def record(tree: str, out: str) -> None:
    tree = str(Path(tree).resolve())
    sys.path.insert(0, f"{tree}/tests")
    from fault_server import FaultServer

    env = {**os.environ, "PYTHONPATH": f"{tree}:{tree}/plugins", "NO_COLOR": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "100",
           "JUDGEBENCH_PROGRESS_INTERVAL": "off"}  # no "still running" line on a loaded machine
    server = FaultServer(reply='{{"feedback": "fine", "score": {score}}}').start()
    results = []
    new_forms = []
    try:
        with tempfile.TemporaryDirectory() as work:
            # the default judge cache of this run alone, not the user's ~/.cache
            env["JUDGEBENCH_CACHE_DIR"] = f"{work}/default-cache"

            def run(args: list[str]) -> dict[str, object]:
                proc = subprocess.run([sys.executable, "-m", "judgebench.cli", *args],
                                      cwd=work, env=env, capture_output=True, text=True,
                                      timeout=600)
                print(f"{proc.returncode:>3}  judgebench {' '.join(args)[:100]}", flush=True)
                return {"args": normalise(" ".join(args), work, tree, server.port),
                        "exit": proc.returncode,
                        "stdout": normalise(proc.stdout, work, tree, server.port),
                        "stderr": normalise(proc.stderr, work, tree, server.port)}

            results = [run(args) for args in invocations(tree, server.url)]
            new_forms = [{**run(new), "alias": normalise(" ".join(old), work, tree, server.port)}
                         for old, new in renamed(tree)]
            files = {}
            for path in sorted(Path(work).rglob("*")):
                if path.is_file() and path.suffix in {".csv", ".jsonl", ".md", ".json"}:
                    files[str(path.relative_to(work))] = normalise(
                        path.read_text(errors="replace"), work, tree, server.port)
            stores = {str(p.relative_to(work)): store_rows(p, work, tree, server.port)
                      for p in sorted(Path(work).rglob("*.db"))}
    finally:
        server.stop()
    Path(out).write_text(json.dumps({"invocations": results, "renamed": new_forms,
                                     "files": files, "stores": stores}, indent=1))
    print(f"{len(results)} invocations, {len(files)} files, "
          f"{sum(len(r) for s in stores.values() for r in s.values())} store rows -> {out}")


def compare(before: str, after: str) -> int:
    a, b = json.loads(Path(before).read_text()), json.loads(Path(after).read_text())
    differences = warned = 0
    aliases = {r["alias"] for r in b.get("renamed", [])}
    old_forms = {r["args"]: r for r in a["invocations"]}

    def differ(old: dict[str, object], new: dict[str, object], label: str) -> int:
        found = 0
        for key in ("exit", "stdout", "stderr"):
            if old[key] != new[key]:
                found += 1
                print(f"DIFF {key}: judgebench {label}")
                if key in ("stdout", "stderr"):
                    import difflib

                    sys.stdout.writelines(list(difflib.unified_diff(
                        str(old[key]).splitlines(True), str(new[key]).splitlines(True),
                        n=1))[:40])
        return found

    for old, new in zip(a["invocations"], b["invocations"], strict=True):
        if old["args"] != new["args"]:
            differences += 1
            print(f"DIFF args: judgebench {old['args']} / {new['args']}")
            continue
        if new["args"] in aliases:
            stderr, count = DEPRECATION.subn("", new["stderr"], count=1)
            warned += count
            new = {**new, "stderr": stderr}
        differences += differ(old, new, new["args"])
    for form in b.get("renamed", []):
        # A usage error names the command it is in (`meta-eval pairwise`): stdout and exit.
        expected = {**old_forms[form["alias"]], "stderr": form["stderr"]}
        differences += differ(expected, form, f"{form['args']} (as {form['alias']})")
    for section in ("files", "stores"):
        if a[section] != b[section]:
            for name in sorted(set(a[section]) | set(b[section])):
                if a[section].get(name) != b[section].get(name):
                    differences += 1
                    print(f"DIFF {section}: {name}")
    n = len(a["invocations"])
    print(f"{n} invocations, {len(b.get('renamed', []))} renamed forms against their old "
          f"form, {len(a['files'])} files, {len(a['stores'])} stores: {differences} "
          f"differences ({warned} old forms warned)")
    return 1 if differences else 0


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
