"""`judgebench view`: CPU time and memory of one page of a run of a million scores.

Builds a real store (made by `Store`, schema version 4) whose run 1 wrote `--scores` scores
(two metrics, 20 systems, a judge's raw answer, `extra` and tokens on each row, one in 13
missing, one in 17 an error), then, each in a fresh process warmed up on a small store (as a
running viewer is), times one page:

- **new**: `judgebench.view.pages.run_page` (paged, filtered and sorted in SQL over the
  `scores_by_run` index): the first page, a middle one, the last, sorted by value, filtered
  by status and by item;
- **old**: what the run page did before (issue 36): `logs(store, run, limit=0)` (every score
  of the run, after a `PRAGMA quick_check` of the whole file) and keep 100;

and reports CPU seconds (user + system) and the growth of peak RSS during the call (VmHWM,
reset through /proc/self/clear_refs just before, less VmRSS then; Linux). Then it serves the
store with `judgebench view` and reports the server's CPU seconds (from /proc) for one HTTP
request of each new page, rendering included.

    python benchmarks/bench_view.py [--scores 1000000] [--no-old] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIGNATURES = {"bleu": "lexical.bleu@1|x", "len": "lexical.length@1|y"}

#: (name, keyword arguments of run_page) of each new page timed.
PAGES: list[tuple[str, dict[str, object]]] = [
    ("first page", {}),
    ("middle page (5,000 of 10,000)", {"page": 5000}),
    ("last page", {"page": 10_000}),
    ("sorted by value, first page", {"sort": "value"}),
    ("sorted by value, descending, page 10", {"sort": "value", "descending": True,
                                              "page": 10}),
    ("sorted by value, page 5,000", {"sort": "value", "page": 5000}),
    ("status=error, first page", {"statuses": ["error"]}),
    ("item=item-025000", {"item": "item-025000"}),
]

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/plugins"]
from judgebench.services.runs import logs
from judgebench.view.pages import run_page
small, big, way, kwargs = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
run_page(small, 1)  # a warm viewer: modules imported, validators built
logs(small, 1, limit=0, readonly=True)

def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def status_kb(name):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines()
                if l.startswith(name + ":"))
    return int(line.split()[1])

Path("/proc/self/clear_refs").write_text("5")  # peak RSS (VmHWM) starts again from now
rss0 = status_kb("VmRSS")
cpu0 = usage()
wall0 = time.perf_counter()
if way == "new":
    page = run_page(big, 1, **kwargs)
    shown, matched = len(page.entries), page.result.matched
else:
    result = logs(big, 1, limit=0, readonly=True)
    shown, matched = len(result.entries[:100]), result.matched
wall = time.perf_counter() - wall0
cpu1, rss1 = usage(), status_kb("VmHWM")
print(json.dumps({"cpu_s": cpu1 - cpu0, "wall_s": wall, "rss_growth_mb": (rss1 - rss0) / 1024,
                  "shown": shown, "matched": matched}))
"""


def make_store(path: Path, scores: int) -> None:
    import sqlite3

    sys.path[:0] = [str(REPO), str(REPO / "plugins")]
    from judgebench.engine.store import Store

    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO runs (started, pid, version, command, outcome, metrics) VALUES "
                 "('2026-01-01T00:00:00.000Z', 1, 'x', 'judgebench score big.jsonl', 'ok', ?)",
                 (json.dumps(SIGNATURES),))
    conn.execute(
        "INSERT INTO scores (signature, item, system, sample_index, sample_hash, metric,"
        " value, status, raw, extra, tokens_in, tokens_out, cost_usd, latency_s, elapsed_s,"
        " created_at, run_id)"
        " WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < ?)"
        " SELECT CASE x % 2 WHEN 1 THEN ? ELSE ? END, printf('item-%06d', x / 20),"
        " printf('system-%02d', x % 20), 0, 'h', CASE x % 2 WHEN 1 THEN 'lexical.bleu'"
        " ELSE 'lexical.length' END, CASE WHEN x % 13 = 0 THEN NULL"
        " ELSE (x * 7919 % 1000) / 1000.0 END, CASE WHEN x % 17 = 0 THEN 'error' ELSE 'ok'"
        " END, 'Feedback: the summary is fine. [RESULT] 3', json_object('k', x), 120, 40,"
        " 0.0001, 0.5, 0.5, 0, 1 FROM n",
        (scores - 1, SIGNATURES["bleu"], SIGNATURES["len"]))
    conn.commit()
    conn.close()


def child(small: Path, big: Path, way: str, kwargs: dict[str, object]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(small), str(big), way,
                           json.dumps(kwargs)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def served(big: Path) -> list[dict[str, object]]:
    """Server CPU seconds per HTTP request of each new page (rendering included)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}"}
    proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", "view", "--store",
                             str(big), "--port", "0"], stdout=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdout is not None
    select.select([proc.stdout], [], [], 120)
    base = proc.stdout.readline().split(" at ", 1)[1].split()[0]
    queries = {"first page": "", "middle page (5,000 of 10,000)": "?page=5000",
               "last page": "?page=10000", "sorted by value, first page": "?sort=value",
               "status=error, first page": "?status=error",
               "item=item-025000": "?item=item-025000"}
    out = []
    try:
        urllib.request.urlopen(base + "runs/1", timeout=600).read()  # warm
        for name, query in queries.items():
            before = server_cpu(proc.pid)
            with urllib.request.urlopen(base + "runs/1" + query, timeout=600) as page:
                size = len(page.read())
            out.append({"page": name, "server_cpu_s": server_cpu(proc.pid) - before,
                        "html_bytes": size})
        rss = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
               if line.startswith(("VmHWM", "VmRSS"))]
        out.append({"server": rss})
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--scores", type=int, default=1_000_000)
    parser.add_argument("--no-old", action="store_true", help="skip the old way (slow)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, object] = {"scores": args.scores}
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.db", Path(tmp) / "big.db"
        make_store(small, 300)
        make_store(big, args.scores)
        print(f"store: {args.scores:,} scores, {big.stat().st_size / 1e6:.0f} MB")
        rows = []
        for name, kwargs in PAGES:  # kwargs: run_page keyword arguments
            got = child(small, big, "new", kwargs)
            rows.append({"way": "new", "page": name, **got})
            print(f"new  {name:40s} cpu {got['cpu_s']:.3f} s  wall {got['wall_s']:.3f} s  "
                  f"peak RSS +{got['rss_growth_mb']:.1f} MB  ({got['shown']:.0f} of "
                  f"{got['matched']:.0f})")
        if not args.no_old:
            got = child(small, big, "old", {})
            rows.append({"way": "old", "page": "first page", **got})
            print(f"old  {'first page':40s} cpu {got['cpu_s']:.3f} s  wall {got['wall_s']:.3f} s"
                  f"  peak RSS +{got['rss_growth_mb']:.1f} MB  ({got['shown']:.0f} of "
                  f"{got['matched']:.0f})")
        results["pages"] = rows
        http = served(big)
        for row in http:
            print("http", row)
        results["http"] = http
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
