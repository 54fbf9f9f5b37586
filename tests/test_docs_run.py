"""The docs run: every ```sh and ```python block of README.md and docs/**/*.md, and their links.

The convention (docs/index.md says it to readers):
- the ```sh and ```python blocks of one page run in order, in one fresh temporary folder that
  holds a copy of the repository's `examples/`, with `judgebench` on PATH (this Python's bin);
  sh blocks with `bash -e -o pipefail`, python blocks as scripts with this Python;
- a block preceded by the line `<!-- not-run: REASON -->` is not run, and REASON is one of
  NOT_RUN_REASONS;
- ```text blocks are output; ```toml and ```json blocks are not run but must parse; the other
  languages in DATA_LANGUAGES are not run. A fence without a language, or with one not named
  here (```bash, ```console), is an error: each block says what it is;
- `$JUDGEBENCH_DOCS_SERVER` is the api_base of an OpenAI-compatible judge server: here a
  loopback one that answers every built-in judge in form (tests/docs_judge_server.py), so the
  judge examples run without a key or a GPU;
- every relative link points at a file of the repository, and no link leaves the repository
  except an https:// URL.
Each page is one test parameter; a failing block's error names the page, its line and the
command. The pages whose blocks load a real model are marked `slow` (SLOW_PAGES).
The pages selected for a run start together when the first of them is reached, up to
`$JUDGEBENCH_DOCS_JOBS` at once (default: the machine's cores; their blocks still run in
order, each in a fresh process); each page's test then waits for its own page. Under
pytest-xdist the workers share the pages out instead, each page run by its own test.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import seed_model_cache
from docs_judge_server import DocsJudgeServer

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
RUN_LANGUAGES = ("sh", "python")
DATA_LANGUAGES = ("text", "toml", "json", "yaml", "sql", "ini", "html", "jinja", "diff")
NOT_RUN_REASONS = ("needs an API key", "needs a GPU", "needs a Ray cluster",
                   "installs packages (CI installs them: .ci/run)")
SLOW_PAGES = frozenset({"docs/guides/local-judges.md", "docs/guides/neural-metrics.md",
                        "docs/guides/conversations.md", "docs/guides/rag.md",
                        "docs/guides/error-spans.md"})
BLOCK_TIMEOUT_S = 900  # a guard against a hung block, not a speed check

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\((?P<target><[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\)")
HREF = re.compile(r"""(?:href|src)\s*=\s*["'](?P<target>[^"']*)["']""")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(?P<target>\S+)", re.M)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None  # the reason, when the block is marked not-run


def doc_pages() -> list[str]:
    pages = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)]
    return [p.relative_to(REPO).as_posix() for p in pages]


def blocks(page: str) -> list[Block]:
    """The fenced blocks of `page`, in order; ValueError for an unclosed fence."""
    lines = (REPO / page).read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0] if opening["info"].strip() else ""
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        marker = NOT_RUN.match(previous)
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence) \
                    and not closing["info"].strip():
                break
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        else:
            raise ValueError(f"{page}:{i + 1}: a code fence that is never closed")
        found.append(Block(page, i + 1, language, "\n".join(body) + "\n",
                           marker["reason"] if marker else None))
        i = j + 1
    return found


INDENTED_COMMAND = re.compile(r"^(?: {4,}|\t)(?:judgebench|python|pip|\.venv/|def |import |from )")


def indented_commands(page: str) -> list[int]:
    """The lines (1-based) that open an indented code block of commands or Python outside
    any fence: such a block would be neither run nor marked, so it is an error."""
    lines = (REPO / page).read_text(encoding="utf-8").split("\n")
    found, inside = [], False
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            inside = not inside
        elif not inside and INDENTED_COMMAND.match(line) and number > 1 \
                and not lines[number - 2].strip():
            found.append(number)
    return found


def prose(page: str) -> str:
    """The page without its fenced blocks and inline code (where links are not links)."""
    lines = (REPO / page).read_text(encoding="utf-8").split("\n")
    kept, inside = [], False
    for line in lines:
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            kept.append(line)
    return INLINE_CODE.sub("", "\n".join(kept))


def _suites_site(tmp: Path) -> Path | None:
    """Where the `suites` plugin is not installed (a checkout run without the extra), a
    folder that registers plugins/judgebench_suites through its entry point, as installing
    it would; None when it is installed."""
    if any(ep.name == "suites" for ep in importlib.metadata.entry_points(group="judgebench")):
        return None
    site = tmp / "suites-site"
    info = site / "judgebench_suites-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: judgebench-suites\n"
                                   "Version: 0.0.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[judgebench]\nsuites = judgebench_suites\n",
                                           encoding="utf-8")
    (site / "judgebench_suites.pth").write_text(str(REPO / "plugins" / "judgebench_suites"),
                                                encoding="utf-8")
    return site


def _environment(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    site = _suites_site(tmp)
    if site is not None:
        paths += [str(site), str(REPO / "plugins" / "judgebench_suites")]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               JUDGEBENCH_CACHE_DIR=str(tmp / "judge-cache"))
    return env


def _params() -> list[object]:
    return [pytest.param(page, id=page, marks=[pytest.mark.slow] if page in SLOW_PAGES else [])
            for page in doc_pages()]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[str]:
    """The api_base of the judge the examples call ($JUDGEBENCH_DOCS_SERVER)."""
    with DocsJudgeServer() as server:
        yield server.url


def _jobs() -> int:
    """How many pages run at once: $JUDGEBENCH_DOCS_JOBS, else the machine's cores."""
    raw = os.environ.get("JUDGEBENCH_DOCS_JOBS", "")
    return max(1, int(raw)) if raw.strip() else max(1, os.cpu_count() or 1)


