"""Install a test distribution (tests/distributions/<name>/) with pip, as a user would, and
put it on the import path, so its entry points reach the plugin host like any installed plugin."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DISTRIBUTIONS = Path(__file__).resolve().parent / "distributions"


def install(name: str, target: Path) -> Path:
    """`pip install --no-deps --target TARGET tests/distributions/NAME`; returns TARGET."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(DISTRIBUTIONS / name)],
                   check=True, capture_output=True)
    return target


@contextmanager
def on_path(site: Path) -> Iterator[None]:
    """`site` first on sys.path (its dist-info visible to importlib.metadata), then removed,
    with the modules it brought unloaded."""
    before = set(sys.modules)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(site))
        for name in set(sys.modules) - before:
            module = sys.modules.get(name)
            if str(site) in str(getattr(module, "__file__", "") or ""):
                del sys.modules[name]
        importlib.invalidate_caches()
