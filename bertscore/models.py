"""Model resolution: a name or language -> tokenizer, encoder truncated at layer k, max length.

This is the only module that knows model families: which tokenizers need a prefix space,
how each architecture is truncated to its first k layers, how long an input may be, and how a
loaded encoder must be batched to score each text as it scores alone (`LoadedModel.is_padding_safe`,
from the padding probe of padding.py; `LoadedModel.encode` holds BigBird to its configured
attention mode). The embedder asks the loaded model; it never learns family names.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import logging
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Sequence

import torch

from .devices import DTYPES, with_index
from .inputs import InputError
from .notes import advice
from .padding import PROBE_TEXT, padding_is_safe
from .sources import EMBEDDED_MODEL_NAME, hub_kwargs, load_config, resolve_source

logger = logging.getLogger(__name__)

DEFAULT_MULTILINGUAL_MODEL = "bert-base-multilingual-cased"

# Tokenizer classes that the official package encodes with a prefix space (GPT-2 byte-level BPE).
PREFIX_SPACE_TOKENIZER_CLASSES = frozenset(
    {"GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer", "RobertaTokenizerFast"}
)

# Model types whose position ids start after the padding index (max positions = n - 2).
_OFFSET_POSITION_MODEL_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"})
_ENCODER_ONLY_T5_TYPES = frozenset({"t5", "mt5", "umt5", "byt5"})
_SENTINEL_MAX_LENGTH = 1_000_000


# The official bert-score tables, shipped as data beside this module: bertscore/data/model_tables.json,
# copied from bert_score/utils.py v0.3.13 (lang2model, model2layers; tests/test_models_table.py compares).
_OFFICIAL = json.loads(resources.files("bertscore").joinpath("data/model_tables.json").read_text(encoding="utf-8"))

# The official language -> default model table.
LANG_TO_MODEL: dict[str, str] = dict(_OFFICIAL["lang_to_model"])

# Default layer per model: the official table, plus the embedded offline default (a
# sentence-transformers model tuned on its last layer).
MODEL_TO_LAYERS: dict[str, int] = {**_OFFICIAL["model_to_layers"], EMBEDDED_MODEL_NAME: 6}


# The methods through which a fast tokenizer's `__call__` reaches its backend (transformers 4 and 5).
_ENCODING_METHODS = ("__call__", "_call_one", "_encode_plus", "_batch_encode_plus", "encode_plus", "batch_encode_plus",
                     "set_truncation_and_padding")


def fast_backend(tokenizer: Any) -> Any | None:
    """The tokenizers-library backend that `prepared_backend` encodes with, as it is; None where
    the tokenizer is called instead (a slow tokenizer, or a class with its own encoding)."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # pragma: no cover - every supported transformers has it
        return None
    backend = getattr(tokenizer, "_tokenizer", None)
    if not isinstance(tokenizer, PreTrainedTokenizerFast) or not getattr(tokenizer, "is_fast", False) or backend is None:
        return None
    kind = type(tokenizer)
    if any(getattr(kind, name, None) is not getattr(PreTrainedTokenizerFast, name, None) for name in _ENCODING_METHODS):
        return None
    return backend


def prepared_backend(tokenizer: Any) -> Any | None:
    """The tokenizers-library backend of `tokenizer`, set as the tokenizer's own untruncated call sets it.

    Only for a fast tokenizer whose class encodes exactly as transformers' fast base class does
    (none of `_ENCODING_METHODS` overridden); None otherwise (slow tokenizers, classes with their
    own encoding), and the caller then calls the tokenizer. Calling the backend directly skips the
    Python dict that transformers builds for every text and, with `encode_batch_fast`, the character
    offsets that nothing here reads: about a fifth of tokenizing's time on one thread (8,731 WMT17
    texts with MiniLM's tokenizer, both ways side by side in one process).
    Before encoding, the backend is put in the state that `tokenizer(texts, truncation=False)`
    puts it in: no truncation and no padding (a user's earlier call may have left them on) and the
    tokenizer's `split_special_tokens`.
    """
    backend = fast_backend(tokenizer)
    if backend is None:
        return None
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:  # the attribute: tokenizers >= 0.15
        backend.encode_special_tokens = split
    return backend


def default_model_for_lang(lang: str) -> str:
    """The official default model for a language code (any unknown code -> multilingual BERT)."""
    return LANG_TO_MODEL.get(lang.lower(), DEFAULT_MULTILINGUAL_MODEL)


def unknown_layer_message(model_type: str, last_layer: int) -> str:
    """What a door says when `model_type` has no official default layer (its last one is used)."""
    return (f"no default layer is known for {model_type!r}: using its last layer ({last_layer}); "
            f"{advice('num_layers', last_layer)} to keep it, or measure which layer agrees best with human "
            f"judgements: `bertscore layers --model {model_type} --data JUDGEMENTS` (docs/layers.md)")


