"""One tiny random model per architecture family of the official model table, built offline in seconds.

Every family of ``bert_score.utils.model2layers`` (and ModernBERT, which the official table
predates) gets a builder here: a tokenizer of the family's real kind (WordPiece, byte-level BPE,
SentencePiece Unigram or BPE, bytes, Moses+BPE), trained on the fixed corpus of
``tiny_models.training_corpus()`` and laid out with the family's special tokens, and a random
encoder (``torch.manual_seed(SEED)``) of hidden size 32 with 3 layers, saved as the family's
published checkpoints are (encoder-decoder models whole, with a 1-layer decoder: both packages
score their encoder). The folders load with ``AutoTokenizer``/``AutoModel`` and serve both
packages as ``model_type=str(path)``; a T5-kind folder has "t5" in its name, as the official
package needs it to load a ``T5EncoderModel``.

``FAMILIES`` maps a family name to its ``Family`` (builder, the official models of that family,
the tokenizer kind, whether the encoder ends in a layer norm after its stack); ``build(name,
root)`` builds one, ``build_families(root)`` all. tests/test_families.py and
benchmarks/families.py use the same builders.
"""

from __future__ import annotations

import contextlib
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import oracle
import torch

from tiny_models import (
    MODEL_MAX_LENGTH,
    NUM_LAYERS,
    SEED,
    VOCAB_SIZE,
    _byte_level_bpe_files,
    _prepare,
    _save_tokenizer,
    _sentencepiece_model,
    _wordpiece_vocab,
    build_electra,
    build_roberta,
    build_xlmr,
    training_corpus,
)

HIDDEN, HEADS, FFN = 32, 4, 64
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")

# Block-sparse BigBird: texts longer than (5 + 2 x random blocks) x block size = 28 tokens get
# block-sparse attention, shorter ones full attention (transformers decides by the input's length).
BIGBIRD_BLOCK_SIZE, BIGBIRD_RANDOM_BLOCKS = 4, 1
BIGBIRD_FULL_ATTENTION_UP_TO = (5 + 2 * BIGBIRD_RANDOM_BLOCKS) * BIGBIRD_BLOCK_SIZE


# ----- vocabularies, trained once per process ------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _wordpiece_file(specials: tuple[str, ...]) -> bytes:
    """A lowercase WordPiece ``vocab.txt`` with `specials` first."""
    vocab = _wordpiece_vocab(training_corpus(), list(specials))
    return "".join(token + "\n" for token in vocab).encode("utf-8")


@functools.lru_cache(maxsize=None)
def _bpe_files(specials: tuple[str, ...]) -> dict[str, bytes]:
    """``vocab.json`` + ``merges.txt`` of a byte-level BPE (GPT-2 format) with `specials` first."""
    return _byte_level_bpe_files(training_corpus(), list(specials))


@functools.lru_cache(maxsize=None)
def _spm(model_type: str = "unigram", **layout: Any) -> bytes:
    return _sentencepiece_model(training_corpus(), model_type, **layout)


# SentencePiece layouts of the real models (ids of the trainer's own pieces, extra special pieces).
T5_LAYOUT = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)  # also Pegasus
ALBERT_LAYOUT = dict(pad_id=0, unk_id=1, bos_id=2, eos_id=3, bos_piece="[CLS]", eos_piece="[SEP]",
                     user_defined_symbols="[MASK]")
XLNET_LAYOUT = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                    user_defined_symbols="<cls>,<sep>,<pad>,<mask>,<eod>,<eop>")
BIGBIRD_LAYOUT = dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3, user_defined_symbols="[SEP],[CLS],[MASK]")
DEBERTA_V2_LAYOUT = dict(pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]",
                         eos_piece="[SEP]", unk_piece="[UNK]")


def _tokenizer(tokenizer_class: str, files: dict[str, bytes], out_dir: Path, **kwargs: Any) -> Any:
    """`_save_tokenizer` (the one construction every tested transformers version accepts)."""
    return _save_tokenizer(tokenizer_class, files, out_dir, **kwargs)


def _ids(tok: Any) -> dict[str, Any]:
    """The special-token ids a config names, from the tokenizer that serves it."""
    return dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)


