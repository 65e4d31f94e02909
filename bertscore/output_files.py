"""Writing result files without ever destroying one: atomic replacement, input fingerprints,
and the `.meta.json` beside a resumable output.

Pure file handling (no model, no scores): the command line decides what to write, this module
makes sure that a failed or interrupted run leaves the old file as it was, that an output never
overwrites an input, and that `--resume` only continues a file our own CLI started, with the
same inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

META_SUFFIX = ".meta.json"
META_VERSION = 2  # 1: {"hashcode"} only (no input fingerprints): not resumable any more
WRITTEN_BY = "bertscore"


class UnsafeOutput(Exception):
    """The output cannot be written safely (the CLI reports it with exit code 2)."""


def meta_path(output: Path) -> Path:
    return output.with_name(output.name + META_SUFFIX)


def fingerprint(path: str | Path, block_size: int = 1 << 20) -> dict[str, Any]:
    """Size, modification time and sha256 of a file's contents (streamed, any size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(block_size):
            digest.update(block)
    stat = os.stat(path)
    return {"path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "sha256": digest.hexdigest()}


def changed_inputs(recorded: Sequence[dict[str, Any]], current: Sequence[dict[str, Any]],
                   names: Sequence[str]) -> list[str]:
    """The names of the inputs whose contents differ from what was recorded.

    Contents decide (size and sha256): a file that was only touched still resumes.
    """
    return [name for name, old, new in zip(names, recorded, current)
            if (old.get("size"), old.get("sha256")) != (new["size"], new["sha256"])]


def check_not_an_input(output: Path, inputs: Sequence[str]) -> None:
    """Refuse an output (or its meta file) that is one of the input files."""
    for target in (output, meta_path(output)):
        for path in inputs:
            if path == "-" or not os.path.exists(path):
                continue
            same = target.resolve() == Path(path).resolve()
            if not same and target.exists():
                same = os.path.samefile(target, path)
            if same:
                raise UnsafeOutput(f"the output {target} is the input file {path}: writing it would destroy "
                                   "the input; choose another -o")


def check_output_folder(output: Path) -> None:
    """The folder of the output exists and accepts new files; the output is not a folder."""
    folder = output.parent
    if output.is_dir():
        raise UnsafeOutput(f"the output {output} is a folder: give a file name, e.g. {output / 'scores.jsonl'}")
    if not folder.is_dir():
        raise UnsafeOutput(f"the output folder {folder} does not exist: create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UnsafeOutput(f"the output folder {folder} is not writable: choose another -o")


def is_regular_target(output: Path) -> bool:
    """False for an existing device, pipe or socket (e.g. /dev/null): written in place, no meta."""
    return not output.exists() or output.is_file()


def _mode_for(output: Path) -> int:
    """The old file's permissions, or those a plain open() would give (mkstemp's are 0600)."""
    try:
        return os.stat(output).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def _temporary_beside(target: Path) -> tuple[int, str]:
    """A new temporary file in `target`'s folder; UnsafeOutput naming the folder when it refuses one."""
    try:
        return tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as error:
        raise UnsafeOutput(f"cannot create a file in the output folder {target.parent}: {error.strerror}") from None


@contextlib.contextmanager
def atomic_output(output: Path, replaces_meta: bool = True) -> Iterator[IO[str]]:
    """A text file in the output's folder that replaces `output` only when the block succeeds.

    On any exception (Ctrl-C included) the temporary file is removed and the old output stays
    as it was. A `.meta.json` beside the old output no longer describes the new one: it is
    removed just before the replacement. A symlink is written through: its target is replaced
    (as open() would write it), not the link.
    """
    target = Path(os.path.realpath(output))
    fd, temp = _temporary_beside(target)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, _mode_for(target))
        if replaces_meta:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(meta_path(output))
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def write_meta(output: Path, meta: dict[str, Any]) -> None:
    """Write `output`'s meta file atomically (a torn meta file would block --resume)."""
    target = meta_path(output)
    fd, temp = _temporary_beside(target)
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            json.dump({"written_by": WRITTEN_BY, "meta_version": META_VERSION, **meta}, handle, indent=1)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def read_meta(output: Path) -> dict[str, Any]:
    """The meta file our CLI wrote beside `output`; UnsafeOutput when there is none to trust."""
    target = meta_path(output)
    hint = "delete it or choose another -o to start afresh (--resume then starts it from the beginning)"
    try:
        meta = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UnsafeOutput(f"{output} exists but has no {target.name}: it was not started by a resumable "
                           f"bertscore run, so --resume will not cut or extend it; {hint}") from None
    except (OSError, ValueError) as error:
        raise UnsafeOutput(f"{target} cannot be read ({error}); {hint}") from None
    if not isinstance(meta, dict) or meta.get("written_by") != WRITTEN_BY or meta.get("meta_version") != META_VERSION:
        raise UnsafeOutput(f"{target} was not written by this version of the bertscore CLI "
                           f"(no input fingerprints); {hint}")
    return meta
