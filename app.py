"""BERTScore Space: a Gradio app over the `bertscore` package (the math lives in the package).

Run locally with `python app.py` (honours GRADIO_SERVER_NAME / GRADIO_SERVER_PORT).
Tabs: "One pair" (scores, hash, token-similarity heatmap with the greedy matches both ways,
idf weights) and "Batch" (pasted text or a CSV / TSV / JSONL / JSON upload, read by
`bertscore.tables` -> per-row table, corpus
mean, F1 histogram, CSV download). API endpoint `/compute` for gradio_client:

    compute(predictions: str, references: str, model: str = <default>, num_layers: str = "",
            idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
            window_stride: str = "") -> dict

`predictions` is a JSON list of strings or one plain text; `references` a JSON list (one
string or a list of strings per prediction) or, for one prediction, a plain text (one
reference per line). Returns {"precision": [...], "recall": [...], "f1": [...],
"hashcode": str, "model": str, "rescaled": bool} or {"error": message}.

`/compute` requests with the same options are merged into one scoring call while they wait
(`bertscore.serving`); one whose expected wait exceeds BERTSCORE_APP_MAX_WAIT_S is refused at
once with {"error": ..., "retry_after_s": n} naming that wait.

Environment: the BERTSCORE_APP_* variables listed in `bertscore.space.config` (the model
allow-list, limits, queue and device), read once at start-up.

Every user or model text shown in the page goes through `bertscore.markup.shown_as_typed`.
This file is the page and its wiring; what the page and `/compute` do with a request (checks,
scoring, reports, the JSON answer) lives in `bertscore.space`, testable without Gradio.
"""

from __future__ import annotations

import os
from typing import Any

import gradio as gr
import pandas as pd

from bertscore import __version__
from bertscore.explain import explain_pair
from bertscore.markup import shown_as_typed
from bertscore.notes import spelled
from bertscore.plot import heatmap_figure, histogram_figure
from bertscore.space import reports, user_input
from bertscore.space.api import ComputeEndpoint
from bertscore.space.batch import score_batch
from bertscore.space.config import AppConfig
from bertscore.space.layer_hint import layer_hint
from bertscore.space.messages import PAGE_SPELLING, WHOLE_TEXTS_LABEL, user_message
from bertscore.space.service import ScorerSettings, ScoringService


def _mode(whole_texts: bool) -> str:
    """The long_texts mode of the page's checkbox."""
    return "window" if whole_texts else "truncate"


