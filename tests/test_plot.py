"""bertscore.plot: what the figures show is read back from their artists; no pyplot state, thread-safe."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bertscore.explain import Explanation, ReferenceExplanation, explain_pair
from bertscore.plot import (
    PRECISION_MATCHES, RECALL_MATCHES, SIMILARITY_IMAGE, heatmap_figure, heatmap_title, histogram_figure, plot_example,
    save_figure,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def synthetic_explanation(seed: int, rows: int = 7, cols: int = 9, refs: int = 1, winner: int = 0,
                          idf: bool = False, tokens: list[str] | None = None) -> Explanation:
    """An Explanation built by hand (no model): random similarities, special tokens weigh 0."""
    generator = torch.Generator().manual_seed(seed)
    references = []
    for k in range(refs):
        sim = torch.rand(rows, cols, generator=generator) * 1.3 - 0.3
        cand_best_sim, cand_best = sim.max(dim=1)
        ref_best_sim, ref_best = sim.max(dim=0)
        references.append(ReferenceExplanation(
            text=f"reference {k}", tokens=[f"r{k}_{j}" for j in range(cols)],
            weights=[0.0] + [0.5 + 0.1 * j for j in range(cols - 2)] + [0.0], similarity=sim,
            cand_best=cand_best.tolist(), ref_best=ref_best.tolist(), cand_best_sim=cand_best_sim.tolist(),
            ref_best_sim=ref_best_sim.tolist(), precision=0.5, recall=0.5, f1=0.5 + 0.1 * k,
        ))
    return Explanation(
        candidate="candidate", tokens=tokens or [f"c{i}" for i in range(rows)],
        weights=[0.0] + [1.0 + i for i in range(rows - 2)] + [0.0], references=references, winner=winner,
        precision=0.5, recall=0.5, f1=0.5, rescaled=None, idf=idf, hashcode="hash",
    )


def artist(fig: Figure, gid: str):
    found = [a for a in fig.axes[0].get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def check_heatmap(fig: Figure, expected_similarity: np.ndarray, cand_weights: list[float], ref_weights: list[float]) -> None:
    """The image is the matrix; circles are row argmaxes, crosses column argmaxes (numpy, not the explanation)."""
    shown = np.asarray(artist(fig, SIMILARITY_IMAGE).get_array())
    np.testing.assert_array_equal(shown, expected_similarity)
    rows, cols = shown.shape
    circles = artist(fig, PRECISION_MATCHES).get_offsets()
    expected_circles = [(int(np.argmax(shown[i])), i) for i in range(rows) if cand_weights[i] > 0]
    assert [tuple(map(int, xy)) for xy in circles] == expected_circles
    crosses = artist(fig, RECALL_MATCHES).get_offsets()
    expected_crosses = [(j, int(np.argmax(shown[:, j]))) for j in range(cols) if ref_weights[j] > 0]
    assert [tuple(map(int, xy)) for xy in crosses] == expected_crosses


def render(fig: Figure) -> np.ndarray:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


# ----- the heatmap -----------------------------------------------------------------------------------
@pytest.mark.parametrize("idf", [False, True])
def test_heatmap_shows_the_winning_matrix_and_its_argmaxes(idf: bool) -> None:
    explanation = synthetic_explanation(seed=1, refs=3, winner=1, idf=idf)
    fig = heatmap_figure(explanation)
    winner = explanation.references[1]
    check_heatmap(fig, winner.similarity.numpy(), explanation.weights, winner.weights)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"{t} ({w:.2f})" if idf else t for t, w in zip(explanation.tokens, explanation.weights)]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        f"{t} ({w:.2f})" if idf else t for t, w in zip(winner.tokens, winner.weights)]
    assert ax.get_xlabel().startswith("reference #2 tokens") and ax.get_title().endswith(": F1 0.6000 raw")


def test_the_title_labels_f1_raw_and_rescaled() -> None:
    explanation = synthetic_explanation(seed=1, refs=2, winner=1)
    explanation.references[1].rescaled = (0.1, 0.2, 0.25)
    title = heatmap_figure(explanation).axes[0].get_title()
    assert title == heatmap_title(explanation) == "Token similarity, candidate vs reference #2: F1 0.6000 raw, 0.2500 rescaled"


def test_long_texts_label_every_kth_token_on_each_axis() -> None:
    """Past what fits, each axis labels every k-th token (tokens, never bare numbers); the figure stays
    within a laptop screen (1,116 x 702 pixels at its 90 dpi) whatever the length."""
    explanation = synthetic_explanation(seed=2, rows=12, cols=8)
    fig = heatmap_figure(explanation, label_limit=10)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == explanation.tokens[::2]
    assert list(ax.get_yticks()) == list(range(0, 12, 2)) and "every 2nd labelled" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == explanation.best.tokens  # 8 fit: all of them
    check_heatmap(fig, explanation.best.similarity.numpy(), explanation.weights, explanation.best.weights)
    for rows, cols in ((36, 36), (130, 110), (500, 480)):
        long = synthetic_explanation(seed=3, rows=rows, cols=cols)
        fig = heatmap_figure(long)
        width, height = fig.get_size_inches() * fig.dpi
        assert round(width) <= 1116 and round(height) <= 702, (rows, cols, width, height)
        ax = fig.axes[0]
        for labels, tokens in ((ax.get_yticklabels(), long.tokens), (ax.get_xticklabels(), long.best.tokens)):
            texts = [t.get_text() for t in labels]
            assert 10 <= len(texts) <= 60 and set(texts) <= set(tokens), (rows, cols, len(texts))
            assert all(t.get_fontsize() >= 7 for t in labels)


def test_tokens_of_any_installed_script_draw_without_missing_glyphs() -> None:
    """Japanese and Arabic tokens (and Hangul, Devanagari, Thai): their labels draw in fonts that have
    their glyphs, with no "Glyph ... missing from font(s)" warning; latin tokens keep DejaVu Sans alone."""
    from bertscore.plot.fonts import BASE_FAMILY, families_for

    tokens = ["[CLS]", "猫", "か", "##マ", "ج", "##ل", "한", "हि", "ไทย", "[SEP]"]
    needed = families_for(tokens)
    if len(needed) < 2:
        pytest.skip("no font with CJK glyphs is installed (apt-get install fonts-droid-fallback fonts-noto-core, "
                    "as packages.txt; make test does it as root)")
    assert families_for(["the", "cat", "##s", "é"]) == [BASE_FAMILY]
    fig = heatmap_figure(synthetic_explanation(seed=7, rows=10, cols=10, tokens=tokens))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        render(fig)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert missing == []
    assert fig.axes[0].get_yticklabels()[1].get_fontfamily() == needed


def test_dollar_signs_in_tokens_are_text_not_formulas() -> None:
    tokens = ["[CLS]", "$", "$\\frac$", "a$b$c", "[SEP]"]
    fig = heatmap_figure(synthetic_explanation(seed=3, rows=5, cols=4, tokens=tokens))
    render(fig)  # mathtext would fail on "$\frac$"
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == tokens


# ----- the histogram -----------------------------------------------------------------------------------
def test_histogram_counts_equal_numpy() -> None:
    values = np.random.default_rng(0).uniform(0.6, 1.0, size=57).tolist()
    fig = histogram_figure(values, "F1 (raw)")
    ax = fig.axes[0]
    counts, edges = np.histogram(values, bins=min(30, max(5, len(values) // 2)))
    assert [p.get_height() for p in ax.patches] == counts.tolist()
    assert [p.get_x() for p in ax.patches] == pytest.approx(edges[:-1].tolist())
    assert ax.get_xlabel() == "F1 (raw)" and "over 57 rows" in ax.get_title()


# ----- saving ------------------------------------------------------------------------------------------
def test_save_figure_writes_the_format_of_the_extension(tmp_path: Path) -> None:
    fig = heatmap_figure(synthetic_explanation(seed=4))
    assert save_figure(fig, tmp_path / "h.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert b"<svg" in save_figure(fig, str(tmp_path / "h.svg")).read_bytes()[:500]


def test_plot_example_draws_explains_and_saves(minilm_scorer, tmp_path: Path) -> None:
    candidate, reference = "the cat sat on the mat", "a cat was sitting on the mat"
    explanation = explain_pair(minilm_scorer, candidate, reference)
    path = tmp_path / "example.png"
    fig = plot_example(minilm_scorer, candidate, reference, fname=str(path))
    check_heatmap(fig, explanation.best.similarity.numpy(), explanation.weights, explanation.best.weights)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert explanation.tokens[0] == "[CLS]" and fig.axes[0].get_yticklabels()[1].get_text() == explanation.tokens[1]
    # The drop-in method on the scorer: the same figure, nothing saved without a name.
    same = minilm_scorer.plot_example(candidate, reference)
    np.testing.assert_array_equal(artist(same, SIMILARITY_IMAGE).get_array(), artist(fig, SIMILARITY_IMAGE).get_array())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.png"]
    with pytest.raises(TypeError, match="candidate is an int"):
        plot_example(minilm_scorer, 3, reference)  # type: ignore[arg-type]


# ----- no global state ----------------------------------------------------------------------------------
def test_no_pyplot_figures_are_created(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt  # imported here only to look at its global figure list

    before = plt.get_fignums()
    fig = heatmap_figure(synthetic_explanation(seed=5))
    save_figure(fig, tmp_path / "a.png")
    render(histogram_figure([0.1, 0.5, 0.9], "F1"))
    assert plt.get_fignums() == before == []


def test_importing_the_package_and_the_app_leaves_pyplot_unloaded(tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    script = f"""
import importlib, pkgutil, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import bertscore
for module in pkgutil.iter_modules(bertscore.__path__):
    if module.name not in ("__main__", "torchmetrics"):
        importlib.import_module("bertscore." + module.name)
