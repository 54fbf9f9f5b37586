"""`judgebench bench` on every suite, together and one by one: time and peak memory.

    .venv/bin/python benchmarks/bench_suites.py [--bootstrap 1000] [--workers 1] [--json OUT]

Each case is the command a user runs, as a fresh process (start-up, loading and verifying
the suites, export, scoring into a new store, every protocol's meta-evaluation with the
bootstrap and significance clusters, the card): wall time, and the peak resident memory of
that process (`ru_maxrss` of the child). Cases:

  lexical  `bench lexical.rouge2:multi_ref=mean lexical.chrf lexical.bleu lexical.length
           --suite all`: the lexical metrics run on every pointwise suite (the
           reference-based ones where the suite has references, lexical.length on all);
           pairwise suites are skipped (no lexical metric compares two outputs), which the
           card says.
  pairwise `bench judge.pairwise --suite <every pairwise suite>` with a scripted judge on a
           loopback server (tests/scripted_judge.py), so the pairwise path (scoring every
           pair in both orders, the stored published verdicts, per-subset clusters) is
           timed without a model.
  <suite>  each suite alone, in a fresh process with a new store: lexical.length on a
           pointwise suite, the scripted judge on a pairwise one (the time and memory one
           suite costs, its stored published outputs recomputed under every protocol).

The suites are this checkout's (plugins/judgebench_suites first on the path, so an
installed `judgebench[suites]`, a copy that may be older, does not stand in for them). Peak
memory is each child's own `ru_maxrss` (`os.wait4`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LEXICAL = ["lexical.rouge2:multi_ref=mean", "lexical.chrf", "lexical.bleu", "lexical.length"]


def _installed() -> bool:
    return any(ep.name == "suites" for ep in importlib.metadata.entry_points(group="judgebench"))


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, list[dict[str, Any]]]:
    """(seconds, peak MiB of the child, the cards) of `judgebench ARGS` in a fresh process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args], env=env,
                                stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"judgebench {' '.join(args)} failed:\n{err.read().decode()}")
        cards = json.loads(out.read())["cards"]
    return seconds, usage.ru_maxrss / 1024, cards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    paths = [str(ROOT), str(ROOT / "plugins"), str(ROOT / "plugins" / "judgebench_suites")]
    plugin = [] if _installed() else ["-p", "judgebench_suites"]
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
            cases += [(s["name"], [spec] if s["kind"] == "pairwise" else ["lexical.length"],
                       s["name"]) for s in sorted(suites, key=lambda s: s["size"])]
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
