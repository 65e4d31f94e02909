"""BERT's forward in plain torch, from a folder's config and single safetensors file.

The loader (models.py) uses it for a plain BERT encoder loaded on the CPU in float32 (the
embedded MiniLM among them): importing transformers' model classes costs seconds (torch's
distributed and compiler stacks, sympy, scipy), more than loading and running the model. It is
transformers' `BertModel` op for op, so its hidden states are bit for bit transformers' (its
default "sdpa" attention, in 4.x and 5.x): the same modules under the same names (its state dict
is the checkpoint's; code that reaches for `encoder.layer` or `embeddings` finds them), the same
output class. Its weights are the file's tensors where safetensors maps them, not copies, as
transformers 5.x holds them: on AVX2 CPUs a one-row product (the pooler on one text) rounds by
where its weight lies in memory, so the pooler output is bit for bit too. `supports` names the configs it implements; any other goes to transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

WEIGHTS_FILE = "model.safetensors"
BUFFER_KEYS = frozenset({"embeddings.position_ids", "embeddings.token_type_ids"})  # recomputed, never loaded
TRANSFORMERS_PREFIX = "bert."  # a checkpoint of a model with heads (BertForMaskedLM ...): its encoder's weights
# Config fields that change BertModel's forward, and the only values implemented here.
REQUIRED = {"model_type": "bert", "hidden_act": "gelu", "is_decoder": False, "add_cross_attention": False,
            "chunk_size_feed_forward": 0, "output_attentions": False, "return_dict": True}
OPTIONAL = {"position_embedding_type": (None, "absolute"), "_attn_implementation_internal": (None, "sdpa"),
            "torchscript": (None, False), "quantization_config": (None,), "pruned_heads": (None, {})}


def supports(config: Any) -> bool:
    """Whether `config` is a BERT whose forward this module computes exactly as transformers does."""
    if any(getattr(config, name, None) != value for name, value in REQUIRED.items()):
        return False
    if any(getattr(config, name, None) not in values for name, values in OPTIONAL.items()):
        return False
    return config.hidden_size % config.num_attention_heads == 0


def weights_file(folder: str | Path) -> Path | None:
    """The folder's single safetensors file, or None (sharded, .bin only, or not a folder)."""
    path = Path(folder) / WEIGHTS_FILE
    return path if path.is_file() and not (Path(folder) / f"{WEIGHTS_FILE}.index.json").exists() else None


def encoder_weights(path: Path) -> dict[str, torch.Tensor]:
    """The encoder's tensors of a safetensors file, named as `BertModel` names them (a heads
    model's "bert." prefix dropped, its heads left out; the position and token type buffers left out)."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    if any(name.startswith(TRANSFORMERS_PREFIX) for name in tensors):
        tensors = {name[len(TRANSFORMERS_PREFIX):]: t for name, t in tensors.items() if name.startswith(TRANSFORMERS_PREFIX)}
    return {name: t for name, t in tensors.items() if name not in BUFFER_KEYS}


def load_bert(folder: str | Path, config: Any) -> "BertEncoder | None":
    """The encoder of `folder` in float32 on the CPU, in eval mode; None when it is not one this
    module implements (`supports`), or its weights are not exactly a `BertModel`'s with pooler."""
    path = weights_file(folder)
    if path is None or not supports(config):
        return None
    weights = encoder_weights(path)
    model = BertEncoder(config)
    expected = model.state_dict()
    if set(weights) != set(expected) or any(
            weights[name].shape != tensor.shape or not weights[name].is_floating_point()
            for name, tensor in expected.items()):
        return None
    # assign: the module holds the file's tensors where safetensors maps them, as transformers 5 does,
    # not copies: a one-row product (the pooler on one text) rounds by its weight's address on some CPUs
    model.load_state_dict(weights, assign=True)
    return model.eval()


class Linear(nn.Linear):
    """nn.Linear left uninitialised: its weights come from the checkpoint (random ones would cost a tenth
    of a second at every load, and building on the meta device imports torch's compiler stack)."""

    def reset_parameters(self) -> None:
        pass


class Embedding(nn.Embedding):
    """nn.Embedding left uninitialised, as `Linear`."""

    def reset_parameters(self) -> None:
        pass


