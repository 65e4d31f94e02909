"""Tiny, random-weight transformer models + tokenizers, built fully offline.

Each ``build_*(out_dir)`` trains a small tokenizer on the fixed corpus embedded
here (``training_corpus()``), writes its vocabulary files (the ones a slow
tokenizer reads), loads the ``transformers`` tokenizer from them with
``AutoTokenizer``, creates a tiny randomly initialised encoder
(``torch.manual_seed(SEED)``) and ``save_pretrained``-s both *directly into*
``out_dir`` (created if needed), returning ``out_dir``.  ``build_all(root)``
builds every model into ``root/<name>`` and returns ``{name: path}``.  The directories load with
``AutoTokenizer.from_pretrained(path)`` (fast, and on transformers 4 also
``use_fast=False``) / ``AutoModel.from_pretrained(path)`` and work as
``model_type=str(path)`` for the official ``bert_score.score`` (pass
``num_layers`` explicitly: a path is not in ``bert_score.utils.model2layers``).
Nothing is downloaded (set ``HF_HUB_OFFLINE=1`` anyway).  For a given
transformers version the output is byte-for-byte reproducible across
processes; the two majors write different ``tokenizer_config.json`` /
``config.json`` (and transformers 4 a ``special_tokens_map.json``), and
initialise RoBERTa/XLM-R weights differently.  Building all three takes a few
seconds on CPU.

Models (all: hidden 32, 3 layers, 4 heads, FFN 64, ``model_max_length=128``,
~0.2-0.3 MB per directory):

======= ===================================== ===== ==================================
name    tokenizer, vocabulary file(s)          vocab model
======= ===================================== ===== ==================================
roberta RobertaTokenizer(Fast), byte-level     1000  RobertaModel, positions 130, pad 1
        BPE, ``vocab.json`` + ``merges.txt``,
        saved with ``add_prefix_space=True``
xlmr    XLMRobertaTokenizer(Fast), Unigram,    905   XLMRobertaModel, positions 130,
        ``sentencepiece.bpe.model``                  pad 1
electra ElectraTokenizer(Fast) (transformers   1000  ElectraModel, embedding_size 16,
        5: BertTokenizer), lowercase                 positions 128, pad 0
        WordPiece, ``vocab.txt``
======= ===================================== ===== ==================================

Why vocabulary files (checked with transformers 4.57.6 / tokenizers 0.22,
5.0.0, 5.3.0 / 0.22, 5.17 and 5.24 / 0.23; sentencepiece 0.2, bert-score
0.3.13):

* ``AutoTokenizer`` on a folder holding only the vocabulary files and a
  ``tokenizer_config.json`` naming the class is the one construction every
  tested version accepts (``RobertaTokenizerFast(vocab=..., merges=...)`` is
  transformers 5 only; in 5.0 ``RobertaTokenizerFast`` is a leftover class
  whose ``from_pretrained`` fails on such a folder).  transformers 4 converts
  the slow tokenizer into ``tokenizer.json``; transformers 5 has no separate
  slow class (``XxxTokenizerFast`` is an alias of ``XxxTokenizer``, a
  ``TokenizersBackend``; ``AutoTokenizer`` ignores ``use_fast``) and builds the
  backend from the same files, with the normalizer / pre-tokenizer the class
  itself defines (``add_prefix_space``, ``do_lower_case`` ... from
  ``tokenizer_config.json``).
* The official package loads ``use_fast=False``: on transformers 4 that is the
  slow class, which reads ``vocab.json``/``merges.txt``, ``vocab.txt`` or the
  sentencepiece model, and transformers 5 does not save them; the builders
  copy them into ``out_dir`` themselves.  On transformers 4 the fast and slow
  tokenizers give identical ids on the training corpus, 600 WMT17 de-en
  segments and edge cases (tabs, newlines, NBSP, ``<mask>`` text, >128
  tokens).
* The sentencepiece model is laid out like XLM-R's (``<unk> <s> </s>`` = spm
  ids 0-2, ``nmt_nfkc`` normalisation); the tokenizer maps it to fairseq ids
  ``<s> <pad> </s> <unk>`` = 0-3, piece ``i`` -> ``i + 1``, ``<mask>`` last.
  (With ``identity`` normalisation the charsmap is empty, which transformers
  5.17 cannot load, and transformers 5 split on tabs and NBSP where 4 did
  not.)  All three tokenizers give the same ids on 4.57.6, 5.3.0, 5.17 and
  5.24 for the texts above.  transformers 5.0-5.2 drop the NFKC charsmap
  (here, and for a folder saved by transformers 4, as hub checkpoints are):
  XLM-R ids differ there on text NFKC changes (ligatures, full-width or
  circled characters, zero-width spaces).
* Determinism: ``tokenizers``' ``UnigramTrainer`` and ``WordPieceTrainer`` give
  different vocabs in different processes (hash-map order, parallel float
  sums).  So the Unigram model is trained with ``sentencepiece``
  (``num_threads=1``) and the WordPiece vocab with the (deterministic)
  ``BpeTrainer`` on words whose non-initial characters are mapped to
  private-use code points (= ``##`` pieces).  The byte-level BPE trainer is
  deterministic as is.

The official ``bert_score`` on these models (no patch needed for normal,
non-empty inputs):

* ``sent_encode``: for ``roberta``, ``isinstance(tok, RobertaTokenizer)`` holds
  in both majors (transformers 4: the slow class; 5: the only class) and it
  calls ``tok.encode(sent, add_special_tokens=True, add_prefix_space=True,
  max_length=tok.model_max_length, truncation=True)``.  transformers 4 honours
  the ``add_prefix_space`` call kwarg; transformers 5 silently IGNORES it, and
  the prefix space is only added because the tokenizer is saved with
  ``add_prefix_space=True`` (a real ``roberta-large`` loaded under
  transformers 5 gets no prefix space from the official package, unlike under
  transformers 4).  For all three models ``sent_encode(tok, s)`` equals
  ``tok(s.strip(), add_special_tokens=True, truncation=True,
  max_length=tok.model_max_length)["input_ids"]``.
* Empty / whitespace-only sentences CRASH the official package on
  transformers 5: ``sent_encode`` calls
  ``tokenizer.build_inputs_with_special_tokens([])``, which transformers 5
  tokenizers no longer have (``AttributeError``); transformers 4 gives
  ``[cls, sep]``.  Avoid them in reference comparisons, or monkeypatch e.g.
  ``type(tok).build_inputs_with_special_tokens = lambda self, ids: [self.cls_token_id, *ids, self.sep_token_id]``.
* ``idf=True`` with a single reference: every idf is ``log(2/2) = 0``, so the
  official R is NaN and F is 0 (P finite).  Use >= 2 references when
  comparing with idf.
* ``model_max_length`` (128) is saved in ``tokenizer_config.json``: bert_score
  truncates with ``max_length=tokenizer.model_max_length``; an unset value
  would let long inputs overflow the position embeddings.
* ``get_model`` truncates ``model.encoder.layer`` to ``num_layers``; its output
  equals ``hidden_states[num_layers]`` of the full model for all three
  architectures.
"""

