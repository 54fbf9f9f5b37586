"""BERTScore over the 1,600 SummEval samples (11 references each) on the CPU: judgebench's
`neural.bertscore` against the `bert-score` package on the same local model.

Each side runs in a fresh process that reads the same JSONL, loads the bundled
all-MiniLM-L6-v2 (layer 6, no IDF, no rescaling) and scores every sample against its best
reference. judgebench goes through `judgebench.score` (runner, in-memory store, wide table);
bert-score through `bert_score.score` with its defaults (batch 64, slow tokenizer) and, as a
second reference, with `use_fast_tokenizer=True`. Reported: wall time of the scoring call
(model loading included, library imports not),
samples per second, peak resident memory of the process, and the largest absolute
difference of the F1 values from judgebench's.

    python benchmarks/bench_bertscore.py [--limit N] [--json benchmarks/out/bertscore.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data"))
import vendored  # noqa: E402  (the repository's data folder)

DATA = vendored.unpacked("summeval")

CHILD = r'''
import json, resource, sys, time
import numpy as np

impl, data, limit, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [json.loads(line) for line in open(data, encoding="utf-8")][:limit]
start = time.perf_counter()
import torch, transformers  # both sides pay these imports outside the timed call
from transformers import AutoConfig, AutoModel, AutoTokenizer
if impl == "judgebench":
    import judgebench
    from judgebench.models import Sample

    samples = [Sample(**{k: r[k] for k in ("item", "system", "output", "reference")})
               for r in rows]
    ready = time.perf_counter()
    table = judgebench.score(samples, ["neural.bertscore"]).to_pandas()
    f1 = table["neural.bertscore"].to_numpy()
else:
    import bert_score
    from judgebench_neural.loading import resolve_model

    model = str(resolve_model("all-MiniLM-L6-v2").path)
    ready = time.perf_counter()
    _, _, f1 = bert_score.score([r["output"] for r in rows], [r["reference"] for r in rows],
                                model_type=model, num_layers=6, device="cpu", batch_size=64,
                                use_fast_tokenizer=(impl == "bert-score-fast"))
    f1 = f1.numpy()
done = time.perf_counter()
usage = resource.getrusage(resource.RUSAGE_SELF)
np.save(out, np.asarray(f1, dtype=np.float64))
print(json.dumps({"impl": impl, "n": len(rows), "import_s": ready - start,
                  "score_s": done - ready, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mib": usage.ru_maxrss / 1024}))
'''

IMPLS = ("judgebench", "bert-score", "bert-score-fast")


def run(impl: str, data: Path, limit: int, tmp: Path) -> dict:
    script = tmp / "child.py"
    script.write_text(CHILD)
    out = tmp / f"{impl}.npy"
    proc = subprocess.run([sys.executable, str(script), impl, str(data), str(limit), str(out)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["f1"] = np.load(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=1600)
    parser.add_argument("--impl", action="append", choices=IMPLS)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each implementation, interleaved; the fastest is kept")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    impls = args.impl or IMPLS
    runs: dict[str, list[dict]] = {impl: [] for impl in impls}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for impl in impls:
                result = run(impl, args.data, args.limit, Path(tmp))
                runs[impl].append(result)
                print(f"{impl}: {result['score_s']:.1f} s wall, {result['cpu_s']:.1f} s CPU",
                      file=sys.stderr, flush=True)
    results = [min(rs, key=lambda r: r["score_s"]) for rs in runs.values()]
    ours = next((r["f1"] for r in results if r["impl"] == "judgebench"), None)
    print("| implementation | samples | scoring time (s) | samples/s | CPU time (s) | "
          "peak RSS (MiB) | max abs F1 diff vs judgebench |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        diff = "-" if ours is None or r["impl"] == "judgebench" else \
            f"{np.abs(r['f1'] - ours).max():.1e}"
        r["samples_per_s"] = r["n"] / r["score_s"]
        r["max_abs_diff"] = diff
        r["all_score_s"] = [x["score_s"] for x in runs[r["impl"]]]
        print(f"| {r['impl']} | {r['n']} | {r['score_s']:.1f} | {r['samples_per_s']:.1f} | "
              f"{r['cpu_s']:.1f} | {r['peak_rss_mib']:.0f} | {diff} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "f1"}
                                         for r in results], indent=2))


if __name__ == "__main__":
    main()
