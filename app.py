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

Environment: BERTSCORE_APP_MODELS (comma-separated allow-list), BERTSCORE_APP_DEFAULT_MODEL,
BERTSCORE_APP_MAX_CHARS, BERTSCORE_APP_MAX_ROWS, BERTSCORE_APP_MAX_REFS,
BERTSCORE_APP_MAX_UPLOAD_MB, BERTSCORE_APP_MAX_WAIT_S, BERTSCORE_APP_PAIRS_PER_S,
BERTSCORE_APP_MAX_BATCH_PAIRS, BERTSCORE_APP_QUEUE_SIZE, BERTSCORE_APP_CONCURRENCY,
BERTSCORE_APP_MAX_MODELS (encoders kept loaded), BERTSCORE_APP_DEVICE.

Every user or model text shown in the page goes through `bertscore.markup.shown_as_typed`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import gradio as gr
import pandas as pd

from bertscore import EMBEDDED_MODEL_NAME, __version__, baselines, tables
from bertscore.explain import Explanation, explain_pair
from bertscore.inputs import InputError, check_text, normalize_inputs
from bertscore.markup import shown_as_typed
from bertscore.notes import Spelling, spelled
from bertscore.output_files import write_text
from bertscore.plot import heatmap_figure, histogram_figure
from bertscore.pool import ScorerPool
from bertscore.serving import QueueFull, RequestQueue
from bertscore.stats import bootstrap_ci, compare_systems

DEFAULT_MODELS = (
    EMBEDDED_MODEL_NAME,
    "roberta-large",
    "microsoft/deberta-xlarge-mnli",
    "bert-base-multilingual-cased",
    "xlm-roberta-large",
    "distilbert-base-uncased",
    "bert-base-uncased",
)