def _save(model: torch.nn.Module, out_dir: Path) -> Path:
    """Save `model` with its norms' weights and biases drawn at random (`_randomise_norms`)."""
    _randomise_norms(model)
    model.eval()
    model.save_pretrained(out_dir)
    return out_dir


def _randomise_norms(model: torch.nn.Module) -> None:
    """Norm weights in [0.5, 1.5] and biases ~ N(0, 0.1), as trained models have them, not 1 and 0.

    A freshly initialised norm only rescales (RMS norm) or centres (layer norm) each state, which
    leaves cosine similarities (nearly) as they were: a final norm after the stack would then
    look as if it changed nothing.
    """
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for module in model.modules():
            if "norm" not in type(module).__name__.lower():
                continue
            for name, param in module.named_parameters(recurse=False):
                if name == "weight":
                    param.copy_(0.5 + torch.rand(param.shape, generator=generator))
                elif name == "bias":
                    param.copy_(0.1 * torch.randn(param.shape, generator=generator))


def _seeded(make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(SEED)
    return make()


_BERT_DIMS = dict(hidden_size=HIDDEN, num_hidden_layers=NUM_LAYERS, num_attention_heads=HEADS,
                  intermediate_size=FFN, max_position_embeddings=MODEL_MAX_LENGTH)
_SEQ2SEQ_DIMS = dict(d_model=HIDDEN, encoder_layers=NUM_LAYERS, decoder_layers=1, encoder_attention_heads=HEADS,
                     decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN)


# ----- WordPiece -----------------------------------------------------------------------------------
def build_bert(out_dir: Path) -> Path:
    """BERT (the control): lowercase WordPiece, as bert-base-uncased."""
    from transformers import BertConfig, BertModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("BertTokenizer", {"vocab.txt": _wordpiece_file(BERT_SPECIALS)}, out_dir, do_lower_case=True)
    config = BertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **_BERT_DIMS)
    return _save(_seeded(lambda: BertModel(config)), out_dir)


def build_distilbert(out_dir: Path) -> Path:
    from transformers import DistilBertConfig, DistilBertModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("DistilBertTokenizer", {"vocab.txt": _wordpiece_file(BERT_SPECIALS)}, out_dir, do_lower_case=True)
    config = DistilBertConfig(vocab_size=len(tok), dim=HIDDEN, n_layers=NUM_LAYERS, n_heads=HEADS, hidden_dim=FFN,
                              max_position_embeddings=MODEL_MAX_LENGTH, pad_token_id=tok.pad_token_id)
    return _save(_seeded(lambda: DistilBertModel(config)), out_dir)


def build_convbert(out_dir: Path) -> Path:
    """ConvBERT: span-based dynamic convolution beside attention (kernel 9, as YituTech/conv-bert-*)."""
    from transformers import ConvBertConfig, ConvBertModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("ConvBertTokenizer", {"vocab.txt": _wordpiece_file(BERT_SPECIALS)}, out_dir, do_lower_case=True)
    config = ConvBertConfig(vocab_size=len(tok), embedding_size=HIDDEN, head_ratio=2, conv_kernel_size=9,
                            num_groups=1, pad_token_id=tok.pad_token_id, **_BERT_DIMS)
    return _save(_seeded(lambda: ConvBertModel(config)), out_dir)


def build_squeezebert(out_dir: Path) -> Path:
    """SqueezeBERT: grouped convolutions for the projections; its blocks sit in `encoder.layers`."""
    from transformers import SqueezeBertConfig, SqueezeBertModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("SqueezeBertTokenizer", {"vocab.txt": _wordpiece_file(BERT_SPECIALS)}, out_dir,
                     do_lower_case=True)
    config = SqueezeBertConfig(vocab_size=len(tok), embedding_size=HIDDEN, pad_token_id=tok.pad_token_id,
                               **_BERT_DIMS)
    return _save(_seeded(lambda: SqueezeBertModel(config)), out_dir)


