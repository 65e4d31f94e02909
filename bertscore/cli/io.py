"""What every command of the CLI shares: reading input files line by line, naming the user's
files and lines, how a command speaks on stderr (its log lines, progress bars, an internal error), and that
Ctrl-C always stops it, and how a command's process ends (`as_program`).

The subcommands (`score`, `compare`, `baseline`) import from here, never from each other.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import difflib
import gc
import logging
import os
import re
import signal
import sys
import threading
import traceback
from typing import IO, Any, Callable, Iterator, NoReturn, Sequence

from ..inputs import InputError
from ..notes import Spelling, command_line, spelled
from ..tables.lines import file_lines

STRING_MODE_HINT = (
    "-c and -r take files, one text per line; the official bert-score command's mode that scores an argument "
    "that is not a file as the text itself is not supported, because a mistyped path would be scored as text"
)


# The output formats a file name's extension names: `-o scores.parquet` is a Parquet file, at every door.
EXTENSION_FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "json", ".tsv": "tsv"}


def extension_format(path: str | os.PathLike[str]) -> str | None:
    """The output format the file's extension names (EXTENSION_FORMATS), or None for any other name."""
    return EXTENSION_FORMATS.get(os.path.splitext(os.fspath(path))[1].lower())


def check_extension(path: str | os.PathLike[str], option: str, writes: str, what: str, rename: str) -> None:
    """A door that writes one kind of file refuses, before any work, an output whose extension
    names another format (text written into a .parquet file); any other extension is the user's."""
    named = extension_format(path)
    if named is not None and named != writes:
        raise InputError(f"{option} {path}: its extension says {named}, but this writes {what}; {rename}")


class CommandParser(argparse.ArgumentParser):
    """argparse for the commands, its refusals short: one usage line (`short_usage`; --help has them
    all), then the error in one line, an unknown option with the known one it most likely
    misspells (`--modle`: did you mean --model?)."""

    def __init__(self, *args: Any, short_usage: str = "[options]", **kwargs: Any) -> None:
        if sys.version_info >= (3, 14):  # argparse's own suggestions, for a mistyped choice
            kwargs.setdefault("suggest_on_error", True)
        super().__init__(*args, **kwargs)
        self.short_usage = short_usage

    def spelling(self) -> Spelling:
        """How notes name options while this command runs: by this parser's own flags (`--model`)."""
        return command_line({action.dest: max(action.option_strings, key=len)
                             for action in self._actions if action.option_strings})

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        self.exit(2, f"usage: {self.prog} {self.short_usage}  (every option: {self.prog} --help)\n"
                     f"{self.prog}: error: {_with_suggestions(message, list(self._option_string_actions))}\n")


def _with_suggestions(message: str, options: list[str]) -> str:
    """argparse's "unrecognized arguments: ..." with, for each unknown option, the known one that it
    most likely misspells (as Python 3.14's `suggest_on_error` does for choices)."""
    if not message.startswith("unrecognized arguments: "):
        return message
    guesses = []
    for word in message[len("unrecognized arguments: "):].split():
        name = word.split("=", 1)[0]
        if name.startswith("-") and name not in options:
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.7)
            if close:
                guesses.append(f"{name}: did you mean {close[0]}?")
    return message + (f" ({'; '.join(guesses)})" if guesses else "")


def open_text(path: str) -> IO[bytes]:
    """The file (or stdin for '-') as bytes: lines are decoded one by one to name a bad line."""
    if path == "-":
        return open(sys.stdin.fileno(), "rb", closefd=False)
    if os.path.isdir(path):
        raise InputError(f"{path} is a folder: give a file with one text per line")
    if not os.path.isfile(path):
        raise InputError(f"file not found: {path} ({STRING_MODE_HINT})")
    try:
        return open(path, "rb")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None


def decoded_lines(handle: IO[bytes], path: str) -> Iterator[str]:
    """Lines without their newline, read by the tables' line reader (`tables.lines.file_lines`: a
    decoding error names the file, line and byte; a BOM is dropped; a binary file is refused)."""
    for _, line in file_lines(handle, path):
        yield line.rstrip("\n").rstrip("\r")


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every input file: the --input table, or the candidates file and the reference files."""
    return [args.input] if args.input else [args.candidates, *args.references]


def read_files(args: argparse.Namespace, texts: Sequence[str]) -> list[str]:
    """The user's files, never to be an output: the text files and the --baseline-path file."""
    return [*texts, *([args.baseline_path] if args.baseline_path else [])]


_PLACE = re.compile(r"(candidates|references)\[(\d+)\](?:\[(\d+)\])?")


def name_lines(note: str, rows_before: int, args: argparse.Namespace) -> str:
    """A scorer note about one chunk, with its places (Python's indices in the chunk, from 0) named as
    input lines (from 1, as every output names rows): `candidates[3]` of a chunk after 2048 rows
    becomes `line 2052 of cands.txt`."""

    def line(match: re.Match[str]) -> str:
        row = rows_before + int(match.group(2)) + 1
        if args.input:
            return f"row {row} of {args.input}" + (f" (reference {int(match.group(3)) + 1})"
                                                   if match.group(1) == "references" and match.group(3) else "")
        if match.group(1) == "candidates":
            return f"line {row} of {args.candidates}"
        return f"line {row} of {args.references[int(match.group(3) or 0)]}"

    return _PLACE.sub(line, note)


