"""Loading a model: a name -> tokenizer and encoder truncated at layer k, placed once, as `LoadedModel`.

The loader applies the per-architecture rules of families.py (layers, truncation, max length,
BigBird's attention mode) and builds the tokenizer as tokenizer.py says; the default layer
comes from the official tables (tables.py). A loaded model also says how it must be batched
to score each text as it scores alone (`LoadedModel.is_padding_safe`, from the padding probe of
padding.py). The embedder asks the loaded model; it never learns family names.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from ..inputs import InputError
from ..sources import hub_kwargs, load_config, resolve_source
from .bert_encoder import BertEncoder, load_bert
from .devices import DTYPES, with_index
from .families import (
    ENCODER_ONLY_T5_TYPES, attention_mode_for, count_layers, has_position_limit, pad_to_blocks, resolve_max_length,
    truncate_to_layers,
)
from .padding import PROBE_TEXT, padding_is_safe
from .tables import MODEL_TO_LAYERS
from .tokenizer import fast_backend, load_tokenizer, prepared_backend, special_layout

logger = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    """A tokenizer and an encoder ready to embed, with the settings that shape the numbers.

    Its device and dtype are fixed for life: nothing ever moves or casts a loaded encoder in
    place (scorers may share it). A scorer that needs another placement gets its own copy
    (`with_placement`).
    """

    name: str
    source: str
    revision: str | None
    tokenizer: Any
    encoder: torch.nn.Module
    num_layers: int
    total_layers: int
    all_layers: bool
    max_length: int
    add_prefix_space: bool
    zero_weight_ids: frozenset[int] = field(default_factory=frozenset)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    dtype: str = "float32"
    lead_ids: tuple[int, ...] = ()  # special ids tokenizer(text) puts before the content
    trail_ids: tuple[int, ...] = ()  # ... and after it
    position_limit: bool = True  # absolute positions up to max_length (False: T5, XLNet: no fixed limit)
    # Whether a text's states ignore the padding beside it in a batch: None until asked (`is_padding_safe`).
    padding_safe: bool | None = None
    attention_type: str | None = None  # the configured mode of an encoder that switches it itself (BigBird)
    layer_guessed: bool = False  # no num_layers given and none in the official table: the last layer, a guess
    _mode_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    _probe_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    _tokenize_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return 0 if pad is None else int(pad)

    @property
    def num_special_tokens(self) -> int:
        """Special tokens added around one sequence (2 for [CLS] ... [SEP])."""
        return len(self.lead_ids) + len(self.trail_ids)

    @property
    def content_limit(self) -> int:
        """Content tokens that fit in one encoder input (510 for BERT/RoBERTa)."""
        return max(1, self.max_length - self.num_special_tokens)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Content ids of each stripped text: no special tokens, no truncation.

        transformers' "sequence length is longer than the specified maximum" warning is
        silenced (verbose=False): a long text is expected here, and the caller cuts or windows it.
        """
        if not texts:
            return []
        stripped = [text.strip() for text in texts]
        with self._tokenize_lock:  # one thread at a time: preparing the backend changes its state
            backend = prepared_backend(self.tokenizer)
            if backend is not None:  # the ids the call below gives, without offsets nor a Python dict per text
                encode = getattr(backend, "encode_batch_fast", backend.encode_batch)  # _fast: tokenizers >= 0.21
                return [encoding.ids for encoding in encode(stripped, add_special_tokens=False)]
        encoded = self.tokenizer(
            stripped,
            add_special_tokens=False,
            truncation=False,
            verbose=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return [list(ids) for ids in encoded["input_ids"]]

    @property
    def tokenizes_without_gil(self) -> bool:
        """Whether tokenizing runs in the tokenizers library, off Python's lock (so that it can
        overlap other work: `tokenize_ahead`)."""
        return fast_backend(self.tokenizer) is not None

    def tokenize(self, texts: Sequence[str], whole: bool = False) -> list[list[int]]:
        """Token ids of each stripped text with its special tokens: lead + content[:W] + trail.

        W is `content_limit`: this is exactly what the tokenizer's own truncation at max_length
        gives (tests/test_long_texts.py checks every tokenizer family). `whole=True` keeps all
        the content (long_texts="window").
        """
        limit = None if whole else self.content_limit
        lead, trail = list(self.lead_ids), list(self.trail_ids)
        return [lead + ids[:limit] + trail for ids in self.content_ids(texts)]

    def is_padding_safe(self) -> bool:
        """Whether texts of different lengths may share a padded encoder batch (else: one length a batch).

        Decided once, the first time it is asked (the embedder asks when a call's texts differ in
        length), never at load: the padding probe is a forward pass, and one run at load would start
        the CPU's OpenMP threads in a process that may load and then fork (DataLoader workers, a
        server's preloaded app), whose children then hang in their first forward pass.
        """
        if self.padding_safe is None:
            with self._probe_lock:
                if self.padding_safe is None:
                    self.padding_safe = padding_is_safe(
                        self.name, self.dtype, self.encode, self.tokenize([PROBE_TEXT])[0], self.pad_token_id,
                        self.max_length, self.device)
        return self.padding_safe

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The encoder's states of one padded batch: [B, L, D], or [B, K, L, D] with all layers.

        An encoder that switches its own attention mode by input length (transformers' BigBird
        turns block-sparse attention off for good at the first short input) is set, under a lock,
        to the mode its config names for this batch's length before every batch, whatever ran
        before it (`attention_mode_for`); block-sparse inputs are padded to whole blocks here, as
        transformers would pad them (without its warning at every new length).
        """
        length = input_ids.shape[1]
        switching = self.attention_type is not None
        with self._mode_lock if switching else contextlib.nullcontext():
            if switching:
                mode = attention_mode_for(self.encoder.config, self.attention_type, length)
                self.encoder.set_attention_type(mode)
                if mode == "block_sparse":
                    input_ids, attention_mask = pad_to_blocks(input_ids, attention_mask, self.encoder.config)
            output = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=self.all_layers
            )
        if not self.all_layers:
            return output[0][:, :length]
        return torch.stack([state[:, :length] for state in output.hidden_states], dim=1)

    def with_placement(self, device: torch.device, dtype: str) -> "LoadedModel":
        """This model on `device` in `dtype`: itself when it already is, else a separate copy.

        A device change copies the encoder; a dtype change reloads it the way transformers
        loads reduced precision (modules kept in fp32 stay fp32), and so does a plain-torch BERT's
        move off the CPU (elsewhere the encoder is transformers' own class: `load_model`).
        """
        device = with_index(torch.device(device))  # "cuda" is cuda:0 (current): the same place, no copy
        if device == self.device and dtype == self.dtype:
            return self
        if dtype != self.dtype or (isinstance(self.encoder, BertEncoder) and device.type != "cpu"):
            logger.info("loading a separate %s copy of %s on %s", dtype, self.name, device)
            return load_model(self.name, self.num_layers, self.all_layers, device=device, dtype=dtype)
        logger.info("copying %s to %s (the shared copy stays on %s)", self.name, device, self.device)
        encoder = copy.deepcopy(self.encoder).to(device)
        return dataclasses.replace(self, encoder=encoder, device=device)



def load_model(
    model_type: str,
    num_layers: int | None = None,
    all_layers: bool = False,
    device: str | torch.device = "cpu",
    dtype: str = "float32",
    build_encoder: Callable[[int], torch.nn.Module] | None = None,
    transformers_class: bool = False,
) -> LoadedModel:
    """Load tokenizer and encoder for `model_type` (hub id, local folder or embedded name).

    `num_layers=None` takes the official default layer for known models, else the last layer
    (with a warning). The encoder is truncated to its first `num_layers` layers unless
    `all_layers`, where every hidden state (embeddings included) is returned instead. It is
    loaded in `dtype` (a name of `DTYPES`) the way transformers loads reduced precision, then
    placed on `device`, once: the result never moves. `build_encoder(num_layers)`, where given,
    builds the encoder instead of the pretrained weights (the drop-in's `get_model` when a caller
    patches it): the tokenizer and settings are still this model's.

    A plain BERT folder loaded on the CPU in float32 (the embedded MiniLM) gets the plain-torch
    encoder of bert_encoder.py, the same numbers bit for bit without importing transformers' model
    classes (seconds of start-up); `transformers_class=True` asks for transformers' class anyway
    (the drop-in's `get_model`: the official package's callers get what it gave them).
    """
    from transformers.utils import logging as hf_logging

    progress_was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no per-tensor "Loading weights" bar on every load
    try:
        return _load_model(model_type, num_layers, all_layers, with_index(torch.device(device)), dtype, build_encoder,
                           transformers_class)
    finally:
        if progress_was_enabled:
            hf_logging.enable_progress_bar()


def _dtype_kwargs(dtype: str) -> dict[str, Any]:
    """`dtype=` (transformers >= 4.56) or `torch_dtype=` (older) for from_pretrained."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": DTYPES[dtype]}


def _pretrained_encoder(source: str, config: Any, device: torch.device, dtype: str,
                        transformers_class: bool) -> torch.nn.Module:
    """The pretrained encoder of `source`, whole: the plain-torch BERT where it applies (a local
    folder on the CPU in float32, a config and weights it implements: `load_bert`), else
    transformers' class for the config (an encoder-decoder's encoder)."""
    if not transformers_class and device.type == "cpu" and dtype == "float32" and os.path.isdir(source):
        model = load_bert(source, config)
        if model is not None:
            logger.debug("%s: plain-torch BERT encoder (bert_encoder.py)", source)
            return model
    from transformers import AutoModel

    kwargs = {**_dtype_kwargs(dtype), **hub_kwargs(source)}
    if getattr(config, "model_type", "") in ENCODER_ONLY_T5_TYPES:
        from transformers import T5EncoderModel

        model = T5EncoderModel.from_pretrained(source, **kwargs)
    else:
        model = AutoModel.from_pretrained(source, **kwargs)
    if hasattr(model, "decoder") and hasattr(model, "encoder"):
        model = model.encoder
    return model


def _load_model(
    model_type: str, num_layers: int | None, all_layers: bool, device: torch.device, dtype: str,
    build_encoder: Callable[[int], torch.nn.Module] | None = None, transformers_class: bool = False,
) -> LoadedModel:
    if dtype not in DTYPES:
        raise InputError(f"dtype {dtype!r} is not supported; use one of {sorted(DTYPES)}")
    source, revision = resolve_source(model_type)
    config = load_config(source)
    if revision is None:
        commit = getattr(config, "_commit_hash", None)
        revision = str(commit) if commit else None
    if build_encoder is not None:
        model, total_layers = None, count_layers(config)
    else:
        model = _pretrained_encoder(source, config, device, dtype, transformers_class)
        total_layers = count_layers(model.config)
    layer_guessed = False
    if num_layers is None:
        num_layers = MODEL_TO_LAYERS.get(model_type)
        if num_layers is None:  # every scoring call notes it (input_notes); with all layers none is chosen
            num_layers, layer_guessed = total_layers, not all_layers
    if not 0 <= num_layers <= total_layers:
        raise InputError(f"num_layers={num_layers} is out of range: {model_type!r} has layers 0..{total_layers}")
    if build_encoder is not None:
        model = build_encoder(num_layers)
    elif not all_layers:
        model = truncate_to_layers(model, num_layers)
    model.eval()
    model.requires_grad_(False)
    model.to(device)
    tokenizer, add_prefix_space = load_tokenizer(source)
    zero_weight_ids = frozenset(
        int(i) for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None
    )
    lead_ids, trail_ids = special_layout(tokenizer)
    loaded = LoadedModel(
        name=model_type,
        source=source,
        revision=revision,
        tokenizer=tokenizer,
        encoder=model,
        num_layers=num_layers,
        total_layers=total_layers,
        all_layers=all_layers,
        max_length=resolve_max_length(tokenizer, config),
        add_prefix_space=add_prefix_space,
        zero_weight_ids=zero_weight_ids,
        device=device,
        dtype=dtype,
        lead_ids=lead_ids,
        trail_ids=trail_ids,
        position_limit=has_position_limit(config),
        # An encoder that switches its own attention mode (BigBird): the mode its config names.
        attention_type=getattr(config, "attention_type", None) if hasattr(model, "set_attention_type") else None,
        layer_guessed=layer_guessed,
    )
    if loaded.attention_type == "block_sparse":
        # Block-sparse attention sees its input in whole blocks, and BigBird picks full or block-sparse
        # attention by the input's length: padded, a text would get other blocks, or the other mode.
        logger.info("%s uses block-sparse attention: each encoder batch holds texts of one length", model_type)
        loaded.padding_safe = False
    return loaded
