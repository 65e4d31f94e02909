"""The one writer of every output (scores, `--systems` tables, baselines and their sidecars, the
Space's downloads, benchmark results), the input fingerprints (size, mtime and the one file digest
of `bertscore.digests`) and the `.meta.json` beside a resumable output.

Pure file handling (no model, no scores). What each output gets:
- a regular file (or a new one) is written to a temporary file beside it and renamed over it only
  when the whole text is written: a failed or interrupted run leaves the old file as it was;
- a device, FIFO or socket, and `/dev/stdout` / `/dev/fd/N` (descriptor links), are written in
  place, never replaced (a descriptor link is appended to: the shell's `>>` file keeps its lines);
- a symlink writes its target (as `open()` would), the link stays;
- an output is never one of the inputs, and no sidecar is created beside a non-regular output;
- a new file gets the permissions a plain `open(path, "w")` gives (the process umask applies
  through `os.open`'s mode, never read by setting it); a replaced file keeps its permissions.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import stat
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from .digests import file_sha256, text_digest
from .inputs import InputError

META_SUFFIX = ".meta.json"
VALUES_SUFFIX = ".meta.values"  # a resumable TSV's scores at full precision (its rows show 6 decimals)
PARTS_SUFFIX = ".parts"  # a resumable Parquet output's finished chunks, one Parquet file each, until it is whole
# 1: {"hashcode"} only (no input fingerprints); 2: no values file beside a TSV: not resumable any more
META_VERSION = 3
WRITTEN_BY = "bertscore"


class UnsafeOutput(InputError):
    """The output cannot be written safely (the CLI reports it with exit code 2)."""


def meta_path(output: Path) -> Path:
    return output.with_name(output.name + META_SUFFIX)


def values_path(output: Path) -> Path:
    """Where a resumable TSV keeps its exact scores (index, P, R, F as Python float reprs)."""
    return output.with_name(output.name + VALUES_SUFFIX)


def parts_path(output: Path) -> Path:
    """The folder where a resumable Parquet output keeps its finished chunks until the run ends."""
    return output.with_name(output.name + PARTS_SUFFIX)


def fingerprint(path: str | Path) -> dict[str, Any]:
    """Size, modification time and sha256 of a file's contents (streamed, any size); for a folder (a
    datasets `save_to_disk` table), of every file in it: their sizes summed, and one sha256 over
    their relative names and digests (the text digest of `name<TAB>sha256` lines)."""
    stat_result = os.stat(path)
    if not os.path.isdir(path):
        return {"path": str(Path(path).resolve()), "size": stat_result.st_size, "mtime_ns": stat_result.st_mtime_ns,
                "sha256": file_sha256(path)}
    files = sorted(p for p in Path(path).rglob("*") if p.is_file())
    listing = [f"{p.relative_to(path).as_posix()}\t{file_sha256(p)}" for p in files]
    return {"path": str(Path(path).resolve()), "size": sum(p.stat().st_size for p in files),
            "mtime_ns": max([stat_result.st_mtime_ns, *(p.stat().st_mtime_ns for p in files)]),
            "sha256": text_digest(listing)}


def changed_inputs(recorded: Sequence[dict[str, Any]], current: Sequence[dict[str, Any]],
                   names: Sequence[str]) -> list[str]:
    """The names of the inputs whose contents differ from what was recorded.

    Contents decide (size and sha256): a file that was only touched still resumes.
    """
    return [name for name, old, new in zip(names, recorded, current)
            if (old.get("size"), old.get("sha256")) != (new["size"], new["sha256"])]


def _same_file(target: Path, path: str) -> bool:
    if target.resolve() == Path(path).resolve():
        return True
    try:
        return target.exists() and os.path.samefile(target, path)
    except OSError:
        return False


def check_not_an_input(output: str | Path, inputs: Sequence[str | Path], sidecars: Sequence[str | Path] = ()) -> None:
    """Refuse an output (or a file written beside it: meta, sidecar) that is one of the input files,
    or one of the run's other outputs (a path in `inputs` not written yet, e.g. a baseline file
    checked against its own `--sidecar`: the second write would replace the first)."""
    for target in (Path(output), *map(Path, sidecars)):
        for path in inputs:
            path = str(path)
            if path == "-":
                continue
            if not os.path.lexists(path):  # not written yet: the same path (through links) is the same file
                if target.resolve() == Path(path).resolve():
                    raise UnsafeOutput(f"the output {target} is also {path}, another output of this run: one would "
                                       "replace the other; give them different paths")
                continue
            if _same_file(target, path):
                raise UnsafeOutput(f"the output {target} is the input file {path}: writing it would destroy "
                                   "the input; choose another output")


def check_output_folder(output: Path) -> None:
    """The folder the output is written in (a symlink's target's) exists and accepts new files, tried
    by creating one (root passes every permission check, and /sys or /proc refuse files anyway);
    the output is not a folder."""
    folder = Path(os.path.realpath(output)).parent
    if output.is_dir():
        raise UnsafeOutput(f"the output {output} is a folder: give a file name, e.g. {output / 'scores.jsonl'}")
    if not folder.is_dir():
        raise UnsafeOutput(f"the output folder {folder} does not exist: create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UnsafeOutput(f"the output folder {folder} is not writable: choose another output")
    fd, probe = _temporary_beside(Path(os.path.realpath(output)), 0o600)
    os.close(fd)
    os.unlink(probe)


_DESCRIPTOR = re.compile(r"/dev/fd/\d+|/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/\d+")


def _descriptor_link(path: Path) -> bool:
    """True for /dev/stdout, /dev/fd/N, /proc/self/fd/N and links to them: the file behind is
    whatever the process has open (a terminal, a pipe, the shell's `>` file), never replaced."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a symlink chain
        if _DESCRIPTOR.fullmatch(current):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return False


def written_in_place(output: str | Path) -> bool:
    """True for an output written directly, never replaced: an existing device, FIFO or socket
    (e.g. /dev/null), or a descriptor link such as /dev/stdout."""
    output = Path(output)
    if _descriptor_link(output):
        return True
    try:
        mode = os.stat(output).st_mode  # follows symlinks: a link to a device is a device
    except OSError:  # none yet, or an unusable folder (named by check_output_folder)
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_output(output: str | Path, inputs: Sequence[str | Path] = (), sidecars: Sequence[str | Path] = ()) -> bool:
    """Check an output before any work is done; True when it will be written in place.

    Never an input; a regular output needs an existing, writable folder; `sidecars` (files our
    writer puts beside the output, e.g. a baseline's `.json`) are refused beside an output
    written in place: they would land in its folder (e.g. /dev), so the caller must ask where.
    """
    output = Path(output)
    check_not_an_input(output, inputs, sidecars)
    if written_in_place(output):
        try:
            os.stat(output)
        except OSError as error:  # e.g. /dev/fd/9 of a descriptor this process does not have
            raise UnsafeOutput(f"the output {output} cannot be opened: {error.strerror}") from None
        beside = [Path(s) for s in sidecars if Path(s).parent == output.parent]
        if beside:
            raise UnsafeOutput(f"{output} is not a regular file (a device, pipe or descriptor): it is written in "
                               f"place, and {beside[0]} would be created beside it in {output.parent}; "
                               "write to a regular file, or say where the sidecar goes")
        return True
    check_output_folder(output)
    return False


def _new_file(path: Path, mode: int) -> int:
    """A new file opened for writing, created with `mode` (the process umask applies, as open())."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)


def _temporary_beside(target: Path, mode: int) -> tuple[int, Path]:
    """A new temporary file in `target`'s folder; UnsafeOutput naming the folder when it refuses one."""
    for _ in range(100):
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
        try:
            return _new_file(temp, mode), temp
        except FileExistsError:
            continue
        except OSError as error:
            raise UnsafeOutput(f"cannot create a file in the output folder {target.parent}: "
                               f"{error.strerror}") from None
    raise UnsafeOutput(f"cannot create a temporary file in the output folder {target.parent}")


@contextlib.contextmanager
def _atomic(output: Path, replaces_meta: bool, binary: bool = False) -> Iterator[IO[Any]]:
    """A text file in the output's folder that replaces `output` only when the block succeeds.

    On any exception (Ctrl-C included) the temporary file is removed and the old output stays
    as it was. The meta and values files (and parts folder) of a resumable run beside the old output
    no longer describe the new one: with `replaces_meta` they are removed just before the replacement.
    """
    target = Path(os.path.realpath(output))  # a symlink writes its target; the link stays
    try:
        old_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        old_mode = None
    # A new output: created 0666 less the umask, exactly as open() would. A replaced one: kept
    # private while written, then given the old file's permissions.
    fd, temp = _temporary_beside(target, 0o666 if old_mode is None else 0o600)
    try:
        with (open(fd, "wb") if binary else open(fd, "w", encoding="utf-8", newline="\n")) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if old_mode is not None:
            os.chmod(temp, old_mode)
        if replaces_meta:  # the files of a resumable run no longer describe the new output
            for stale in (meta_path(output), values_path(output)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
            shutil.rmtree(parts_path(output), ignore_errors=True)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


@contextlib.contextmanager
def open_output(output: str | Path, replaces_meta: bool = True, binary: bool = False) -> Iterator[IO[Any]]:
    """The one way to write an output's text: a regular file atomically (see `_atomic`; a
    symlink's target is replaced, the link stays); a device, FIFO, socket or descriptor link in
    place (a descriptor link appended to), never replaced. Text (UTF-8, \\n) or, with `binary`, bytes."""
    output = Path(output)
    if written_in_place(output):
        mode = "a" if _descriptor_link(output) else "w"
        with (open(output, mode + "b") if binary else open(output, mode, encoding="utf-8", newline="\n")) as handle:
            yield handle
    else:
        with _atomic(output, replaces_meta, binary) as handle:
            yield handle


def write_text(output: str | Path, text: str, inputs: Sequence[str | Path] = ()) -> None:
    """Write `text` to `output` (see `open_output`), refusing an output that is one of `inputs`."""
    check_not_an_input(Path(output), inputs)
    with open_output(output, replaces_meta=False) as handle:
        handle.write(text)


def write_bytes(output: str | Path, data: bytes, inputs: Sequence[str | Path] = ()) -> None:
    """Write `data` to `output` (see `open_output`), e.g. a figure; never over one of `inputs`."""
    check_not_an_input(Path(output), inputs)
    with open_output(output, replaces_meta=False, binary=True) as handle:
        handle.write(data)


def write_meta(output: Path, meta: dict[str, Any]) -> None:
    """Write `output`'s meta file atomically (a torn meta file would block --resume)."""
    text = json.dumps({"written_by": WRITTEN_BY, "meta_version": META_VERSION, **meta}, indent=1)
    with _atomic(meta_path(output), replaces_meta=False) as handle:
        handle.write(text)


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
