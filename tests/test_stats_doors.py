"""Statistics that mean little say so at every door, once per call; statistics options are checked
before any model loads; confidence labels are printed as given.

The API itself is tested in test_stats.py; here: the CLI (the refusals in a real `python -m bertscore`
process, which reports whether an encoder library was imported; the cautions through the command's
`main` in this process), the evaluate module through `evaluate.load`, and the Space's statistics text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME, stats
from bertscore.cli import main as cli_main
from conftest import REPO_ROOT, SENTENCES

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4"]
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# Runs the real entry point (bertscore/__main__.py), then says whether an encoder library was loaded.
CLI_THEN_REPORT_IMPORTS = (
    "import runpy, sys\n"
    "sys.argv = ['bertscore', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('bertscore', run_name='__main__')\n"
    "finally:\n"
    "    print('transformers imported:', 'transformers' in sys.modules, file=sys.stderr)\n"
)


def _cli_reporting_imports(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI_THEN_REPORT_IMPORTS, *argv], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT, env=ENV)


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> dict[str, Path]:
    """Three segments: two systems and their references (files)."""
    folder = tmp_path_factory.mktemp("three")
    texts = {"refs": SENTENCES[:3], "base": SENTENCES[3:6], "other": SENTENCES[:2] + SENTENCES[6:7]}
    paths = {}
    for name, lines in texts.items():
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


# ----- CLI: options checked before any model loads ------------------------------------------------------
@pytest.mark.parametrize("mode, model", [("systems", EMBEDDED_MODEL_NAME), ("ci", "no-such-org/no-such-model")])
def test_a_bad_seed_is_refused_before_any_model_loads(three, mode: str, model: str) -> None:
    """Before: `--systems --seed -1` scored every system, then failed in the statistics (and a
    model that cannot load failed on the model first). Now the seed is refused up front."""
    inputs = (["-r", str(three["refs"]), "--systems", str(three["base"]), str(three["other"])] if mode == "systems"
              else ["-c", str(three["base"]), "-r", str(three["refs"]), "--ci"])
    result = _cli_reporting_imports(*inputs, "--model", model, "--seed", "-1")
    assert result.returncode == 2, result.stderr
    assert "bertscore: error: --seed must be >= 0, got -1" in result.stderr
    assert "model" not in result.stderr.split("bertscore: error:")[1].splitlines()[0]
    assert "transformers imported: False" in result.stderr  # no encoder was loaded, nothing was scored
    assert result.stdout == ""


# ----- CLI: each caution once, labels as given ----------------------------------------------------------
@pytest.mark.slow
def test_systems_cautions_appear_once_and_the_label_as_given(three, capsys) -> None:
    returncode = cli_main(["-r", str(three["refs"]), "--systems", str(three["base"]), str(three["other"]), *MODEL,
                           "--confidence", "0.999", "--n-resamples", "500"])
    result = capsys.readouterr()
    assert returncode == 0, result.err
    notes = [line for line in result.err.splitlines() if line.startswith("bertscore: note: ")]
    assert notes == [f"bertscore: note: {stats.few_segments_note(3)}",
                     f"bertscore: note: {stats.few_resamples_note(500, 'p-value')}"]
    assert "2^3 = 8 distinct outcomes" in notes[0] and "only 500 resamples" in notes[1]
    header = result.out.splitlines()[0]
    assert header == "BERTScore of 2 systems on 3 segments; mean [99.9% bootstrap interval, 1000 resamples]"


@pytest.mark.slow
def test_ci_cautions_appear_once_and_the_label_as_given(three, capsys) -> None:
    returncode = cli_main(["-c", str(three["base"]), "-r", str(three["refs"]), *MODEL, "--ci", "--confidence", "0.975",
                           "--n-resamples", "1"])
    result = capsys.readouterr()
    assert returncode == 0, result.err
    notes = [line for line in result.err.splitlines() if line.startswith("bertscore: note: ")]
    # One of each, although P, R and F1 each got an interval.
    assert notes == [f"bertscore: note: {stats.few_segments_note(3, 'interval')}",
                     f"bertscore: note: {stats.few_resamples_note(1, 'interval')}"]
    assert "only 3 segments: a bootstrap interval" in notes[0] and "zero width" in notes[1]
    assert "97.5% bootstrap intervals (1 resamples, seed 0)" in result.out


# ----- evaluate ----------------------------------------------------------------------------------------------
def test_evaluate_warns_once_about_few_predictions_and_resamples() -> None:
    import evaluate

    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    cands, refs = SENTENCES[:3], SENTENCES[3:6]
    with pytest.warns(UserWarning) as record:
        out = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, all_layers=True,
                             confidence_level=0.999, n_resamples=500)
    assert len(out["f1_ci"]) == 7  # 3 columns x 7 layers (embeddings + 6) of intervals ...
    messages = [str(w.message) for w in record]
    # ... and each caution once.
    assert messages.count(stats.few_segments_note(3, "interval")) == 1
    assert messages.count(stats.few_resamples_note(500, "interval")) == 1
    assert not [m for m in messages if m.startswith("only") and "segments" not in m and "resamples" not in m]
    many = [f"{text} ({i})" for i, text in enumerate(SENTENCES + SENTENCES[:2])]  # 12 predictions: no caution
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.compute(predictions=many, references=many[::-1], model_type=EMBEDDED_MODEL_NAME, num_layers=4,
                       confidence_level=0.95)
    assert not [w for w in caught if str(w.message).startswith("only ")]


def test_evaluate_names_its_own_confidence_level_before_any_model_loads() -> None:
    """The refusal said `confidence must be ...`: compute() has no such argument."""
    import evaluate

    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    for value in (1.0, 0.0, True, float("nan")):
        with pytest.raises(ValueError, match=r"^confidence_level must be between 0 and 1") as raised:
            metric.compute(predictions=["a", "b"], references=["a", "b"], model_type="no/such-model",
                           confidence_level=value)
        assert "could not load" not in str(raised.value)


# ----- Space -------------------------------------------------------------------------------------------------
def test_space_statistics_say_each_caution_once() -> None:
    import pandas as pd

    from bertscore.space.reports import comparison_md, means_md

    f1_a, f1_b = [0.81, 0.84, 0.9], [0.91, 0.93, 0.95]
    text = comparison_md(f1_a, f1_b)
    assert text.count(stats.few_segments_note(3)) == 1 and "see below" in text
    frame = pd.DataFrame({"precision": f1_a, "recall": f1_b, "f1": f1_a})
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes as a warning in the server process
        summary = means_md(frame, notes)
    assert notes == [stats.few_segments_note(3, "interval")]
    assert "95% bootstrap intervals" in summary