import app
print("torchmetrics door loaded:", "bertscore.torchmetrics" in sys.modules)
sys.path.insert(0, {str(REPO_ROOT / "tests")!r})
from test_plot import synthetic_explanation
from bertscore.plot import heatmap_figure, histogram_figure, save_figure
save_figure(heatmap_figure(synthetic_explanation(seed=6)), {str(tmp_path / "h.png")!r})
save_figure(histogram_figure([0.2, 0.4], "F1"), {str(tmp_path / "f.png")!r})
print("pyplot loaded:", "matplotlib.pyplot" in sys.modules)
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # bertscore.torchmetrics is left out above: torchmetrics itself imports pyplot (its plotting
    # helpers), which a torchmetrics user has loaded anyway; the app and every other room never load it.
    assert result.stdout.strip().splitlines()[-2:] == ["torchmetrics door loaded: False", "pyplot loaded: False"]
    assert (tmp_path / "h.png").stat().st_size > 1000


def test_figures_drawn_concurrently_do_not_interfere() -> None:
    explanations = [synthetic_explanation(seed=10 + k, rows=6 + k, cols=9 - k, idf=k % 2 == 1) for k in range(6)]
    serial = [render(heatmap_figure(e)) for e in explanations]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def draw(indices: range) -> None:
        try:
            barrier.wait()
            for k in indices:
                results[k] = render(heatmap_figure(explanations[k]))
        except BaseException as error:  # reported below, in the main thread
            errors.append(error)

    threads = [threading.Thread(target=draw, args=(range(k, 6, 2),)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for k in range(6):
        np.testing.assert_array_equal(results[k], serial[k])


def test_empty_reference_still_draws(minilm_scorer) -> None:
    explanation = explain_pair(minilm_scorer, "hello", ["", "hello there"])
    fig = heatmap_figure(explanation)
    check_heatmap(fig, explanation.best.similarity.numpy(), explanation.weights, explanation.best.weights)
    empty = explain_pair(minilm_scorer, "hello", "")
    render(heatmap_figure(empty))  # [CLS] [SEP] only: a 3 x 2 matrix, nothing marked on the reference side
    assert len(artist(heatmap_figure(empty), RECALL_MATCHES).get_offsets()) == 0
