"""judgebench's built-in meta-evaluation suites, registered as a third party would.

Each folder under `data/` is one suite in judgebench.suite's layout (suite.json with its
checksums, samples.jsonl.gz, human.jsonl.gz, SOURCE.md, build.py); `register_suites`
registers every one. The files are verified when a suite is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import SuiteRegister

__version__ = "0.1.0"

DATA = Path(__file__).resolve().parent / "data"


@hookimpl
def register_suites(register: SuiteRegister) -> None:
    for folder in sorted(DATA.iterdir()):
        if (folder / "suite.json").is_file():
            register(folder)