from __future__ import annotations

import functools
import io
import json
import random
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
from tokenizers.models import BPE

MODEL_MAX_LENGTH = 128
NUM_LAYERS = 3
VOCAB_SIZE = 1000
SEED = 0

_TINY_DIMS = dict(
    hidden_size=32,
    num_hidden_layers=NUM_LAYERS,
    num_attention_heads=4,
    intermediate_size=64,
)

_SUBJECTS = [
    "the cat", "a dog", "my neighbour", "the old man", "a young girl",
    "the teacher", "our team", "the committee", "this company", "the children",
    "a small bird", "the scientist", "her brother", "the government",
    "every student", "a stranger", "the pilot", "the farmer", "his mother",
    "the doctor", "a tourist", "the president", "my best friend", "the police",
]
_VERBS = [
    "sat on", "looked at", "walked to", "talked about", "jumped over",
    "bought", "painted", "found", "lost", "cleaned", "visited", "described",
    "ignored", "repaired", "watched", "opened", "carried", "discovered",
    "reviewed", "sold", "liked", "hated", "remembered", "explained",
]
_OBJECTS = [
    "the mat", "a red box", "the garden", "an interesting book", "the river",
    "the new car", "a cup of tea", "the kitchen", "the evening news",
    "a wooden chair", "the big city", "the report", "a strange noise",
    "the broken window", "the morning train", "the quiet library",
    "the bright moon", "a long letter", "the football match", "the museum",
    "the hungry cats", "three green apples", "the mountains", "a blue umbrella",
]
_MODIFIERS = [
    "yesterday", "quickly", "in the morning", "after lunch", "without a word",
    "last week", "on Monday", "with great care", "for two hours",
    "before sunset", "again", "at 5 pm", "in 2021", "near the station",
    "because it was raining", "slowly", "today", "every day", "on 12 March",
    "with 3 friends",
]
_TEMPLATES = [
    "{S} {V} {O} {M}.",
    "{M}, {s} {V} {O}.",
    "{S} {V} {O}, and {s2} {V2} {O2}.",
    "Did you know that {s} {V} {O}?",
    "Wow! {S} {V} {O} {M}!",
    "{S} never {V} {O}; {s2} {V2} {O2} instead.",
    "\"{S} {V} {O},\" said {s2}.",
    "{S} {V} {O} ({M}).",
]
_FIXED = [
    "Hello world.", "hello world!", "Hello, World? Hello again.",
    "a cat sat on the mat.", "the cat is on the mat", "The cat sat on the mat.",
    "There is a cat on the mat.", "A dog is sleeping on the mat.",
    "The quick brown fox jumps over the lazy dog.",
    "The price is $42.50 (about 39 EUR, or 39 €).",
    "Call 555-0199 or email info@example.com before 9:30.",
    "It's 3:45 p.m. on 2024-01-15, isn't it?",
    "She said: \"no way!\" and left -- quickly.",
    "Café au lait, naïve façade, jalapeño, résumé, coöperate.",
    "Über die Straße: München ist schön, Größe 42.",
    "Ελληνικά: καλημέρα κόσμε. Русский: привет, мир.",
    "日本語のテキストと中文的句子。",
    "Emoji test: 😀 👍 🎉 ❤ ✓ → ©.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 1000 3.14159 -7 1e6 50%",
    "Punctuation: ; : , . ! ? ' \" ( ) [ ] { } - _ / \\ @ # % & * + = < > ~ ^ |",
    "UPPER CASE WORDS AND lower case words And Mixed Case.",
    "I can't, you won't, they'd, we'll, it's, o'clock.",
    "Tabs\tand  multiple   spaces  are  whitespace too.",
    "New York, Paris, London, Tokyo and São Paulo are big cities.",
    "Machine translation systems are evaluated with BERTScore and BLEU.",
    "The model produces contextual embeddings for every token.",
    "Precision, recall and F1 are computed with greedy matching.",
    "Inverse document frequency weighting downweights common words.",
]


