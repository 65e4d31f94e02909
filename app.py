"""BERTScore Space: a Gradio app over the `bertscore` package (the math lives in the package).

Run locally with `python app.py` (honours GRADIO_SERVER_NAME / GRADIO_SERVER_PORT).
Tabs: "One pair" (scores, hash, token-similarity heatmap with the greedy matches both ways,
idf weights) and "Batch" (pasted text or a CSV / TSV / JSONL / JSON / Parquet / Arrow upload, read by
`bertscore.tables` -> per-row table, corpus
mean, F1 histogram, CSV download). API endpoint `/compute` for gradio_client:

    compute(predictions: str, references: str, model: str = <default>, num_layers: str = "",
            idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
            window_stride: str = "") -> dict

Its defaults are the page's (raw scores: "Rescale with baseline" starts unticked) and score()'s, so
the same pair reads the same number on the page, through /compute and in Python; the API page
describes each parameter (from `ComputeEndpoint.compute`'s docstring).

`predictions` is a JSON list of strings or one plain text; `references` a JSON list (one
string or a list of strings per prediction) or, for one prediction, a plain text (one
reference per line; the answer's notes say so). Returns {"precision": [...], "recall": [...], "f1": [...],
"hashcode": str, "model": str, "rescaled": bool, "notes": [...]} or {"error": message}. A request may
stop after any value from `references` on, over plain HTTP too (`SpaceBlocks`): the rest take their
defaults.

`/compute` requests with the same options are merged into one scoring call while they wait
(`bertscore.space.serving`); one whose expected wait exceeds BERTSCORE_APP_MAX_WAIT_S is refused at
once with {"error": ..., "retry_after_s": n} naming that wait.

Environment: the BERTSCORE_APP_* variables listed in `bertscore.space.config` (the model
allow-list, limits, queue and device), read once at start-up.

Every user or model text shown in the page goes through `bertscore.space.markup.shown_as_typed`.
This file is the page and its wiring; what the page and `/compute` do with a request (checks,
scoring, reports, the JSON answer) lives in `bertscore.space`, testable without Gradio.
"""

from __future__ import annotations

import os
from typing import Any

import gradio as gr

from bertscore import __version__
from bertscore.explain import explain_pair
from bertscore.notes import spelled
from bertscore.plot import heatmap_figure, heatmap_title, histogram_figure
from bertscore.space import reports, user_input
from bertscore.space.api import ComputeEndpoint, completed_values, parameter_docs
from bertscore.space.batch import score_batch
from bertscore.space.config import AppConfig
from bertscore.space.layer_hint import layer_hint
from bertscore.space.messages import (
    IDF_LABEL, LANG_LABEL, LAYER_LABEL, PAIR_SPELLING, RESCALE_LABEL, WHOLE_TEXTS_LABEL, UserError, user_message,
)
from bertscore.space.service import ScorerSettings, ScoringService


def _mode(whole_texts: bool) -> str:
    """The long_texts mode of the page's checkbox."""
    return "window" if whole_texts else "truncate"


def _shown(value: Any, **changes: Any) -> dict:
    """An output shown with `value` (and other changes, e.g. its label)."""
    return gr.update(value=value, visible=True, **changes)


def _hidden() -> dict:
    """An output hidden and emptied: no placeholder, no stale result beside an error."""
    return gr.update(value=None, visible=False)


