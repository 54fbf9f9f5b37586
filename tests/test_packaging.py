"""Both distributions build without a warning from setuptools (issue 42: the deprecated
`project.license` table, and "Package 'judgebench_suites.data.<suite>' is absent from the
`packages` configuration"), and the suites wheel holds every suite's files, which load and
verify their checksums from where the wheel puts them.

Each build is `pip wheel --no-deps --no-build-isolation` (this environment's setuptools, no
index) of a copy of the sources in a temporary folder, so the checkout gets no build/ or
*.egg-info/ and two runs do not share one."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from suites_support import BUILTIN, DIST

from judgebench.suite import load_suite

#: What setuptools says of a configuration it will stop accepting or finds incomplete.
WARNINGS = ("Warning", "deprecated", "absent from the `packages` configuration")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")


def _wheel(source: Path, out: Path) -> tuple[Path, str]:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--no-index", "-w", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    (wheel,) = out.glob("*.whl")
    return wheel, output


def test_judgebench_builds_without_warnings_and_carries_its_licence(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for folder in ("judgebench", "meta_eval", "plugins"):
        shutil.copytree(REPO / folder, source / folder, ignore=IGNORED)
    wheel, output = _wheel(source, tmp_path / "out")
    assert not [w for w in WARNINGS if w in output], output
    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
        metadata = built.read("judgebench-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "judgebench-0.1.0.dist-info/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith("judgebench_suites")]  # its own distribution


def test_the_suites_wheel_builds_without_warnings_and_its_suites_verify(
        tmp_path: Path) -> None:
    source = tmp_path / "judgebench_suites"
    shutil.copytree(DIST, source, ignore=IGNORED)
    wheel, output = _wheel(source, tmp_path / "out")
    assert not [w for w in WARNINGS if w in output], output
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as built:
        built.extractall(site)
        metadata = built.read("judgebench_suites-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0 AND MIT" in metadata.splitlines()
    data = DIST / "judgebench_suites" / "data"
    shipped = site / "judgebench_suites" / "data"
    for name in BUILTIN:
        wanted = sorted(p.name for p in (data / name).iterdir() if p.is_file())
        assert sorted(p.name for p in (shipped / name).iterdir()) == wanted, name
        suite = load_suite(shipped / name)  # every file's checksum verified
        assert suite.name == name and set(suite.info.files) <= set(wanted)


@pytest.mark.parametrize("name", ["pyproject.toml", "plugins/judgebench_suites/pyproject.toml"])
def test_the_build_requires_a_setuptools_that_reads_the_licence_expression(name: str) -> None:
    import tomllib

    project = tomllib.loads((REPO / name).read_text(encoding="utf-8"))
    assert "setuptools>=77" in project["build-system"]["requires"]
    assert isinstance(project["project"]["license"], str)