def prepare_page(folder: Path, server: str, models: Path | None = None) -> dict[str, str]:
    """`folder`/work with a copy of `examples/`, and the environment a page's blocks run in
    (made here, in the calling thread: it reads os.environ). `models`: converted models the
    page's judgebench cache starts with (`seed_model_cache`)."""
    work = folder / "work"
    work.mkdir()
    shutil.copytree(REPO / "examples", work / "examples")
    env = _environment(folder)
    if models is not None:
        seed_model_cache(Path(env["JUDGEBENCH_CACHE_DIR"]), models)
    env["JUDGEBENCH_DOCS_SERVER"] = server
    return env


def run_page(page: str, folder: Path, server: str, models: Path | None = None) -> str | None:
    """`prepare_page`, then `run_blocks`."""
    return run_blocks(page, folder, prepare_page(folder, server, models))


def run_blocks(page: str, folder: Path, env: dict[str, str]) -> str | None:
    """Run the sh and python blocks of `page` in order, in `folder`/work (`prepare_page`);
    None when all pass, else the failure: the page, the line, the command and its output.
    The blocks' languages and markers are checked by the test, not here."""
    work = folder / "work"
    for block in blocks(page):
        if block.language not in RUN_LANGUAGES or block.not_run is not None:
            continue
        if block.language == "sh":
            argv = ["bash", "-e", "-o", "pipefail", "-c", block.code]
        else:
            script = folder / f"block_{block.line}.py"
            script.write_text(block.code, encoding="utf-8")
            argv = [sys.executable, str(script)]
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            return (f"{block.page}:{block.line}: the ```{block.language} block exited "
                    f"{proc.returncode}:\n{block.code}\n--- stdout ---\n{proc.stdout[-3000:]}\n"
                    f"--- stderr ---\n{proc.stderr[-3000:]}")
    return None