_WORDS = """
about above across action active actually address admit adult afraid after afternoon against agency agree
ahead airport allow almost alone along already although always amount analysis ancient animal answer anyone
apartment appear apply approach argue army around arrive article artist attack attention audience author autumn
average avoid baby balance bank basket beach beautiful become bedroom before begin behaviour believe below
benefit between beyond bicycle billion blanket blood board body border bottle bottom branch bread breakfast
bridge brief bring brown budget building business butter button camera campaign candle capital captain career
careful castle ceiling century chance change chapter cheese chicken choice church circle citizen climate clock
cloud coffee collect college colour comfortable common community computer concert condition consider contain
continue control corner cotton country couple courage course cousin create crowd culture current customer
damage danger daughter decade decide deep defend degree deliver demand depend design desert detail develop
dinner direction discuss disease distance doctor double dream dress drive during early earth easy economy edge
education effect effort eight either election electric element energy engine enjoy enough entire environment
equal escape evening event evidence exactly example exercise expect experience explain factory family famous
father feeling festival field fifteen figure final finger finish flower follow forest forget forward freedom
fresh friendly future garden general gentle glass global golden government grass great ground group growth
guest guitar happen happy harbour health heart heavy history holiday honest horse hospital hotel hundred
husband idea image imagine important improve include increase industry inside instead island journey judge
kitchen knowledge language large laugh lawyer leader learn lesson letter level library light listen little
machine manager market material matter meeting memory message method middle minute mirror modern moment money
morning mother mountain movement music narrow nation natural nature nearly network never newspaper night
normal notice number ocean office orange order organise outside owner painting paper parent party passenger
patient pattern peace pencil people pepper perfect period person picture planet plastic player pocket poetry
police popular possible potato power practice prepare present pretty prison private problem process produce
program project protect public purpose quality question quiet rabbit railway reason record region remember
report research result river rocket science season second secret series service seven shadow shoulder silver
simple sister society soldier special spring square station story street strong student summer sunlight
support surface system table teacher theatre thousand ticket tomorrow travel treasure trouble uncle valley
village visitor voice volume weather weekend window winter wonderful worker writer yellow yesterday zebra
""".split()