# ----- handlers ----------------------------------------------------------------------------------
class Handlers:
    """The page's event handlers and the /compute endpoint (`compute`, `compute_async`) over one
    ScoringService: each reads its inputs, calls the package, and shows an error as a message."""

    def __init__(self, service: ScoringService):
        self.service = service
        self.config = service.config
        endpoint = ComputeEndpoint(service)
        self.compute, self.compute_async = endpoint.compute, endpoint.compute_async

    def pair(self, candidate: str, references_text: str, model: str, num_layers: Any, rescale: bool,
             lang: str, whole_texts: bool = False, idf: bool = False) -> tuple[str, str, dict, dict]:
        """The "One pair" tab: (error, scores, heatmap, token table); the last two as updates that show
        them (the heatmap labelled with its pair's raw and rescaled F1) or hide them."""
        try:
            candidate, references = user_input.pair_texts(self.config, candidate, references_text)
            with spelled(PAIR_SPELLING):  # notes name "the candidate" and "reference #1", as the page does
                scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, _mode(whole_texts))
                explanation = explain_pair(scorer, candidate, references)
            figure = heatmap_figure(explanation)
            return ("", reports.pair_markdown(explanation, notes), _shown(figure, label=heatmap_title(explanation)),
                    _shown(reports.token_table(explanation)))
        except Exception as error:  # a message in the page, never a crashed worker
            return self._failed(error), "", _hidden(), _hidden()

    def batch(self, upload: Any, pasted: str, model: str, num_layers: Any, rescale: bool, lang: str,
              whole_texts: bool = False, upload_b: Any = None, idf: bool = False,
              progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[str, dict, str, dict, dict]:
        """The "Batch" tab: (error, per-row table, summary, F1 histogram, results CSV), the table,
        histogram and CSV as updates that show or hide them."""
        try:
            progress(0.0, desc="reading input")
            candidates, groups = user_input.batch_texts(self.config, upload, pasted)
            candidates_b = user_input.system_b_texts(self.config, upload_b, groups)
            progress(0.05, desc="loading model")
            settings = ScorerSettings(model, num_layers, idf, rescale, lang, _mode(whole_texts))
            scored = score_batch(self.service, settings, candidates, groups, candidates_b)
            figure = histogram_figure(scored.frame.f1.tolist(), f"F1 ({scored.kind})")
            path = reports.results_csv(scored.frame, scored.kind, scored.hashcode)
            shown = reports.shown_scores(scored.frame, scored.kind)
            return ("", _shown(shown, column_widths=reports.column_widths(shown)), scored.summary, _shown(figure),
                    _shown(path))
        except Exception as error:
            return self._failed(error), _hidden(), "", _hidden(), _hidden()

    @staticmethod
    def pair_idf(references_text: str, idf: bool) -> dict:
        """The "One pair" tab's idf box: usable with 2 distinct references or more (over one, every
        reference token weighs 0 and R and F1 are 0), unticked and disabled otherwise."""
        usable = user_input.pair_idf_is_meaningful(references_text)
        return gr.update(interactive=usable, value=bool(idf) and usable)

    @staticmethod
    def _failed(error: Exception) -> str:
        """The error's message, in the page under the button that was pressed (no pop-up: one message,
        one heading, and nothing covering the controls)."""
        return reports.error_md(user_message(error))


# ----- layout ------------------------------------------------------------------------------------
PASTE_PLACEHOLDER = "candidate,reference\nthe cat sat on the mat,a cat was sitting on the mat\n..."
PAIR_IDF_INFO = ("weights from the references below: needs 2 or more different ones (over one, every reference "
                 "token weighs 0, so R and F1 would be 0)")
BATCH_IDF_INFO = "weights from this batch's references (tokens in every reference weigh 0)"
RESCALE_INFO = "off by default, as in /compute and score(); ticked: rescaled scores beside the raw ones"
UPLOAD_TYPES = [".csv", ".tsv", ".jsonl", ".json", ".txt", ".parquet", ".arrow", ".feather"]


def batch_help(config: AppConfig) -> str:
    """The Batch tab's description: the table it reads, what an empty cell scores, the limits."""
    return (
        "Upload a CSV, TSV, JSONL or JSON file, **or** paste CSV/TSV rows (not both), with a header: a candidate "
        "column (`candidate` / `prediction` / `hypothesis`) and a reference column (`reference`, `references`) "
        "or several (`reference_1` .. `reference_n`: multi-reference; blank cells there are skipped). "
        f"An empty cell is an empty text: its raw scores are 0 (with \"{RESCALE_LABEL}\" ticked, that 0 reads below "
        "0), and it counts in the means and the histogram like every row, as in the official package. "
        f"At most {config.max_rows:,} rows, {config.max_chars:,} characters per text, {config.max_upload_mb} MB per "
        "file: a larger input is refused with a message, never cut."
    )


class SpaceBlocks(gr.Blocks):
    """The app's Blocks: a /compute request that stops early (plain HTTP sends the values it has, where
    gradio_client fills in the rest) gets its left-out parameters' defaults, not gradio's bare
    `{"error": null}` (`completed_values`)."""

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], *args: Any, **kwargs: Any) -> Any:
        if getattr(block_fn, "api_name", None) == "compute":
            try:
                inputs = completed_values(inputs)
            except UserError as error:  # too many values: gradio would drop the extra ones unsaid
                raise gr.Error(str(error), print_exception=False) from None
        return await super().preprocess_data(block_fn, inputs, *args, **kwargs)