# ----- configuration ------------------------------------------------------------------------
def _env_int(env: dict[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as error:
        raise ValueError(f"{name}={raw!r} is not an integer") from error
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _env_seconds(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as error:
        raise ValueError(f"{name}={raw!r} is not a number") from error
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {raw!r}")
    return value


@dataclass(frozen=True)
class AppConfig:
    models: tuple[str, ...]
    default_model: str
    max_chars: int = 2000
    max_rows: int = 1000
    max_refs: int = 10
    max_upload_mb: int = 5
    max_wait_s: float = 30.0  # a /compute request expected to wait longer is refused, with that wait
    pairs_per_s: float = 100.0  # scoring speed assumed until calls of a model have been measured
    max_batch_pairs: int = 512  # pairs per merged scoring call
    queue_size: int | None = None  # requests waiting at once; None: max_wait_s * pairs_per_s
    concurrency: int = 1
    max_models: int = 1
    device: str | None = None

    @property
    def max_waiting(self) -> int:
        """Requests that may wait at once: the most (of one pair at least) the server can answer
        within `max_wait_s` at `pairs_per_s`, unless BERTSCORE_APP_QUEUE_SIZE says otherwise."""
        return self.queue_size or max(1, math.ceil(self.max_wait_s * self.pairs_per_s))

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "AppConfig":
        env = dict(os.environ if env is None else env)
        models = [m.strip() for m in env.get("BERTSCORE_APP_MODELS", "").split(",") if m.strip()] or list(DEFAULT_MODELS)
        default = env.get("BERTSCORE_APP_DEFAULT_MODEL", "").strip() or models[0]
        if default not in models:
            models.insert(0, default)
        return cls(
            models=tuple(dict.fromkeys(models)),
            default_model=default,
            max_chars=_env_int(env, "BERTSCORE_APP_MAX_CHARS", 2000),
            max_rows=_env_int(env, "BERTSCORE_APP_MAX_ROWS", 1000),
            max_refs=_env_int(env, "BERTSCORE_APP_MAX_REFS", 10),
            max_upload_mb=_env_int(env, "BERTSCORE_APP_MAX_UPLOAD_MB", 5),
            max_wait_s=_env_seconds(env, "BERTSCORE_APP_MAX_WAIT_S", 30.0),
            pairs_per_s=_env_seconds(env, "BERTSCORE_APP_PAIRS_PER_S", 100.0),
            max_batch_pairs=_env_int(env, "BERTSCORE_APP_MAX_BATCH_PAIRS", 512),
            queue_size=_env_int(env, "BERTSCORE_APP_QUEUE_SIZE", 0) or None,
            concurrency=_env_int(env, "BERTSCORE_APP_CONCURRENCY", 1),
            max_models=_env_int(env, "BERTSCORE_APP_MAX_MODELS", 1),
            device=env.get("BERTSCORE_APP_DEVICE", "").strip() or None,
        )


class UserError(Exception):
    """A problem with the user's input or choice, shown in the page as is."""


# ----- scoring (thin: the package does the math) ----------------------------------------------
class ScoringService:
    """Settings validation + a thread-safe ScorerPool shared by every request, and the queue
    that merges waiting API requests (`requests`).

    Requests keep their notes apart: each passes its own list to the scorer (no global
    warning state), so concurrent requests never see each other's notes.
    """

    def __init__(self, config: AppConfig):
        self.config = config
        self.pool = ScorerPool(max_models=config.max_models)
        self.requests = RequestQueue(config.max_wait_s, config.pairs_per_s, config.max_batch_pairs, config.concurrency)

    def scorer(self, model: str, num_layers: Any, idf: bool, rescale: bool, lang: str | None,
               long_texts: str = "truncate", window_stride: Any = None) -> tuple[Any, list[str]]:
        """A scorer for these settings and notes for the page; UserError on bad settings."""
        notes: list[str] = []
        model = (model or "").strip() or self.config.default_model
        if model not in self.config.models:
            raise UserError(f"model {model!r} is not in this app's allow-list: {', '.join(self.config.models)}")
        layers = parse_layer(num_layers)
        stride = parse_layer(window_stride, "window stride")
        lang = (lang or "").strip().lower() or None
        languages = baselines.packaged_languages(model)
        if rescale and not languages:
            notes.append(f"no packaged rescale baseline for {model}: raw scores only")
            rescale = False
        if rescale:
            if lang is None:
                lang = languages[0] if len(languages) == 1 else ("en" if "en" in languages else languages[0])
            elif lang not in languages:
                raise UserError(f"no rescale baseline for {model} in language {lang!r}; available: {', '.join(languages)}")
            notes.append(f"rescaled with the packaged {lang} baseline")
        try:
            scorer = self.pool.get(
                model_type=model, num_layers=layers, device=self.config.device, idf=bool(idf),
                rescale_with_baseline=bool(rescale), lang=lang if rescale else None,
                long_texts=(long_texts or "").strip() or "truncate", window_stride=stride,
            )
        except InputError as error:  # a setting or a baseline file (WindowSettingError is one): as it says
            raise UserError(str(error)) from None
        except Exception as error:  # loading: hub unreachable, bad layer, unknown architecture...
            raise UserError(
                f"could not load model {model!r}"
                + (f" at layer {layers}" if layers is not None else "")
                + f": {type(error).__name__}: {_short(str(error))}"
                + ("" if model == EMBEDDED_MODEL_NAME else f". Models other than the embedded {EMBEDDED_MODEL_NAME} "
                   "need the Hugging Face Hub (or a local cache) to be reachable from this server.")
            ) from error
        return scorer, notes

    def warm_up(self, pairs: int = 256) -> float:
        """Load the default model and measure its speed (pairs/s) on `pairs` made-up pairs of 24 words,
        so that the first requests neither wait for loading nor are admitted on a guessed speed."""
        scorer, _ = self.scorer(self.config.default_model, "", False, False, "")
        words = "the of and to in is was for on that with as by at from his her an be this which it not are".split()
        texts = [f"sample {i}: " + " ".join(words[(7 * i + 3 * j) % len(words)] for j in range(24))
                 for i in range(2 * pairs)]
        self.requests.score(scorer, texts[:pairs], texts[pairs:], notes=[])
        return self.requests.pairs_per_s(scorer.model_type)

    def check_texts(self, texts: Sequence[str], what: str) -> None:
        for index, text in enumerate(texts):
            try:
                check_text(text, f"{what} {index + 1}")
            except (TypeError, ValueError) as error:
                raise UserError(str(error)) from None
            if len(text) > self.config.max_chars:
                raise UserError(
                    f"{what} {index + 1} has {len(text)} characters; this app accepts at most {self.config.max_chars}"
                )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_layer(value: Any, what: str = "layer") -> int | None:
    """Blank -> None (the model's default layer, or window stride); else a non-negative integer."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError as error:
        raise UserError(f"{what} must be a whole number or blank, got {text!r}") from error
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise UserError(f"{what} must be a non-negative whole number or blank, got {text!r}")
    return int(number)


def _mode(whole_texts: bool) -> str:
    """The long_texts mode of the page's checkbox."""
    return "window" if whole_texts else "truncate"


WHOLE_TEXTS_LABEL = "Whole long texts (windows past the model's limit)"
# The page's notes name its controls; /compute's keep the Python spelling of options (its
# parameters have the same names) and name texts as its parameters do: predictions[i].
COMPUTE_SPELLING = Spelling("compute", candidates="predictions")
PAGE_SPELLING = Spelling("space", labels={
    ("long_texts", "window"): (f'"{WHOLE_TEXTS_LABEL}"', f'tick "{WHOLE_TEXTS_LABEL}"'),
    ("long_texts", "truncate"): (f'"{WHOLE_TEXTS_LABEL}" unticked', f'untick "{WHOLE_TEXTS_LABEL}"'),
})


def split_references(text: str) -> list[str]:
    """One reference per non-blank line."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def fmt(value: float) -> str:
    return f"{value:.4f}"


# ----- handlers ----------------------------------------------------------------------------------
def _user_message(error: Exception) -> str:
    if isinstance(error, (UserError, tables.TableError)):
        return str(error)
    return f"unexpected {type(error).__name__}: {_short(str(error))}"


def _error_md(message: str) -> str:
    return f"**Error:** {shown_as_typed(message)}"


def _warn(message: str) -> None:
    """A toast in the page (Gradio renders its message as HTML: shown as typed)."""
    gr.Warning(shown_as_typed(message))


def _means_md(frame: pd.DataFrame, notes: list[str]) -> str:
    """Each column's mean with its 95% percentile bootstrap interval (1,000 resamples, seed 0);
    a caution for few rows joins `notes` once."""
    if len(frame) < 2:
        return f": P {fmt(frame.precision.mean())}, R {fmt(frame.recall.mean())}, **F1 {fmt(frame.f1.mean())}**"
    cells = []
    cautions: list[str] = []
    for label, column in (("P", "precision"), ("R", "recall"), ("**F1", "f1")):
        ci = bootstrap_ci(frame[column].tolist(), notes=cautions)
        cells.append(f"{label} {fmt(ci.mean)} [{fmt(ci.low)}, {fmt(ci.high)}]" + ("**" if label.startswith("**") else ""))
    notes.extend(dict.fromkeys(cautions))
    return " with 95% bootstrap intervals: " + ", ".join(cells)


def _comparison_md(f1_a: list[float], f1_b: list[float]) -> str:
    """System B against system A: the F1 difference, its interval and a paired test's p-value."""
    if len(f1_a) < 2:
        return "**System B − A:** a paired test needs at least 2 rows"
    cautions: list[str] = []
    row = compare_systems({"A": f1_a, "B": f1_b}, baseline="A", notes=cautions)[1]
    caution = "\n\n".join(f"⚠ {c}" for c in cautions)
    verdict = ("no difference: every row scores the same in both systems" if row.identical
               else "significant at p < 0.05" if row.significant(0.05) else "not significant at p < 0.05")
    return (f"**System B − A:** ΔF1 {row.difference:+.4f} [95% CI {row.difference_low:+.4f}, "
            f"{row.difference_high:+.4f}], p = {row.p_value:.4f} ({'see below' if caution else verdict}; paired "
            "approximate randomization, 10,000 resamples, seed 0)" + (f"\n\n{caution}" if caution else ""))


def _notes_md(notes: Sequence[str]) -> str:
    return "\n".join(f"- {shown_as_typed(n)}" for n in notes)


class Handlers:
    def __init__(self, service: ScoringService):
        self.service = service
        self.config = service.config

    # One pair ---------------------------------------------------------------------------------
    def pair(self, candidate: str, references_text: str, model: str, num_layers: Any, idf: bool, rescale: bool,
             lang: str, whole_texts: bool = False) -> tuple[str, str, Any, pd.DataFrame]:
        empty_table = pd.DataFrame(columns=["side", "#", "token", "weight", "best match", "cosine"])
        try:
            candidate = candidate or ""
            references = split_references(references_text)
            if not candidate.strip():
                raise UserError("enter a candidate text")
            if not references:
                raise UserError("enter at least one reference (one per line)")
            if len(references) > self.config.max_refs:
                raise UserError(f"{len(references)} references; this app accepts at most {self.config.max_refs}")
            self.service.check_texts([candidate], "candidate")
            self.service.check_texts(references, "reference")
            scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, _mode(whole_texts))
            with spelled(PAGE_SPELLING):
                explanation = explain_pair(scorer, candidate, references)
            figure = heatmap_figure(explanation)
            return "", self._pair_markdown(explanation, notes), figure, self._token_table(explanation)
        except Exception as error:  # a message in the page, never a crashed worker
            message = _user_message(error)
            _warn(message)
            return _error_md(message), "", None, empty_table

    @staticmethod
    def _pair_markdown(expl: Explanation, notes: list[str]) -> str:
        lines = ["| | Precision | Recall | F1 |", "|---|---|---|---|",
                 f"| raw | {fmt(expl.precision)} | {fmt(expl.recall)} | {fmt(expl.f1)} |"]
        if expl.rescaled is not None:
            p, r, f = expl.rescaled
            lines.append(f"| rescaled | {fmt(p)} | {fmt(r)} | {fmt(f)} |")
        out = "\n".join(lines)
        if len(expl.references) > 1:
            out += "\n\n**Per reference** (the candidate's scores are the max of each column):\n\n"
            out += "| # | reference | P | R | F1 |\n|---|---|---|---|---|\n"
            for index, ref in enumerate(expl.references):
                mark = " **(best)**" if index == expl.winner else ""
                text = shown_as_typed(_short(ref.text, 80))
                out += f"| {index + 1}{mark} | {text} | {fmt(ref.precision)} | {fmt(ref.recall)} | {fmt(ref.f1)} |\n"
        winner = expl.best
        out += f"\n\n**Winning reference:** #{expl.winner + 1}: {shown_as_typed(_short(winner.text, 160))}"
        out += f"\n\n**Hash:** `{expl.hashcode}`"
        all_notes = notes + expl.notes
        if all_notes:
            out += "\n\n" + _notes_md(all_notes)
        return out

    @staticmethod
    def _token_table(expl: Explanation) -> pd.DataFrame:
        ref = expl.best
        rows = []
        for i, token in enumerate(expl.tokens):
            rows.append(["candidate", i, token, round(expl.weights[i], 4), ref.tokens[ref.cand_best[i]],
                         round(ref.cand_best_sim[i], 4)])
        for j, token in enumerate(ref.tokens):
            rows.append([f"reference #{expl.winner + 1}", j, token, round(ref.weights[j], 4),
                         expl.tokens[ref.ref_best[j]], round(ref.ref_best_sim[j], 4)])
        return pd.DataFrame(rows, columns=["side", "#", "token", "weight", "best match", "cosine"])

    # Batch ------------------------------------------------------------------------------------
    def batch(self, upload: Any, pasted: str, model: str, num_layers: Any, idf: bool, rescale: bool, lang: str,
              whole_texts: bool = False, upload_b: Any = None,
              progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[str, Any, str, Any, Any]:
        empty = pd.DataFrame(columns=["row", "candidate", "references", "precision", "recall", "f1"])
        try:
            progress(0.0, desc="reading input")
            candidates, groups = self._batch_inputs(upload, pasted)
            self.service.check_texts(candidates, "candidate of row")
            for row, group in enumerate(groups, start=1):
                if len(group) > self.config.max_refs:
                    raise UserError(f"row {row} has {len(group)} references; this app accepts at most {self.config.max_refs}")
                self.service.check_texts(group, f"row {row}: reference")
            candidates_b = self._system_b(upload_b, groups)
            progress(0.05, desc="loading model")
            scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, _mode(whole_texts))
            score_notes: list[str] = []
            # verbose: the scorer's tqdm bar (advanced per encoder batch) drives gr.Progress.
            with spelled(PAGE_SPELLING):
                precision, recall, f1 = scorer.score(candidates, groups, verbose=True, notes=score_notes)
            notes += [_short(note, 300) for note in score_notes]
            frame = pd.DataFrame({
                "row": range(1, len(candidates) + 1),
                "candidate": candidates,
                "references": [" ‖ ".join(g) for g in groups],
                "precision": precision.tolist(),
                "recall": recall.tolist(),
                "f1": f1.tolist(),
            })
            kind = "rescaled" if scorer.rescale_with_baseline else "raw"
            summary = f"**{len(frame)} rows** — corpus mean ({kind})" + _means_md(frame, notes)
            if scorer.rescale_with_baseline:  # raw scores next to rescaled ones (same encoder and cache)
                raw_scorer, _ = self.service.scorer(model, num_layers, idf, False, lang, _mode(whole_texts))
                raw = raw_scorer.score(candidates, groups, notes=[])
                for name, values in zip(("precision", "recall", "f1"), raw):
                    frame[f"{name} (raw)"] = values.tolist()
                summary += (f"\n\ncorpus mean (raw): P {fmt(raw[0].mean().item())}, R {fmt(raw[1].mean().item())}, "
                            f"F1 {fmt(raw[2].mean().item())}")
            if candidates_b is not None:
                b_notes: list[str] = []
                with spelled(PAGE_SPELLING):
                    f1_b = scorer.score(candidates_b, groups, notes=b_notes)[2]
                notes += [_short(f"system B: {note}", 300) for note in b_notes]
                frame["candidate (B)"], frame["f1 (B)"] = candidates_b, f1_b.tolist()
                summary += "\n\n" + _comparison_md(frame.f1.tolist(), frame["f1 (B)"].tolist())
            summary += f"\n\n**Hash:** `{scorer.hash}`"
            if notes:
                summary += "\n\n" + _notes_md(notes)
            figure = histogram_figure(frame.f1.tolist(), f"F1 ({kind})")
            path = os.path.join(tempfile.mkdtemp(prefix="bertscore-app-"), "bertscore_results.csv")
            write_text(path, frame.assign(hashcode=scorer.hash).to_csv(index=False))
            shown = frame.copy()
            for column in ("precision", "recall", "f1", "precision (raw)", "recall (raw)", "f1 (raw)", "f1 (B)"):
                if column in shown:
                    shown[column] = shown[column].map(fmt)
            return "", shown, summary, figure, path
        except Exception as error:
            message = _user_message(error)
            _warn(message)
            return _error_md(message), empty, "", None, None

    def _system_b(self, upload_b: Any, groups: list[list[str]]) -> list[str] | None:
        """System B's candidates: a second table with the same rows and references as system A's."""
        if not upload_b:
            return None
        path = upload_b if isinstance(upload_b, str) else getattr(upload_b, "name", None) or upload_b.get("path")
        name = os.path.basename(str(path))
        candidates_b, groups_b = tables.read_table(path, name=name, max_rows=self.config.max_rows)
        if len(candidates_b) != len(groups):
            raise UserError(f"system B ({name}) has {len(candidates_b)} rows but system A has {len(groups)}: "
                            "a paired comparison needs the same rows")
        for row, (group_a, group_b) in enumerate(zip(groups, groups_b), start=1):
            if group_a != group_b:
                raise UserError(f"row {row}: system B ({name}) has other references than system A; "
                                "a paired comparison scores both against the same references")
        self.service.check_texts(candidates_b, "system B candidate of row")
        return candidates_b

    def _batch_inputs(self, upload: Any, pasted: str) -> tuple[list[str], list[list[str]]]:
        if upload:
            path = upload if isinstance(upload, str) else getattr(upload, "name", None) or upload.get("path")
            name = os.path.basename(str(path))
            size = os.path.getsize(path)
            if size > self.config.max_upload_mb * 1024 * 1024:
                raise UserError(f"{name} is {size / 1e6:.1f} MB; this app accepts at most {self.config.max_upload_mb} MB")
            return tables.read_table(path, name=name, max_rows=self.config.max_rows)
        if pasted and pasted.strip():
            return tables.parse_table(pasted, name="pasted text", max_rows=self.config.max_rows)
        raise UserError("upload a CSV / TSV / JSONL / JSON file or paste rows (with a header line) first")

    # API --------------------------------------------------------------------------------------
    def compute(self, predictions: str, references: str, model: str = "", num_layers: str = "",
                idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
                window_stride: str = "") -> dict:
        """BERTScore of predictions against references.

        Args:
            predictions: a JSON list of strings, or one plain text.
            references: a JSON list with one string or one list of strings per prediction; for
                one plain-text prediction, plain text with one reference per line.
            model: a model of the app's allow-list (blank: the default).
            num_layers: the layer (blank: the model's default).
            idf: weigh tokens by idf over the references.
            rescale: rescale with the packaged baseline (when the model has one).
            lang: the baseline language when the model has several (blank: en).
            long_texts: "truncate" (default: texts past the model's limit are cut, with a note) or
                "window" (whole texts through overlapping windows).
            window_stride: with "window", content tokens between window starts (blank: half a window).
        Returns:
            {"precision": [...], "recall": [...], "f1": [...], "hashcode": str, "model": str,
            "rescaled": bool, "notes": [...]} or {"error": str} ({"error": str, "retry_after_s": int}
            when the server is too busy: the message names the expected wait).
        """
        try:
            request = self._compute_request(predictions, references, model, num_layers, idf, rescale, lang,
                                            long_texts, window_stride)
            if isinstance(request, dict):
                return request
            return self._compute_result(request, self._submit(request).result())
        except Exception as error:  # never let a request take the server down
            return _compute_error(error)

    @functools.wraps(compute)
    async def compute_async(self, *args: Any, **kwargs: Any) -> dict:
        # The endpoint's form of `compute` (same signature and docs): checks and model loading in a
        # worker thread, then waiting in the merged-request queue without holding a thread.
        try:
            request = await asyncio.to_thread(self._compute_request, *args, **kwargs)
            if isinstance(request, dict):
                return request
            return self._compute_result(request, await asyncio.wrap_future(self._submit(request)))
        except Exception as error:  # never let a request take the server down
            return _compute_error(error)

    def _compute_request(self, predictions: str, references: str, model: str = "", num_layers: str = "",
                         idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
                         window_stride: str = "") -> ApiRequest | dict:
        """A checked request with its scorer, or its answer when it has no predictions."""
        cands, groups = _api_inputs(predictions, references)
        if len(cands) > self.config.max_rows:
            raise UserError(f"{len(cands)} predictions; this app accepts at most {self.config.max_rows} per call")
        self.service.check_texts(cands, "prediction")
        for group in groups:
            if len(group) > self.config.max_refs:
                raise UserError(f"{len(group)} references for one prediction; at most {self.config.max_refs}")
            self.service.check_texts(group, "reference")
        scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, long_texts, window_stride)
        request = ApiRequest(scorer, cands, groups, notes)
        return request if cands else self._compute_result(request, ([], [], []))

    def _submit(self, request: ApiRequest) -> Any:
        """The future of the request's scores from the merging queue (QueueFull at once when too busy)."""
        return self.service.requests.submit(request.scorer, request.predictions, request.groups, notes=request.notes)

    @staticmethod
    def _compute_result(request: ApiRequest, scores: Any) -> dict:
        p, r, f = scores
        scorer = request.scorer
        return {
            "precision": [float(x) for x in p], "recall": [float(x) for x in r], "f1": [float(x) for x in f],
            "hashcode": scorer.hash, "model": scorer.model_type, "rescaled": bool(scorer.rescale_with_baseline),
            "notes": [COMPUTE_SPELLING.places(note) for note in request.notes],
        }


class ApiRequest(NamedTuple):
    """A checked /compute request: its scorer, texts and the notes gathered so far."""

    scorer: Any
    predictions: list[str]
    groups: list[list[str]]
    notes: list[str]


def _compute_error(error: Exception) -> dict:
    """The API's answer to a failed request: the message; with the wait to try again after when busy."""
    if isinstance(error, QueueFull):
        return {"error": str(error), "retry_after_s": error.retry_after_s}
    if isinstance(error, UserError):
        return {"error": str(error)}
    return {"error": f"{type(error).__name__}: {_short(str(error))}"}


def _api_inputs(predictions: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    def parse(value: Any) -> Any:
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                try:
                    return json.loads(stripped)
                except json.JSONDecodeError as error:
                    raise UserError(f"not valid JSON: {error.msg} at {error.pos}") from error
        return value

    preds, refs = parse(predictions), parse(references)
    if isinstance(preds, str):
        preds = [preds]
        if isinstance(refs, str):
            refs = [split_references(refs) or [refs]]
    if isinstance(refs, str) and isinstance(preds, list):
        raise UserError("references must be a JSON list (one entry per prediction) when predictions is a list")
    if preds == [] and refs == []:
        return [], []
    try:  # the library's own checks: the same errors, naming the same indices, as every other door
        return normalize_inputs(preds, refs, "predictions", "references")
    except (TypeError, ValueError) as error:
        raise UserError(str(error)) from None


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