def count_layers(config: Any) -> int:
    """Number of transformer layers of an encoder config."""
    for attr in ("num_hidden_layers", "num_layers", "n_layers", "encoder_layers"):
        value = getattr(config, attr, None)
        if isinstance(value, int):
            return value
    raise InputError(f"cannot tell how many layers a {type(config).__name__} model has")


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
                    input_ids, attention_mask = _pad_to_blocks(input_ids, attention_mask, self.encoder.config)
            output = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=self.all_layers
            )
        if not self.all_layers:
            return output[0][:, :length]
        return torch.stack([state[:, :length] for state in output.hidden_states], dim=1)

    def with_placement(self, device: torch.device, dtype: str) -> "LoadedModel":
        """This model on `device` in `dtype`: itself when it already is, else a separate copy.

        A device change copies the encoder; a dtype change reloads it the way transformers
        loads reduced precision (modules kept in fp32 stay fp32).
        """
        device = with_index(torch.device(device))  # "cuda" is cuda:0 (current): the same place, no copy
        if device == self.device and dtype == self.dtype:
            return self
        if dtype != self.dtype:
            logger.info("loading a separate %s copy of %s on %s", dtype, self.name, device)
            return load_model(self.name, self.num_layers, self.all_layers, device=device, dtype=dtype)
        logger.info("copying %s to %s (the shared copy stays on %s)", self.name, device, self.device)
        encoder = copy.deepcopy(self.encoder).to(device)
        return dataclasses.replace(self, encoder=encoder, device=device)


def tokenizer_library_versions(tokenizer: Any) -> tuple[str, str]:
    """(tokenizers version, sentencepiece version or "" where the tokenizer is not a sentencepiece
    model): both can change token ids, and so the numbers, at a fixed transformers version."""
    uses_sentencepiece = str(getattr(tokenizer, "vocab_file", "") or "").endswith(".model")
    return _installed_version("tokenizers"), _installed_version("sentencepiece") if uses_sentencepiece else ""


@functools.lru_cache(maxsize=None)
def _installed_version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


def special_layout(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special ids that `tokenizer(text)` puts before and after one sequence's content.

    Read off a probe encoded with and without special tokens (transformers 5 fast tokenizers
    have no `build_inputs_with_special_tokens`).
    """
    probe = "hello world"
    with_special = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    content = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    for lead in range(len(with_special) - len(content) + 1):
        if with_special[lead : lead + len(content)] == content:
            return tuple(with_special[:lead]), tuple(with_special[lead + len(content) :])
    raise InputError(f"cannot locate the content inside {type(tokenizer).__name__}'s special tokens")


def load_tokenizer(source: str) -> tuple[Any, bool]:
    """The fast tokenizer of `source`, built with a prefix space where the official package adds one.

    The official package passes `add_prefix_space=True` per call, which transformers 5 ignores;
    we set it at construction, so RoBERTa/GPT-2 tokenize as the published numbers did.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs(source))
    except Exception as error:  # noqa: BLE001 - any failure to build the fast one: the slow one decides
        # transformers 4's BlenderbotSmallTokenizerFast cannot read its own model's subword-nmt files,
        # which the slow tokenizer (the one the official package uses) reads.
        logger.info("the fast tokenizer of %s could not be built (%s): using the slow one", source, error)
        tokenizer = AutoTokenizer.from_pretrained(source, use_fast=False, **hub_kwargs(source))
    class_names = {cls.__name__ for cls in type(tokenizer).__mro__}
    add_prefix_space = bool(class_names & PREFIX_SPACE_TOKENIZER_CLASSES)
    if add_prefix_space and not getattr(tokenizer, "add_prefix_space", False):
        tokenizer = AutoTokenizer.from_pretrained(source, add_prefix_space=True, **hub_kwargs(source))
    return tokenizer, add_prefix_space


def resolve_max_length(tokenizer: Any, config: Any) -> int:
    """The tokenizer's max length, capped by the model's positions when it is a sentinel."""
    declared = int(getattr(tokenizer, "model_max_length", _SENTINEL_MAX_LENGTH) or _SENTINEL_MAX_LENGTH)
    if declared < _SENTINEL_MAX_LENGTH:
        return declared
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", "") in _OFFSET_POSITION_MODEL_TYPES:
            positions -= (config.pad_token_id or 0) + 1
        return positions
    logger.warning("%s declares no max length; truncating inputs at 512 tokens", type(config).__name__)
    return 512


def has_position_limit(config: Any) -> bool:
    """Whether the encoder has a fixed number of (absolute) positions, which windows work around.

    Models without `max_position_embeddings` (T5's relative buckets, XLNet) have no fixed limit:
    long_texts="window" does not apply to them, and they keep today's truncation at max_length.
    """
    positions = getattr(config, "max_position_embeddings", None)
    return isinstance(positions, int) and positions > 0


def attention_mode_for(config: Any, configured: str, length: int) -> str:
    """The attention mode a BigBird-kind encoder configured with `configured` uses on inputs of
    `length` tokens: block-sparse only above (5 + 2 x random blocks) x block size tokens, below
    which transformers' forward itself switches to full attention (with a warning, and for good)."""
    if configured != "block_sparse":
        return configured
    full_up_to = (5 + 2 * config.num_random_blocks) * config.block_size
    return "original_full" if length <= full_up_to else "block_sparse"


