"""tests/warm_python.py: a fork of the warm interpreter starts Python text as a new `python -` does.

Each case runs the same text both ways, a real `python -` and a warm fork, and compares what the
text saw and how the process ended. The probe imports nothing heavy, so the real runs are cheap.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from warm_python import COLD_ENV, PRELOADED, WarmPython

# The doc blocks' server preloads all of PRELOADED; these tests need only the one that is hardest to
# fork after (torch) and a cheap one.
TEST_PRELOAD = ("torch", "numpy")
HANG_GUARD_S = 120  # a wait that only ends a hung test, saying what it waited for (never a timing bet)

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, random, sys, threading
import numpy
seen = {
    "argv": sys.argv, "cwd": os.getcwd(), "path_head": sys.path[:3], "path": sys.path,
    "main": sorted(k for k in vars(sys.modules["__main__"]) if k.startswith("__")),
    "name": __name__, "file": __file__, "cached": __cached__, "stdin": sys.stdin.read(),
    "env": [os.environ.get("PROBE_VALUE"), os.environ.get("PYTEST_CURRENT_TEST")], "ours": sorted(m for m in sys.modules if m.split(".")[0] in ("bertscore", "bertscore_metric", "tiny_models")),
    "threads": threading.active_count(), "session": os.getsid(0) == os.getpid(),
    "loader": repr(__loader__), "spec": repr(__spec__), "package": repr(__package__), "doc": repr(__doc__),
    "random": random.random(), "numpy": float(numpy.random.random()),
}
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PROBE_VALUE="server")
    env.pop("BERTSCORE_TESTS_COLD", None)
    server = WarmPython(env, tmp_path_factory.mktemp("warm"), preload=TEST_PRELOAD)
    yield server
    server.close()


def both(warm: WarmPython, text: str, cwd: Path, **extra: str) -> tuple[subprocess.CompletedProcess, ...]:
    env = dict(warm.env, PYTHONPATH=str(cwd), **extra)
    cold = subprocess.run([sys.executable, "-"], input=text, cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    forked = warm.run(text, cwd, env, timeout=HANG_GUARD_S)
    return cold, forked


def test_a_fork_sees_what_a_new_python_dash_sees(warm: WarmPython, tmp_path: Path) -> None:
    cold, forked = both(warm, PROBE, tmp_path, PYTEST_CURRENT_TEST="tests/a.py::b (call)")  # pytest's, per test
    assert forked.warm and cold.returncode == forked.returncode == 0, (cold.stderr, forked.stderr)
    again = warm.run(PROBE, tmp_path, dict(warm.env, PYTHONPATH=str(tmp_path), PYTEST_CURRENT_TEST="tests/a.py::b (call)"),
                     timeout=HANG_GUARD_S)
    seen_cold, seen_warm, seen_again = (json.loads(done.stdout) for done in (cold, forked, again))
    for drawn in ("random", "numpy"):  # each new process draws new entropy, forks of one server too
        assert len({seen_cold.pop(drawn), seen_warm.pop(drawn), seen_again.pop(drawn)}) == 3
    assert seen_warm == seen_cold == seen_again
    assert seen_warm["path_head"][:2] == ["", str(tmp_path)] and seen_warm["ours"] == []
    assert seen_warm["env"] == ["server", "tests/a.py::b (call)"]
    assert seen_warm["argv"] == ["-"] and seen_warm["main"] == ["__annotations__", "__builtins__", "__cached__", "__doc__",
                                                                "__file__", "__loader__", "__name__", "__package__",
                                                                "__spec__"]


def test_the_preloaded_modules_are_there_and_a_block_still_needs_its_imports(warm: WarmPython, tmp_path: Path) -> None:
    text = "import sys\nprint(sorted(m for m in %r if m in sys.modules))\ntorch.zeros(1)\n" % (TEST_PRELOAD,)
    cold, forked = both(warm, text, tmp_path)
    assert forked.stdout.strip() == str(sorted(TEST_PRELOAD)) and cold.stdout.strip() == "[]"
    assert set(PRELOADED) >= {"torch", "transformers", "datasets"}  # what the doc blocks' server holds
    assert cold.returncode == forked.returncode == 1
    assert forked.stderr == cold.stderr  # the same traceback, from <stdin> on
    assert "NameError: name 'torch' is not defined" in forked.stderr


# The thread's 0.2 s sleep synchronises nothing: it makes the thread likely to outlive the main code, and
# 'joined' prints either way (the interpreter joins it) in both runs.
@pytest.mark.parametrize("ending", ["raise SystemExit(3)", "import sys; sys.exit('a message')", "raise ValueError('x')",
                                    "import atexit; atexit.register(print, 'at exit')",
                                    "import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), print('joined'))).start()",
                                    "import sys; print('out'); print('err', file=sys.stderr)",
                                    "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
def test_it_ends_as_a_new_python_dash_ends(warm: WarmPython, tmp_path: Path, ending: str) -> None:
    cold, forked = both(warm, f"print('start')\n{ending}\n", tmp_path)
    assert forked.warm
    assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_a_timeout_kills_the_fork_and_what_it_started(warm: WarmPython, tmp_path: Path) -> None:
    """The block starts a child, says so on a FIFO, and then waits for ever (as does its child): the
    timeout counts from that line (run(ready=...)), so how long the fork took to start does not matter."""
    env = dict(warm.env, PYTHONPATH=str(tmp_path))
    if not warm.matches(env):
        pytest.skip(f"{COLD_ENV}=1 sends every run to a new interpreter: there is no fork whose timeout to test")
    marker, ready = tmp_path / "grandchild.pid", tmp_path / "ready"
    os.mkfifo(ready)
    text = ("import subprocess, sys, threading\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import threading; threading.Event().wait()'])\n"
            f"open({str(marker)!r}, 'w').write(str(child.pid))\nprint('started', flush=True)\n"
            f"open({str(ready)!r}, 'w').write('running\\n')\nthreading.Event().wait()\n")
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        warm.run(text, tmp_path, env, timeout=1, ready=ready)
    assert stopped.value.output == "started\n"
    grandchild = int(marker.read_text())
    try:
        handle = os.pidfd_open(grandchild)  # the kill reaches the block's whole process group
    except ProcessLookupError:
        pass  # killed and reaped already
    else:
        # Only a hang guard: SIGKILL ends it at once; a child the kill missed waits for ever and fails here.
        ended = select.select([handle], [], [], HANG_GUARD_S)[0]
        os.close(handle)
        if not ended:
            os.kill(grandchild, signal.SIGKILL)
            pytest.fail(f"the block's own child outlived the timeout's kill (still running {HANG_GUARD_S} s later)")
    assert warm.run("print('next')", tmp_path, env, timeout=HANG_GUARD_S).stdout == "next\n"  # the server goes on


def test_another_environment_gets_a_new_interpreter(warm: WarmPython, tmp_path: Path, monkeypatch) -> None:
    env = dict(warm.env, PYTHONPATH=str(tmp_path), HF_HOME=str(tmp_path))  # read when huggingface_hub loads
    done = warm.run("import sys; print('torch' in sys.modules)", tmp_path, env, timeout=HANG_GUARD_S)
    assert not done.warm and done.stdout == "False\n"
    monkeypatch.setenv("BERTSCORE_TESTS_COLD", "1")
    done = warm.run("import sys; print('torch' in sys.modules)", tmp_path, dict(warm.env), timeout=HANG_GUARD_S)
    assert not done.warm and done.stdout == "False\n"


SCRIPT = r"""#!{python}
import atexit, json, os, random, sys
atexit.register(lambda: print("at exit"))
print(json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "path_head": sys.path[:2], "stdin": sys.stdin.read(),
                  "env": os.environ.get("PROBE_VALUE"), "file": __file__, "name": __name__,
                  "main": sorted(k for k in vars(sys.modules["__main__"]) if k.startswith("__")),
                  "loader": type(__loader__).__name__, "ours": sorted(m for m in sys.modules if m.startswith("bertscore"))}}))
