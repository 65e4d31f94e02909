"""idf weights: the official formula on token ids."""

import math
from collections import defaultdict

import pytest
import torch

from bertscore.idf import TokenWeights


def test_from_documents_matches_formula():
    docs = [[101, 5, 6, 6, 102], [101, 5, 7, 102], [101, 102]]
    weights = TokenWeights.from_documents(docs, vocab_size=200, zero_weight_ids={101, 102})
    m = 3
    assert math.isclose(weights.table[5].item(), math.log((m + 1) / (2 + 1)), rel_tol=1e-6)
    assert math.isclose(weights.table[6].item(), math.log((m + 1) / (1 + 1)), rel_tol=1e-6)  # counted once per doc
    assert math.isclose(weights.table[99].item(), math.log(m + 1), rel_tol=1e-6)  # unseen
    assert weights.table[101].item() == 0.0 and weights.table[102].item() == 0.0
    assert weights.label is None  # named by content in a hash unless the caller vouches "idf"


def test_from_generator_counts_documents():
    docs = [[1, 2], [2, 3]]
    a = TokenWeights.from_documents(docs, 10, [])
    b = TokenWeights.from_documents(iter(docs), 10, [])
    assert torch.equal(a.table, b.table)


def test_uniform_zeroes_special_tokens():
    weights = TokenWeights.uniform(10, [0, 9])
    assert weights([0, 3, 9]).tolist() == [0.0, 1.0, 0.0]
    assert weights.label == "no-idf"


def test_mapping_used_as_given_with_default():
    mapping = defaultdict(lambda: 2.5, {3: 0.5, 101: 7.0})
    weights = TokenWeights.from_mapping(mapping, 200)
    assert weights([3, 101, 4]).tolist() == [0.5, 7.0, 2.5]
    assert weights.label.startswith("idf-dict:")
    other = TokenWeights.from_mapping(defaultdict(lambda: 2.5, {3: 0.6, 101: 7.0}), 200)
    assert other.label != weights.label


def test_plain_mapping_missing_ids_weigh_zero(caplog):
    weights = TokenWeights.from_mapping({3: 0.5}, 10)
    assert weights([3, 4]).tolist() == [0.5, 0.0]
    assert "lacks" in caplog.text


def test_a_token_in_every_document_weighs_exactly_zero_and_the_table_passes_its_check():
    """log((M+1)/(M+1)) is 0; torch's scalar/tensor division gave 1 - 2^-53 at M = 48 and 97, a
    weight of -1.1e-16 that check() (weights >= 0) refused mid-score."""
    for total in (48, 97, 500):
        weights = TokenWeights.from_documents([[5, 6]] * (total - 1) + [[5]], vocab_size=10, zero_weight_ids=[])
        assert weights.table[5].item() == 0.0  # in all M documents: log((M+1)/(M+1)) = 0, exactly
        assert abs(weights.table[6].item() - math.log((total + 1) / total)) < 1e-7  # in M - 1 of them
        weights.check(10)


@pytest.mark.parametrize("mapping, named", [
    ({"5": 1.0}, "'5' (str)"),
    ({5.7: 1.0}, "5.7 (float)"),
    ({True: 1.0}, "True (bool)"),
    ({5: "1.5"}, "'1.5' (str), not a number"),
])
def test_a_mapping_with_keys_or_weights_that_are_not_ids_or_numbers_is_refused(mapping, named):
    # int("5") and int(5.7) used to turn them into token ids 5 silently (a mapping keyed by token strings
    # scored every token at the default weight)
    with pytest.raises(ValueError) as error:
        TokenWeights.from_mapping(mapping, vocab_size=10)
    assert named in str(error.value)
    assert ("read from JSON" in str(error.value)) == (mapping == {"5": 1.0})  # the likely cause, named


def test_a_mapping_with_numpy_integer_ids_is_accepted():
    np = pytest.importorskip("numpy")
    weights = TokenWeights.from_mapping(defaultdict(lambda: 2.0, {np.int64(3): np.float32(0.5)}), vocab_size=5)
    assert weights.table.tolist() == [2.0, 2.0, 2.0, 0.5, 2.0]


def test_a_table_of_numbers_in_any_array_form_is_read_and_anything_else_named():
    np = pytest.importorskip("numpy")
    # a NumPy array or a list of weights used to fail with "'numpy.ndarray' object has no attribute 'float'"
    assert TokenWeights(np.array([0.0, 1.5, 2.0])).table.tolist() == [0.0, 1.5, 2.0]
    assert TokenWeights([0.0, 1.5, 2.0]).table.tolist() == [0.0, 1.5, 2.0]
    # a complex table used to lose its imaginary part silently
    with pytest.raises(TypeError, match="real numbers, got a torch.complex64 table"):
        TokenWeights(torch.ones(3, dtype=torch.complex64))
    with pytest.raises(TypeError, match="table of numbers .* got list"):
        TokenWeights(["a", "b"])
