"""Scoring options -> one frozen, checked `Settings` object and its reproducibility hash.

Everything that can change a number besides the texts is decided here, once, when a scorer
is built: the model and layer, the device and precision, how long texts are read, the token
weights and the rescale baseline. Bad options are refused with the option's name and a fix,
before any work; the hash (`Settings.hash`) names every one of them (see `hashcode.py`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import torch

from ..digests import text_digest
from ..inputs import InputError, InputTypeError, as_list, check_text, check_whole_number
from ..models.loading import LoadedModel
from ..models.tables import default_model_for_lang
from ..models.tokenizer import tokenizer_library_versions
from ..notes import setting
from ..version import __version__
from ..wording import a_type
from . import baseline_tables
from .hashcode import ScoreSettings
from .idf import TokenWeights
from .tokens import TokenStore
from .windows import WindowSettingError, resolve_stride

logger = logging.getLogger(__name__)

LONG_TEXT_MODES = ("truncate", "window")


@dataclasses.dataclass(frozen=True, eq=False)
class Settings:
    """What a scorer scores with, resolved and checked (the encoder included)."""

    model_type: str
    lang: str | None
    model: LoadedModel
    device: torch.device
    dtype: str
    window: tuple[int, int] | None  # (W, S) content tokens when long texts are windowed, else None
    idf_mode: str  # how the hash names the weights: "no-idf", "idf", "idf-sents:..", "idf-weights:.."
    idf_weights: TokenWeights | None  # fixed weights; None: idf over each call's references
    baseline: torch.Tensor | None  # [3] or [K, 3] (all layers); None: no rescaling
    rescale_tag: str
    chunk_size: int

    @property
    def all_layers(self) -> bool:
        return self.model.all_layers

    @property
    def score_layers(self) -> int:
        """Layers scored per pair: every hidden state with all_layers, else 1."""
        return self.model.total_layers + 1 if self.all_layers else 1

    @property
    def idf_is_per_call(self) -> bool:
        """True when idf weights come from each call's references (idf=True, no fixed texts)."""
        return self.idf_weights is None

    def is_empty(self, token_ids: TokenStore, key: str) -> bool:
        """No content tokens besides the special ones (the official notion of an empty text)."""
        return token_ids.length(key) <= self.model.num_special_tokens

    def empty_texts(self, token_ids: TokenStore) -> set[str]:
        """The stored texts that `is_empty` holds for, found at once (vectorised)."""
        found = np.flatnonzero(token_ids.lengths <= self.model.num_special_tokens).tolist()
        if not found:
            return set()
        keys = list(token_ids.index)
        return {keys[i] for i in found}

    def is_windowed(self, token_ids: TokenStore, key: str) -> bool:
        """Whether `key` is scored through windows: window mode, and longer than the content limit."""
        return self.window is not None and token_ids.content_length(key) > self.model.content_limit

    def signature(self) -> ScoreSettings:
        """Everything besides the texts that enters a score, as the hash names it."""
        import transformers

        model = self.model
        tokenizers_version, sentencepiece_version = tokenizer_library_versions(model.tokenizer)
        return ScoreSettings(
            model=self.model_type, revision=model.revision, num_layers=model.num_layers,
            all_layers=model.all_layers, idf=self.idf_mode, rescale=self.rescale_tag, max_length=model.max_length,
            long_texts="truncate" if self.window is None else "window={}/{}".format(*self.window),
            prefix_space=model.add_prefix_space, dtype=self.dtype, device=self.device.type, version=__version__,
            transformers_version=transformers.__version__, torch_version=torch.__version__.split("+")[0],
            tokenizers_version=tokenizers_version, sentencepiece_version=sentencepiece_version,
        )

    @property
    def hash(self) -> str:
        """The reproducibility hash of these settings."""
        return self.signature().hashcode()

    def hash_for(self, weights: TokenWeights | None = None) -> str:
        """The hash of a call given `weights=`: these settings' hash when they are their own table, or,
        on idf=True settings, idf counted over references (labelled "idf", e.g. the CLI's idf over
        its whole input); otherwise the hash names the table (`idf-weights:<fingerprint>`)."""
        own = self.idf_weights
        if weights is None or (own is None and weights.label == "idf"):
            return self.hash
        if own is not None and (weights is own or weights.fingerprint() == own.fingerprint()):
            return self.hash
        return dataclasses.replace(self.signature(), idf=f"idf-weights:{weights.fingerprint()}").hashcode()

    def with_idf(self, idf: Any, idf_sents: Sequence[str] | None = None) -> Settings:
        """These settings with other token weights (the official `compute_idf`)."""
        idf_mode, idf_weights = resolve_idf(idf, idf_sents, self.model, whole=self.window is not None)
        return dataclasses.replace(self, idf_mode=idf_mode, idf_weights=idf_weights)


