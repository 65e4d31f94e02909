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

A console script of the venv (`bertscore`) can run in a fork too, for shell blocks: `command_env`
puts a folder first on PATH whose `bertscore` is a small client (`-S`: no site, no imports beyond
the standard library's few). It hands the server its stdin, stdout and stderr (file descriptors over
a Unix socket), argv, cwd and environment; the fork becomes what running the script starts as (argv,
`sys.path` from the script's folder and PYTHONPATH, cwd, environment, a new `__main__` executing the
installed script's own text), and the client exits with the script's exit status once the fork has
ended. The environment must be the server's but for NOT_READ_AT_IMPORT and the variables a shell
sets for every command (PWD, OLDPWD, SHLVL, `_`); otherwise, or with the server not running, the
client execs the installed script itself.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

PRELOADED = ("torch", "transformers", "transformers.models.bert.modeling_bert", "datasets", "evaluate")
COLD_ENV = "BERTSCORE_TESTS_COLD"
# Variables that may differ between the server and a fork: no preloaded module reads them when it
# loads (the fork's sys.path is rebuilt from its PYTHONPATH; pytest renames the current test in its own).
NOT_READ_AT_IMPORT = ("PYTHONPATH", "PYTEST_CURRENT_TEST")
SET_BY_A_SHELL = ("PWD", "OLDPWD", "SHLVL", "_")  # what bash exports to every command it runs
READY_HANG_GUARD_S = 300  # run(ready=...): how long a fork may take to say it is running before that is a hang

# The client a command shim runs: it asks the server for a fork, or execs the script itself.
SHIM = """#!{python} -S
import json, os, signal, socket, sys
SOCKET, SCRIPT, HERE = {socket!r}, {script!r}, {folder!r}
env = dict(os.environ)
env["PATH"] = os.pathsep.join(entry for entry in env.get("PATH", "").split(os.pathsep) if entry != HERE)


def installed_script():
    os.execve(SCRIPT, [SCRIPT, *sys.argv[1:]], env)


try:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(SOCKET)
except OSError:
    installed_script()
request = json.dumps({{"script": SCRIPT, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": env}}).encode()
socket.send_fds(server, [len(request).to_bytes(8, "big")], [0, 1, 2])
server.sendall(request)
replies = server.makefile("rb")
first = json.loads(replies.readline() or b"{{}}")
if "pid" not in first:
    server.close()
    installed_script()
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, lambda number, frame: os.kill(first["pid"], number))
line = replies.readline()
replies.read()  # the end of the connection: the fork has exited, its output written
sys.exit(json.loads(line)["exit"] if line else 1)
"""


def _python_path(env: dict[str, str]) -> list[str]:
    return [os.path.abspath(entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]


def _same_imports(env: dict[str, str], server_env: dict[str, str], may_differ: tuple[str, ...]) -> bool:
    """Whether a run with `env` would import the preloaded modules as the server did."""
    strip = lambda mapping: {k: v for k, v in mapping.items() if k not in may_differ}  # noqa: E731
    return strip(env) == strip(server_env)


class WarmPython:
    """One server interpreter (started on the first run) whose children run Python text as `python -`."""

    def __init__(self, env: dict[str, str], log_dir: Path, preload: tuple[str, ...] = PRELOADED) -> None:
        self.env = dict(env)
        self.preload = tuple(preload)
        self.log_dir = Path(log_dir)
        self._server: subprocess.Popen | None = None

    def matches(self, env: dict[str, str]) -> bool:
        """Whether a run with this environment may fork from the server (same import-time settings)."""
        return os.environ.get(COLD_ENV) != "1" and _same_imports(env, self.env, NOT_READ_AT_IMPORT)

    def command_env(self, env: dict[str, str], scripts: tuple[Path, ...] | None = None) -> dict[str, str]:
        """`env` with a folder first on PATH whose `scripts` (by default this venv's `bertscore`
        console script) run in forks of the server (started here); `env` itself where runs go to
        new interpreters."""
        installed = list(scripts) if scripts is not None else [Path(sys.executable).parent / "bertscore"]
        if not self.matches(env) or not all(path.is_file() for path in installed):
            return env
        self._started()
        folder = self.log_dir / "commands"
        folder.mkdir(exist_ok=True)
        for path in installed:
            shim = folder / path.name
            shim.write_text(SHIM.format(python=sys.executable, socket=str(self._socket_path), script=str(path),
                                        folder=str(folder)), encoding="utf-8")
            shim.chmod(0o755)
        return dict(env, PATH=os.pathsep.join([str(folder), env.get("PATH", "")]))

    def commands(self) -> list[dict]:
        """The console-script runs the server was asked for: script, argv, and whether it forked."""
        log = self.log_dir / "commands.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []

    @property
    def _socket_path(self) -> Path:
        return self.log_dir / "commands.sock"

    def run(self, text: str, cwd: Path, env: dict[str, str], timeout: float,
            ready: Path | None = None) -> subprocess.CompletedProcess:
        """Run `text` as `python -` in `cwd` with `env`; a CompletedProcess as `subprocess.run(..., text=True)`
        gives, with `.warm` saying whether it was a fork of the server. Raises subprocess.TimeoutExpired.
        With `ready` (a FIFO, made by `os.mkfifo`, that the text writes a line to once it is running: a
        fork only), the timeout counts from that line on, however long the text took to get there."""
        if ready is not None and not self.matches(env):
            raise ValueError("ready= needs a run that forks from the server (this one goes to a new interpreter)")
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
            pid = json.loads(self._reply(server, 60))["pid"]  # _reply's bounds are hang guards (TimeoutExpired)
            if ready is not None:
                self._await(ready, server)
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
                self._server = subprocess.Popen([sys.executable, __file__, str(self._socket_path), *self.preload],
                                                stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=log, env=self.env, cwd=self.log_dir,
                                                bufsize=0)  # unbuffered: select() sees every reply line
            ready = json.loads(self._reply(self._server, 300))
            assert ready == {"ready": list(self.preload)}, ready
        return self._server

    @staticmethod
    def _await(ready: Path, server: subprocess.Popen) -> None:
        """Until the fork writes its line to the FIFO `ready`, or ends first (its status then is the next reply)."""
        fifo = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: select waits for one's line
        try:
            while True:
                # A hang guard only (a fork that neither writes nor ends), failing with what it waited for.
                readable, _, _ = select.select([fifo, server.stdout], [], [], READY_HANG_GUARD_S)
                if not readable:
                    raise RuntimeError(f"the fork neither wrote a line to {ready} nor ended in {READY_HANG_GUARD_S} s")
                if server.stdout in readable:
                    return
                line = os.read(fifo, 4096)
                if not line or line.endswith(b"\n"):  # its line, or its writer gone (ending): past waiting
                    return
        finally:
            os.close(fifo)

    def _reply(self, server: subprocess.Popen, timeout: float) -> str:
        readable, _, _ = select.select([server.stdout], [], [], timeout)
        if not readable:
            raise subprocess.TimeoutExpired([sys.executable, "-"], timeout)
        line = server.stdout.readline().decode()
        if not line:
            log = (self.log_dir / "server.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the warm Python server stopped (exit {server.wait()}); its log:\n{log}")
        return line


def _serve(socket_path: str, preload: list[str]) -> None:
    """The server: preload, say so, then fork a child per request (a Python text on stdin, or a
    console script's run on the socket) and report its exit status."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    server_env = dict(os.environ)  # as started: importing torch adds to os.environ (TORCHINDUCTOR_CACHE_DIR)
    base_path = [entry for entry in sys.path[1:] if entry not in _python_path(server_env)]
    sys.path[:] = base_path  # preloading finds installed packages only, never the clone's or the tests' files
    import importlib

    for name in preload:
        importlib.import_module(name)
    gc.freeze()  # the preloaded objects out of every collection: a fork's exit skips them (1.2 s each)
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(8)
    replies.write((json.dumps({"ready": preload}) + "\n").encode())
    commands: set[int] = set()
    while True:
        readable, _, _ = select.select([requests, listener], [], [], 1.0)
        for pid in list(commands):  # reap the console-script forks that have ended
            if os.waitpid(pid, os.WNOHANG)[0]:
                commands.discard(pid)
        if listener in readable:
            connection, _ = listener.accept()
            with connection:
                pid = _fork_command(connection, listener, requests, replies, base_path, server_env,
                                    Path(socket_path).with_name("commands.jsonl"))
            if pid:
                commands.add(pid)
        if requests not in readable:
            continue
        line = requests.readline()
        if not line:
            break
        request = json.loads(line)
        pid = _fork_child((listener, requests, replies), lambda: _become_python_stdin(request, base_path))
        replies.write((json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        replies.write((json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


def _fork_command(connection: socket.socket, listener: socket.socket, requests, replies, base_path: list[str],
                  server_env: dict[str, str], log_path: Path) -> int:
    """Read a shim's request (its stdin, stdout and stderr, then the run as JSON); fork a child that
    becomes the console script's run, or answer "cold" (the shim then execs the script). The pid."""
    header, fds, _, _ = socket.recv_fds(connection, 8, 3)
    size, data = int.from_bytes(header, "big"), b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    request = json.loads(data) if len(data) == size else None
    warm = (request is not None and len(fds) == 3 and os.environ.get(COLD_ENV) != "1"
            and _same_imports(request["env"], server_env, NOT_READ_AT_IMPORT + SET_BY_A_SHELL))
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"script": request and request["script"], "argv": request and request["argv"],
                              "warm": warm}) + "\n")
    if not warm:
        for fd in fds:
            os.close(fd)
        connection.sendall(b'{"cold": true}\n')
        return 0
    pid = _fork_child((listener, requests, replies), lambda: _become_script(request, fds, connection, base_path))
    for fd in fds:
        os.close(fd)
    return pid


