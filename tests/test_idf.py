"""idf weights: the official formula on token ids."""

import hashlib
import logging
import math
import pickle
from collections import defaultdict

import numpy as np

import pytest
import torch

from bertscore.scoring.idf import TokenWeights


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


# ----- each rule of the table, pinned by a value computed here -----------------------------------
# (Written against mutmut's survivors of bertscore/scoring/idf.py: each test names the planted bug it catches.)
def test_every_weight_is_the_float32_of_the_float64_formula() -> None:
    """log((M+1)/(df+1)) for every df of 1..M, M = 999, computed in float64 and rounded once: fails if the
    frequencies are integers or float32 (a float32 division and log, a unit off in the last place)."""
    total = 999
    counts = {token_id: token_id for token_id in range(1, total + 1)}  # token id t in t documents
    weights = TokenWeights.from_counts(counts, total, vocab_size=total + 1, zero_weight_ids=[])
    expected = [float(np.float32(math.log((total + 1) / (df + 1)))) for df in range(1, total + 1)]
    assert weights.table[1:].tolist() == expected
    assert weights.table[0].item() == float(np.float32(math.log(total + 1)))  # unseen
    assert weights.table.dtype == torch.float32 and weights.default == math.log(total + 1)


def test_the_table_grows_to_the_largest_counted_id_exactly() -> None:
    """A counted id past the vocabulary widens the table to that id + 1, no more: fails if the size is
    one off either way."""
    weights = TokenWeights.from_counts({12: 1, 3: 2}, 4, vocab_size=10, zero_weight_ids=[])
    assert weights.table.shape == (13,)
    assert weights.table[12].item() == pytest.approx(math.log(5 / 2)) and weights.table[11].item() == pytest.approx(
        math.log(5))
    assert TokenWeights.from_counts({}, 4, vocab_size=10, zero_weight_ids=[]).table.shape == (10,)


def test_zero_weight_ids_at_both_ends_and_past_the_table() -> None:
    """Ids 0 and size - 1 weigh 0; an id at or past the table's size is skipped, not an IndexError: fails
    if the bounds of `0 <= id < size` move (in from_counts and in uniform)."""
    weights = TokenWeights.from_counts({1: 1}, 2, vocab_size=5, zero_weight_ids=[0, 4, 5, 9])
    assert weights.table.tolist() == pytest.approx([0.0, math.log(3 / 2), math.log(3), math.log(3), 0.0])
    assert TokenWeights.uniform(5, [0, 4, 5, 9]).table.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_labels_and_defaults_travel_with_the_table() -> None:
    """from_documents and from_counts keep the label asked for; the default (an id past the table) is
    log(M + 1), 1 without idf, the defaultdict's for a mapping: fails if one is dropped or changed."""
    docs = [[1, 2], [2, 3], [3]]
    weights = TokenWeights.from_documents(docs, 10, [], label="idf")
    assert weights.label == "idf" and weights.default == math.log(4)
    assert TokenWeights.from_counts({1: 1}, 3, 10, [], "mine").label == "mine"
    uniform = TokenWeights.uniform(4, [])
    assert uniform.default == 1.0 and uniform.table.dtype == torch.float32
    mapped = TokenWeights.from_mapping(defaultdict(lambda: 2.5, {1: 0.5}), 4)
    assert mapped.default == 2.5 and mapped.table.dtype == torch.float32
    assert TokenWeights(torch.ones(3), "x", default=0.25).default == 0.25


def test_documents_as_tensors_or_arrays_count_each_token_once_per_document() -> None:
    """A document given as a torch tensor or a NumPy array counts a repeated token once: fails if its
    values are not read out (set() of a tensor holds each element apart)."""
    lists = [[5, 5, 6], [5, 7, 7]]
    expected = TokenWeights.from_documents(lists, 10, []).table
    assert expected[5].item() == pytest.approx(math.log(3 / 3), abs=0) and expected[7].item() == pytest.approx(
        math.log(3 / 2))
    for kind in (torch.tensor, np.array):
        assert torch.equal(TokenWeights.from_documents([kind(d) for d in lists], 10, []).table, expected), kind


def test_lookups_of_no_ids_and_of_many_sequences() -> None:
    """An empty sequence gives an empty float32 tensor (not an error from indexing by floats); `many`
    gives each sequence's weights: fails if ids are not made integers."""
    weights = TokenWeights(torch.tensor([0.0, 0.5, 1.5]))
    empty = weights([])
    assert empty.shape == (0,) and empty.dtype == torch.float32
    assert [w.tolist() for w in weights.many([[2, 1], [], [0]])] == [[1.5, 0.5], [], [0.0]]
    assert weights.many([]) == []