def shows_progress(quiet: bool = False, verbose: bool = False) -> bool:
    """Whether a command draws progress bars (tqdm, on stderr): by default where stderr is a terminal,
    so a pipe or a log file gets no bar lines; `verbose` (`bertscore -v`) draws them anyway; `quiet`
    (-q) never. The one rule of every command, `bert-score` included."""
    if quiet:
        return False
    if verbose:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr (pythonw), or a closed one
        return False


def run_subcommand(program: str, parser: CommandParser, argv: Sequence[str] | None,
                   run: Callable[[argparse.Namespace], int], kept: Callable[[argparse.Namespace], str]) -> int:
    """A subcommand's `main` (`bertscore baseline`, `bertscore layers`): its options parsed, `run(args)`
    with its log lines (`--quiet`: warnings only) and its notes spelled by the parser's flags, the exit
    code as `run_command` gives it (`kept(args)`: what an interruption leaves as it was)."""
    args = parser.parse_args(argv)

    def logged() -> int:
        with cli_logging(logging.WARNING, package_level=logging.WARNING if args.quiet else logging.INFO), \
                spelled(parser.spelling()):
            return run(args)

    return run_command(program, logged, lambda: kept(args))

@contextlib.contextmanager
def cli_logging(level: int, package_level: int | None = None) -> Iterator[None]:
    """Log lines as "bertscore: ..." on stderr for one command, then the logging setup as found.

    As `logging.basicConfig(level=level)` where the process has not configured logging (a root
    logger without handlers), else its own setup serves; `package_level` sets the "bertscore"
    logger's level too. Everything is put back afterwards: `main()` also runs inside other
    processes (a notebook, a test, a script calling `bertscore.cli.main([...])`), whose root
    handlers and levels are theirs.
    """
    root, package = logging.getLogger(), logging.getLogger("bertscore")
    saved_root_level, saved_package_level = root.level, package.level
    handler = None
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("bertscore: %(message)s"))
        root.addHandler(handler)
        root.setLevel(level)
    if package_level is not None:
        package.setLevel(package_level)
    try:
        yield
    finally:
        package.setLevel(saved_package_level)
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(saved_root_level)


@contextlib.contextmanager
def ctrl_c_stops() -> Iterator[None]:
    """Ctrl-C stops the command even where Python swallows its KeyboardInterrupt.

    Python runs a signal's handler wherever the main thread is. Inside a finalizer (`__del__`, a
    weakref callback; tqdm's `__del__` runs after every scoring call) the KeyboardInterrupt cannot
    propagate: Python prints "Exception ignored in ..." and carries on. The command then went on
    scoring and, with stdin left open, waited for more input for ever (rare: the signal must land in
    the microseconds before such a finalizer runs; benchmarks/ctrl_c.py counts where Python drops
    them). Here such an interrupt is sent again to the main thread, from
    another thread: a signal sent from the finalizer itself would be handled, and lost, right there;
    sent to the main thread, it also ends a read from stdin. The process's own hook is back
    afterwards (`main()` also runs inside other processes).
    """
    previous, main_thread = sys.unraisablehook, threading.main_thread().ident

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # not threading.Thread: its start() waits in this hook, where the signal would land again
            _thread.start_new_thread(signal.pthread_kill, (main_thread, signal.SIGINT))
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def run_command(program: str, run: Callable[[], int], interrupted: Callable[[], str] = lambda: "") -> int:
    """A subcommand's exit code around `run`: 0 done; 2 for bad input (an `InputError`, or a file that
    cannot be read or written), said in one line; 130 on Ctrl-C (`interrupted()` says what was kept);
    1 for anything else, a bug, shown with its traceback. Ctrl-C stops it even where Python drops
    the interrupt (`ctrl_c_stops`)."""
    try:
        with ctrl_c_stops():
            return run()
    except (InputError, OSError) as error:  # what the user passed: an input, an option, a file
        print(f"{program}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # no traceback; the one writer left any old output as it was
        print(f"{program}: interrupted{interrupted()}", file=sys.stderr)
        return 130
    except Exception:  # not the input: a bug, shown with its traceback
        return internal_error(program)


def internal_error(program: str) -> int:
    """Print the traceback of the exception being handled and say it is a bug: exit code 1."""
    traceback.print_exc()
    print(f"{program}: internal error (not a problem with your input): please report it with the traceback above",
          file=sys.stderr)
    return 1


def as_program(main: Callable[[], int]) -> int:
    """`main()`'s exit code, for a process that ends right after: the `bertscore` script and
    `python -m bertscore ...`. On the way out (a return, or argparse's exit) it calls `gc.freeze()`,
    so that the interpreter's exit does not run full garbage collections over the millions of
    objects torch and transformers created: about a quarter of a short run
    (benchmarks/results/cli_exit.md). Atexit handlers and the flushing of streams still run; the
    process ends, so nothing stays that the exit would free. Callers of `main` in their own process
    (a notebook, a test) keep their collector as it was."""
    try:
        return main()
    finally:
        gc.freeze()
