"""What differs by architecture: how many layers an encoder has, how it is cut to its first k,
how long its input may be, whether its positions are absolute, and BigBird's attention mode by length.
The official package's per-architecture rules; the loader (models.py) applies them.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from ..inputs import InputError
from ..wording import a_type

logger = logging.getLogger(__name__)

# Model types whose position ids start after the padding index (max positions = n - 2).
OFFSET_POSITION_MODEL_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"})
ENCODER_ONLY_T5_TYPES = frozenset({"t5", "mt5", "umt5", "byt5"})
SENTINEL_MAX_LENGTH = 1_000_000


def count_layers(config: Any) -> int:
    """Number of transformer layers of an encoder config."""
    for attr in ("num_hidden_layers", "num_layers", "n_layers", "encoder_layers"):
        value = getattr(config, attr, None)
        if isinstance(value, int):
            return value
    raise InputError(f"cannot tell how many layers {a_type(config)} model has")


def resolve_max_length(tokenizer: Any, config: Any) -> int:
    """The tokenizer's max length, capped by the model's positions when it is a sentinel."""
    declared = int(getattr(tokenizer, "model_max_length", SENTINEL_MAX_LENGTH) or SENTINEL_MAX_LENGTH)
    if declared < SENTINEL_MAX_LENGTH:
        return declared
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", "") in OFFSET_POSITION_MODEL_TYPES:
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


def pad_to_blocks(input_ids: torch.Tensor, attention_mask: torch.Tensor, config: Any) -> tuple[torch.Tensor, ...]:
    """Inputs padded to a whole number of `config.block_size` blocks with the pad token, masked: what
    transformers' block-sparse BigBird does to its input itself (`_pad_to_block_size`)."""
    extra = -input_ids.shape[1] % config.block_size
    if not extra:
        return input_ids, attention_mask
    return (torch.nn.functional.pad(input_ids, (0, extra), value=config.pad_token_id),
            torch.nn.functional.pad(attention_mask, (0, extra), value=0))


def truncate_to_layers(model: torch.nn.Module, num_layers: int) -> torch.nn.Module:
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
