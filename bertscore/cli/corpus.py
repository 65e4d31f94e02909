"""A monolingual corpus for a rescale baseline, and where the baseline goes: shared by the commands
that write one (`bertscore baseline`, and `bertscore layers --baseline-corpus` for the chosen layer).

Everything here runs before any model loads: the corpus files exist and decode, enough distinct
sentences remain, the pair count fits, and the output and its sidecar are usable and no input.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import IO, Iterator, Sequence

from ..inputs import InputError
from .io import check_extension, decoded_lines


def open_corpus(path: str) -> IO[bytes]:
    """One corpus file, as bytes (`.gz` read compressed); an InputError when it is not a file."""
    if not os.path.exists(path):
        raise InputError(f"corpus file not found: {path}")
    if not os.path.isfile(path):
        raise InputError(f"corpus {path} is not a file")
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_lines(path: str) -> Iterator[str]:
    """The lines of one corpus file, decoded; a bad byte names the file and line."""
    with open_corpus(path) as handle:
        try:
            yield from decoded_lines(handle, path)
        except (OSError, EOFError) as error:  # e.g. a damaged .gz
            raise InputError(f"{path}: cannot be read ({error})") from error


def check_baseline_output(output: str, inputs: Sequence[str], sidecar: str | None = None,
                          option: str = "-o") -> Path:
    """The output path, checked before any work: its extension names no other format, it and its
    sidecar are not input files, their folders exist (created) and are usable, and no sidecar lands
    beside an output that is not a regular file."""
    from ..scoring.baseline_tables import sidecar_path
    from ..output_files import check_output as check_target, written_in_place

    check_extension(output, option, "tsv", "a LAYER,P,R,F baseline table",
                    "name it .tsv, as the packaged baselines are (or .csv, .txt)")
    path = Path(output)
    meta = sidecar_path(path) if sidecar is None else Path(sidecar)
    for target in (path, meta):  # as write_baseline does: a missing output folder is created
        if not written_in_place(target) and not target.parent.exists():
            target.parent.mkdir(parents=True)
    check_target(path, inputs, sidecars=[meta] if sidecar is None else ())
    check_target(meta, [*inputs, path])
    return path


def read_corpus(paths: Sequence[str], pairs: int | None, pairs_option: str = "--pairs") -> list[str]:
    """Every line of the corpus files, checked: each file exists before any is read, at least 2
    distinct non-empty sentences remain, and `pairs` (if given) fits them."""
    from ..calibrate import max_pairs, prepare_corpus

    for path in paths:
        open_corpus(path).close()  # every file exists before any is read (or any output folder made)
    lines = [line for path in paths for line in read_lines(path)]
    corpus = prepare_corpus(lines)  # checked here to name the files; compute_baseline prepares the lines again
    names = ", ".join(paths)
    usable = len(corpus.sentences)
    if usable < 2:
        raise InputError(
            f"{names}: {usable} usable line(s) after dropping {corpus.empty} empty and {corpus.duplicates} duplicate "
            "lines; a baseline needs at least 2 distinct sentences (thousands for a stable one)"
        )
    if pairs is not None and not 1 <= pairs <= max_pairs(usable):
        raise InputError(
            f"{pairs_option} {pairs}: {names} has {usable} distinct non-empty lines, which allow 1..{max_pairs(usable)} "
            "pairs (each sentence is used at most once)"
        )
    return lines
