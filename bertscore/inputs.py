"""Input checks: turn what users pass into candidate and reference lists, or say what is wrong.

One contract for every door (Python API, evaluate module, CLI, Space): a text is a `str`
(numpy's `str_` included) that is valid Unicode; anything else is an error naming its index,
never stringified. Collections may be lists, tuples, 1-D numpy arrays or pandas Series.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any, Sequence

import numpy as np

from .wording import a_type


class InputError(ValueError):
    """What a user passed is invalid (a value, a file, an option): the message says what, where,
    and how to fix it. The CLI reports these (and only these, with file errors) as exit code 2;
    any other exception is a bug and shows its traceback. A ValueError, so callers catching
    ValueError keep working."""


class InputTypeError(InputError, TypeError):
    """An input of the wrong type (e.g. a number where a text goes): an InputError and a TypeError."""


class MissingColumnError(InputError, KeyError):
    """A column a door reads is not among the columns it was given (a dataset's, a trainer's call, a
    map function's batch): an `InputError`, and a KeyError as a missing column is; shown as text."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def lone_surrogate(text: str) -> str | None:
    """What is wrong with `text` when it holds a lone surrogate (not Unicode text: it has no UTF-8
    form), as "contains a lone surrogate (U+D800 at character 3)..."; None when it holds none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return (f"contains a lone surrogate (U+{ord(text[error.start]):04X} at character {error.start}): "
                "it is not valid Unicode text")
    return None


def check_whole_number(value: Any, name: str, minimum: int = 1, none_means: str | None = None, why: str = "") -> None:
    """InputError unless `value` is a whole number >= `minimum` (an int or a numpy integer, never a bool
    or a float), or None where `none_means` says what None does; `why` follows the bound in the message."""
    if value is None and none_means is not None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        alternative = f" (or {none_means})" if none_means else ""
        raise InputError(f"{name} must be a whole number >= {minimum}{why}{alternative}, got {value!r}")


def check_text(value: Any, where: str) -> str:
    """`value` if it is a valid text; TypeError/ValueError naming `where` otherwise."""
    if isinstance(value, str):
        wrong = lone_surrogate(value)
        if wrong:
            raise InputError(f"{where} {wrong}; decode your input with errors='replace' or fix it")
        return str(value)
    if value is None:
        raise InputTypeError(f"{where} is None; pass a string (an empty string scores 0)")
    if isinstance(value, (bytes, bytearray)):
        raise InputTypeError(f"{where} is {type(value).__name__}, not a string: decode it first (e.g. .decode('utf-8'))")
    raise InputTypeError(f"{where} is {a_type(value)}, not a string: {value!r:.80}")


def as_list(value: Any, what: str) -> list[Any] | None:
    """A list of the items of a list, tuple, 1-D numpy array or pandas Series; None for others.

    Strings, bytes, mappings and sets are not collections of texts here (a bare string would
    be iterated character by character; a set has no order).
    """
    if isinstance(value, (str, bytes, bytearray, Mapping, Set)):
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    module = type(value).__module__.split(".")[0]
    if module in ("numpy", "pandas", "polars", "pyarrow") and hasattr(value, "tolist"):
        if getattr(value, "ndim", 1) != 1:
            raise InputTypeError(f"{what} must be one-dimensional, got an array of shape {getattr(value, 'shape', '?')}")
        return list(value.tolist())
    if isinstance(value, Sequence):
        return list(value)
    return None


def normalize_inputs(
    cands: Any, refs: Any, cand_name: str = "candidates", ref_name: str = "references"
) -> tuple[list[str], list[list[str]]]:
    """Validate candidates and references; references become one list of strings per candidate.

    `refs` holds one reference per candidate (a string) or a collection of them
    (multi-reference; each non-empty). Errors name the offending index, e.g. `candidates[3]`.
    """
    candidate_list = as_list(cands, cand_name)
    if candidate_list is None:
        hint = " (wrap a single text in a list: [text])" if isinstance(cands, str) else ""
        raise InputTypeError(f"{cand_name} must be a list of strings, got {type(cands).__name__}{hint}")
    reference_list = as_list(refs, ref_name)
    if reference_list is None:
        hint = " (wrap a single text in a list: [text])" if isinstance(refs, str) else ""
        raise InputTypeError(
            f"{ref_name} must be a list of strings or of lists of strings, got {type(refs).__name__}{hint}"
        )
    if len(candidate_list) == 0:
        raise InputError(f"{cand_name} is empty: pass at least one candidate")
    if len(candidate_list) != len(reference_list):
        raise InputError(
            f"got {len(candidate_list)} {cand_name} but {len(reference_list)} {ref_name}: pass one reference "
            "(or one list of references) per candidate"
        )
    candidates = check_texts(candidate_list, cand_name)
    if _all_valid_texts(reference_list):  # one reference each, all valid: checked at once
        return candidates, [[r] for r in reference_list]
    return candidates, [normalize_group(group, f"{ref_name}[{i}]") for i, group in enumerate(reference_list)]


def normalize_batch(
    cands: Any, refs: Any, cand_name: str = "candidates", ref_name: str = "references"
) -> tuple[list[str], list[list[str]]]:
    """`normalize_inputs` where two empty collections are an empty batch, `([], [])`: a metric's
    update with nothing in it, a rank with no data in a distributed evaluation."""
    cand_list, ref_list = as_list(cands, cand_name), as_list(refs, ref_name)
    if cand_list == [] and ref_list == []:
        return [], []
    return normalize_inputs(cands, refs, cand_name, ref_name)


def check_texts(values: Sequence[Any], where: str) -> list[str]:
    """`check_text` of each item, named `where[i]`: checked at once where all are valid strings
    (the item by item check, and its errors, only where one is not)."""
    if _all_valid_texts(values):
        return list(values)
    return [check_text(value, f"{where}[{i}]") for i, value in enumerate(values)]


def _all_valid_texts(values: Sequence[Any]) -> bool:
    """Whether every item is a plain str that encodes as UTF-8 (no lone surrogate)."""
    if not all(type(value) is str for value in values):
        return False
    try:
        "".join(values).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalize_group(group: Any, where: str) -> list[str]:
    """One candidate's references: a string, or a non-empty collection of strings."""
    if isinstance(group, str):
        return [check_text(group, where)]
    if group is None:
        raise InputTypeError(f"{where} is None; pass a string or a list of strings")
    items = as_list(group, where)
    if items is None:
        raise InputTypeError(f"{where} is {a_type(group)}, not a string or a list of strings: {group!r:.80}")
    if len(items) == 0:
        raise InputError(f"{where} is an empty list: give each candidate at least one reference")
    return check_texts(items, where)


def text_list(value: Any, what: str) -> list[str]:
    """A non-empty list of texts (one text per item: a nested list is an error naming its index)."""
    items = as_list(value, what)
    if items is None:
        hint = " (wrap a single text in a list: [text])" if isinstance(value, str) else ""
        raise InputTypeError(f"{what} must be a list of strings, got {type(value).__name__}{hint}")
    if not items:
        raise InputError(f"{what} is empty: pass at least one text")
    return check_texts(items, what)