# ----- checks of single options (before any model loads) ------------------------------------------
def check_long_texts(long_texts: object, window_stride: object) -> None:
    """A ValueError naming a long-text setting that is not one (the stride's range is checked
    against the model's window later, in `resolve_stride`)."""
    if not isinstance(long_texts, str) or long_texts not in LONG_TEXT_MODES:
        raise WindowSettingError(
            f"long_texts={long_texts!r} is not a mode: use 'truncate' (the default: cut at the model's limit, "
            "as the official package) or 'window' (whole texts through overlapping windows)"
        )
    if window_stride is not None and long_texts != "window":
        raise WindowSettingError(
            f"window_stride={window_stride!r} applies to long_texts='window' only (long_texts={long_texts!r})"
        )


def resolve_model_type(model_type: str | None, lang: str | None, loaded_model: LoadedModel | None = None) -> str:
    """The model to score with: the one named, the shared model's, or the default for `lang`."""
    if model_type is None and loaded_model is not None:
        return loaded_model.name
    if model_type is None:
        if lang is None:
            raise InputError(
                "pass model_type=... or lang=... (e.g. lang='en' -> roberta-large; offline, "
                "model_type='sentence-transformers/all-MiniLM-L6-v2')"
            )
        return default_model_for_lang(lang)
    return model_type


def lang_default_failure(lang: str, model_type: str, error: OSError) -> OSError:
    """A load error of the model `lang` chose, saying that `lang` chose it (the user never named it)."""
    return OSError(f"{setting('lang', lang)} scores with its official default model, {model_type}: {error}")


def check_loaded_model(loaded: LoadedModel, model_type: str, num_layers: int | None, all_layers: bool) -> None:
    """A shared `loaded_model` must be the model these settings ask for: never silently another."""
    if model_type != loaded.name:
        raise InputError(
            f"model_type={model_type!r} but loaded_model is {loaded.name!r}: pass the loaded model's "
            "name (or model_type=None), or load the model you mean"
        )
    if num_layers is not None and num_layers != loaded.num_layers:
        raise InputError(
            f"num_layers={num_layers} but loaded_model is truncated at layer {loaded.num_layers}: "
            "load the model at the layer you mean (or pass num_layers=None)"
        )
    if bool(all_layers) != loaded.all_layers:
        raise InputError(
            f"all_layers={bool(all_layers)} but loaded_model was loaded with all_layers={loaded.all_layers}: "
            "load it with the same all_layers"
        )


# ----- settings that need the loaded model -------------------------------------------------------
def resolve_settings(
    model: LoadedModel,
    model_type: str,
    lang: str | None,
    device: torch.device,
    dtype: str,
    long_texts: str,
    window_stride: int | None,
    idf: Any,
    idf_sents: Sequence[str] | None,
    rescale_with_baseline: bool,
    baseline_path: str | None,
    chunk_size: int,
) -> Settings:
    """The frozen settings of a scorer on `model` (options already checked by the functions above)."""
    window = resolve_window(model, model_type, long_texts, window_stride)
    idf_mode, idf_weights = resolve_idf(idf, idf_sents, model, whole=window is not None)
    baseline, rescale_tag = resolve_baseline(model, model_type, lang, rescale_with_baseline, baseline_path)
    return Settings(
        model_type=model_type, lang=lang, model=model, device=device, dtype=dtype, window=window,
        idf_mode=idf_mode, idf_weights=idf_weights, baseline=baseline, rescale_tag=rescale_tag, chunk_size=chunk_size,
    )


