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
after = state()
from bertscore.cli import program  # the entry of a process that ends with it: it freezes the collector
sys.argv = ["bertscore", "-c", {missing!r}, "-r", {refs!r}, "-m", {model!r}]
exits = [program(), gc.get_freeze_count() > 0]
gc.unfreeze()
sys.argv = ["bertscore", "--no-such-option"]
try:
    program()
except SystemExit as stopped:  # argparse's own exit freezes it too
    exits += [stopped.code, gc.get_freeze_count() > 0]
print(json.dumps({{"codes": codes, "before": before, "after": after, "program": exits}}))
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
                           table=str(tmp_path / "table.tsv"), cands=str(tmp_path / "c.txt"), refs=str(tmp_path / "r.txt"),
                           missing=str(tmp_path / "missing.txt"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 0]
    assert result["after"] == result["before"]
    assert result["program"] == [2, True, 2, True]  # a missing file, then a bad option: exit 2, collector frozen
    if setup:  # the user's own handler served (their format), with the command's progress log level
        assert "mine: baseline of " + EMBEDDED_MODEL_NAME in done.stderr and "bertscore: baseline of" not in done.stderr
    else:  # the command's own log line was shown while it ran
        assert "bertscore: baseline of " + EMBEDDED_MODEL_NAME in done.stderr