def training_corpus() -> list[str]:
    """Return the fixed (390 sentence) training corpus; deterministic."""
    return list(_training_corpus())


@functools.lru_cache(maxsize=1)
def _training_corpus() -> tuple[str, ...]:
    rng = random.Random(1234)
    out: list[str] = []
    words = list(_WORDS)
    for _ in range(3):  # every word appears at least 3 times
        rng.shuffle(words)
        for i in range(0, len(words), 9):
            chunk = words[i : i + 9]
            out.append(chunk[0].capitalize() + " " + " ".join(chunk[1:]) + rng.choice(".!?;,"))
    for i in range(224):
        tpl = _TEMPLATES[i % len(_TEMPLATES)]
        s, s2 = rng.choice(_SUBJECTS), rng.choice(_SUBJECTS)
        sent = tpl.format(
            S=s[0].upper() + s[1:], s=s, s2=s2,
            V=rng.choice(_VERBS), V2=rng.choice(_VERBS),
            O=rng.choice(_OBJECTS), O2=rng.choice(_OBJECTS),
            M=rng.choice(_MODIFIERS),
        )
        out.append(sent[0].upper() + sent[1:])
    return tuple(_FIXED + out)


def _save_model(model: torch.nn.Module, out_dir: Path) -> None:
    model.eval()
    model.save_pretrained(out_dir)