def build_mpnet(out_dir: Path) -> Path:
    """MPNet: WordPiece with RoBERTa's <s> ... </s> specials, relative position buckets."""
    from transformers import MPNetConfig, MPNetModel

    out_dir = _prepare(out_dir)
    specials = ("<s>", "<pad>", "</s>", "[UNK]", "<mask>")
    tok = _tokenizer("MPNetTokenizer", {"vocab.txt": _wordpiece_file(specials)}, out_dir, do_lower_case=True)
    config = MPNetConfig(vocab_size=len(tok), **{**_BERT_DIMS, "max_position_embeddings": MODEL_MAX_LENGTH + 2},
                         **_ids(tok))
    return _save(_seeded(lambda: MPNetModel(config)), out_dir)


def build_prophetnet(out_dir: Path) -> Path:
    """ProphetNet: WordPiece (``prophetnet.tokenizer``), [SEP] after the text only."""
    from transformers import ProphetNetConfig, ProphetNetModel

    out_dir = _prepare(out_dir)
    specials = ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "[X_SEP]")
    tok = _tokenizer("ProphetNetTokenizer", {"prophetnet.tokenizer": _wordpiece_file(specials)}, out_dir)
    config = ProphetNetConfig(
        vocab_size=len(tok), hidden_size=HIDDEN, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN,
        num_encoder_layers=NUM_LAYERS, num_decoder_layers=1, num_encoder_attention_heads=HEADS,
        num_decoder_attention_heads=HEADS, max_position_embeddings=MODEL_MAX_LENGTH, ngram=2,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
        decoder_start_token_id=tok.sep_token_id,
    )
    return _save(_seeded(lambda: ProphetNetModel(config)), out_dir)


# ----- byte-level BPE ------------------------------------------------------------------------------
def _bpe_tokenizer(tokenizer_class: str, out_dir: Path, specials: tuple[str, ...] = ROBERTA_SPECIALS,
                   **kwargs: Any) -> Any:
    return _tokenizer(tokenizer_class, _bpe_files(specials), out_dir, **kwargs)


def build_longformer(out_dir: Path) -> Path:
    """Longformer: RoBERTa's tokenizer and positions, sliding-window attention (window 8 here)."""
    from transformers import LongformerConfig, LongformerModel

    out_dir = _prepare(out_dir)
    tok = _bpe_tokenizer("LongformerTokenizer", out_dir, add_prefix_space=True)
    config = LongformerConfig(vocab_size=len(tok), attention_window=8, type_vocab_size=1,
                              **{**_BERT_DIMS, "max_position_embeddings": MODEL_MAX_LENGTH + 2}, **_ids(tok))
    return _save(_seeded(lambda: LongformerModel(config)), out_dir)


def build_deberta(out_dir: Path) -> Path:
    """DeBERTa v1: GPT-2 byte-level BPE with [CLS]/[SEP], disentangled relative attention."""
    from transformers import DebertaConfig, DebertaModel

    out_dir = _prepare(out_dir)
    tok = _bpe_tokenizer("DebertaTokenizer", out_dir, specials=("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"))
    config = DebertaConfig(vocab_size=len(tok), relative_attention=True, pos_att_type=["c2p", "p2c"],
                           max_relative_positions=-1, position_biased_input=False, type_vocab_size=0,
                           pad_token_id=tok.pad_token_id, **_BERT_DIMS)
    return _save(_seeded(lambda: DebertaModel(config)), out_dir)


def build_bart(out_dir: Path) -> Path:
    from transformers import BartConfig, BartModel

    out_dir = _prepare(out_dir)
    tok = _bpe_tokenizer("BartTokenizer", out_dir, add_prefix_space=True)
    config = BartConfig(vocab_size=len(tok), max_position_embeddings=MODEL_MAX_LENGTH, **_SEQ2SEQ_DIMS,
                        decoder_start_token_id=tok.eos_token_id, **_ids(tok))
    return _save(_seeded(lambda: BartModel(config)), out_dir)


def build_led(out_dir: Path) -> Path:
    """LED: BART's tokenizer, Longformer's windowed attention in the encoder (window 8 here)."""
    from transformers import LEDConfig, LEDModel

    out_dir = _prepare(out_dir)
    tok = _bpe_tokenizer("LEDTokenizer", out_dir, add_prefix_space=True)
    config = LEDConfig(vocab_size=len(tok), max_encoder_position_embeddings=MODEL_MAX_LENGTH,
                       max_decoder_position_embeddings=MODEL_MAX_LENGTH, attention_window=8, **_SEQ2SEQ_DIMS,
                       decoder_start_token_id=tok.eos_token_id, **_ids(tok))
    return _save(_seeded(lambda: LEDModel(config)), out_dir)