def resolve_window(
    model: LoadedModel, model_type: str, long_texts: str, window_stride: int | None
) -> tuple[int, int] | None:
    """(W, S) when long texts are windowed; None when they are truncated.

    W is the model's content limit (max length minus its special tokens). A model with no
    fixed position limit (T5, XLNet) keeps truncating at max_length: windows would not
    change what it can read.
    """
    if long_texts != "window":
        return None
    window = resolve_stride(model.content_limit, window_stride)
    if not model.position_limit:
        logger.warning(
            "%s has no fixed position limit: %s does not apply to it, and texts longer than max_length=%d "
            "are truncated as before", model_type, setting("long_texts", "window"), model.max_length,
        )
        return None
    return window


def resolve_idf(
    idf: Any, idf_sents: Sequence[str] | None, model: LoadedModel, whole: bool
) -> tuple[str, TokenWeights | None]:
    """(hash label, fixed weights or None for per-call idf) from the `idf` / `idf_sents` options.

    `whole`: idf texts are counted whole (window mode), else as truncated.
    """
    vocab, special = model.vocab_size, model.zero_weight_ids
    if isinstance(idf, TokenWeights):
        # By content, whatever its label says: two tables never share a hash. A copy: the
        # caller editing its tensor later must not change the numbers under this hash.
        idf.check(vocab, "idf token weights")
        return f"idf-weights:{idf.fingerprint()}", TokenWeights(idf.table.clone(), idf.label, idf.default)
    if isinstance(idf, Mapping):
        weights = TokenWeights.from_mapping(idf, vocab).check(vocab, "idf mapping weights")
        return str(weights.label), weights
    forms = "idf must be True/False, a list of texts, a token-id -> weight mapping or TokenWeights"
    if isinstance(idf, str):
        raise InputTypeError(f"{forms}, got one str (wrap a single text in a list: [text])")
    texts_name = "idf_sents"
    if getattr(idf, "ndim", 1) == 1 and (texts := as_list(idf, "idf")) is not None:
        idf_sents, idf, texts_name = texts, True, "idf"  # a list, tuple, array or Series of texts
    if idf is not None and not isinstance(idf, (bool, int)) and getattr(idf, "ndim", None) != 0:  # bool_ is fine
        raise InputTypeError(f"{forms}, got {a_type(idf)}")
    if not idf:
        return "no-idf", TokenWeights.uniform(vocab, special)
    if idf_sents is None:
        return "idf", None  # computed from each call's references
    texts = as_list(idf_sents, texts_name)
    if texts is None:
        hint = " (wrap a single text in a list: [text])" if isinstance(idf_sents, str) else ""
        raise InputTypeError(f"{texts_name} must be a list of strings, got {type(idf_sents).__name__}{hint}")
    texts = [check_text(text, f"{texts_name}[{index}]") for index, text in enumerate(texts)]
    if not texts:
        raise InputError(f"{texts_name} is empty: pass the texts to compute idf from, or idf=False")
    label = f"idf-sents:{text_digest(texts)[:10]}"
    return label, TokenWeights.from_documents(model.tokenize(texts, whole=whole), vocab, special, label)


def resolve_baseline(
    model: LoadedModel, model_type: str, lang: str | None, rescale: bool, baseline_path: str | None
) -> tuple[torch.Tensor | None, str]:
    """(baseline rows for the scored layer(s), hash tag); (None, "") without rescaling."""
    if not rescale:
        return None, ""
    if baseline_path is not None:
        path, tag = baseline_path, f"rescaled-custom:{baseline_tables.file_fingerprint(baseline_path)}"
    else:
        path = baseline_tables.packaged_baseline_path(model_type, lang)
        tag = f"rescaled-{baseline_tables.packaged_language(path)}"
    table = baseline_tables.load_baseline(path)
    total = model.total_layers if model.all_layers else None
    return baseline_tables.baseline_rows(table, None if model.all_layers else model.num_layers, path, total), tag
