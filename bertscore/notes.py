"""Notes about a call (empty texts, truncation, degenerate idf): warnings, or a per-call list.

Library calls take `notes: list[str] | None`. With a list, each note is appended there and
nothing global is touched (a server handling concurrent requests keeps them apart; Python's
`warnings.catch_warnings` is process-wide). Without one, the note is a `BERTScoreNote` (a
`UserWarning`) shown at every call that has it, pointing at the caller's line: Python's
default filter shows a warning once per code location, which would leave epoch 2's empty
predictions silent in a training loop. The user's own filters still apply
(`warnings.simplefilter("ignore", BERTScoreNote)` silences notes, "error" raises them). A door
whose notes come later than the user's call (a metric scoring at `compute()` what `update()` was
given) records that line with `caller_site()` and points its notes there with `noted_at(site)`.

Notes that suggest an option name it in the spelling of the door in use (`long_texts='window'`
in Python, `--long-texts window` at the CLI, the control's label in the Space): each door sets
its `Spelling` with `spelled(...)`, and note texts are built with `setting()` / `advice()`.
A door called at every step of a training loop (the RL rewards) spells its notes `brief`: one
short line per cause, with the count and the first few places (`brief_places`), not every place.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Iterator, Mapping

MAX_NAMED = 20  # indices named in one note before "... (N in all)"
BRIEF_NAMED = 3  # places a brief note names per side before "..."


class BERTScoreNote(UserWarning):
    """A note about one call (empty texts, truncated texts, ...): shown at every call that has it."""


# Frames that are ours, or the machinery between the user and us (evaluate; torchmetrics and the
# nn.Module call around a Metric's update/forward): a note points past them.
_INTERNAL_TOP_MODULES = frozenset({"bertscore", "evaluate", "torchmetrics", "contextlib", "functools"})
_INTERNAL_MODULES = frozenset({"torch.utils._contextlib", "torch.nn.modules.module"})


def _is_internal(frame: FrameType) -> bool:
    name = str(frame.f_globals.get("__name__") or "")
    if name in _INTERNAL_MODULES or name.split(".")[0] in _INTERNAL_TOP_MODULES:
        return True
    return name.rsplit(".", 1)[-1] == "bertscore_metric"  # the evaluate module, as loaded by evaluate.load


def caller_frame() -> FrameType | None:
    """The innermost frame outside this package, the evaluate module and evaluate: the user's line."""
    frame = sys._getframe(1)
    outermost = frame
    while frame is not None:
        if not _is_internal(frame):
            return frame
        outermost = frame
        frame = frame.f_back
    return outermost


@dataclass(frozen=True)
class Site:
    """A line of the user's code that a note points at."""

    filename: str
    lineno: int
    module: str


def caller_site() -> Site | None:
    """The user's line (`caller_frame`) as a `Site`, to point later notes at it."""
    frame = caller_frame()
    if frame is None:  # pragma: no cover - there is always a frame
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, str(frame.f_globals.get("__name__") or "<unknown>"))


_SITE: contextvars.ContextVar[Site | None] = contextvars.ContextVar("bertscore_note_site", default=None)


@contextlib.contextmanager
def noted_at(site: Site | None) -> Iterator[None]:
    """Warnings raised inside the block point at `site` (None: at the caller's line, as ever)."""
    token = _SITE.set(site)
    try:
        yield
    finally:
        _SITE.reset(token)


def warn(message: str, category: type[Warning] = BERTScoreNote) -> None:
    """Show `message` as a warning at the user's line, at every call (no once-per-location registry)."""
    site = _SITE.get() or caller_site()
    if site is None:  # pragma: no cover - there is always a frame
        warnings.warn(message, category, stacklevel=2)
        return
    # registry=None: no per-module "already shown" registry, so the default filter shows it each
    # call; the filters themselves (ignore, error, once, the user's own) apply as ever. No
    # module_globals: its only use is finding the source line through the module's loader, and
    # `python -c`'s __main__ has BuiltinImporter, whose get_source raises ImportError.
    warnings.warn_explicit(message, category, site.filename, site.lineno, module=site.module, registry=None)


def report(message: str, notes: list[str] | None, stacklevel: int = 3) -> None:
    """Append `message` to `notes`, or warn (at the user's line) when no list was given.

    `stacklevel` is accepted for compatibility and no longer used: the warning points at the
    first frame outside the package, whatever the depth.
    """
    message = _SPELLING.get().places(message)
    if notes is None:
        warn(message)
    else:
        notes.append(message)


def name_some(where: list[str]) -> str:
    """The first MAX_NAMED places, and how many there are in all when more."""
    shown = ", ".join(where[:MAX_NAMED])
    return shown + (f", ... ({len(where)} in all)" if len(where) > MAX_NAMED else "")


# ----- each door's spelling of an option -------------------------------------------------------
@dataclass(frozen=True)
class Place:
    """One text a note names: `candidates[row]`, `references[row]` (a row with one reference) or
    `references[row][reference]`; indices count from 0, as the note writes them."""

    side: str  # "candidates" or "references"
    row: int
    reference: int | None = None

    @classmethod
    def of(cls, match: re.Match[str]) -> "Place":
        return cls(match.group(1), int(match.group(2)), None if match.group(3) is None else int(match.group(3)))


def _python_setting(option: str, value: Any) -> str:
    return f"{option}={value!r}"


def _cli_setting(flags: Mapping[str, str], option: str, value: Any) -> str:
    flag = flags.get(option, "--" + option.replace("_", "-"))
    return flag if value is True else f"{flag} {value}"


