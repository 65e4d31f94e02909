"""The reproducibility hash names every setting that can change a number."""

import dataclasses

from bertscore.scoring.hashcode import ScoreSettings

BASE = ScoreSettings(
    model="roberta-large", revision=None, num_layers=17, all_layers=False, idf="no-idf", rescale="",
    max_length=512, long_texts="truncate", prefix_space=True, dtype="float32", device="cpu", version="0.1.0",
    transformers_version="5.0.0", torch_version="2.13.0",
)


def test_format_extends_the_official_one():
    text = BASE.hashcode()
    assert text.startswith("roberta-large_L17_no-idf_")
    assert "version=bertscore-0.1.0(transformers=5.0.0,torch=2.13.0)" in text


def test_every_setting_changes_the_hash():
    changes = dict(
        model="roberta-base", revision="abc", num_layers=16, all_layers=True, idf="idf", rescale="rescaled-en",
        max_length=256, long_texts="window=510/255", prefix_space=False, dtype="bfloat16", device="cuda", version="0.2.0",
        transformers_version="5.1.0", torch_version="2.14.0", tokenizers_version="0.23.0",
        sentencepiece_version="0.2.1",
    )
    # A field added to ScoreSettings without a change here fails: every field must reach the hash.
    assert set(changes) == {f.name for f in dataclasses.fields(ScoreSettings)}
    seen = {BASE.hashcode()}
    for field, value in changes.items():
        text = dataclasses.replace(BASE, **{field: value}).hashcode()
        assert text not in seen, field
        seen.add(text)


def test_window_settings_are_named_and_told_apart():
    window = dataclasses.replace(BASE, long_texts="window=510/255").hashcode()
    assert "_maxlen=512_window=510/255_" in window
    assert "window" not in BASE.hashcode()  # the default (truncate) keeps the hash it always had
    assert window != dataclasses.replace(BASE, long_texts="window=510/100").hashcode()


def test_tokenizer_libraries_are_named_between_transformers_and_torch():
    text = dataclasses.replace(BASE, tokenizers_version="0.23.3").hashcode()
    assert text.endswith("_version=bertscore-0.1.0(transformers=5.0.0,tokenizers=0.23.3,torch=2.13.0)")
    spm = dataclasses.replace(BASE, tokenizers_version="0.23.3", sentencepiece_version="0.2.1").hashcode()
    assert spm.endswith("(transformers=5.0.0,tokenizers=0.23.3,sentencepiece=0.2.1,torch=2.13.0)")
