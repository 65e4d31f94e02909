"""The plain-torch BERT (bertscore/models/bert_encoder.py) against transformers' `BertModel`, and when the loader uses it.

Bit for bit (torch.equal), every hidden state and the pooler output, padded or not, one text or several
(on any CPU: the weights lie at transformers' addresses modulo 64, see below): the embedded
MiniLM and a tiny random BERT (tests/tiny_families.py), each loaded by transformers as the
independent route. Any config or folder the module does not implement loads transformers' class,
and the CLI's first score on the embedded model never imports transformers' model classes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.models.bert_encoder import BertEncoder, load_bert, supports
from bertscore.models.loading import load_model
from conftest import REPO_ROOT, SENTENCES
from tiny_families import build

TEXTS = SENTENCES[:4]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return build("bert", tmp_path_factory.mktemp("families"))


@pytest.fixture(scope="module", params=["minilm", "tiny-bert"])
def both_routes(request, minilm_dir, tiny_bert):
    """(folder, transformers' BertModel, the plain-torch encoder, tokenizer) of each BERT."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    folder = minilm_dir if request.param == "minilm" else tiny_bert
    theirs = AutoModel.from_pretrained(folder).eval()
    ours = load_bert(folder, AutoConfig.from_pretrained(folder))
    assert type(theirs).__name__ == "BertModel" and isinstance(ours, BertEncoder)
    return folder, theirs, ours, AutoTokenizer.from_pretrained(folder)


@pytest.mark.parametrize("texts", [TEXTS[:1], TEXTS[:2], TEXTS], ids=["one", "two", "four"])
def test_every_hidden_state_is_transformers_bit_for_bit(both_routes, texts):
    folder, theirs, ours, tokenizer = both_routes
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    masks = [batch["attention_mask"]] + ([None] if len(texts) == 1 else [])  # one text: with and without a mask
    for mask in masks:
        with torch.inference_mode():
            expected = theirs(batch["input_ids"], attention_mask=mask, output_hidden_states=True)
            got = ours(batch["input_ids"], attention_mask=mask, output_hidden_states=True)
        assert len(got.hidden_states) == len(expected.hidden_states) == theirs.config.num_hidden_layers + 1
        for layer, (state, reference) in enumerate(zip(got.hidden_states, expected.hidden_states)):
            assert torch.equal(state, reference), f"{folder.name}: layer {layer} differs"
        assert torch.equal(got[0], expected[0]) and torch.equal(got.pooler_output, expected.pooler_output)
        assert type(got) is type(expected) and len(got.to_tuple()) == len(expected.to_tuple())


def test_the_loaded_encoder_cut_at_a_layer_is_that_hidden_state(both_routes):
    folder, theirs, _, tokenizer = both_routes
    loaded = load_model(str(folder), 2)
    assert isinstance(loaded.encoder, BertEncoder) and len(loaded.encoder.encoder.layer) == 2
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        expected = theirs(**batch, output_hidden_states=True).hidden_states[2]
        got = loaded.encode(batch["input_ids"], batch["attention_mask"])
    assert torch.equal(got, expected)


def test_the_state_dict_is_the_checkpoint_with_transformers_names(both_routes):
    _, theirs, ours, _ = both_routes
    expected, got = theirs.state_dict(), ours.state_dict()
    assert list(got) == list(expected) and all(torch.equal(got[name], expected[name]) for name in expected)


def test_the_weights_lie_where_transformers_puts_them(both_routes):
    """Fails when the loader copies the weights (load_state_dict without assign): on AVX2 CPUs a
    one-row product (the pooler on one text) rounds by its weight's address modulo the vector width,
    so a copy gives a pooler output a few ulps from transformers' there; this holds on any CPU."""
    _, theirs, ours, _ = both_routes
    expected, got = theirs.state_dict(), ours.state_dict()
    assert {name: got[name].data_ptr() % 64 for name in got} == {name: t.data_ptr() % 64 for name, t in expected.items()}


def _edited_copy(folder: Path, into: Path, **settings) -> Path:
    """A copy of the model folder whose config.json has `settings`."""
    copy = Path(shutil.copytree(folder, into))
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **settings}))
    return copy


@pytest.mark.parametrize("settings", [{"hidden_act": "relu"}, {"hidden_act": "gelu_new"},
                                      {"position_embedding_type": "relative_key"}, {"chunk_size_feed_forward": 4},
                                      {"output_attentions": True}], ids=lambda s: "-".join(map(str, s.items())))
def test_a_config_it_does_not_implement_loads_transformers_class(tiny_bert, tmp_path, settings):
    from transformers import AutoConfig

    folder = _edited_copy(tiny_bert, tmp_path / "edited", **settings)
    assert not supports(AutoConfig.from_pretrained(folder))
    assert not isinstance(load_model(str(folder), 2).encoder, BertEncoder)


def test_weights_it_does_not_read_load_transformers_class(tiny_bert, tmp_path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert)
    sharded, pickled = tmp_path / "sharded", tmp_path / "pickled"
    model.save_pretrained(sharded, max_shard_size="100KB")
    pickled.mkdir()
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    for folder in (sharded, pickled):
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
            shutil.copy(tiny_bert / name, folder / name)
    assert (sharded / "model.safetensors.index.json").is_file()
    for folder in (sharded, pickled):
        assert not isinstance(load_model(str(folder), 2).encoder, BertEncoder), folder.name


def test_other_placements_and_the_dropin_get_model_load_transformers_class(tiny_bert):
    from transformers import PreTrainedModel

    assert isinstance(load_model(str(tiny_bert), 2, dtype="bfloat16").encoder, PreTrainedModel)
    assert isinstance(load_model(str(tiny_bert), 2, transformers_class=True).encoder, PreTrainedModel)
    plain = load_model(str(tiny_bert), 2)
    assert isinstance(plain.encoder, BertEncoder)
    moved = plain.with_placement(torch.device("meta"), "float32")  # off the CPU: transformers' class, reloaded
    assert isinstance(moved.encoder, PreTrainedModel) and next(moved.encoder.parameters()).device.type == "meta"
    from bertscore import dropin

    assert isinstance(dropin.get_model(str(tiny_bert), 2), PreTrainedModel)


def test_the_cli_first_score_never_imports_transformers_model_classes(tmp_path):
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    for name, path in (("candidates", cands), ("references", refs)):
        path.write_text("\n".join((REPO_ROOT / "examples" / f"{name}.txt").read_text().splitlines()[:3]) + "\n")
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['bertscore', '-c', {str(cands)!r}, '-r', {str(refs)!r}, '--model', {EMBEDDED_MODEL_NAME!r}]\n"
        "try:\n    runpy.run_module('bertscore', run_name='__main__')\nexcept SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('transformers.model')))\n"
    )
    path = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(path))
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mean over 3 pairs" in done.stdout
    loaded = done.stdout.strip().splitlines()[-1]
    assert "transformers.modeling_utils" not in loaded and "modeling_bert" not in loaded, loaded