@dataclass(frozen=True)
class Spelling:
    """How one door writes an option in its notes.

    `setting(option, value)` names a setting (`long_texts='window'`, `--long-texts window`);
    `advice(option, value)` tells the user to choose it ("pass long_texts='window'"). `labels`
    maps (option, value) to the door's own (setting, advice) words, e.g. a control's label.
    `candidates` / `references`: what the door calls its inputs, for the places a note names
    (`predictions[3]` at evaluate's compute(), `completions[3]` in a reward function); `place`,
    when given, writes each place whole instead (a page says "row 2 (candidate)", counting from 1).
    `segments`: what the door calls the scored items of a corpus in statistics' notes ("rows" on a
    page of rows). `brief`: one short line per cause, giving the count and the first few places
    (a door called at every step of a training loop, whose log a long list would flood). `names`:
    options a page names by its controls' labels (`num_layers` -> "Layer").
    """

    door: str
    write: Callable[[str, Any], str] = _python_setting
    advice_format: str = "pass {setting}"
    labels: Mapping[tuple[str, Any], tuple[str, str]] = field(default_factory=dict)
    candidates: str = "candidates"
    references: str = "references"
    place: Callable[[Place], str] | None = None
    segments: str = "segments"
    brief: bool = False
    names: Mapping[str, str] = field(default_factory=dict)

    def name(self, option: str) -> str:
        """The door's word for `option`: a control's label on a page ("Layer" for num_layers), else the option."""
        return self.names.get(option, option)

    def named(self, option: str, value: Any) -> str:
        """`option` set to `value` in an error: "Layer 99" by a control's label, else as `setting` writes it."""
        return f"{self.names[option]} {value}" if option in self.names else self.write(option, value)

    def places(self, message: str) -> str:
        """`message` with its places (`candidates[3]`, `references[2][1]`) named as this door names them."""
        if self.place is not None:
            place = self.place
            return _PLACE.sub(lambda match: place(Place.of(match)), message)
        names = {"candidates": self.candidates, "references": self.references}
        return _PLACE.sub(lambda match: names[match.group(1)] + match.group(0)[len(match.group(1)):], message)

    def setting(self, option: str, value: Any) -> str:
        label = self.labels.get((option, value))
        return label[0] if label else self.write(option, value)

    def advice(self, option: str, value: Any) -> str:
        label = self.labels.get((option, value))
        return label[1] if label else self.advice_format.format(setting=self.write(option, value))


_PLACE = re.compile(r"\b(candidates|references)\[(\d+)\](?:\[(\d+)\])?")

PYTHON = Spelling("python")
# The RL rewards (`reward.BERTScoreReward`, `mbr.ConsensusReward`, `mbr.group_rewards`): a reward sets
# `references` to its dataset column.
REWARD = Spelling("reward", candidates="completions", brief=True)
EVALUATE = Spelling("evaluate", advice_format="pass {setting} to compute()", candidates="predictions")


def command_line(flags: Mapping[str, str]) -> Spelling:
    """A command's spelling: an option by its parser's flag (`flags`, option -> flag: `model_type` ->
    `--model`), one the parser lacks by its name with dashes; `--idf` alone for True."""
    return Spelling("cli", write=functools.partial(_cli_setting, dict(flags)))

_SPELLING: contextvars.ContextVar[Spelling] = contextvars.ContextVar("bertscore_note_spelling", default=PYTHON)


@contextlib.contextmanager
def spelled(spelling: Spelling) -> Iterator[None]:
    """Notes built inside the block name options as `spelling` writes them (per thread/task)."""
    token = _SPELLING.set(spelling)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def setting(option: str, value: Any) -> str:
    """`option` set to `value`, as the door in use writes it."""
    return _SPELLING.get().setting(option, value)


def is_brief() -> bool:
    """Whether the door in use wants brief notes (`Spelling.brief`)."""
    return _SPELLING.get().brief


@dataclass(frozen=True)
class BriefPlaces:
    """What a brief note says of its places: `subject` ("3 of 32 completions"), `examples`
    ("candidates[1], [2], [3], ...": `report` spells the first as the door names it) and whether
    one text is meant (`one`: "is", else "are")."""

    subject: str
    examples: str
    one: bool


def brief_places(where: list[str], totals: Mapping[str, int]) -> BriefPlaces:
    """`where` (places as `note_texts` writes them: `candidates[i]`, `references[i][j]`) counted per
    side against `totals` (rows per side) with the first BRIEF_NAMED places of each side."""
    spelling = _SPELLING.get()
    by_side: dict[str, list[re.Match[str]]] = {}
    for place in where:
        match = _PLACE.fullmatch(place)
        if match is None:  # pragma: no cover - note_texts writes places only
            raise ValueError(f"not a place: {place!r}")
        by_side.setdefault(match.group(1), []).append(match)
    subjects, examples, rows = [], [], 0
    for side, found in by_side.items():
        count = len({int(match.group(2)) for match in found})
        rows += count
        word = spelling.candidates if side == "candidates" else f"{spelling.references} entries"
        subjects.append(f"{count} of {totals[side]} {word}")
        shown = [found[0].group(0)] + [match.group(0)[len(side):] for match in found[1:BRIEF_NAMED]]
        examples.append(", ".join(shown) + (", ..." if len(found) > BRIEF_NAMED else ""))
    return BriefPlaces(" and ".join(subjects), ", ".join(examples), rows == 1)


def segments() -> str:
    """What the door in use calls the scored items of a corpus ("segments"; "rows" on a page of rows)."""
    return _SPELLING.get().segments


def advice(option: str, value: Any) -> str:
    """"pass <option set to value>", as the door in use says it."""
    return _SPELLING.get().advice(option, value)