def build_demo(config: AppConfig | None = None) -> gr.Blocks:
    """The Blocks app (queue configured); `demo.launch()` to serve it."""
    config = config or AppConfig.from_env()
    handlers = Handlers(ScoringService(config))
    with SpaceBlocks(title="BERTScore") as demo:
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
            layer = gr.Textbox(value="", label=f"{LAYER_LABEL} (blank = model default)", scale=1, elem_id="layer")
            whole_texts = gr.Checkbox(value=False, label=WHOLE_TEXTS_LABEL, elem_id="long-texts")
            rescale = gr.Checkbox(value=False, label=RESCALE_LABEL, info=RESCALE_INFO, scale=2, elem_id="rescale")
            lang = gr.Textbox(value="", label=f"{LANG_LABEL} (blank = auto)", info="with Rescale ticked",
                              interactive=False, scale=1, elem_id="lang")
        layer_note = gr.Markdown(layer_hint(config.default_model), elem_id="layer-hint", latex_delimiters=[])
        for control in (model, layer):  # a model without an official default layer: which one, how to choose
            control.change(layer_hint, [model, layer], layer_note, api_visibility="private")
        options = [model, layer, rescale, lang, whole_texts]
        # A baseline language means nothing without rescaling: the field is usable only with Rescale ticked.
        rescale.change(lambda on: gr.update(interactive=bool(on)), rescale, lang, queue=False, show_progress="hidden",
                       api_visibility="private")
        with gr.Tab("One pair", elem_id="tab-pair"):
            with gr.Row():
                # No max_length: a longer text gets a message saying so, never a silent cut.
                candidate = gr.Textbox(label="Candidate", lines=3, elem_id="candidate")
                references = gr.Textbox(label="Reference(s), one per line", lines=3, elem_id="references")
            pair_idf = gr.Checkbox(value=False, interactive=False, label=IDF_LABEL, info=PAIR_IDF_INFO, elem_id="pair-idf")
            pair_button = gr.Button("Score", variant="primary", elem_id="pair-button")
            pair_error = gr.Markdown(elem_id="pair-error", latex_delimiters=[])
            pair_scores = gr.Markdown(elem_id="pair-scores", latex_delimiters=[])
            heatmap = gr.Plot(label="Token similarity", visible=False, elem_id="heatmap")
            tokens = gr.Dataframe(label="Tokens: weight and best match", interactive=False, visible=False,
                                  elem_id="tokens")
            references.change(handlers.pair_idf, [references, pair_idf], pair_idf, queue=False,
                              show_progress="hidden", api_visibility="private")
            pair_button.click(handlers.pair, [candidate, references] + options + [pair_idf],
                              [pair_error, pair_scores, heatmap, tokens],
                              api_name="score_pair", api_visibility="undocumented", concurrency_id="bertscore")
        with gr.Tab("Batch", elem_id="tab-batch"):
            gr.Markdown(batch_help(config), elem_id="batch-help")
            with gr.Row():
                upload = gr.File(label="Upload CSV / TSV / JSONL / JSON / Parquet / Arrow", file_types=UPLOAD_TYPES,
                                 type="filepath", elem_id="upload")
                pasted = gr.Textbox(label="…or paste rows", lines=6, placeholder=PASTE_PLACEHOLDER, elem_id="pasted")
                upload_b = gr.File(label="Compare with system B (optional): the same rows and references",
                                   file_types=UPLOAD_TYPES, type="filepath", elem_id="upload-b")
            batch_idf = gr.Checkbox(value=False, label=IDF_LABEL, info=BATCH_IDF_INFO, elem_id="batch-idf")
            batch_button = gr.Button("Score batch", variant="primary", elem_id="batch-button")
            batch_error = gr.Markdown(elem_id="batch-error", latex_delimiters=[])
            batch_summary = gr.Markdown(elem_id="batch-summary", latex_delimiters=[])
            batch_table = gr.Dataframe(label="Per-row scores", interactive=False, visible=False, wrap=True,
                                       elem_id="batch-table")
            with gr.Row():
                histogram = gr.Plot(label="F1 histogram", visible=False, elem_id="histogram")
                download = gr.File(label="Results (CSV)", visible=False, elem_id="download")
            batch_button.click(handlers.batch, [upload, pasted] + options + [upload_b, batch_idf],
                               [batch_error, batch_table, batch_summary, histogram, download],
                               api_name="score_batch", api_visibility="undocumented", concurrency_id="bertscore")
        # No limit here: each request is checked at once, refused at once when its expected wait is too
        # long, else waits (without a thread) in the service's queue, which merges same-option requests.
        docs = parameter_docs(handlers.compute)
        compute = gr.api(handlers.compute_async, api_name="compute", concurrency_id="compute", concurrency_limit=None,
                         api_description=f"{docs['']} Returns {docs['return']}")
        _describe_parameters(demo, compute, docs)
    demo.queue(max_size=config.max_waiting, default_concurrency_limit=config.concurrency)
    demo.bertscore_config = config  # type: ignore[attr-defined]
    demo.bertscore_service = handlers.service  # type: ignore[attr-defined]
    return demo


def _describe_parameters(demo: gr.Blocks, dependency: Any, docs: dict[str, str]) -> None:
    """The API page's text for each parameter of a gr.api endpoint: its name and its description
    (`docs`, from the docstring; gradio labels parameters "1st", "2nd", ... and describes none)."""
    names = [name for name in docs if name not in ("", "return")]
    for component_id, name in zip(dependency["inputs"], names, strict=True):
        component = demo.blocks[component_id]
        component.label = name
        component._api_info = {**component._api_info, "additional_description": docs[name]}
    for component_id in dependency["outputs"]:
        demo.blocks[component_id].label = "result"


if __name__ == "__main__":
    _config = AppConfig.from_env()
    _demo = build_demo(_config)
    _demo.bertscore_service.warm_up()  # type: ignore[attr-defined]
    # Waiting /compute requests hold a queue slot each (not a thread): as many slots as may wait.
    _demo.launch(max_file_size=f"{_config.max_upload_mb}mb", max_threads=max(40, _config.max_waiting))
