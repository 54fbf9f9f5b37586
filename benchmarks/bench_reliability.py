"""`judgebench meta-eval reliability` on a rater table against the reference an expert would
write: pingouin's `intraclass_corr` (all six Shrout-Fleiss forms with F-tests and intervals),
both timed as a user waits for them (a fresh process that reads the CSV and prints), with peak
memory (GNU time's maximum resident set of each command) and the machine's load average beside each.

    python benchmarks/bench_reliability.py [--targets 2000 20000] [--raters 4]

The table: TARGETS items rated by RATERS raters on a 1-10 scale (a shared item effect, a
rater offset and noise, rounded: ties), one column per rater. judgebench prints the two
two-way-random forms (`--icc-design two-way-random`), pingouin all six (as a user of it gets
them). Prints one JSON line per case and checks that both give ICC2 = ICC(A,1) to 1e-9.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REFERENCE = """
import sys, json
import pandas as pd, pingouin as pg
wide = pd.read_csv(sys.argv[1])
long = wide.melt(id_vars="item", var_name="rater", value_name="rating")
table = pg.intraclass_corr(long, targets="item", raters="rater", ratings="rating")
row = table.set_index("Type").loc["ICC(A,1)"]  # pingouin 0.6 names them McGraw-Wong
print(json.dumps({"icc2": float(row["ICC"])}))
"""


def table(path: Path, targets: int, raters: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    item = rng.normal(size=(targets, 1))
    offset = rng.normal(scale=0.5, size=(1, raters))
    ratings = np.clip(np.round(5.5 + 1.5 * item + offset + rng.normal(size=(targets, raters))),
                      1, 10)
    frame = pd.DataFrame(ratings, columns=[f"r{k}" for k in range(raters)])
    frame.insert(0, "item", [f"i{k}" for k in range(targets)])
    frame.to_csv(path, index=False)


def timed(cmd: list[str], where: Path) -> tuple[float, float, str]:
    """Wall seconds, the command's own peak RSS in MiB (GNU time's %M), its stdout."""
    peak_file = where / "peak.txt"
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *cmd],
                          capture_output=True, text=True, env=os.environ)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return seconds, int(peak_file.read_text().split()[-1]) / 1024, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--raters", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        for targets in args.targets:
            path = Path(tmpdir) / f"r{targets}.csv"
            table(path, targets, args.raters)
            raters = [a for k in range(args.raters) for a in ("--rater", f"r{k}")]
            ours = [sys.executable, "-m", "judgebench.cli", "meta-eval", "reliability",
                    str(path), "--item", "item", *raters, "--icc-design", "two-way-random",
                    "--json"]
            reference = [sys.executable, "-c", REFERENCE, str(path)]
            found = {}
            for name, cmd in (("judgebench", ours), ("pingouin", reference)):
                seconds, peak, out = timed(cmd, Path(tmpdir))
                data = json.loads(out)
                icc2 = data["icc2"] if name == "pingouin" else data[0]["icc"]["ICC2"]["value"]
                print(json.dumps({"case": name, "targets": targets, "raters": args.raters,
                                  "seconds": round(seconds, 2), "peak_mib": round(peak),
                                  "icc2": icc2, "load": round(os.getloadavg()[0], 1)}),
                      flush=True)
                found[name] = icc2
            if abs(found["judgebench"] - found["pingouin"]) > 1e-9:
                raise SystemExit(f"ICC2 differs: {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
