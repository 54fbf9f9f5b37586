"""Each registered metric's direction (higher is better, or lower), without importing plugins.

Reading a scores table with no sidecar needs only `higher_is_better` per metric name, but the
plugin host imports every plugin to learn it (0.6 s of CPU). `metric_directions` answers
from, first that applies:

1. the host it is given (local `-p` plugins are only ever known this way: the CLI builds
   the host whenever `-p` is given);
2. a cached registry, `$JUDGEBENCH_CACHE_DIR` (default ``~/.cache/judgebench``)
   ``/registry-<key>.json``, whose key is a hash of what decides the registry without
   importing anything: the `judgebench` entry points (name, target, distribution and its
   version), the `JUDGEBENCH_LOAD_PLUGINS` allowlist, and the path, size and modification
   time of every file of each entry point's package (an editable install changes no version);
3. otherwise the host is built, and its directions are written to the cache (not when a
   plugin failed to load: a later run might load it).

A cache that cannot be read or written is ignored: the answer is the host's either way.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost

CACHE_FORMAT = 1
# judgebench.plugins' names, repeated: importing it imports pydantic (tests check they match)
ENTRY_POINT_GROUP = "judgebench"
ALLOWLIST_ENV = "JUDGEBENCH_LOAD_PLUGINS"


def metric_directions(host: PluginHost | None) -> dict[str, bool]:
    """Metric name -> higher_is_better for every registered metric (module docstring)."""
    if host is not None:
        return _of_host(host)
    path = cache_path()
    cached = _read(path)
    if cached is not None:
        return cached
    from judgebench.plugins import build_host

    host = build_host()
    directions = _of_host(host)
    if not host.failures:
        _write(path, directions)
    return directions


def cache_path() -> Path:
    """The registry cache for the plugins installed now."""
    root = os.environ.get("JUDGEBENCH_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "judgebench"
    return base / f"registry-{registry_key()}.json"


def registry_key() -> str:
    """A hash of everything that decides the registry, read without importing a plugin."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\0{os.environ.get(ALLOWLIST_ENV)}".encode())
    for ep in sorted(_entry_points(), key=lambda e: e.name):
        dist = ep.dist
        digest.update(f"\0{ep.name}\0{ep.value}\0{dist.name if dist else ''}\0"
                      f"{dist.version if dist else ''}".encode())
        for stamp in _package_files(ep.module.partition(".")[0]):
            digest.update(stamp.encode())
    return digest.hexdigest()[:24]


def _entry_points() -> Iterator[importlib.metadata.EntryPoint]:
    """The group's entry points, first of each name (as the host loads them)."""
    seen: set[str] = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in seen:
            seen.add(ep.name)
            yield ep


def _package_files(module: str) -> list[str]:
    """Path, size and mtime of each file of a top-level module or package (not imported)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return [f"\0{module}: not found"]
    if spec is None or spec.origin is None:
        return [f"\0{module}: not found"]
    origin = Path(spec.origin)
    files = sorted(origin.parent.rglob("*.py")) if spec.submodule_search_locations else [origin]
    stamps = []
    for file in files:
        try:
            st = file.stat()
        except OSError:
            continue
        stamps.append(f"\0{file}\0{st.st_size}\0{st.st_mtime_ns}")
    return stamps


def _of_host(host: PluginHost) -> dict[str, bool]:
    return {name: bool(entry.info.higher_is_better) for name, entry in host.metrics().items()}


def _read(path: Path) -> dict[str, bool] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if (data.get("format") != CACHE_FORMAT or not isinstance(metrics, dict)
            or not all(isinstance(v, bool) for v in metrics.values())):
        return None
    return {str(k): v for k, v in metrics.items()}


def _write(path: Path, directions: dict[str, bool]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "metrics": directions},
                                  sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
