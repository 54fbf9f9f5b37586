"""The mutation check: does the suite still catch ten deliberate one-line bugs?

Each mutation replaces one line's text in one file of a temporary copy of a tree (a commit,
or the working tree), then runs the tests named for it there; a mutation is *caught* when at
least one of them fails. The copy is checked first without any mutation: the named tests
must pass there, or a failure would prove nothing.

    python benchmarks/mutation_check.py                  # the working tree
    python benchmarks/mutation_check.py --rev f27d184    # a commit (git archive)
    python benchmarks/mutation_check.py --only store-write --only reader
    python benchmarks/mutation_check.py --workers 2      # as .ci/run runs the suite

Run it with the test environment's Python (pytest and the extras on it). The exit status is
1 when a mutation is not caught or the clean copy fails, else 0. Speed and coverage of the
suite are the subject: issue 37 asks that each of the ten is caught after the suite's
speed-up exactly as before it.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str  # the kind of code: a statistic, a reader, ...
    path: str
    old: str  # occurs exactly once in `path`
    new: str
    tests: tuple[str, ...]  # pytest node ids or files, relative to the tree


MUTATIONS = (
    Mutation("pearson", "a statistic (Pearson r's covariance)", "meta_eval/correlation.py",
             "cov = (hc * mc).sum(axis=-1)", "cov = (hc * hc).sum(axis=-1)",
             ("tests/test_meta_eval_correlation.py",)),
    Mutation("judge-parser", "a judge parser (a score's range check)",
             "plugins/judgebench_judges/parsing.py",
             "if not lo <= int(value) <= hi:", "if not lo <= int(value) < hi:",
             ("tests/test_judges_parsing.py",)),
    Mutation("reader", "a reader (JSONL line numbers)", "judgebench/tables/io.py",
             "for number, line in enumerate(lines, start=1):",
             "for number, line in enumerate(lines, start=0):",
             ("tests/test_input_errors.py",)),
    Mutation("store-write", "a store write (a score's reason)",
             "judgebench/engine/store.py",
             "str(s.status), s.reason, s.raw, s.rationale,",
             "str(s.status), None, s.raw, s.rationale,",
             ("tests/test_runs_logs.py", "tests/test_scoring.py")),
    Mutation("markdown", "a renderer (Markdown cell escaping)", "judgebench/render/markdown.py",
             'escaped = _PIPE_CELL.sub(lambda m: "\\\\" + m.group(), text)', "escaped = text",
             ("tests/test_output_formats.py", "tests/test_output_trust.py")),
    Mutation("borda-ties", "an aggregation rule (Borda's tie share)",
             "meta_eval/aggregation/positional.py",
             "return counts.strict + share * counts.ties",
             "return counts.strict + share * counts.strict",
             ("tests/test_aggregate_rules.py", "tests/test_aggregate_ties.py")),
    Mutation("kappa", "an agreement statistic (quadratic-weighted kappa's weights)",
             "meta_eval/agreement.py",
             "return (i - j) ** 2 / (k - 1) ** 2", "return np.abs(i - j) / (k - 1) ** 2",
             ("tests/test_meta_eval_agreement.py", "tests/test_meta_eval_agreement_stats.py")),
    Mutation("chrf-beta", "a lexical metric (chrF's default beta)",
             "plugins/judgebench_lexical/metrics.py",
             "beta: int = Field(2, ge=0, le=MAX_COUNT)", "beta: int = Field(1, ge=0, le=MAX_COUNT)",
             ("tests/test_lexical.py",)),
    Mutation("failed-statuses", "failed-verdict counting (which statuses are failed)",
             "judgebench/tables/failed.py",
             'FAILED_STATUSES = ("parse_error", "refused", "error")',
             'FAILED_STATUSES = ("parse_error", "refused")',
             ("tests/test_failed_as.py",)),
    Mutation("spec-name", "the metric-spec parser (name before options)", "judgebench/spec.py",
             'name, colon, rest = spec.partition(":")', 'name, colon, rest = spec.rpartition(":")',
             ("tests/test_spec_quoting.py",)),
)


def copy_tree(rev: str | None, target: Path) -> None:
    """`rev`'s files (git archive), or the working tree's tracked and untracked files that
    git does not ignore, into `target`."""
    if rev is not None:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="tar")
        return
    names = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True
                           ).stdout.decode().split("\0")
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(source.read_bytes())


def run_tests(tree: Path, tests: tuple[str, ...], workers: str = "0"
              ) -> tuple[bool, list[str], float]:
    """(passed, the failing test ids, seconds) for `tests` run in `tree`, on `workers`
    pytest-xdist workers as `.ci/run` runs them ("0": in the pytest process)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "plugins")]),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rfE", "--no-header", "-n", workers, "--dist", "worksteal",
                           *tests], cwd=tree, env=env,
                          capture_output=True, text=True)
    failing = re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", proc.stdout, re.M)
    if proc.returncode not in (0, 1):  # a collection or usage error is not a catch
        failing.append(f"<pytest exited {proc.returncode}: {proc.stdout[-500:]}>")
    return proc.returncode == 0, failing, time.monotonic() - started


def mutate(tree: Path, mutation: Mutation) -> str:
    """Apply `mutation` in `tree`; the original text of its file."""
    path = tree / mutation.path
    text = path.read_text(encoding="utf-8")
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"{mutation.name}: {mutation.old!r} occurs {count} times in "
                         f"{mutation.path}, not once")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="a commit to check (default: the working tree)")
    parser.add_argument("--only", action="append", default=[],
                        help="a mutation's name (repeatable; default: all ten)")
    parser.add_argument("--workers", default="0",
                        help="pytest-xdist workers, as `.ci/run` uses them (default 0: none)")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    ok = True
    with tempfile.TemporaryDirectory(prefix="mutation-check-") as tmp:
        tree = Path(tmp)
        copy_tree(args.rev, tree)
        tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        passed, failing, seconds = run_tests(tree, tests, args.workers)
        print(f"clean tree ({args.rev or 'working tree'}): "
              f"{'pass' if passed else 'FAIL ' + ' '.join(failing)} ({seconds:.0f} s)",
              flush=True)
        ok &= passed
        for mutation in chosen:
            original = mutate(tree, mutation)
            try:
                passed, failing, seconds = run_tests(tree, mutation.tests, args.workers)
            finally:
                (tree / mutation.path).write_text(original, encoding="utf-8")
            caught = not passed and bool(failing)
            ok &= caught
            print(f"{mutation.name} ({mutation.what}; {mutation.path}): "
                  f"{'caught' if caught else 'NOT CAUGHT'} by {len(failing)} failing test(s) "
                  f"in {seconds:.0f} s: {' '.join(failing)}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
