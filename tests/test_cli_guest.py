"""`bertscore.cli.main([...])` called inside a user's process leaves its logging and its garbage
collector as found; `program`, the entry of a process that ends with it, freezes the collector.

The command line prints its log lines ("bertscore: ...") on stderr, the way
`logging.basicConfig` would; run in-process (a notebook, a test, a script), it used to leave
that root handler and level (and the baseline command its "bertscore" level) behind for good.
Logging is process-wide, so each case runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import gc, json, logging, sys
{setup}
def state():
    loggers = {{name or "root": [logging.getLogger(name).level, [repr(h) for h in logging.getLogger(name).handlers],
                                 logging.getLogger(name).propagate] for name in ("", "bertscore")}}
    return {{**loggers, "gc": [gc.isenabled(), gc.get_freeze_count() > 0, gc.get_threshold()]}}
before = state()
from bertscore.cli import main
codes = [
    main(["baseline", "-m", {model!r}, "--corpus", {corpus!r}, "-o", {table!r}]),
    main(["-c", {cands!r}, "-r", {refs!r}, "-m", {model!r}, "-l", "2", "-v"]),
]
print(json.dumps({{"codes": codes, "before": before, "after": state()}}))
"""

CONFIGURED = ("logging.basicConfig(level=logging.DEBUG, format='mine: %(message)s'); "
              "logging.getLogger('bertscore').setLevel(logging.ERROR)")


@pytest.mark.parametrize("setup", ["", CONFIGURED], ids=["unconfigured", "configured"])
def test_cli_main_in_process_leaves_logging_as_found(tmp_path, setup):
    words = "the cat dog sat ran on a mat in the park all day long".split()
    (tmp_path / "corpus.txt").write_text("\n".join(" ".join(words[i:i + 5]) for i in range(10)) + "\n")
    (tmp_path / "c.txt").write_text("the cat sat\na dog ran\n")
    (tmp_path / "r.txt").write_text("a cat sat\nthe dog runs\n")
    script = SCRIPT.format(setup=setup, model=EMBEDDED_MODEL_NAME, corpus=str(tmp_path / "corpus.txt"),
                           table=str(tmp_path / "table.tsv"), cands=str(tmp_path / "c.txt"), refs=str(tmp_path / "r.txt"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 0]
    assert result["after"] == result["before"]
    if setup:  # the user's own handler served (their format), with the command's progress log level
        assert "mine: baseline of " + EMBEDDED_MODEL_NAME in done.stderr and "bertscore: baseline of" not in done.stderr
    else:  # the command's own log line was shown while it ran
        assert "bertscore: baseline of " + EMBEDDED_MODEL_NAME in done.stderr


def test_program_freezes_the_collector_for_the_exit_and_main_does_not(tmp_path, monkeypatch):
    """The process entry skips the exit's collection over torch's objects (io.as_program); `main` is
    what a caller in its own process runs, and it leaves the collector alone (the test above)."""
    import gc

    from bertscore.cli import main, program

    monkeypatch.setattr(sys, "argv", ["bertscore", "-c", str(tmp_path / "missing.txt"), "-r", str(tmp_path / "r.txt"),
                                      "-m", EMBEDDED_MODEL_NAME])
    assert gc.get_freeze_count() == 0  # this test starts from a collector no one froze
    assert main() == 2 and gc.get_freeze_count() == 0  # a missing file: exit code 2, no model loaded
    try:
        assert program() == 2 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the rest of this test process collects as before
    monkeypatch.setattr(sys, "argv", ["bertscore", "--no-such-option"])
    try:
        with pytest.raises(SystemExit) as stopped:  # argparse's own exit, also on the way out
            program()
        assert stopped.value.code == 2 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
