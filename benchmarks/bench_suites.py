"""`judgebench bench` with three lexical metrics on every suite: time and peak memory.

    .venv/bin/python benchmarks/bench_suites.py [--bootstrap 1000] [--workers 1] [--json OUT]

Each case is the command a user runs, as a fresh process (start-up, loading and verifying
the suites, export, scoring into a new store, every protocol's meta-evaluation with the
bootstrap and significance clusters, the card): wall time, and the peak resident memory of
that process (`ru_maxrss` of the child). Cases:

  lexical  `bench lexical.rouge2:multi_ref=mean lexical.chrf lexical.bleu --suite all`:
           the lexical metrics run on every pointwise suite; pairwise suites are skipped (no
           lexical metric compares two outputs), which the card says.
  pairwise `bench judge.pairwise --suite <every pairwise suite>` with a scripted judge on a
           loopback server (tests/scripted_judge.py), so the pairwise path (scoring every
           pair in both orders, the stored published verdicts, per-subset clusters) is
           timed without a model.

The suites come from the installed `judgebench[suites]`, or from plugins/judgebench_suites
in this checkout when it is not installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LEXICAL = ["lexical.rouge2:multi_ref=mean", "lexical.chrf", "lexical.bleu"]


def _installed() -> bool:
    return any(ep.name == "suites" for ep in importlib.metadata.entry_points(group="judgebench"))


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, list[dict[str, Any]]]:
    """(seconds, peak MiB of the child, the cards) of `judgebench ARGS` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "judgebench.cli", *args], env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"judgebench {' '.join(args)} failed:\n{proc.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of the children is the largest of them so far: each case runs after a
    # smaller one or reports the same peak (the order below keeps that honest).
    return seconds, max(peak, before) / 1024, json.loads(proc.stdout)["cards"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    paths = [str(ROOT), str(ROOT / "plugins")]
    plugin = []
    if not _installed():
        paths.append(str(ROOT / "plugins" / "judgebench_suites"))
        plugin = ["-p", "judgebench_suites"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "JB_PAIR_KEY": "unused"}
    common = ["--bootstrap", str(options.bootstrap), "--workers", str(options.workers),
              "--json"]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        from scripted_judge import ScriptedJudge

        listed = subprocess.run([sys.executable, "-m", "judgebench.cli", *plugin, "suites",
                                 "--json"], env=env, capture_output=True, text=True,
                                check=True)
        suites = json.loads(listed.stdout)
        pairwise = ",".join(s["name"] for s in suites if s["kind"] == "pairwise")
        with ScriptedJudge() as judge:
            spec = (f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url},"
                    "api_key_env=JB_PAIR_KEY,protocol=text")
            cases = [("pairwise", [spec], pairwise), ("lexical", LEXICAL, "all")]
            for name, specs, which in cases:
                if not which:
                    continue
                store = Path(folder) / f"{name}.db"
                seconds, mib, cards = _run([*plugin, "bench", *specs, "--suite", which,
                                            "--store", str(store), *common], env)
                ran = [c["suite"] for c in cards if not c["skipped"]]
                rows = sum(c["scored"] for c in cards)
                results.append({"case": name, "suites": ran, "rows": rows,
                                "seconds": round(seconds, 2), "peak_mib": round(mib),
                                "skipped": [c["suite"] for c in cards if c["skipped"]]})
                print(f"{name}: {', '.join(ran)}: {rows} rows scored in {seconds:.1f} s, "
                      f"peak {mib:.0f} MiB"
                      + (f" (skipped {', '.join(results[-1]['skipped'])})"
                         if results[-1]["skipped"] else ""))
    record = {"python": platform.python_version(), "cpus": os.cpu_count(),
              "bootstrap": options.bootstrap, "workers": options.workers, "cases": results}
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