def _prepare(out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def _save_tokenizer(tokenizer_class: str, files: dict[str, bytes], out_dir: Path, **kwargs: Any) -> Any:
    """Load ``tokenizer_class`` from its vocabulary ``files``, save it into ``out_dir`` with those files.

    ``AutoTokenizer`` loads a folder holding only the vocabulary files and a
    ``tokenizer_config.json`` naming the class: the one route every tested
    transformers version shares (transformers 4 picks the fast class and
    converts the slow tokenizer; transformers 5 builds its only class from the
    same files; ``RobertaTokenizerFast.from_pretrained`` on such a folder fails
    in transformers 5.0).  The files are then written next to
    ``tokenizer.json`` byte for byte, as transformers 5 does not save them and
    the official package on transformers 4 loads the slow class
    (``use_fast=False``) from them.
    """
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as staging:
        for name, data in files.items():
            (Path(staging) / name).write_bytes(data)
        (Path(staging) / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": tokenizer_class}))
        tokenizer = AutoTokenizer.from_pretrained(staging, model_max_length=MODEL_MAX_LENGTH, **kwargs)
        # Saved while the files exist: transformers 4 names the slow class in tokenizer_config.json
        # only if it could save the slow tokenizer (XLM-R copies its sentencepiece model file).
        tokenizer.save_pretrained(out_dir)
    for name, data in files.items():
        (out_dir / name).write_bytes(data)
    return tokenizer


def _byte_level_bpe_files(corpus: list[str], specials: list[str]) -> dict[str, bytes]:
    """``vocab.json`` and ``merges.txt`` of a byte-level BPE (GPT-2/RoBERTa format) trained on ``corpus``."""
    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(corpus, trainer=trainer)
    model_json = json.loads(raw.to_str())["model"]
    vocab = dict(sorted(model_json["vocab"].items(), key=lambda item: item[1]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model_json["merges"]]
    return {
        "vocab.json": json.dumps(vocab, ensure_ascii=False).encode("utf-8"),
        # The slow reader skips the first line and drops the empty one after the final newline.
        "merges.txt": ("#version: 0.2\n" + "\n".join(merges) + "\n").encode("utf-8"),
    }


def build_roberta(out_dir: Path) -> Path:
    """Byte-level BPE RoBERTa (``add_prefix_space=True``) saved into ``out_dir``."""
    from transformers import RobertaConfig, RobertaModel

    out_dir = _prepare(out_dir)
    files = _byte_level_bpe_files(training_corpus(), ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = _save_tokenizer("RobertaTokenizer", files, out_dir, add_prefix_space=True)

    torch.manual_seed(SEED)
    config = RobertaConfig(
        vocab_size=len(tok),
        max_position_embeddings=MODEL_MAX_LENGTH + 2,
        type_vocab_size=1,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **_TINY_DIMS,
    )
    _save_model(RobertaModel(config), out_dir)
    return out_dir


XLMR_SPM_LAYOUT: dict[str, Any] = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)


def _sentencepiece_model(corpus: list[str], model_type: str = "unigram", **layout: Any) -> bytes:
    """A serialised ``sentencepiece`` model (Unigram unless `model_type`), laid out like XLM-R's
    (``<unk> <s> </s>`` = ids 0-2) unless `layout` names other ids and pieces (the trainer's
    ``unk_id``, ``pad_piece``, ``user_defined_symbols``, ... as a real model family has them).

    Single-threaded training is bit-for-bit deterministic. ``nmt_nfkc``
    normalisation (spaces collapsed), whitespace -> "▁" prefix.
    """
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus),
        model_writer=buf,
        model_type=model_type,
        vocab_size=VOCAB_SIZE,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_name="nmt_nfkc",
        max_sentencepiece_length=16,
        num_threads=1,
        minloglevel=2,
        **(layout or XLMR_SPM_LAYOUT),
    )
    return buf.getvalue()


def _wordpiece_vocab(corpus: list[str], specials: list[str]) -> dict[str, int]:
    """Train a lowercase WordPiece vocab (``##`` continuation prefix), deterministically.

    ``tokenizers``' ``WordPieceTrainer`` assigns ids to ``##x`` pieces in hash
    order, so its result differs between processes.  Instead, the (BERT
    normalised + pre-tokenised) words are fed to the deterministic ``BpeTrainer``
    with every non-initial character replaced by a private-use code point;
    these map back to ``##``-prefixed pieces afterwards (this is what the
    WordPiece trainer does internally).  Every character gets both a plain and
    a ``##`` piece, so no word of the corpus ends up as ``[UNK]``.
    """
    norm = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    pre = pre_tokenizers.BertPreTokenizer()
    words = [w for text in corpus for w, _ in pre.pre_tokenize_str(norm.normalize_str(text))]
    chars = sorted({c for w in words for c in w})
    to_cont = {c: chr(0xE000 + i) for i, c in enumerate(chars)}
    from_cont = {v: k for k, v in to_cont.items()}
    encoded = [w[0] + "".join(to_cont[c] for c in w[1:]) for w in words]

    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=specials,
        initial_alphabet=chars + list(to_cont.values()),
        show_progress=False,
    )
    raw.train_from_iterator(encoded, trainer=trainer)
    bpe_vocab = json.loads(raw.to_str())["model"]["vocab"]

    vocab: dict[str, int] = {}
    for piece in sorted(bpe_vocab, key=bpe_vocab.__getitem__):
        if piece in specials:
            token = piece
        elif piece[0] in from_cont:
            token = "##" + "".join(from_cont[c] for c in piece)
        else:
            token = piece[0] + "".join(from_cont.get(c, c) for c in piece[1:])
        vocab.setdefault(token, len(vocab))
    return vocab