def build_blenderbot(out_dir: Path) -> Path:
    """Blenderbot: byte-level BPE (</s> after the text only), pre-norm encoder with a final layer norm."""
    from transformers import BlenderbotConfig, BlenderbotModel

    out_dir = _prepare(out_dir)
    tok = _bpe_tokenizer("BlenderbotTokenizer", out_dir)
    config = BlenderbotConfig(vocab_size=len(tok), max_position_embeddings=MODEL_MAX_LENGTH, **_SEQ2SEQ_DIMS,
                              decoder_start_token_id=tok.bos_token_id, **_ids(tok))
    return _save(_seeded(lambda: BlenderbotModel(config)), out_dir)


def build_modernbert(out_dir: Path) -> Path:
    """ModernBERT: a byte-level BPE ``tokenizer.json`` (PreTrainedTokenizerFast), rotary positions,
    local and global attention layers, unpadded attention, a final norm."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE
    from transformers import ModernBertConfig, ModernBertModel, PreTrainedTokenizerFast

    out_dir = _prepare(out_dir)
    specials = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    files = _bpe_files(specials)
    vocab = json.loads(files["vocab.json"])
    merges = [tuple(line.split(" ")) for line in files["merges.txt"].decode("utf-8").splitlines()[1:] if line]
    raw = Tokenizer(BPE(vocab, merges))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, model_max_length=MODEL_MAX_LENGTH, pad_token="[PAD]", unk_token="[UNK]",
        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
    )
    tok.save_pretrained(out_dir)
    config = ModernBertConfig(
        vocab_size=len(tok), hidden_size=HIDDEN, num_hidden_layers=NUM_LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, max_position_embeddings=MODEL_MAX_LENGTH, local_attention=8,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
        cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id,
    )
    return _save(_seeded(lambda: ModernBertModel(config)), out_dir)


# ----- subword-nmt BPE (word-final pieces, Moses or punctuation pre-tokenised) ------------------------
@functools.lru_cache(maxsize=None)
def _subword_nmt_bpe() -> tuple[dict[str, int], tuple[str, ...]]:
    """A BPE trained as subword-nmt trains it (the last piece of a word ends in "</w>") on the
    lowercased corpus, punctuation split off: (vocab of pieces, merges "a b" in rank order)."""
    import re

    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizers.models import BPE

    words = [w for text in training_corpus() for w in re.sub(r"([.,!?();:\"'])", r" \1 ", text.lower()).split()]
    raw = Tokenizer(BPE(end_of_word_suffix="</w>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, end_of_word_suffix="</w>",
                                  show_progress=False)
    raw.train_from_iterator(words, trainer=trainer)
    model = json.loads(raw.to_str())["model"]
    merges = tuple(m if isinstance(m, str) else " ".join(m) for m in model["merges"])
    return dict(sorted(model["vocab"].items(), key=lambda item: item[1])), merges


def build_xlm(out_dir: Path) -> Path:
    """XLM: Moses tokenisation (sacremoses), lowercased, accents removed, BPE with "</w>" pieces."""
    from transformers import XLMConfig, XLMModel

    out_dir = _prepare(out_dir)
    pieces, merges = _subword_nmt_bpe()
    specials = ["<s>", "</s>", "<pad>", "<unk>"] + [f"<special{i}>" for i in range(10)]
    vocab = {token: i for i, token in enumerate(specials + [p for p in pieces if p not in specials])}
    files = {"vocab.json": json.dumps(vocab, ensure_ascii=False).encode("utf-8"),
             "merges.txt": "".join(m + "\n" for m in merges).encode("utf-8")}
    tok = _tokenizer("XLMTokenizer", files, out_dir)
    config = XLMConfig(vocab_size=len(tok), emb_dim=HIDDEN, n_layers=NUM_LAYERS, n_heads=HEADS, n_langs=1,
                       max_position_embeddings=MODEL_MAX_LENGTH, pad_index=tok.pad_token_id,
                       unk_index=tok.unk_token_id, bos_index=tok.bos_token_id, eos_index=tok.sep_token_id,
                       pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id)
    return _save(_seeded(lambda: XLMModel(config)), out_dir)


def build_blenderbot_small(out_dir: Path) -> Path:
    """Blenderbot small: lowercased BPE with "@@" continuation pieces, no special tokens around a text."""
    from transformers import BlenderbotSmallConfig, BlenderbotSmallModel

    out_dir = _prepare(out_dir)
    pieces, merges = _subword_nmt_bpe()
    specials = ["__null__", "__start__", "__end__", "__unk__"]
    words = [p[: -len("</w>")] if p.endswith("</w>") else p + "@@" for p in pieces]
    vocab = {token: i for i, token in enumerate(dict.fromkeys(specials + words))}
    files = {"vocab.json": json.dumps(vocab, ensure_ascii=False).encode("utf-8"),
             "merges.txt": ("#version: 0.2\n" + "".join(m + "\n" for m in merges)).encode("utf-8")}
    # transformers 4's fast class cannot read these (its model's own) files: the slow one, as in v5.
    tok = _tokenizer("BlenderbotSmallTokenizer", files, out_dir, use_fast=False)
    config = BlenderbotSmallConfig(vocab_size=len(tok), max_position_embeddings=MODEL_MAX_LENGTH, **_SEQ2SEQ_DIMS,
                                   decoder_start_token_id=tok.bos_token_id, **_ids(tok))
    return _save(_seeded(lambda: BlenderbotSmallModel(config)), out_dir)


# ----- SentencePiece -------------------------------------------------------------------------------
def build_albert(out_dir: Path) -> Path:
    """ALBERT: SentencePiece Unigram (``spiece.model``, [CLS]/[SEP] as its pieces), shared layers."""
    from transformers import AlbertConfig, AlbertModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("AlbertTokenizer", {"spiece.model": _spm(**ALBERT_LAYOUT)}, out_dir)
    config = AlbertConfig(vocab_size=len(tok), embedding_size=16, pad_token_id=tok.pad_token_id,
                          bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, **_BERT_DIMS)
    return _save(_seeded(lambda: AlbertModel(config)), out_dir)


def _build_deberta_v2(out_dir: Path, conv_kernel_size: int) -> Path:
    from transformers import DebertaV2Config, DebertaV2Model

    out_dir = _prepare(out_dir)
    tok = _tokenizer("DebertaV2Tokenizer", {"spm.model": _spm(**DEBERTA_V2_LAYOUT)}, out_dir)
    extra = dict(conv_kernel_size=conv_kernel_size, conv_act="gelu") if conv_kernel_size else {}
    config = DebertaV2Config(
        vocab_size=len(tok), relative_attention=True, position_buckets=16, norm_rel_ebd="layer_norm",
        share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False, max_relative_positions=-1,
        type_vocab_size=0, pad_token_id=tok.pad_token_id, **_BERT_DIMS, **extra,
    )
    return _save(_seeded(lambda: DebertaV2Model(config)), out_dir)


def build_deberta_v3(out_dir: Path) -> Path:
    """DeBERTa-v3: SentencePiece (``spm.model``), shared-key relative attention with log buckets."""
    return _build_deberta_v2(out_dir, conv_kernel_size=0)


def build_deberta_v2_conv(out_dir: Path) -> Path:
    """DeBERTa-v2 with the convolution layer beside the first block (as microsoft/deberta-v2-xlarge)."""
    return _build_deberta_v2(out_dir, conv_kernel_size=3)


def build_xlnet(out_dir: Path) -> Path:
    """XLNet: SentencePiece Unigram, <sep> <cls> after the text, relative attention."""
    from transformers import XLNetConfig, XLNetModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("XLNetTokenizer", {"spiece.model": _spm(**XLNET_LAYOUT)}, out_dir)
    config = XLNetConfig(vocab_size=len(tok), d_model=HIDDEN, n_layer=NUM_LAYERS, n_head=HEADS, d_inner=FFN,
                         **_ids(tok))
    return _save(_seeded(lambda: XLNetModel(config)), out_dir)


def _build_bigbird(out_dir: Path, attention_type: str) -> Path:
    from transformers import BigBirdConfig, BigBirdModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("BigBirdTokenizer", {"spiece.model": _spm(**BIGBIRD_LAYOUT)}, out_dir)
    config = BigBirdConfig(vocab_size=len(tok), attention_type=attention_type, block_size=BIGBIRD_BLOCK_SIZE,
                           num_random_blocks=BIGBIRD_RANDOM_BLOCKS, sep_token_id=tok.sep_token_id, **_BERT_DIMS,
                           **_ids(tok))
    return _save(_seeded(lambda: BigBirdModel(config)), out_dir)


def build_bigbird(out_dir: Path) -> Path:
    """BigBird with full attention (what the real models use below 704 tokens)."""
    return _build_bigbird(out_dir, "original_full")


def build_bigbird_sparse(out_dir: Path) -> Path:
    """BigBird with block-sparse attention in use: block size 4, 1 random block, so texts over 28
    tokens are block-sparse (the real models' 64 and 3 make that 704)."""
    return _build_bigbird(out_dir, "block_sparse")


def _t5_tokenizer(out_dir: Path) -> Any:
    return _tokenizer("T5Tokenizer", {"spiece.model": _spm(**T5_LAYOUT)}, out_dir, extra_ids=0)


def build_t5(out_dir: Path) -> Path:
    """T5: SentencePiece Unigram (</s> after the text), relative buckets, a final RMS norm."""
    from transformers import T5Config, T5Model

    out_dir = _prepare(out_dir)
    tok = _t5_tokenizer(out_dir)
    config = T5Config(vocab_size=len(tok), d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=NUM_LAYERS,
                      num_decoder_layers=1, num_heads=HEADS, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id)
    return _save(_seeded(lambda: T5Model(config)), out_dir)


def build_mt5(out_dir: Path) -> Path:
    """mT5: T5's tokenizer kind, gated-GELU feed-forward, untied embeddings."""
    from transformers import MT5Config, MT5Model

    out_dir = _prepare(out_dir)
    tok = _t5_tokenizer(out_dir)
    config = MT5Config(vocab_size=len(tok), d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=NUM_LAYERS,
                       num_decoder_layers=1, num_heads=HEADS, feed_forward_proj="gated-gelu",
                       tie_word_embeddings=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                       decoder_start_token_id=tok.pad_token_id)
    return _save(_seeded(lambda: MT5Model(config)), out_dir)


def build_byt5(out_dir: Path) -> Path:
    """ByT5: UTF-8 bytes as tokens (no vocabulary file), a T5 with gated-GELU."""
    from transformers import ByT5Tokenizer, T5Config, T5Model

    out_dir = _prepare(out_dir)
    tok = ByT5Tokenizer(model_max_length=MODEL_MAX_LENGTH)
    tok.save_pretrained(out_dir)
    config = T5Config(vocab_size=len(tok), d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=NUM_LAYERS,
                      num_decoder_layers=1, num_heads=HEADS, feed_forward_proj="gated-gelu",
                      tie_word_embeddings=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                      decoder_start_token_id=tok.pad_token_id)
    return _save(_seeded(lambda: T5Model(config)), out_dir)


def build_pegasus(out_dir: Path) -> Path:
    """Pegasus: SentencePiece Unigram behind 103 reserved ids, sinusoidal positions, a final layer norm."""
    from transformers import PegasusConfig, PegasusModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("PegasusTokenizer", {"spiece.model": _spm(**T5_LAYOUT)}, out_dir)
    config = PegasusConfig(vocab_size=len(tok), max_position_embeddings=MODEL_MAX_LENGTH, **_SEQ2SEQ_DIMS,
                           pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                           decoder_start_token_id=tok.pad_token_id)
    return _save(_seeded(lambda: PegasusModel(config)), out_dir)


def build_mbart(out_dir: Path) -> Path:
    """mBART: XLM-R's SentencePiece layout plus language codes (</s> en_XX after the text), final norms."""
    from transformers import MBartConfig, MBartModel

    out_dir = _prepare(out_dir)
    tok = _tokenizer("MBartTokenizer", {"sentencepiece.bpe.model": _spm()}, out_dir, src_lang="en_XX")
    config = MBartConfig(vocab_size=len(tok), max_position_embeddings=MODEL_MAX_LENGTH, **_SEQ2SEQ_DIMS,
                         decoder_start_token_id=tok.eos_token_id, **_ids(tok))
    return _save(_seeded(lambda: MBartModel(config)), out_dir)


@dataclass(frozen=True)
class Family:
    """One architecture family: how to build its tiny model, and what the docs say about it."""

    build: Callable[[Path], Path]
    examples: tuple[str, ...]  # models of this family in the official model table
    tokenizer: str  # the tokenizer kind
    final_norm: bool = False  # a layer norm after the stack: `all_layers` row k != num_layers=k
    official_patch: str = ""  # why the official package needs a patch in the tests ("" = none)


FAMILIES: dict[str, Family] = {
    "bert": Family(build_bert, ("bert-base-uncased", "SpanBERT/spanbert-base-cased"), "WordPiece"),
    "roberta": Family(build_roberta, ("roberta-large", "distilroberta-base"), "byte-level BPE"),
    "xlmr": Family(build_xlmr, ("xlm-roberta-large",), "SentencePiece Unigram"),
    "electra": Family(build_electra, ("google/electra-large-discriminator",), "WordPiece"),
    "distilbert": Family(build_distilbert, ("distilbert-base-uncased",), "WordPiece"),
    "albert": Family(build_albert, ("albert-xxlarge-v2",), "SentencePiece Unigram"),
    "deberta": Family(build_deberta, ("microsoft/deberta-xlarge-mnli",), "byte-level BPE"),
    "deberta-v3": Family(build_deberta_v3, ("microsoft/deberta-v3-large", "microsoft/mdeberta-v3-base"),
                         "SentencePiece Unigram"),
    "deberta-v2-conv": Family(build_deberta_v2_conv, ("microsoft/deberta-v2-xlarge",), "SentencePiece Unigram"),
    "bart": Family(build_bart, ("facebook/bart-large",), "byte-level BPE"),
    "mbart": Family(build_mbart, ("facebook/mbart-large-cc25",), "SentencePiece + language codes", final_norm=True),
    "xlnet": Family(build_xlnet, ("xlnet-large-cased",), "SentencePiece Unigram"),
    "longformer": Family(build_longformer, ("allenai/longformer-large-4096",), "byte-level BPE"),
    "led": Family(build_led, ("allenai/led-base-16384",), "byte-level BPE"),
    "bigbird": Family(build_bigbird, ("google/bigbird-roberta-large",), "SentencePiece Unigram"),
    "bigbird-sparse": Family(build_bigbird_sparse, ("google/bigbird-roberta-large (texts over 704 tokens)",),
                             "SentencePiece Unigram"),
    "mpnet": Family(build_mpnet, ("microsoft/mpnet-base",), "WordPiece"),
    "t5": Family(build_t5, ("t5-large",), "SentencePiece Unigram", final_norm=True),
    "mt5": Family(build_mt5, ("google/mt5-large",), "SentencePiece Unigram", final_norm=True),
    "byt5": Family(build_byt5, ("google/byt5-large",), "bytes", final_norm=True),
    "pegasus": Family(build_pegasus, ("google/pegasus-large",), "SentencePiece Unigram", final_norm=True),
    "prophetnet": Family(build_prophetnet, ("microsoft/prophetnet-large-uncased",), "WordPiece"),
    "blenderbot": Family(build_blenderbot, ("facebook/blenderbot-400M-distill",), "byte-level BPE",
                         final_norm=True),
    "blenderbot-small": Family(build_blenderbot_small, ("facebook/blenderbot_small-90M",), "BPE, @@ continuations"),
    "xlm": Family(build_xlm, ("xlm-mlm-en-2048", "xlm-mlm-100-1280"), "Moses + BPE (word-final pieces)"),
    "modernbert": Family(build_modernbert, ("answerdotai/ModernBERT-base (not in the official table)",),
                         "byte-level BPE (tokenizer.json)", final_norm=True),
    "squeezebert": Family(build_squeezebert, ("squeezebert/squeezebert-mnli",), "WordPiece"),
    "convbert": Family(build_convbert, ("YituTech/conv-bert-base",), "WordPiece"),
}


def folder_name(name: str) -> str:
    """The folder of a family's model: T5 kinds carry "t5" (the official package loads them by name)."""
    return f"tiny-{name}"


def build(name: str, root: Path) -> Path:
    """Build family `name`'s tiny model into `root/tiny-<name>` (once: an existing folder is reused)."""
    folder = Path(root) / folder_name(name)
    if not (folder / "config.json").is_file():
        FAMILIES[name].build(folder)
    return folder


def build_families(root: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Build every family (or `names`) into `root`; returns {name: folder}."""
    return {name: build(name, root) for name in (names or list(FAMILIES))}


# ----- the official package on these models ---------------------------------------------------------
@contextlib.contextmanager
def official_patches(name: str) -> Iterator[None]:
    """The minimal patches the official package (0.3.13) needs for family `name`, undone after.

    - squeezebert: its `get_model` truncates `model.encoder.layer`, and SqueezeBERT keeps its blocks
      in `encoder.layers`: it raises AttributeError (on any transformers). Its `get_model` is
      wrapped to load the model whole and cut `encoder.layers` to the first `num_layers` blocks,
      the branch it lacks.
    - bigbird-sparse: transformers' BigBirdModel.forward switches the model to full attention for
      good at the first input of at most (5 + 2 x random blocks) x block size tokens, so the
      official numbers depend on which texts it saw before (its first call differs from its
      second). Its `bert_encode` is wrapped to put the configured attention mode back before every
      call: each text (batch_size=1) then gets the mode its config names for its length. With
      all_layers it also stacks transformers 5's hidden states, whose block padding is undone on
      the last one only ("stack expects each tensor to be equal size"), each cut to the input's length.
    """
    import bert_score.utils as official_utils

    undo: list[Callable[[], None]] = []
    if name == "squeezebert":
        import bert_score.scorer as official_scorer

        original_get_model = official_scorer.get_model

        def get_model(model_type: str, num_layers: int, all_layers: bool = False) -> Any:
            model = original_get_model(model_type, num_layers, all_layers=True)  # loaded whole
            if not all_layers:
                model.encoder.layers = torch.nn.ModuleList(model.encoder.layers[:num_layers])
            return model

        official_scorer.get_model = get_model
        undo.append(lambda: setattr(official_scorer, "get_model", original_get_model))
    if name == "bigbird-sparse":
        original = official_utils.bert_encode

        def bert_encode(model: Any, x: torch.Tensor, attention_mask: torch.Tensor, all_layers: bool = False) -> Any:
            model.set_attention_type(model.config.attention_type)
            if not all_layers:
                return original(model, x, attention_mask, all_layers)
            with torch.no_grad():
                out = model(x, attention_mask=attention_mask, output_hidden_states=True)
            return torch.stack([state[:, : x.shape[1]] for state in out.hidden_states], dim=2)

        official_utils.bert_encode = bert_encode
        undo.append(lambda: setattr(official_utils, "bert_encode", original))
    try:
        yield
    finally:
        for step in reversed(undo):
            step()


def official_scores(name: str, folder: Path, cands: list[str], refs: list[str], num_layers: int,
                    idf: bool = False, all_layers: bool = False) -> tuple[torch.Tensor, ...]:
    """The official package's (P, R, F) at batch_size=1 (where its padding cannot leak into a max),
    idf over `refs` when asked, with the family's `official_patches`."""
    return oracle.call(_patched_official_scores, name, cands, refs, model_type=str(folder), num_layers=num_layers,
                       all_layers=all_layers, idf=idf, idf_sents=refs if idf else None, nthreads=0, device="cpu")


def _patched_official_scores(name: str, cands: list[str], refs: list[str], **scorer_kwargs) -> tuple[torch.Tensor, ...]:
    """The official BERTScorer(**scorer_kwargs).score(cands, refs, batch_size=1) under the family's patches."""
    import bert_score

    with official_patches(name):
        return tuple(bert_score.BERTScorer(**scorer_kwargs).score(cands, refs, batch_size=1))


def official_token_ids(name: str, folder: Path, texts: list[str]) -> list[list[int]]:
    """The official `sent_encode` of each text, with its own tokenizer (`use_fast=False`)."""
    return oracle.call(_official_sent_encode, str(folder), texts)


def _official_sent_encode(folder: str, texts: list[str]) -> list[list[int]]:
    from bert_score.utils import get_tokenizer, sent_encode

    tokenizer = get_tokenizer(folder, use_fast=False)
    return [list(sent_encode(tokenizer, text)) for text in texts]