class Embeddings(nn.Module):
    """Word + token type + absolute position embeddings, then LayerNorm (`BertEmbeddings`)."""

    def __init__(self, config: Any):
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None,
                position_ids: torch.Tensor | None) -> torch.Tensor:
        batch_size, length = input_ids.shape
        if position_ids is None:
            position_ids = self.position_ids[:, :length]
        if token_type_ids is None:  # zeros, as transformers' buffer gives them
            token_type_ids = self.token_type_ids[:, :length].expand(batch_size, length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class SelfAttention(nn.Module):
    """Query, key and value projections and scaled dot-product attention (`BertSelfAttention`, sdpa)."""

    def __init__(self, config: Any):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.attention_head_size ** -0.5
        self.query = Linear(config.hidden_size, config.hidden_size)
        self.key = Linear(config.hidden_size, config.hidden_size)
        self.value = Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
        query, key, value = (project(hidden_states).view(shape).transpose(1, 2)
                             for project in (self.query, self.key, self.value))
        attended = nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=self.dropout.p if self.training else 0.0,
            scale=self.scaling)
        return attended.transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)


class DenseResidualNorm(nn.Module):
    """dense, dropout, then LayerNorm of it plus the block's input (`BertSelfOutput`, `BertOutput`)."""

    def __init__(self, config: Any, in_features: int):
        super().__init__()
        self.dense = Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class Attention(nn.Module):
    """Self-attention and its output block (`BertAttention`)."""

    def __init__(self, config: Any):
        super().__init__()
        self.self = SelfAttention(config)
        self.output = DenseResidualNorm(config, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(hidden_states, mask), hidden_states)


class Intermediate(nn.Module):
    """dense, then the exact (erf) GELU (`BertIntermediate` with hidden_act "gelu")."""

    def __init__(self, config: Any):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.dense(hidden_states))


class Layer(nn.Module):
    """One transformer layer (`BertLayer`): attention, then the feed-forward block."""

    def __init__(self, config: Any):
        super().__init__()
        self.attention = Attention(config)
        self.intermediate = Intermediate(config)
        self.output = DenseResidualNorm(config, config.intermediate_size)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        attended = self.attention(hidden_states, mask)
        return self.output(self.intermediate(attended), attended)


class Encoder(nn.Module):
    """The stack of layers (`BertEncoder`): `layer` may be cut to its first k (truncate_to_layers)."""

    def __init__(self, config: Any):
        super().__init__()
        self.layer = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))


class Pooler(nn.Module):
    """tanh of a dense layer on the first token's state (`BertPooler`)."""

    def __init__(self, config: Any):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


def attention_mask_4d(attention_mask: torch.Tensor | None, length: int) -> torch.Tensor | None:
    """The mask transformers hands sdpa: none when nothing is masked, else [B, 1, L, L] booleans."""
    if attention_mask is None:
        return None
    keep = attention_mask.to(torch.bool)
    if keep.all():
        return None
    return keep[:, None, None, :].expand(keep.shape[0], 1, length, length)


class BertEncoder(nn.Module):
    """transformers' `BertModel` (encoder and pooler) for the configs `supports` accepts, built to
    be loaded (`load_bert`: its weights are uninitialised until then).

    Called as transformers' model is, `model(input_ids, attention_mask=..., output_hidden_states=...)`,
    it returns the same output: `[0]` the last layer's states, `.hidden_states` the embeddings
    and every layer's states when asked.
    """

    def __init__(self, config: Any):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooler = Pooler(config)

    @property
    def device(self) -> torch.device:
        return self.embeddings.word_embeddings.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embeddings.word_embeddings.weight.dtype

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                output_hidden_states: bool | None = None, return_dict: bool | None = None) -> Any:
        from transformers.modeling_outputs import BaseModelOutputWithPoolingAndCrossAttentions

        if output_hidden_states is None:
            output_hidden_states = bool(getattr(self.config, "output_hidden_states", False))
        if not isinstance(output_hidden_states, bool):
            raise TypeError(f"output_hidden_states must be True or False here, not {output_hidden_states!r}")
        hidden_states = self.embeddings(input_ids, token_type_ids, position_ids)
        mask = attention_mask_4d(attention_mask, input_ids.shape[1])
        states = [hidden_states]
        for layer in self.encoder.layer:
            hidden_states = layer(hidden_states, mask)
            states.append(hidden_states)
        output = BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=hidden_states, pooler_output=self.pooler(hidden_states),
            hidden_states=tuple(states) if output_hidden_states else None)
        return output if return_dict is not False else output.to_tuple()
