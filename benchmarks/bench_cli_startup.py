"""CPU time of `judgebench --version` and `judgebench --help`, with and without bytecode.

The tree (the working tree, or `--rev`'s files) is copied to a temporary folder and run from
there (PYTHONPATH), as the `judgebench` script runs it: `from judgebench.cli import main`.
"without bytecode" is PYTHONDONTWRITEBYTECODE=1 with no __pycache__ in the copy (every
judgebench module compiled again in each process; the installed libraries keep the bytecode
pip wrote), "with bytecode" is the copy after `python -m compileall`. CPU is user + system
time of the child (getrusage), the median of --repeats runs after one warm-up.

    python benchmarks/bench_cli_startup.py                # the working tree
    python benchmarks/bench_cli_startup.py --rev f27d184  # a commit
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("judgebench", "meta_eval", "plugins")
SCRIPT = "import sys; from judgebench.cli import main; sys.argv[0] = 'judgebench'; sys.exit(main())"


def copy_packages(rev: str | None, target: Path) -> None:
    if rev is None:
        for name in PACKAGES:
            shutil.copytree(REPO / name, target / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        return
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, *PACKAGES],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="tar")


def cpu_seconds(args: list[str], env: dict[str, str]) -> float:
    """One run's CPU; in the copy's folder, which `python -c` puts first on sys.path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, check=True,
                   cwd=env["PYTHONPATH"].split(os.pathsep)[0],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(args: list[str], env: dict[str, str], repeats: int) -> float:
    cpu_seconds(args, env)  # warm-up: the file cache
    return statistics.median(cpu_seconds(args, env) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="a commit to measure (default: the working tree)")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-startup-") as tmp:
        tree = Path(tmp)
        copy_packages(args.rev, tree)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "plugins")]),
                   PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPYCACHEPREFIX", None)
        rows = []
        for command in (["--version"], ["--help"]):
            rows.append((" ".join(command), "without", median_cpu(command, env, args.repeats)))
        subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(tree / p)
                                                                  for p in PACKAGES)], check=True)
        for command in (["--version"], ["--help"]):
            rows.append((" ".join(command), "with", median_cpu(command, env, args.repeats)))
    print(f"tree: {args.rev or 'working tree'}; median of {args.repeats} runs, CPU seconds")
    print("| command | bytecode | CPU s |")
    print("|---|---|---|")
    for name, bytecode, seconds in sorted(rows):
        print(f"| judgebench {name} | {bytecode} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