print("to stderr", file=sys.stderr)
if sys.argv[1] == "raise":
    raise ValueError("raised by the script")
sys.exit(int(sys.argv[1]))
"""


def _console_script(folder: Path) -> Path:
    """A stand-in for a console script of the venv: it reports what it sees and exits as told."""
    folder.mkdir()
    script = folder / "probe-command"
    script.write_text(SCRIPT.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("exit_as", ["0", "3", "raise"])
def test_a_console_script_in_a_shell_runs_in_a_fork_as_the_script_itself_runs(warm: WarmPython, tmp_path: Path,
                                                                                exit_as: str) -> None:
    """A shell's `probe-command` through the shim (a fork of the server) and the script itself: the
    same argv, cwd, sys.path, stdin, stdout, stderr (a traceback too), exit status and exit handlers."""
    script = _console_script(tmp_path / "bin")
    line = f'printf "typed input" | probe-command {exit_as} "two words" || echo "exit status $?"\n'
    env = dict(warm.env, PYTHONPATH=str(tmp_path))
    cold = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(env, PATH=os.pathsep.join([str(script.parent), env["PATH"]])), timeout=HANG_GUARD_S)
    shimmed = warm.command_env(env, scripts=(script,))  # the shim's folder first on PATH, the rest as it was
    assert shimmed["PATH"].split(os.pathsep)[1:] == env["PATH"].split(os.pathsep)
    before = len(warm.commands())
    forked = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", line], cwd=tmp_path, env=shimmed,
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert warm.commands()[before:] == [{"script": str(script), "argv": [exit_as, "two words"], "warm": True}]
    assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    seen = json.loads(cold.stdout.splitlines()[0])
    assert seen["argv"] == [str(script), exit_as, "two words"] and seen["stdin"] == "typed input"
    assert seen["path_head"] == [str(script.parent), str(tmp_path)] and seen["cwd"] == str(tmp_path)
    assert cold.stdout.splitlines()[1:] == ["at exit"] + ([] if exit_as == "0" else [f"exit status {1 if exit_as == 'raise' else 3}"])
    assert ("ValueError: raised by the script" in cold.stderr) is (exit_as == "raise")


def test_a_console_script_run_with_another_environment_runs_the_script_itself(warm: WarmPython, tmp_path: Path) -> None:
    script = _console_script(tmp_path / "bin")
    env = warm.command_env(warm.env, scripts=(script,))
    before = len(warm.commands())
    done = subprocess.run(["bash", "-c", "PROBE_VALUE=mine probe-command 0"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["env"] == "mine"
    assert warm.commands()[before:] == [{"script": str(script), "argv": ["0"], "warm": False}]