def _fork_child(server_files: tuple, become: Callable[[], None]) -> int:
    """Fork; the child closes the server's own files (its socket and pipes) and becomes `become()`,
    which returns only through SystemExit. The child's pid, in the server."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for handle in server_files:
            handle.close()
        become()
    return pid


def _fresh_process_state(request: dict, base_path: list[str], path_head: str) -> None:
    """What a new interpreter starts with: cwd, environment, `sys.path`, fresh entropy."""
    import random

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = [path_head, *_python_path(request["env"]), *base_path]
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def _new_main(file: str, loader: object) -> dict:
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={}, __loader__=loader, __file__=file, __cached__=None)
    sys.modules["__main__"] = main
    return main.__dict__


def _run_main(code: object, namespace: dict) -> None:
    """Run `code` as a process's main; exit as the interpreter exits (a traceback and 1 if it raised)."""
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - printed as the interpreter prints it, and exit 1
        error = error.with_traceback(error.__traceback__.tb_next)  # from the main code on, as the interpreter prints it
        sys.excepthook(type(error), error, error.__traceback__)
        sys.stderr.flush()
        raise SystemExit(1) from None
    raise SystemExit(0)


def _become_script(request: dict, fds: list[int], connection: socket.socket, base_path: list[str]) -> None:
    """In the child: the state a console script starts in (stdio the shim's), then the script's text;
    its exit status goes to the shim once every exit handler has run."""
    import atexit
    import importlib.machinery

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    script = request["script"]
    _fresh_process_state(request, base_path, os.path.dirname(script))
    sys.argv[:] = [script, *request["argv"]]
    connection = connection.dup()  # the server's `with` closes its own on the way out of the stack
    connection.sendall((json.dumps({"pid": os.getpid()}) + "\n").encode())
    status = {"exit": 1}

    def report() -> None:  # registered first, so it runs after the exit handlers the script registers
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        connection.sendall((json.dumps(status) + "\n").encode())

    atexit.register(report)
    namespace = _new_main(script, importlib.machinery.SourceFileLoader("__main__", script))
    try:
        _run_main(compile(Path(script).read_bytes(), script, "exec"), namespace)
    except SystemExit as stop:
        code = stop.code
        status["exit"] = 0 if code is None else code if isinstance(code, int) else 1
        raise


def _become_python_stdin(request: dict, base_path: list[str]) -> None:
    """In the child: the state `python -` starts the text in, then the text; exits as `python -` exits."""
    import importlib.machinery

    os.setpgid(0, 0)  # its own process group, so that a timeout kills what it started too
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    _fresh_process_state(request, base_path, "")
    sys.argv[:] = ["-"]
    namespace = _new_main("<stdin>", importlib.machinery.BuiltinImporter)
    _run_main(compile(request["text"], "<stdin>", "exec"), namespace)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2:])
