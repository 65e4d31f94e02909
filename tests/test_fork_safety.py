"""A process that scored, then forked (datasets' num_proc workers, DataLoader workers): the child
scores, where torch's inherited OpenMP pool would hang its first parallel operation, and its
thread count is as it was. Process state is the point: a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO_ROOT

SCORE_THEN_FORK = '''
import os, signal, sys, torch
from bertscore import BERTScorer
from bertscore.models.fork_safety import in_forked_child
torch.set_num_threads(2)
scorer = BERTScorer(model_type=sys.argv[1], num_layers=2, device="cpu")
parent = scorer.score(["a short one", "the cat sat on the mat today"], ["a short one", "a cat sat on a mat"])[2]
assert not in_forked_child()
pid = os.fork()
if pid == 0:
    signal.alarm(120)  # a hung child ends (SIGALRM) rather than outliving the test
    seen = []
    hook = scorer.model.encoder.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    child = scorer.score(["another text", "a dog sat on the mat today"], ["a short one", "a dog sat on a mat"])[2]
    hook.remove()  # new texts: embedded here (cached ones would need no forward pass)
    ok = in_forked_child() and seen and set(seen) == {1} and torch.get_num_threads() == 2 and child.shape == (2,)
    os._exit(0 if ok else 3)
os._exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
'''


def test_a_process_that_scored_and_then_forks_scores_in_the_child(minilm_dir) -> None:
    result = subprocess.run([sys.executable, "-c", SCORE_THEN_FORK, str(minilm_dir)], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)})
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