def _pad_to_blocks(input_ids: torch.Tensor, attention_mask: torch.Tensor, config: Any) -> tuple[torch.Tensor, ...]:
    """Inputs padded to a whole number of `config.block_size` blocks with the pad token, masked: what
    transformers' block-sparse BigBird does to its input itself (`_pad_to_block_size`)."""
    extra = -input_ids.shape[1] % config.block_size
    if not extra:
        return input_ids, attention_mask
    return (torch.nn.functional.pad(input_ids, (0, extra), value=config.pad_token_id),
            torch.nn.functional.pad(attention_mask, (0, extra), value=0))


def _truncate(model: torch.nn.Module, num_layers: int) -> torch.nn.Module:
    """Keep the first `num_layers` layers, as the official package does per architecture."""
    if hasattr(model, "n_layers"):  # XLM
        model.n_layers = num_layers
    elif hasattr(model, "layer"):  # XLNet
        model.layer = torch.nn.ModuleList(model.layer[:num_layers])
    elif hasattr(model, "encoder"):
        encoder = model.encoder
        if hasattr(encoder, "albert_layer_groups"):  # ALBERT
            model.config.num_hidden_layers = num_layers
        elif hasattr(encoder, "block"):  # T5 (its final norm still applies, as official)
            encoder.block = torch.nn.ModuleList(encoder.block[:num_layers])
        elif hasattr(encoder, "layer"):  # BERT, RoBERTa, ELECTRA, DeBERTa, ...
            encoder.layer = torch.nn.ModuleList(encoder.layer[:num_layers])
        elif hasattr(encoder, "layers"):  # SqueezeBERT
            encoder.layers = torch.nn.ModuleList(encoder.layers[:num_layers])
        else:
            raise InputError(f"do not know how to truncate {type(model).__name__}")
    elif hasattr(model, "block"):  # T5 encoder stack
        model.block = torch.nn.ModuleList(model.block[:num_layers])
    elif hasattr(model, "transformer"):  # DistilBERT
        model.transformer.layer = torch.nn.ModuleList(model.transformer.layer[:num_layers])
    elif hasattr(model, "layers"):  # BART / mBART encoder
        model.layers = torch.nn.ModuleList(model.layers[:num_layers])
    else:
        raise InputError(f"do not know how to truncate {type(model).__name__} to {num_layers} layers")
    return model


def load_model(
    model_type: str,
    num_layers: int | None = None,
    all_layers: bool = False,
    device: str | torch.device = "cpu",
    dtype: str = "float32",
) -> LoadedModel:
    """Load tokenizer and encoder for `model_type` (hub id, local folder or embedded name).

    `num_layers=None` takes the official default layer for known models, else the last layer
    (with a warning). The encoder is truncated to its first `num_layers` layers unless
    `all_layers`, where every hidden state (embeddings included) is returned instead. It is
    loaded in `dtype` (a name of `DTYPES`) the way transformers loads reduced precision, then
    placed on `device`, once: the result never moves.
    """
    from transformers.utils import logging as hf_logging

    progress_was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no per-tensor "Loading weights" bar on every load
    try:
        return _load_model(model_type, num_layers, all_layers, with_index(torch.device(device)), dtype)
    finally:
        if progress_was_enabled:
            hf_logging.enable_progress_bar()


def _dtype_kwargs(dtype: str) -> dict[str, Any]:
    """`dtype=` (transformers >= 4.56) or `torch_dtype=` (older) for from_pretrained."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": DTYPES[dtype]}


def _load_model(
    model_type: str, num_layers: int | None, all_layers: bool, device: torch.device, dtype: str
) -> LoadedModel:
    from transformers import AutoModel

    if dtype not in DTYPES:
        raise InputError(f"dtype {dtype!r} is not supported; use one of {sorted(DTYPES)}")
    source, revision = resolve_source(model_type)
    config = load_config(source)
    if revision is None:
        commit = getattr(config, "_commit_hash", None)
        revision = str(commit) if commit else None
    model_kind = getattr(config, "model_type", "")
    kwargs = {**_dtype_kwargs(dtype), **hub_kwargs(source)}
    if model_kind in _ENCODER_ONLY_T5_TYPES:
        from transformers import T5EncoderModel

        model = T5EncoderModel.from_pretrained(source, **kwargs)
    else:
        model = AutoModel.from_pretrained(source, **kwargs)
    if hasattr(model, "decoder") and hasattr(model, "encoder"):
        model = model.encoder
    total_layers = count_layers(model.config)
    layer_guessed = False
    if num_layers is None:
        num_layers = MODEL_TO_LAYERS.get(model_type)
        if num_layers is None:  # every scoring call notes it (input_notes); with all layers none is chosen
            num_layers, layer_guessed = total_layers, not all_layers
    if not 0 <= num_layers <= total_layers:
        raise InputError(f"num_layers={num_layers} is out of range: {model_type!r} has layers 0..{total_layers}")
    if not all_layers:
        model = _truncate(model, num_layers)
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
