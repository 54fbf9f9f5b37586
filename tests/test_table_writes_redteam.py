"""The scores table and its sidecar under faults, and what a rerun replays (issue 24, items 5
to 7): a write that finds no room writes neither and says so in one line; a killed judge's
temporaries are removed, and named, by the next run on the same destination, while a live
writer's are left alone; `--retry parse_error` asks again what the judge cache would replay."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_cli, write_jsonl
from scripted_judge import ScriptedJudge

from judgebench.tables.io import remove_stale_temps

#: The size limit (RLIMIT_FSIZE) of the run that finds no room: above the table of MANY rows
#: (about 8 KB), below its sidecar (one corpus chrF score per system: about 100 KB).
SIZE_LIMIT = 50_000
MANY = [{"item": "i", "system": f"sys{n:03d}", "output": "a cat sat", "reference": "the cat"}
        for n in range(300)]


def _size_limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (SIZE_LIMIT, SIZE_LIMIT))


def test_no_room_for_the_sidecar_writes_neither_and_says_so(tmp_path: Path) -> None:
    """RLIMIT_FSIZE in a real `judgebench score` process: every write past the limit fails as
    a full disk does (EFBIG instead of ENOSPC), on this machine's real file system, with no
    mount and no patched code. The store is in memory, so only the table and sidecar write."""
    source = write_jsonl(tmp_path / "in.jsonl", MANY)
    out = tmp_path / "out.csv"
    out.write_text("the earlier table\n")
    Path(f"{out}.meta.json").write_text('{"earlier": true}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "judgebench.cli", "score", str(source), "-m", "lexical.chrf",
         "-o", str(out), "--store", ":memory:"], cwd=REPO, capture_output=True, text=True,
        timeout=600, preexec_fn=_size_limited,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"Error: {out}: no room to write the table and its .meta.json ("), line
    assert out.read_text() == "the earlier table\n"
    assert Path(f"{out}.meta.json").read_text() == '{"earlier": true}\n'
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # with room, the same command writes both
    run_cli("score", str(source), "-m", "lexical.chrf", "-o", str(out), "--store", ":memory:",
            check=True)
    assert json.loads(Path(f"{out}.meta.json").read_text())["columns"]


def test_the_next_run_removes_a_killed_judges_temporary_table(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"item": f"q{n}", "system": "s", "input": "Q?", "output": f"answer {n}"}
        for n in range(4)])
    out = tmp_path / "out.csv"
    asked, release = threading.Event(), threading.Event()

    def held(system: str, user: str) -> str:  # answers only once the run is killed
        asked.set()
        release.wait()
        return "Score: 3"

    with ScriptedJudge(reply=held) as judge:
        run = subprocess.Popen(
            [sys.executable, "-m", "judgebench.cli", "score", str(source), "-m",
             f"judge.rubric:backend=openai_compat,model=judge,api_base={judge.url},"
             "api_key_env=JB_KEY,protocol=text,cache=false", "-o", str(out), "--store",
             str(tmp_path / "s.db")], cwd=REPO, env={**os.environ, "JB_KEY": "x"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            asked.wait()  # the judge was asked: the run is writing its table
            table, sidecar = (next(tmp_path.glob(f".{name}.{run.pid}.*.tmp"))
                              for name in ("out.csv", "out.csv.meta.json"))
            run.kill()
            run.wait()
        finally:
            release.set()
    assert table.exists() and sidecar.exists() and not out.exists()
    others = tmp_path / f".other.csv.{run.pid}.abcd1234.tmp"  # another destination's
    others.write_text("x")
    proc = run_cli("score", str(source), "-m", "lexical.length", "-o", str(out), "--store",
                   str(tmp_path / "s.db"), check=True)
    for path, left in ((out, table), (f"{out}.meta.json", sidecar)):
        assert (f"removed 1 stale temporary file(s) of {path} (their writer is gone): "
                f"{left.name}" in proc.stderr), proc.stderr
        assert not left.exists()
    assert others.exists()
    assert out.read_text().startswith("item,system")


LIVE_WRITER = """
import sys
from judgebench.tables.io import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    tmp.write_text("being written")
    print(tmp.name, flush=True)
    sys.stdin.readline()
"""


def test_a_live_writers_temporary_file_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    writer = subprocess.Popen([sys.executable, "-c", LIVE_WRITER, str(target)], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdin is not None
    name = writer.stdout.readline().strip()
    try:
        assert remove_stale_temps(target) == []
        # its name and age say stale; its lock says a writer holds it
        assert remove_stale_temps(target, older_than_s=-1) == []
        assert (tmp_path / name).exists()
    finally:
        writer.stdin.write("\n")
        writer.stdin.close()
        writer.wait()
    assert target.read_text() == "being written"


def test_retry_parse_error_asks_again_what_the_cache_would_replay(tmp_path: Path) -> None:
    """Issue 24 item 7: a parse_error answer sits in the judge cache; a plain rerun replays it,
    `--resume --retry parse_error` asks again (and the new answer replaces it), and each run
    says how many answers came from the cache."""
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"item": f"q{n}", "system": "s", "input": "Q?", "output": f"answer {n}"}
        for n in range(2)])
    answer = ["no verdict in this answer"]  # a broken server
    with ScriptedJudge(reply=lambda system, user: answer[0]) as judge:
        spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={judge.url},"
                "api_key_env=JB_KEY,protocol=text")

        def run(*extra: str) -> tuple[str, list[str]]:
            out = tmp_path / "out.csv"
            proc = run_cli("score", str(source), "-m", spec, "-o", str(out), "--store",
                           str(tmp_path / "s.db"), "--cache", str(tmp_path / "cache.sqlite"),
                           "--allow-failures", *extra, env={"JB_KEY": "x"})
            assert proc.returncode == 0, proc.stderr
            line = next(x.strip() for x in proc.stderr.splitlines() if "judge answers" in x)
            return line, out.read_text().splitlines()[1:]

        first, rows = run()
        assert first == "judge answers: 0 from the judge cache, 2 asked of a model"
        assert all(row.endswith(",") for row in rows)  # parse errors: no value
        answer[0] = "Feedback: fixed. [RESULT] 4"  # the server is fixed
        kept, rows = run("--resume")  # --resume keeps a parse error by default
        assert kept == "judge answers: 0 from the judge cache, 0 asked of a model"
        assert all(row.endswith(",") for row in rows)
        replayed, rows = run()
        assert replayed == "judge answers: 2 from the judge cache, 0 asked of a model"
        assert all(row.endswith(",") for row in rows) and judge.calls == 2
        again, rows = run("--resume", "--retry", "parse_error")
        assert again == "judge answers: 0 from the judge cache, 2 asked of a model"
        assert all(row.endswith(",4.0") for row in rows), rows
        assert judge.calls == 4
        last, rows = run()
        assert last == "judge answers: 2 from the judge cache, 0 asked of a model"
        assert all(row.endswith(",4.0") for row in rows) and judge.calls == 4
    proc = run_cli("score", str(source), "-m", spec, "--retry", "parse_errors")
    assert proc.returncode == 2 and "--retry" in proc.stderr and "parse_errors" in proc.stderr