@pytest.fixture(scope="module")
def page_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              judge_server: str) -> Iterator[dict[str, Future[str | None]]]:
    """Every page this session runs (the selected `test_page_runs` items, in their order),
    started on a pool of `_jobs()` threads (none under pytest-xdist), each in a temporary
    folder of its own: page -> its run (`run_blocks`). The pages that load the default model
    (SLOW_PAGES) share the session's converted copy (`default_model_store`)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Every xdist worker collects every page and runs only those it is handed: the pages
        # run in their own tests (`test_page_runs`), spread over the workers by xdist.
        yield {}
        return
    pages = [str(item.callspec.params["page"]) for item in request.session.items
             if isinstance(item, pytest.Function) and item.originalname == "test_page_runs"
             and item.module is sys.modules[__name__]]
    models = (request.getfixturevalue("default_model_store")
              if SLOW_PAGES.intersection(pages) else None)
    with ThreadPoolExecutor(max_workers=_jobs(), thread_name_prefix="docs-page") as pool:
        runs = {}
        for page in dict.fromkeys(pages):
            folder = tmp_path_factory.mktemp("page")
            env = prepare_page(folder, judge_server, models if page in SLOW_PAGES else None)
            runs[page] = pool.submit(run_blocks, page, folder, env)
        try:
            yield runs
        finally:
            for run in runs.values():
                run.cancel()  # the pages not started (a run stopped early, -x)


@pytest.mark.parametrize("page", _params())
def test_page_runs(page: str, tmp_path: Path, judge_server: str,
                   page_runs: dict[str, Future[str | None]],
                   request: pytest.FixtureRequest) -> None:
    """Every block of the page is of a known language, every not-run reason an allowed one,
    every toml/json block parses, and the sh and python blocks run in order."""
    indented = indented_commands(page)
    assert not indented, (f"{page}:{indented[0]}: an indented code block; fence it as ```sh or "
                          "```python (run) or ```text (output)")
    for block in blocks(page):
        where = f"{block.page}:{block.line}"
        known = RUN_LANGUAGES + DATA_LANGUAGES
        assert block.language in known, (
            f"{where}: a ```{block.language} block: use ```sh or ```python (run), ```text "
            f"(output) or one of {', '.join(DATA_LANGUAGES)}")
        if block.not_run is not None:
            assert block.not_run in NOT_RUN_REASONS, (
                f"{where}: not-run reason {block.not_run!r} is not one of {NOT_RUN_REASONS}")
        if block.language == "toml":
            try:
                tomllib.loads(block.code)
            except tomllib.TOMLDecodeError as exc:
                pytest.fail(f"{where}: the toml block does not parse: {exc}")
        if block.language == "json":
            try:
                json.loads(block.code)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{where}: the json block does not parse: {exc}")
    run = page_runs.get(page)
    if run is not None:
        failure = run.result()
    else:
        models = (request.getfixturevalue("default_model_store") if page in SLOW_PAGES
                  else None)
        failure = run_page(page, tmp_path, judge_server, models)
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def link_targets(page: str) -> list[str]:
    text = prose(page)
    return [m["target"].strip("<>") for pattern in (LINK, HREF, REFERENCE_LINK)
            for m in pattern.finditer(text)]


@pytest.mark.parametrize("page", doc_pages())
def test_links_stay_in_the_repository(page: str) -> None:
    """A relative link names an existing file inside the repository; any other link is an
    https:// URL."""
    for target in link_targets(page):
        if target.startswith("https://"):
            continue
        assert not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//"), (
            f"{page}: the link {target!r} leaves the repository and is not an https:// URL")
        path = target.split("#", 1)[0]
        if not path:
            continue  # an anchor on the page itself
        assert not path.startswith("/"), (
            f"{page}: the link {target!r} is absolute; make it relative")
        resolved = ((REPO / page).parent / path).resolve()
        assert resolved.is_relative_to(REPO), f"{page}: the link {target!r} leaves the repository"
        generated = page.startswith("docs/") and resolved.relative_to(REPO).as_posix() in {
            f"docs/{name}" for name in _generated_pages()}
        assert resolved.exists() or generated, f"{page}: the link {target!r} names no file"