def build_xlmr(out_dir: Path) -> Path:
    """SentencePiece Unigram XLM-RoBERTa (``sentencepiece.bpe.model``) saved into ``out_dir``."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    out_dir = _prepare(out_dir)
    # fairseq ids, as for the real model: <s> <pad> </s> <unk>, then spm pieces 3.. shifted by one, <mask> last.
    files = {"sentencepiece.bpe.model": _sentencepiece_model(training_corpus())}
    tok = _save_tokenizer("XLMRobertaTokenizer", files, out_dir)

    torch.manual_seed(SEED)
    config = XLMRobertaConfig(
        vocab_size=len(tok),
        max_position_embeddings=MODEL_MAX_LENGTH + 2,
        type_vocab_size=1,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **_TINY_DIMS,
    )
    _save_model(XLMRobertaModel(config), out_dir)
    return out_dir


def build_electra(out_dir: Path) -> Path:
    """Lowercasing WordPiece ELECTRA (discriminator encoder, ``vocab.txt``) saved into ``out_dir``."""
    from transformers import ElectraConfig, ElectraModel

    out_dir = _prepare(out_dir)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = _wordpiece_vocab(training_corpus(), specials)
    # BertNormalizer(lowercase) + BertPreTokenizer + WordPiece("##"): what _wordpiece_vocab trained on.
    files = {"vocab.txt": "".join(token + "\n" for token in vocab).encode("utf-8")}
    tok = _save_tokenizer("ElectraTokenizer", files, out_dir, do_lower_case=True)

    torch.manual_seed(SEED)
    config = ElectraConfig(
        vocab_size=len(tok),
        embedding_size=16,
        max_position_embeddings=MODEL_MAX_LENGTH,
        type_vocab_size=2,
        pad_token_id=tok.pad_token_id,
        **_TINY_DIMS,
    )
    _save_model(ElectraModel(config), out_dir)
    return out_dir


__all__ = [
    "MODEL_MAX_LENGTH", "NUM_LAYERS", "VOCAB_SIZE", "SEED", "BUILDERS",
    "training_corpus", "build_roberta", "build_xlmr", "build_electra", "build_all",
]

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "roberta": build_roberta,
    "xlmr": build_xlmr,
    "electra": build_electra,
}


def build_all(out_dir: Path) -> dict[str, Path]:
    """Build every tiny model into ``out_dir/<name>``; returns ``{name: path}``."""
    out_dir = Path(out_dir)
    return {name: fn(out_dir / name) for name, fn in BUILDERS.items()}


def build_without_layers(out_dir: Path) -> Path:
    """A BERT config with no transformer layers, and no weights at all: whatever reads more than
    the config fails, so an error about its layers proves that no model was loaded."""
    from transformers import BertConfig

    out_dir.mkdir(parents=True, exist_ok=True)
    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=0, num_attention_heads=4,
               intermediate_size=32).save_pretrained(out_dir)
    return out_dir


def build_causal_lm(out_dir: Path) -> Path:
    """A tiny GPT-2 language model with a byte-level BPE tokenizer (`<|endoftext|>` as bos, eos and
    pad; padding on the left, as batched generation needs): the model a `text-generation` pipeline
    runs, transformers 5's one text generation task."""
    from transformers import GPT2Config, GPT2LMHeadModel

    out_dir = _prepare(out_dir)
    files = _byte_level_bpe_files(training_corpus(), ["<|endoftext|>"])
    tok = _save_tokenizer("GPT2Tokenizer", files, out_dir, pad_token="<|endoftext|>", padding_side="left")
    torch.manual_seed(SEED)
    config = GPT2Config(vocab_size=len(tok), n_positions=MODEL_MAX_LENGTH, n_embd=32, n_layer=2, n_head=4,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    _save_model(GPT2LMHeadModel(config), out_dir)
    return out_dir