def test_check_refuses_each_wrong_table_and_says_which() -> None:
    """Each message written out in full: fails if a shape, a NaN alone, a negative alone, or the count
    of bad ids is missed, or the message loses what it names."""
    TokenWeights(torch.zeros(4)).check(4)  # 0 is a weight
    with pytest.raises(ValueError) as error:
        TokenWeights(torch.ones(2, 2)).check(4)  # as many numbers as ids, but not one per id
    assert str(error.value) == (
        "token weights have 2x2 entries, but the tokenizer's vocabulary has 4 token ids: pass a 1-D table with "
        "one weight per token id (e.g. TokenWeights.from_documents(..., vocab_size=4, ...)) made for this "
        "model's tokenizer")
    with pytest.raises(ValueError, match=r"^idf weights have a scalar entries, but"):
        TokenWeights(torch.tensor(1.0)).check(1, "idf weights")
    with pytest.raises(ValueError) as error:
        TokenWeights(torch.tensor([1.0, float("nan"), 2.0])).check(3)
    assert str(error.value) == "token weights must be finite and >= 0: token id 1 has nan"
    with pytest.raises(ValueError) as error:
        TokenWeights(torch.tensor([1.0, 2.0, -0.5, float("inf")])).check(4)
    assert str(error.value) == "token weights must be finite and >= 0: token id 2 has -0.5 (2 ids in all)"


def test_mapping_ids_at_the_vocabulary_s_ends() -> None:
    """Ids 0 and V - 1 are taken, V and -1 refused with the message written out: fails if a bound of
    `0 <= id < V` moves or the message names another id or range."""
    assert TokenWeights.from_mapping({0: 1.5, 4: 2.5}, 5).table.tolist() == [1.5, 0.0, 0.0, 0.0, 2.5]
    for key in (5, -1):
        with pytest.raises(ValueError) as error:
            TokenWeights.from_mapping({1: 1.0, key: 1.0, 7: 1.0}, 5)
        assert str(error.value) == (f"idf mapping has token id {key}, outside the tokenizer's vocabulary of 5 ids "
                                    "(0..4): a mapping made for another tokenizer?")


def test_mapping_messages_in_full(caplog) -> None:
    """The warning and the key errors written out: fails if their wording is lost."""
    with caplog.at_level(logging.WARNING, logger="bertscore.scoring.idf"):
        TokenWeights.from_mapping({1: 1.0}, 3)
    assert [r.getMessage() for r in caplog.records] == ["idf mapping is not a defaultdict: token ids it lacks weigh 0"]
    with pytest.raises(ValueError) as error:
        TokenWeights.from_mapping({"5": 1.0}, 10)
    assert str(error.value) == (
        "idf mapping key '5' (str) is not a token id: keys are the tokenizer's integer ids (as the official "
        "get_idf_dict gives them); a mapping read from JSON has string keys: convert them with "
        "{int(k): w for k, w in ...}")
    with pytest.raises(ValueError) as error:
        TokenWeights.from_mapping({"a": 1.0}, 10)
    assert str(error.value) == ("idf mapping key 'a' (str) is not a token id: keys are the tokenizer's integer ids "
                                "(as the official get_idf_dict gives them)")


def test_fingerprint_as_dict_and_pickling() -> None:
    """The fingerprint is the first 10 hex digits of the float32 table's sha256; as_dict lists every id;
    a pickled table comes back with its numbers, label and default: fails if any of these drifts."""
    weights = TokenWeights(torch.tensor([0.0, 0.5, 1.5]), "mine", default=2.0)
    expected = hashlib.sha256(np.array([0.0, 0.5, 1.5], dtype=np.float32).tobytes()).hexdigest()[:10]
    assert weights.fingerprint() == expected
    assert weights.as_dict() == {0: 0.0, 1: 0.5, 2: 1.5}
    back = pickle.loads(pickle.dumps(weights))
    assert back.table.tolist() == [0.0, 0.5, 1.5] and back.table.dtype == torch.float32
    assert (back.label, back.default) == ("mine", 2.0)
    mapped = TokenWeights.from_mapping(defaultdict(float, {1: 0.5}), 3)
    assert mapped.label == "idf-dict:" + hashlib.sha256(np.array([0.0, 0.5, 0.0], np.float32).tobytes()).hexdigest()[:10]
