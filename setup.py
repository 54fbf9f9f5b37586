"""The extras, and how `judgebench[suites]` reaches the in-repo suites distribution.

setuptools reads everything else from pyproject.toml. The extras are listed there under
[tool.judgebench.optional-dependencies] (pyproject declares optional-dependencies dynamic)
because one of them cannot be written statically: `suites` is the distribution in
plugins/judgebench_suites (the data of every built-in suite, kept out of the core), and a
requirement cannot name a path relative to the project (PEP 508 takes only absolute URLs,
and pip refuses relative ones). Built from a checkout (`pip install '.[suites]'`, CI), the
extra is `judgebench-suites @ file:///<this checkout>/plugins/judgebench_suites`; built
where that folder is absent (an sdist of judgebench alone), it is `judgebench-suites==<the
same version>` from the package index, where both are published together.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SUITES = HERE / "plugins" / "judgebench_suites"

project = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
extras = dict(project["tool"]["judgebench"]["optional-dependencies"])
version = project["project"]["version"]
in_checkout = (SUITES / "pyproject.toml").is_file()
extras["suites"] = [f"judgebench-suites @ {SUITES.as_uri()}" if in_checkout
                    else f"judgebench-suites=={version}"]

setup(extras_require=extras)