# ----- handlers ----------------------------------------------------------------------------------
class Handlers:
    """The page's event handlers and the /compute endpoint (`compute`, `compute_async`) over one
    ScoringService: each reads its inputs, calls the package, and shows an error as a message."""

    def __init__(self, service: ScoringService):
        self.service = service
        self.config = service.config
        endpoint = ComputeEndpoint(service)
        self.compute, self.compute_async = endpoint.compute, endpoint.compute_async

    def pair(self, candidate: str, references_text: str, model: str, num_layers: Any, idf: bool, rescale: bool,
             lang: str, whole_texts: bool = False) -> tuple[str, str, Any, pd.DataFrame]:
        """The "One pair" tab: (error, scores, heatmap, token table)."""
        try:
            candidate, references = user_input.pair_texts(self.config, candidate, references_text)
            scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, _mode(whole_texts))
            with spelled(PAGE_SPELLING):
                explanation = explain_pair(scorer, candidate, references)
            figure = heatmap_figure(explanation)
            return "", reports.pair_markdown(explanation, notes), figure, reports.token_table(explanation)
        except Exception as error:  # a message in the page, never a crashed worker
            return self._failed(error), "", None, reports.empty_token_table()

    def batch(self, upload: Any, pasted: str, model: str, num_layers: Any, idf: bool, rescale: bool, lang: str,
              whole_texts: bool = False, upload_b: Any = None,
              progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[str, Any, str, Any, Any]:
        """The "Batch" tab: (error, per-row table, summary, F1 histogram, results CSV path)."""
        try:
            progress(0.0, desc="reading input")
            candidates, groups = user_input.batch_texts(self.config, upload, pasted)
            candidates_b = user_input.system_b_texts(self.config, upload_b, groups)
            progress(0.05, desc="loading model")
            settings = ScorerSettings(model, num_layers, idf, rescale, lang, _mode(whole_texts))
            scored = score_batch(self.service, settings, candidates, groups, candidates_b)
            figure = histogram_figure(scored.frame.f1.tolist(), f"F1 ({scored.kind})")
            path = reports.results_csv(scored.frame, scored.hashcode)
            return "", reports.shown_scores(scored.frame), scored.summary, figure, path
        except Exception as error:
            return self._failed(error), reports.empty_batch_table(), "", None, None

    @staticmethod
    def _failed(error: Exception) -> str:
        """The error's message as a toast (Gradio renders it as HTML: shown as typed) and as Markdown."""
        message = user_message(error)
        gr.Warning(shown_as_typed(message))
        return reports.error_md(message)


# ----- layout ------------------------------------------------------------------------------------
PASTE_PLACEHOLDER = "candidate,reference\nthe cat sat on the mat,a cat was sitting on the mat\n..."


def build_demo(config: AppConfig | None = None) -> gr.Blocks:
    """The Blocks app (queue configured); `demo.launch()` to serve it."""
    config = config or AppConfig.from_env()
    handlers = Handlers(ScoringService(config))
    with gr.Blocks(title="BERTScore") as demo:
        gr.Markdown(
            f"# BERTScore\nToken-level similarity of a candidate text to reference texts with contextual "
            f"embeddings: each candidate token is matched to its most similar reference token (precision), "
            f"each reference token to its most similar candidate token (recall); F1 is their harmonic mean. "
            f"`bertscore` {__version__}; the numbers equal the official `bert-score` package."
            "\n\nA text with a wrong number, a flipped negation or two names swapped still outscores most real translations, and the score carries its encoder's social bias: measured in " + (f"[Limitations and bias](https://huggingface.co/spaces/{os.environ['SPACE_ID']}/blob/main/README.md#limitations-and-bias)." if os.environ.get("SPACE_ID") else "the README's section Limitations and bias.")
        )
        with gr.Row():
            model = gr.Dropdown(list(config.models), value=config.default_model, label="Model", scale=3,
                                elem_id="model")
            layer = gr.Textbox(value="", label="Layer (blank = model default)", scale=1, elem_id="layer")
            idf = gr.Checkbox(value=False, label="idf weighting", elem_id="idf")
            whole_texts = gr.Checkbox(value=False, label=WHOLE_TEXTS_LABEL,
                                      elem_id="long-texts")
            rescale = gr.Checkbox(value=True, label="Rescale with baseline (raw scores are shown too)",
                                  elem_id="rescale")
            lang = gr.Textbox(value="", label="Baseline language (blank = auto)", scale=1, elem_id="lang")
        layer_note = gr.Markdown(layer_hint(config.default_model), elem_id="layer-hint", latex_delimiters=[])
        for control in (model, layer):  # a model without an official default layer: which one, how to choose
            control.change(layer_hint, [model, layer], layer_note, api_visibility="private")
        options = [model, layer, idf, rescale, lang, whole_texts]
        with gr.Tab("One pair", elem_id="tab-pair"):
            with gr.Row():
                candidate = gr.Textbox(label="Candidate", lines=3, max_length=config.max_chars, elem_id="candidate")
                references = gr.Textbox(label="Reference(s), one per line", lines=3, elem_id="references")
            pair_button = gr.Button("Score", variant="primary", elem_id="pair-button")
            pair_error = gr.Markdown(elem_id="pair-error", latex_delimiters=[])
            pair_scores = gr.Markdown(elem_id="pair-scores", latex_delimiters=[])
            heatmap = gr.Plot(label="Token similarity (winning reference)", elem_id="heatmap")
            tokens = gr.Dataframe(label="Tokens: weight and best match", interactive=False, elem_id="tokens")
            pair_button.click(handlers.pair, [candidate, references] + options, [pair_error, pair_scores, heatmap, tokens],
                              api_name="score_pair", api_visibility="undocumented", concurrency_id="bertscore")
        with gr.Tab("Batch", elem_id="tab-batch"):
            gr.Markdown(
                "Upload a CSV, TSV, JSONL or JSON file, or paste CSV/TSV rows, with a header: a candidate column "
                "(`candidate` / `prediction` / `hypothesis`) and a reference column (`reference`, `references`) "
                "or several (`reference_1` .. `reference_n`: multi-reference; blank cells there are skipped). "
                f"An empty cell is an empty text (it scores 0). At most {config.max_rows} rows, "
                f"{config.max_chars} characters per text, {config.max_upload_mb} MB per file."
            )
            with gr.Row():
                upload = gr.File(label="Upload CSV / TSV / JSONL / JSON", file_types=[".csv", ".tsv", ".jsonl", ".json", ".txt"],
                                 type="filepath", elem_id="upload")
                pasted = gr.Textbox(label="…or paste rows", lines=6, placeholder=PASTE_PLACEHOLDER, elem_id="pasted")
                upload_b = gr.File(label="Compare with system B (optional): the same rows and references",
                                   file_types=[".csv", ".tsv", ".jsonl", ".json", ".txt"], type="filepath",
                                   elem_id="upload-b")
            batch_button = gr.Button("Score batch", variant="primary", elem_id="batch-button")
            batch_error = gr.Markdown(elem_id="batch-error", latex_delimiters=[])
            batch_summary = gr.Markdown(elem_id="batch-summary", latex_delimiters=[])
            batch_table = gr.Dataframe(label="Per-row scores", interactive=False, elem_id="batch-table")
            with gr.Row():
                histogram = gr.Plot(label="F1 histogram", elem_id="histogram")
                download = gr.File(label="Results (CSV)", elem_id="download")
            batch_button.click(handlers.batch, [upload, pasted] + options + [upload_b],
                               [batch_error, batch_table, batch_summary, histogram, download],
                               api_name="score_batch", api_visibility="undocumented", concurrency_id="bertscore")
        # No limit here: each request is checked at once, refused at once when its expected wait is too
        # long, else waits (without a thread) in the service's queue, which merges same-option requests.
        gr.api(handlers.compute_async, api_name="compute", concurrency_id="compute", concurrency_limit=None)
    demo.queue(max_size=config.max_waiting, default_concurrency_limit=config.concurrency)
    demo.bertscore_config = config  # type: ignore[attr-defined]
    demo.bertscore_service = handlers.service  # type: ignore[attr-defined]
    return demo


if __name__ == "__main__":
    _config = AppConfig.from_env()
    _demo = build_demo(_config)
    _demo.bertscore_service.warm_up()  # type: ignore[attr-defined]
    # Waiting /compute requests hold a queue slot each (not a thread): as many slots as may wait.
    _demo.launch(max_file_size=f"{_config.max_upload_mb}mb", max_threads=max(40, _config.max_waiting))
