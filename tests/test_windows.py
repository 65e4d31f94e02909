"""The window plan: starts, the max-context assignment, the row plan, window ids and assembly.

Every expected value comes from a plain loop over the rule as the issue states it, written here.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.scoring.windows import (
    WindowAssembly,
    assemble,
    assign_windows,
    plan_windows,
    resolve_stride,
    window_ids,
    window_starts,
)


def loop_starts(n: int, w: int, s: int) -> list[int]:
    """0, S, 2S, ... up to the first window whose end reaches n."""
    starts = [0]
    while starts[-1] + w < n:
        starts.append(starts[-1] + s)
    return starts


def loop_assignment(n: int, w: int, s: int) -> list[int]:
    """O(n * windows): every window holding i, the largest min(i - start, end - 1 - i), first wins."""
    starts = loop_starts(n, w, s)
    chosen = []
    for i in range(n):
        best_window, best_context = None, None
        for k, start in enumerate(starts):
            end = min(start + w, n)
            if start <= i < end:
                context = min(i - start, end - 1 - i)
                if best_context is None or context > best_context:
                    best_window, best_context = k, context
        chosen.append(best_window)
    return chosen


# Sizes: n from 0 to past several windows, W from 1, S from 1 to W.
sizes = st.integers(1, 40).flatmap(
    lambda w: st.tuples(st.integers(0, 6 * w + 5), st.just(w), st.integers(1, w))
)


def test_hand_computed_assignment():
    # n=10, W=4, S=2: windows [0,4) [2,6) [4,8) [6,10). Token 3: min(3,0)=0 in w0, min(1,2)=1 in w1.
    assert window_starts(10, 4, 2).tolist() == [0, 2, 4, 6]
    assert assign_windows(10, 4, 2).tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    # n=7, W=5, S=2: windows [0,5) [2,7). Token 3 has context 1 in both: the tie goes to window 0.
    assert assign_windows(7, 5, 2).tolist() == [0, 0, 0, 0, 1, 1, 1]


@settings(max_examples=300, deadline=None)
@given(sizes)
def test_starts_match_the_rule(size):
    n, w, s = size
    starts = window_starts(n, w, s).tolist()
    assert starts == loop_starts(n, w, s)
    ends = [min(start + w, n) for start in starts]
    assert ends[-1] == n  # the last window reaches the end ...
    assert all(start + w < n for start in starts[:-1])  # ... and is the first to do so
    if n <= w:
        assert starts == [0]


@settings(max_examples=300, deadline=None)
@given(sizes)
def test_vectorised_assignment_equals_the_loop(size):
    n, w, s = size
    assert assign_windows(n, w, s).tolist() == loop_assignment(n, w, s)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 200), st.integers(1, 40), st.data())
def test_assignment_at_scale_of_long_documents(extra, w, data):
    # Many windows (a small stride over a long text), against the loop restricted to holding windows.
    s = data.draw(st.integers(1, max(1, w // 4)))
    n = w * 20 + extra
    assert assign_windows(n, w, s).tolist() == loop_assignment(n, w, s)


def test_default_stride_is_half_the_window():
    assert resolve_stride(510) == (510, 255)
    assert resolve_stride(7) == (7, 3)
    assert resolve_stride(1) == (1, 1)  # W // 2 would be 0, which is not a stride
    assert window_starts(1000, 510).tolist() == [0, 255, 510]


@pytest.mark.parametrize("stride", [0, -3, 11])
def test_bad_stride_is_a_value_error_naming_it(stride):
    with pytest.raises(ValueError, match=f"window_stride={stride}"):
        window_starts(100, 10, stride)
    with pytest.raises(ValueError, match=f"window_stride={stride}"):
        plan_windows(1, 100, 1, 10, stride)


def test_bad_sizes_are_errors():
    with pytest.raises(ValueError, match="window size 0"):
        window_starts(5, 0)
    with pytest.raises(ValueError, match="content length -1"):
        assign_windows(-1, 4)
    with pytest.raises(TypeError, match="window_stride"):
        window_starts(5, 4, 2.0)
    with pytest.raises(ValueError, match="lead=-1"):
        plan_windows(-1, 5, 1, 4)


def full_layout(lead: list[int], content: list[int], trail: list[int]) -> list[int]:
    return lead + content + trail


@settings(max_examples=200, deadline=None)
@given(sizes, st.integers(0, 2), st.integers(0, 2))
def test_plan_rows_point_at_the_right_token_in_the_right_window(size, num_lead, num_trail):
    n, w, s = size
    # Distinct ids everywhere, so a wrong position picks a visibly wrong id.
    lead = [-1 - j for j in range(num_lead)]
    trail = [-10 - j for j in range(num_trail)]
    content = [1000 + i for i in range(n)]
    windows = window_ids(lead, content, trail, w, s)
    plan = plan_windows(num_lead, n, num_trail, w, s)
    starts = loop_starts(n, w, s)
    assert len(windows) == plan.num_windows == len(starts)
    assert [len(x) for x in windows] == list(plan.window_lengths)
    for k, start in enumerate(starts):
        assert windows[k] == lead + content[start:start + w] + trail
    layout = full_layout(lead, content, trail)
    assert plan.text_length == len(layout) == len(plan.window) == len(plan.position)
    expected_window = [0] * num_lead + loop_assignment(n, w, s) + [len(starts) - 1] * num_trail
    assert plan.window.tolist() == expected_window
    for row, token in enumerate(layout):
        assert windows[plan.window[row]][plan.position[row]] == token


def test_short_text_is_one_window_encoded_as_today():
    plan = plan_windows(1, 5, 1, 5, 2)
    assert plan.is_single and plan.window.tolist() == [0] * 7 and plan.position.tolist() == list(range(7))
    assert window_ids([101], [1, 2, 3, 4, 5], [102], 5, 2) == [[101, 1, 2, 3, 4, 5, 102]]
    states = torch.randn(7, 4)
    assert assemble(plan, [states]) is states  # untouched: bit-identical to the unwindowed path


def test_plan_arrays_are_read_only():
    plan = plan_windows(1, 30, 1, 8)
    with pytest.raises(ValueError):
        plan.window[0] = 3


@settings(max_examples=100, deadline=None)
@given(sizes, st.integers(0, 2), st.integers(0, 2), st.booleans(), st.integers(0, 10_000))
def test_assemble_gathers_each_row_from_its_window(size, num_lead, num_trail, all_layers, seed):
    n, w, s = size
    plan = plan_windows(num_lead, n, num_trail, w, s)
    generator = torch.Generator().manual_seed(seed)
    shape = (3,) if all_layers else ()
    states = [torch.randn(*shape, length, 5, generator=generator) for length in plan.window_lengths]
    text = assemble(plan, states)
    assert text.shape == (*shape, num_lead + n + num_trail, 5)
    # Expected rows by the rule, written out: specials from the first/last window, content from its window.
    starts = loop_starts(n, w, s)
    owners = loop_assignment(n, w, s)
    last = len(starts) - 1
    expected = (
        [states[0][..., j, :] for j in range(num_lead)]
        + [states[owners[i]][..., num_lead + i - starts[owners[i]], :] for i in range(n)]
        + [states[last][..., num_lead + n - starts[last] + j, :] for j in range(num_trail)]
    )
    expected_text = torch.stack(expected, dim=-2) if expected else torch.empty(*shape, 0, 5)
    assert torch.equal(text, expected_text)


def test_assemble_rejects_states_that_do_not_fit_the_plan():
    plan = plan_windows(1, 10, 1, 4, 2)  # 4 windows of 6 positions
    good = [torch.zeros(6, 3) for _ in range(4)]
    with pytest.raises(ValueError, match="4 windows but 3"):
        assemble(plan, good[:3])
    with pytest.raises(ValueError, match="window 2: states of shape \\(5, 3\\), expected 6"):
        assemble(plan, good[:2] + [torch.zeros(5, 3)] + good[3:])


def test_long_document_plan_is_linear_and_covers_every_token():
    n, w = 30_000, 510
    plan = plan_windows(1, n, 1, w)
    assert plan.num_windows == 1 + -(-(n - w) // (w // 2))
    content_rows = plan.window[1:-1]
    assert np.all(np.diff(content_rows) >= 0)  # each window serves one contiguous stretch
    positions = plan.position[1:-1]
    assert positions.min() >= 1 and positions.max() <= w
    assert sum(plan.window_lengths) == sum(min(st + w, n) - st + 2 for st in plan.starts.tolist())


def test_an_assembly_missing_a_window_says_which_and_of_how_many() -> None:
    """result() before every window was added (even after some were) names the missing ones: fails if
    only a fully empty assembly is refused, or the message loses the windows it names."""
    plan = plan_windows(1, 30, 1, 8, 4)
    assembly = WindowAssembly(plan)
    with pytest.raises(ValueError) as error:
        assembly.result()
    assert str(error.value) == f"windows {list(range(plan.num_windows))} of {plan.num_windows} were never added"
    for k in range(plan.num_windows):
        if k != 2:
            assembly.add(k, torch.zeros(plan.window_lengths[k], 3))
    with pytest.raises(ValueError) as error:
        assembly.result()
    assert str(error.value) == f"windows [2] of {plan.num_windows} were never added" and not assembly.complete


def test_an_assembly_keeps_the_states_device() -> None:
    """Windows on the meta device (a stand-in for an accelerator, no memory) assemble there: fails if the
    row indices stay on the CPU beside states on another device."""
    plan = plan_windows(1, 30, 1, 8, 4)
    assembly = WindowAssembly(plan)
    for k in range(plan.num_windows):
        assembly.add(k, torch.empty(plan.window_lengths[k], 3, device="meta"))
    out = assembly.result()
    assert out.device.type == "meta" and out.shape == (plan.text_length, 3)


def test_plan_refusals_and_the_stride_kept_in_full() -> None:
    """Each refusal names the setting (leading / trailing specials, a window's shape); the plan keeps its
    stride: fails if a message loses what it names or its arithmetic, or the stride is dropped."""
    for lead, trail, message in ((1.5, 1, "number of leading special tokens must be an integer, got 1.5 (float)"),
                                 (1, True, "number of trailing special tokens must be an integer, got True")):
        with pytest.raises(TypeError) as error:
            plan_windows(lead, 10, trail, 4)
        assert str(error.value) == message
    plan = plan_windows(2, 30, 1, 8, 3)
    assert (plan.window_size, plan.stride) == (8, 3) and plan_windows(1, 30, 1, 8).stride == 4
    assembly = WindowAssembly(plan)
    with pytest.raises(ValueError) as error:
        assembly.add(0, torch.zeros(5, 4))
    assert str(error.value) == ("window 0: states of shape (5, 4), expected 11 positions on dim -2 (2 leading "
                                "specials + 8 content tokens + 1 trailing specials)")


def test_a_window_size_or_stride_of_the_wrong_type_is_refused_by_its_name() -> None:
    """A float or a bool window size or stride is refused with the setting's own name: fails if a
    message names the wrong setting or none."""
    cases = [((1.5,), "window size must be an integer, got 1.5 (float)"),
             ((True,), "window size must be an integer, got True"),
             ((8, 2.0), "window_stride must be an integer, got 2.0 (float)")]
    for arguments, message in cases:
        with pytest.raises(TypeError) as error:
            resolve_stride(*arguments)
        assert str(error.value) == message


def test_an_assembly_indexes_the_states_with_indices_on_their_device() -> None:
    """Every index handed to index_select / index_copy_ lives on the states' device (meta here, a
    stand-in for an accelerator, where a CPU index is refused): fails if the positions or the rows
    stay on the CPU."""
    from torch.overrides import TorchFunctionMode

    seen = []

    class IndexDevices(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in (torch.Tensor.index_select, torch.Tensor.index_copy_):
                seen.append((func.__name__, args[0].device.type, args[2].device.type))
            return func(*args, **(kwargs or {}))

    plan = plan_windows(1, 30, 1, 8, 4)
    assembly = WindowAssembly(plan)
    with IndexDevices():
        for k in range(plan.num_windows):
            assembly.add(k, torch.empty(plan.window_lengths[k], 3, device="meta"))
    assert {name for name, _, _ in seen} == {"index_select", "index_copy_"}
    assert all(tensor == index == "meta" for _, tensor, index in seen), seen


def test_a_stride_past_the_window_names_the_default_and_a_bad_length_its_name() -> None:
    """The refusal of a stride above the window names the default stride, half the window at least 1
    (3 for W = 7, 1 for W = 2, by hand); a float content length is refused under its name. Fails if the
    default quoted is not W // 2 (at least 1) or the length's message names something else."""
    for window, stride, default in ((7, 8, 3), (2, 3, 1)):
        with pytest.raises(ValueError) as error:
            resolve_stride(window, stride)
        assert str(error.value) == (f"window_stride={stride} is invalid: it must satisfy 1 <= window_stride <= "
                                    f"{window} (the window size); the default is {default} (half the window)")
    with pytest.raises(TypeError) as error:
        window_starts(1.5, 4)
    assert str(error.value) == "content length must be an integer, got 1.5 (float)"
