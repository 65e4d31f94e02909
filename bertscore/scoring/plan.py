"""How pairs are grouped for embedding and matching: pure index arithmetic, no model, no tensors.

Chunks bound what is embedded at once (pairs and tokens), so peak memory depends on these
budgets, not on the corpus. Match batches bound one batch's padded embeddings and
similarities; a pair too large for that on its own is matched over tiles. `needs_tiling` is
the one place that decides it: `score()`, `explain_pair` and the distributed path all ask it.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Callable, Iterable, Iterator, Sequence

DEFAULT_CHUNK_PAIRS = 2048
FIRST_STREAM_BLOCK = 256  # pairs tokenized before the first match of a streamed call (`stream_blocks`)
STREAM_GROWTH = 1.5  # each block of a streamed call costs this many times the one before (`stream_blocks`)
CHUNK_EMBEDDING_BYTES = 256 << 20  # embeddings held at once per chunk (tokens x layers x hidden x 4 B)
MATCH_BATCH_BYTES = 64 << 20  # padded embeddings + similarities of one matching batch
MAX_PAIRS_PER_MATCH = 1024

Length = Callable[[str], int]


def stream_blocks(costs: Sequence[int], block_pairs: int = DEFAULT_CHUNK_PAIRS) -> list[range]:
    """Consecutive blocks of a call's pairs (positions in `stream_order`), each tokenized while the
    one before it is embedded and matched (`tokenize_ahead`). `costs[i]` is the i-th pair's
    tokenizing cost (`pair_cost`).

    A call of at most `block_pairs` pairs is one block: it is scored exactly as one chunk of pairs
    always was. A longer call starts small, so that little tokenizing waits before the first match
    (FIRST_STREAM_BLOCK pairs); each block then costs about STREAM_GROWTH times the one before, up
    to `block_pairs` pairs. Growth is measured in cost, not pairs: pairs come shortest first, so a
    block of later pairs costs more per pair to tokenize (and to score); counted in pairs, the
    last blocks took longer to tokenize than the blocks before them took to score, and the caller
    waited. Tokenizing a block on one thread takes about 0.6 of scoring as costly a block on
    another, so at 1.5 the next block is in before this one is scored (a smaller growth makes more
    blocks, each with its own fixed cost: slower in benchmarks/host_speed.py).
    """
    num_pairs = len(costs)
    if num_pairs <= block_pairs:
        return [range(num_pairs)]
    cumulative = list(accumulate(costs))  # cumulative[i]: cost of pairs 0..i
    start = min(FIRST_STREAM_BLOCK, block_pairs)
    blocks = [range(start)]
    before = cumulative[start - 1]  # cost of the block before
    while start < num_pairs:
        spent = cumulative[start - 1]
        stop = bisect_right(cumulative, spent + max(1, int(before * STREAM_GROWTH)))
        stop = min(max(stop, start + 1), start + block_pairs, num_pairs)
        blocks.append(range(start, stop))
        before, start = cumulative[stop - 1] - spent, stop
    return blocks


def pair_cost(cand_key: str, ref_key: str) -> int:
    """A pair's tokenizing cost for `stream_blocks`: its characters, and one per text (an empty
    text still costs its special tokens)."""
    return len(cand_key) + len(ref_key) + 2


def stream_order(cand_keys: Sequence[str], ref_keys: Sequence[str]) -> list[int]:
    """Pairs in the order a streamed call takes them: by reference length in characters (the
    tokens are not known yet), then reference, then candidate length. Pairs sharing a reference
    then fall in one block (it is tokenized and embedded once), beside pairs of similar lengths."""
    return sort_pairs(range(len(cand_keys)), list(map(len, ref_keys)), ref_keys, list(map(len, cand_keys)))


def sort_pairs(pairs: Iterable[int], *keys: Sequence) -> list[int]:
    """`pairs` sorted by (keys[0][i], keys[1][i], ...), ties in their given order: one stable sort
    per key, last key first, each keyed by a C-level lookup (no tuple built per pair)."""
    order = list(pairs)
    for key in reversed(keys):
        order.sort(key=key.__getitem__)
    return order


def chunk_order(cand_keys: Sequence[str], ref_keys: Sequence[str], length: Length, skip: set[int],
                presorted: bool = False) -> list[int]:
    """The pairs chunks take (all but `skip`), in order: as given when `presorted` (a streamed block,
    already in `stream_order`), else by (reference length, reference, candidate length) in tokens
    (`length`): pairs sharing a reference sit together, so a reference is embedded once per chunk."""
    order = [i for i in range(len(cand_keys)) if i not in skip]
    return order if presorted else sort_pairs(order, list(map(length, ref_keys)), ref_keys, list(map(length, cand_keys)))


def needs_tiling(cand_length: int, ref_length: int, layers: int) -> bool:
    """Whether one pair's similarity ([layers,] Lc x Lr fp32) alone exceeds MATCH_BATCH_BYTES:
    such a pair is matched by `greedy_match_tiled` (never within the limit of any encoder)."""
    return cand_length * ref_length * layers * 4 > MATCH_BATCH_BYTES


def chunks(
    order: Sequence[int],
    cand_keys: Sequence[str],
    ref_keys: Sequence[str],
    length: Length,
    max_pairs: int,
    floats_per_token: int,
) -> Iterator[list[int]]:
    """Consecutive pairs of `order`: at most `max_pairs`, and about CHUNK_EMBEDDING_BYTES of embeddings.

    `length(key)` is a text's embedding rows (0 for one already held). Bounding pairs alone
    lets a chunk of long texts (the last ones: pairs are sorted by length) hold far more
    embeddings than a chunk of short ones, so peak memory grew with the corpus.
    """
    budget = max(1, CHUNK_EMBEDDING_BYTES // (4 * floats_per_token))  # tokens
    chunk: list[int] = []
    seen: set[str] = set()
    tokens = 0
    for index in order:
        cand, ref = cand_keys[index], ref_keys[index]
        cost = (0 if cand in seen else length(cand)) + (0 if ref in seen or ref == cand else length(ref))
        if chunk and (len(chunk) >= max_pairs or tokens + cost > budget):
            yield chunk
            chunk, seen, tokens = [], set(), 0
            cost = length(cand) + (0 if ref == cand else length(ref))
        chunk.append(index)
        seen.add(cand)
        seen.add(ref)
        tokens += cost
    if chunk:
        yield chunk


def match_batches(
    pairs: Sequence[int],
    cand_keys: Sequence[str],
    ref_keys: Sequence[str],
    length: Length,
    floats_per_token: int,
    layers: int,
) -> Iterator[tuple[list[int], bool]]:
    """(batch, tiled): pairs grouped so that a batch's padded embeddings and similarities stay
    under MATCH_BATCH_BYTES; a pair too large for that alone comes as ([pair], True)."""
    budget = MATCH_BATCH_BYTES // 4  # floats
    batch: list[int] = []
    longest_cand = longest_ref = 0
    for index in pairs:
        lc, lr = length(cand_keys[index]), length(ref_keys[index])
        if needs_tiling(lc, lr, layers):
            yield [index], True
            continue
        new_cand, new_ref = max(longest_cand, lc), max(longest_ref, lr)
        floats = (len(batch) + 1) * (new_cand * new_ref * layers + (new_cand + new_ref) * floats_per_token)
        if batch and (len(batch) >= MAX_PAIRS_PER_MATCH or floats > budget):
            yield batch, False
            batch, new_cand, new_ref = [], lc, lr
        batch.append(index)
        longest_cand, longest_ref = new_cand, new_ref
    if batch:
        yield batch, False