def _hook() -> object:
    spec = importlib.util.spec_from_file_location("docs_reference_hook",
                                                  DOCS / "_hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_GENERATED: dict[str, str] = {}


def _generated_pages() -> dict[str, str]:
    if not _GENERATED:
        _GENERATED.update(_hook().pages())  # type: ignore[attr-defined]
    return _GENERATED


def test_generated_reference_covers_the_code() -> None:
    """The reference pages the MkDocs hook generates hold every command, metric, statistic and
    plugin-API and Python-API name (so the site cannot leave one out), built here without MkDocs."""
    import judgebench.plugin_api as plugin_api
    from judgebench.cli import make_cli
    from judgebench.plugins import build_host
    from meta_eval.statistics import STATISTICS

    pages = _generated_pages()
    host = build_host()
    group = make_cli(host)
    import click

    ctx = click.Context(group, info_name="judgebench")
    for name in group.list_commands(ctx):
        assert f"## judgebench {name}\n" in pages["reference/commands.md"], name
        command = group.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and not getattr(param, "hidden", False):
                    assert opt in pages["reference/commands.md"], (name, opt)
    for name in host.metrics() | host.sentinels():
        assert f"## {name}\n" in pages["reference/metrics.md"], name
    for name in STATISTICS:
        assert f"| `{name}` |" in pages["reference/statistics.md"], name
    import meta_eval.icc
    import meta_eval.kappa_inference

    for module in (meta_eval.kappa_inference, meta_eval.icc):  # the agreement inference
        for name in [n for n in vars(module) if not n.startswith("_")
                     and callable(getattr(module, n))
                     and getattr(getattr(module, n), "__module__", "") == module.__name__
                     and not isinstance(getattr(module, n), type)]:
            assert f"`{name}`" in pages["reference/statistics.md"] or \
                f".{name}`" in pages["reference/statistics.md"], name
    for name in plugin_api.__all__:
        assert f"## `{name}`" in pages["reference/plugin-api.md"], name
    import judgebench.api as python_api

    for name in python_api.__all__:
        assert f"## `{name}`" in pages["reference/python-api.md"], name
        assert (getattr(python_api, name).__doc__ or "").strip(), name


def test_a_page_run_stops_at_its_first_failing_block(tmp_path: Path) -> None:
    """`run_page`, what every page's test waits on: blocks run in order in one folder, the
    first failing one is named with its line and output, and nothing after it runs."""
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```sh\necho first > mark\n```\n\n```text\nnot run\n```\n\n"
                    "```sh\ncat mark\necho broke >&2\nexit 3\n```\n\n```sh\ntouch never\n```\n",
                    encoding="utf-8")
    folder = tmp_path / "run"
    folder.mkdir()
    failure = run_page(str(page), folder, "http://127.0.0.1:9/v1")
    assert failure is not None
    assert failure.startswith(f"{page}:11: the ```sh block exited 3:"), failure
    assert "--- stdout ---\nfirst\n" in failure and "broke" in failure
    assert (folder / "work" / "mark").read_text() == "first\n"
    assert not (folder / "work" / "never").exists()


def test_a_page_given_models_starts_with_them_in_its_own_cache(tmp_path: Path) -> None:
    """A slow page's judgebench cache is its own (empty judge cache) with the session's
    converted models linked in."""
    models = tmp_path / "models"
    (models / "converted").mkdir(parents=True)
    page = tmp_path / "page.md"
    page.write_text('```sh\ntest -d "$JUDGEBENCH_CACHE_DIR/models/converted"\n'
                    'test "$(ls "$JUDGEBENCH_CACHE_DIR")" = models\n```\n', encoding="utf-8")
    folder = tmp_path / "run"
    folder.mkdir()
    assert run_page(str(page), folder, "http://127.0.0.1:9/v1", models) is None
    assert (folder / "judge-cache" / "models").resolve() == models.resolve()
