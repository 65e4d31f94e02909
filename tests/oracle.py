"""The official package's answers, computed once and kept: the oracle stays the official package.

`call(function, *args, **kwargs)` returns `function(*args, **kwargs)` the first time and the stored
answer after that, in this process (memory) and in later runs and other workers (files in
tests/.oracle-cache/, git-ignored, written atomically). The key is derived from the call itself, never
written by hand, so that an edit to the call changes it:
- the function: the official package's (or another library's) by its qualified name; one of the
  tests' own (a helper that builds a scorer or applies a patch) by its source, with the source of every
  tests' function or class it names and the value of every constant (an UPPER_CASE name) it names,
  recursively;
- every argument as passed: texts, numbers and settings as they are, a tensor by its dtype, shape and
  bytes, a path that names a folder (a model) by its files' names and contents, one that names a file
  (a baseline) by its content;
- the versions of bert-score, transformers, tokenizers and torch.
Change any and the official package runs again. A tests' function may not close over a variable (its
value would be no part of the key): pass it as an argument. `BERTSCORE_ORACLE_CACHE=off` turns the
files off (memory only); deleting the folder is always safe.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch

TESTS = Path(__file__).resolve().parent
CACHE_DIR = TESTS / ".oracle-cache"
T = TypeVar("T")
_MEMORY: dict[str, Any] = {}
_PLAIN = (str, int, float, bool, type(None))


@lru_cache(maxsize=None)
def folder_digest(folder: str) -> str:
    """sha256 over a model folder's file names and contents (a random tiny model differs by seed)."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=None)
def versions() -> str:
    from importlib.metadata import version

    return ",".join(f"{name}={version(name)}" for name in ("bert-score", "transformers", "tokenizers", "torch"))


def _names_a_path(text: str) -> bool:
    """An absolute path at least two folders deep (a model, a baseline file; never "/" or a short text)."""
    return len(text) < 4096 and "\n" not in text and os.path.isabs(text) and len(Path(text).parts) > 3


def _value(value: Any, where: str) -> Any:
    """An argument as JSON the key can hold: what the answer depends on, nothing else."""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bool):
        text = os.fspath(value)
        if _names_a_path(text) and os.path.isdir(text):
            return {"folder": folder_digest(text)}
        if _names_a_path(text) and os.path.isfile(text):
            return {"file": hashlib.sha256(Path(text).read_bytes()).hexdigest()}
        return text
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous()
        raw = data.reshape(-1).view(torch.uint8).numpy().tobytes()
        return {"tensor": [str(data.dtype), list(data.shape), hashlib.sha256(raw).hexdigest()]}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_value(item, f"{where}[{k}]") for k, item in enumerate(value)]}
    if isinstance(value, dict):
        return {"dict": [[_value(k, where), _value(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    raise TypeError(f"oracle.call cannot put {where} (a {type(value).__name__}) in its key: pass plain data "
                    "(texts, numbers, lists, dicts, tensors, paths) and build anything else inside the function")


def _ours(function: Any) -> bool:
    """Whether `function` (a function or class) is the tests' own, defined in a file under tests/."""
    try:
        source_file = inspect.getsourcefile(function)
    except TypeError:
        return False
    return source_file is not None and Path(source_file).resolve().is_relative_to(TESTS)


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names(constant)
    return names


def _function(function: Callable, parts: dict[str, Any]) -> str:
    """The function's name; for the tests' own, its source and what it names, into `parts`."""
    function = inspect.unwrap(function)
    name = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
    if name in parts or not _ours(function):
        return name
    if getattr(function, "__closure__", None):
        free = ", ".join(function.__code__.co_freevars)
        raise TypeError(f"oracle.call: {name} closes over {free}: pass them as arguments, so that the key sees them")
    parts[name] = inspect.getsource(function)
    codes = [function.__code__] if inspect.isfunction(function) else [
        member.__code__ for member in vars(function).values() if inspect.isfunction(member)]
    scope = function.__globals__ if inspect.isfunction(function) else vars(inspect.getmodule(function))
    for code in codes:
        for global_name in sorted(_names(code)):
            if global_name not in scope:
                continue
            referred = scope[global_name]
            if inspect.isfunction(referred) or inspect.isclass(referred):
                _function(referred, parts)
            elif global_name.isupper():  # a constant, by the naming convention (a lower-case name may be state)
                try:
                    parts[f"{name}:{global_name}"] = _value(referred, global_name)
                except TypeError:
                    pass  # a module or a library's object: its version is in versions()
    return name


def key_of(function: Callable, args: tuple, kwargs: dict[str, Any]) -> str:
    """The cache key of `function(*args, **kwargs)`: derived from the call (see the module's docstring)."""
    parts: dict[str, Any] = {}
    name = _function(function, parts)
    arguments = [_value(list(args), "the positional arguments"),
                 [[k, _value(v, k)] for k, v in sorted(kwargs.items())]]
    text = json.dumps([name, sorted(parts.items()), arguments, versions()], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _files_on() -> bool:
    return os.environ.get("BERTSCORE_ORACLE_CACHE", "on").lower() not in ("off", "0", "no")


def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """The official answer of `function(*args, **kwargs)`: computed once, then read back.
    Answers are what torch.save/torch.load(weights_only=True) carry: tensors, tuples, lists, ints."""
    key = key_of(function, args, kwargs)
    if key in _MEMORY:
        return _MEMORY[key]
    path = CACHE_DIR / f"{key}.pt"
    answer = None
    if _files_on() and path.is_file():
        try:
            answer = torch.load(path, weights_only=True)
        except Exception:  # a torn or foreign file: recompute and replace it
            answer = None
    if answer is None:
        answer = function(*args, **kwargs)
        if _files_on():
            CACHE_DIR.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
            os.close(handle)
            torch.save(answer, temporary)
            os.replace(temporary, path)  # atomic: another worker reads the old file or the new, never half
    _MEMORY[key] = answer
    return answer


def scorer_score(cands: list, refs: list, score_kwargs: dict[str, Any] | None = None,
                 **scorer_kwargs: Any) -> tuple[torch.Tensor, ...]:
    """The official `BERTScorer(**scorer_kwargs).score(cands, refs, **score_kwargs)`, as a tuple."""
    import bert_score

    return tuple(bert_score.BERTScorer(**scorer_kwargs).score(cands, refs, **(score_kwargs or {})))


def score_layers(cands: list, refs: list, model_type: str, layers: int, **kwargs: Any) -> tuple[torch.Tensor, ...]:
    """The official package's (P, R, F) at every layer 0..layers, each `bert_score.score(num_layers=k)`
    alone (one layer per call: never its all_layers path): three tensors [layers + 1, N]."""
    import bert_score

    rows = [bert_score.score(cands, refs, model_type=model_type, num_layers=k, **kwargs) for k in range(layers + 1)]
    return tuple(torch.stack([row[column] for row in rows]) for column in range(3))
