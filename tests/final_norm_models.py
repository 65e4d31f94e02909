"""Tiny random encoders with a final norm after their stack of layers, built offline (for the layer tests).

An encoder cut at layer k still applies its final norm (T5's RMSNorm, mBART's LayerNorm), so its
all-layers hidden state k is not what `num_layers=k` scores. Each builder saves a 3-layer model
with the embedded MiniLM's WordPiece tokenizer into `out_dir` ("t5" in the T5 folder's name, as the
official package needs). Norm weights start at 1 (and biases at 0), and such a norm barely moves
the cosines (an RMSNorm of weight 1 only rescales a token's vector; a LayerNorm of states whose mean
is already about 0 nearly so): the builders draw them at random, as trained weights are. (Kept apart from tests/tiny_models.py while that file is extended for issue 25.)
"""

from __future__ import annotations

from pathlib import Path

import torch


def _tokenizer(minilm_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_dir)


def build_t5(minilm_dir: Path, out_dir: Path) -> Path:
    from transformers import T5Config, T5EncoderModel

    tokenizer = _tokenizer(minilm_dir)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=4, d_ff=32, num_layers=3, num_heads=4,
                      pad_token_id=tokenizer.pad_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    model = T5EncoderModel(config)
    with torch.no_grad():
        model.encoder.final_layer_norm.weight.uniform_(0.2, 2.0)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_mbart(minilm_dir: Path, out_dir: Path) -> Path:
    from transformers import MBartConfig, MBartModel

    tokenizer = _tokenizer(minilm_dir)
    torch.manual_seed(0)
    config = MBartConfig(vocab_size=len(tokenizer), d_model=16, encoder_layers=3, decoder_layers=1,
                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32,
                         max_position_embeddings=130, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                         decoder_start_token_id=tokenizer.sep_token_id)
    model = MBartModel(config)
    with torch.no_grad():  # a LayerNorm at its initial 1 and 0 barely moves cosines of zero-mean states
        model.encoder.layer_norm.weight.uniform_(0.2, 2.0)
        model.encoder.layer_norm.bias.normal_(0.0, 0.5)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_without_layers(out_dir: Path) -> Path:
    """A BERT config with no transformer layers, and no weights at all: whatever reads more than
    the config fails, so an error about its layers proves that no model was loaded."""
    from transformers import BertConfig

    out_dir.mkdir(parents=True, exist_ok=True)
    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=0, num_attention_heads=4,
               intermediate_size=32).save_pretrained(out_dir)
    return out_dir
