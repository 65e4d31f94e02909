"""`python -` without paying for torch's and transformers' imports again: a warm interpreter for tests.

A doc block of Python runs as `python -` would run it (tests/test_docs.py). A fresh interpreter
spends about 6 CPU seconds importing torch, transformers and datasets before the block's first
line does anything, and the suite starts dozens. `WarmPython` starts one server interpreter per
pytest worker with the block environment. The server imports `PRELOADED` (third-party modules only,
never this repository's code), touches nothing else, and then forks one child per run. The child
becomes what `python -` is on its first line:
- its own process group (a timeout kills it and every process it started), cwd, environment, argv `['-']`;
- `sys.path` as `python -` builds it: `''`, then the entries of its PYTHONPATH, then the venv's own;
- a new, empty `__main__`, the block compiled as `<stdin>`; stdin at its end, stdout and stderr
  to files;
- fresh entropy for `random` and numpy's legacy generator, as a new process draws;
- the preloaded modules' objects frozen out of the garbage collector (`gc.freeze()`, as Python's
  docs advise before forking), so that its exit does not collect them: 1.2 s saved per fork;
- an uncaught exception prints its traceback from `<stdin>` on and exits 1; `sys.exit(...)`, atexit
  handlers and the join of non-daemon threads are the interpreter's own.

What differs from a new interpreter is only that the preloaded modules are in `sys.modules`
already: a block must still import each name it uses (its namespace is empty), and it sees them
as their import left them. Import-time settings come from the environment, so a run whose
environment differs from the server's in anything but `NOT_READ_AT_IMPORT` goes to a new interpreter
instead (`run` says which way it went). `BERTSCORE_TESTS_COLD=1` sends every run there.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

PRELOADED = ("torch", "transformers", "transformers.models.bert.modeling_bert", "datasets", "evaluate")
COLD_ENV = "BERTSCORE_TESTS_COLD"
# Variables that may differ between the server and a fork: no preloaded module reads them when it
# loads (the fork's sys.path is rebuilt from its PYTHONPATH; pytest renames the current test in its own).
NOT_READ_AT_IMPORT = ("PYTHONPATH", "PYTEST_CURRENT_TEST")


def _python_path(env: dict[str, str]) -> list[str]:
    return [os.path.abspath(entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]


class WarmPython:
    """One server interpreter (started on the first run) whose children run Python text as `python -`."""

    def __init__(self, env: dict[str, str], log_dir: Path, preload: tuple[str, ...] = PRELOADED) -> None:
        self.env = dict(env)
        self.preload = tuple(preload)
        self.log_dir = Path(log_dir)
        self._server: subprocess.Popen | None = None

    def matches(self, env: dict[str, str]) -> bool:
        """Whether a run with this environment may fork from the server (same import-time settings)."""
        if os.environ.get(COLD_ENV) == "1":
            return False
        strip = lambda mapping: {k: v for k, v in mapping.items() if k not in NOT_READ_AT_IMPORT}  # noqa: E731
        return strip(env) == strip(self.env)

    def run(self, text: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """Run `text` as `python -` in `cwd` with `env`; a CompletedProcess as `subprocess.run(..., text=True)`
        gives, with `.warm` saying whether it was a fork of the server. Raises subprocess.TimeoutExpired."""
        if not self.matches(env):
            done = subprocess.run([sys.executable, "-"], input=text, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            done.warm = False
            return done
        server = self._started()
        with tempfile.TemporaryDirectory(dir=self.log_dir) as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            request = {"text": text, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
            server.stdin.write((json.dumps(request) + "\n").encode())
            server.stdin.flush()
            pid = json.loads(self._reply(server, 60))["pid"]
            try:
                status = json.loads(self._reply(server, timeout))["returncode"]
            except subprocess.TimeoutExpired:
                os.killpg(pid, signal.SIGKILL)
                self._reply(server, 60)
                raise subprocess.TimeoutExpired([sys.executable, "-"], timeout, out.read_text(), err.read_text())
            done = subprocess.CompletedProcess([sys.executable, "-"], status, out.read_text(), err.read_text())
        done.warm = True
        return done

    def close(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.stdin.close()
            self._server.wait(timeout=60)
        self._server = None

    def _started(self) -> subprocess.Popen:
        if self._server is None or self._server.poll() is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.log_dir / "server.log", "ab") as log:
                self._server = subprocess.Popen([sys.executable, __file__, *self.preload], stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=log, env=self.env, cwd=self.log_dir,
                                                bufsize=0)  # unbuffered: select() sees every reply line
            ready = json.loads(self._reply(self._server, 300))
            assert ready == {"ready": list(self.preload)}, ready
        return self._server

    def _reply(self, server: subprocess.Popen, timeout: float) -> str:
        readable, _, _ = select.select([server.stdout], [], [], timeout)
        if not readable:
            raise subprocess.TimeoutExpired([sys.executable, "-"], timeout)
        line = server.stdout.readline().decode()
        if not line:
            log = (self.log_dir / "server.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the warm Python server stopped (exit {server.wait()}); its log:\n{log}")
        return line


def _serve(preload: list[str]) -> None:
    """The server: preload, say so, then fork a child per request and report its exit status."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    base_path = [entry for entry in sys.path[1:] if entry not in _python_path(dict(os.environ))]
    sys.path[:] = base_path  # preloading finds installed packages only, never the clone's or the tests' files
    import importlib

    for name in preload:
        importlib.import_module(name)
    gc.freeze()  # the preloaded objects out of every collection: a fork's exit skips them (1.2 s each)
    replies.write((json.dumps({"ready": preload}) + "\n").encode())
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            _become_python_stdin(request, base_path)  # returns only through SystemExit
        replies.write((json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        replies.write((json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


def _become_python_stdin(request: dict, base_path: list[str]) -> None:
    """In the child: the state `python -` starts the text in, then the text; exits as `python -` exits."""
    import builtins
    import importlib.machinery
    import random
    import traceback
    import types

    os.setpgid(0, 0)  # its own process group, so that a timeout kills what it started too
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[:] = ["", *_python_path(request["env"]), *base_path]
    sys.argv[:] = ["-"]
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={}, __loader__=importlib.machinery.BuiltinImporter,
                         __file__="<stdin>", __cached__=None)
    sys.modules["__main__"] = main
    try:
        exec(compile(request["text"], "<stdin>", "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - printed as the interpreter prints it, and exit 1
        error = error.with_traceback(error.__traceback__.tb_next)  # from <stdin> on, as the interpreter prints it
        sys.excepthook(type(error), error, error.__traceback__)
        sys.stderr.flush()
        raise SystemExit(1) from None
    raise SystemExit(0)


if __name__ == "__main__":
    _serve(sys.argv[1:])
