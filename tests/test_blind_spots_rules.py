"""The corruption rules of benchmarks/blind_spots.py on hand-made Moses-tokenised sentences."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def rules():
    saved = list(sys.path)
    sys.path.insert(0, str(BENCHMARKS))  # blind_spots imports its neighbours (machine, system_level)
    try:
        spec = importlib.util.spec_from_file_location("blind_spots", BENCHMARKS / "blind_spots.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved  # the script adds the repo and benchmarks/ to sys.path: leave it as found
    return module


def test_every_digit_run_becomes_another_number_of_the_same_length(rules):
    rng = np.random.default_rng(0)
    text = "a 28-year-old chef , 3 times in 2017 , room 07"
    for _ in range(50):
        changed = rules.change_numbers(text, rng)
        old, new = re.findall(r"\d+", text), re.findall(r"\d+", changed)
        assert [len(x) for x in new] == [len(x) for x in old]
        assert all(a != b for a, b in zip(old, new))
        assert re.sub(r"\d+", "#", changed) == re.sub(r"\d+", "#", text)  # nothing else touched
        assert all(len(x) == 1 or x[0] != "0" for x in new)
    assert rules.change_numbers("no digits here", rng) is None


def test_negation_removed_first_else_inserted_after_the_first_auxiliary(rules):
    assert rules.flip_negation("he did not go , and she would not stay") == "he did go , and she would not stay"
    assert rules.flip_negation("he didn &apos;t go .") == "he did go ."
    assert rules.flip_negation("they won &apos;t win") == "they will win"
    assert rules.flip_negation("the plan was a success and can work") == "the plan was not a success and can work"
    assert rules.flip_negation("dogs bark loudly .") is None


def test_two_entities_swap_everywhere_and_runs_of_names_move_together(rules):
    names = {"hillary", "clinton", "trump", "prague"}
    text = "hillary clinton met trump ; trump praised hillary clinton in prague"
    assert rules.swap_entities(text, names) == "trump met hillary clinton ; hillary clinton praised trump in prague"
    assert rules.swap_entities("trump met trump", names) is None  # one distinct entity: nothing to swap
    assert rules.swap_entities("nothing to see", names) is None


def test_shuffled_sentences_all_move(rules):
    rng = np.random.default_rng(1)
    sentences = ["a .", "b .", "c .", "d ."]
    for _ in range(20):
        shuffled = rules.shuffle_sentences(sentences, rng)
        assert sorted(shuffled) == sorted(sentences)
        assert all(x != y for x, y in zip(shuffled, sentences))
