"""datasets' map over a BERTScorer: the first map, the second (datasets' cache), and the fingerprint.

--rows WMT17 de-en pairs (tests/data), saved with `save_to_disk` and loaded back (datasets caches maps of
file-backed datasets only), mapped twice by `score_columns(scorer)` and twice by a plain closure: each
map's time, whether the second came from the cache, and the time of datasets' fingerprint of the function
(`Hasher.hash`, median of --repeats) before and after scoring, next to that of the scorer's `__dict__`
(what scorers pickled as before they pickled as their settings). docs/datasets.md quotes the report.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/dataset_map.py [--rows 300] [--repeats 20]  # dataset_map.md, .json
"""

import argparse
import statistics
import tempfile
from typing import Any, Callable

from harness import FIXTURE, repeated, table, timed, wmt17_pairs
from machine import begin, command, header, write_results


def median_ms(action: Callable[[], Any], repeats: int, digits: int = 3) -> float:
    """The median milliseconds of `repeats` calls, rounded."""
    return round(1000 * statistics.median(repeated(action, repeats)[0]), digits)


def map_twice(dataset: Any, function: Callable, calls: list[int]) -> dict[str, Any]:
    from datasets.fingerprint import Hasher

    calls.clear()
    before = Hasher.hash(function)
    first_s, first = timed(lambda: dataset.map(function, batched=True, batch_size=64))
    scored = sum(calls)
    calls.clear()
    second_s, second = timed(lambda: dataset.map(function, batched=True, batch_size=64))
    return {"first_map_s": round(first_s, 3), "second_map_s": round(second_s, 3), "rows_scored_first": scored,
            "rows_scored_second": sum(calls), "cache_hit": second.cache_files == first.cache_files and not calls,
            "fingerprint_unchanged_by_scoring": Hasher.hash(function) == before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=20)
    args, folder, info = begin(parser)

    import datasets
    from datasets.fingerprint import Hasher

    from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
    from bertscore.dataset_map import score_columns

    datasets.disable_progress_bars()
    candidates, references = wmt17_pairs(FIXTURE, limit=args.rows)
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu")
    # the closure's scorer: the same encoder, an embedding cache of its own (its first map embeds anew)
    closure_scorer = BERTScorer(loaded_model=scorer.model, device="cpu")
    calls: list[int] = []

    def counted(method: Callable) -> Callable:
        def wrapper(cands: Any, refs: Any, *rest: Any, **options: Any) -> Any:
            calls.append(len(cands))
            return method(cands, refs, *rest, **options)
        return wrapper

    def add_scores(batch: dict) -> dict:
        precision, recall, f1 = closure_scorer.score(batch["prediction"], batch["reference"])
        return {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist()}

    helper = score_columns(scorer)
    fingerprint = {"helper_ms": median_ms(lambda: Hasher.hash(helper), args.repeats),
                   "closure_ms": median_ms(lambda: Hasher.hash(add_scores), args.repeats)}
    with tempfile.TemporaryDirectory() as work:
        datasets.Dataset.from_dict({"prediction": candidates, "reference": references}).save_to_disk(f"{work}/pairs")
        dataset = datasets.load_from_disk(f"{work}/pairs")
        for each in (scorer, closure_scorer):  # counts rows scored; an instance attribute: not what a scorer pickles as
            each.score = counted(each.score)
        runs = {"score_columns(scorer)": map_twice(dataset, helper, calls),
                "plain closure": map_twice(dataset, add_scores, calls)}
        for each in (scorer, closure_scorer):
            del each.score
    fingerprint["helper_after_scoring_ms"] = median_ms(lambda: Hasher.hash(helper), args.repeats)
    fingerprint["old_state_ms"] = median_ms(lambda: Hasher.hash(scorer.__dict__), 3, digits=1)
    fingerprint["cached_embeddings"] = len(scorer.cache)

    result = {"machine": info, "rows": len(candidates), "model": EMBEDDED_MODEL_NAME, "fingerprint": fingerprint,
              "maps": runs}
    lines = [
        *header("datasets' map over a BERTScorer: first map, cache hit, fingerprint", info,
                command("dataset_map.py", ["--rows", args.rows, "--repeats", args.repeats])),
        f"{len(candidates)} WMT17 de-en pairs (tests/data), saved with save_to_disk and loaded back; "
        f"{EMBEDDED_MODEL_NAME}, default layer, CPU, map batch size 64.", "",
        *table(["map function", "first map", "second map", "rows scored (1st / 2nd)", "cache hit",
                "fingerprint kept after scoring"],
               [[name, f"{run['first_map_s']:.2f} s", f"{run['second_map_s']:.3f} s",
                 f"{run['rows_scored_first']} / {run['rows_scored_second']}", "yes" if run["cache_hit"] else "NO",
                 "yes" if run["fingerprint_unchanged_by_scoring"] else "NO"] for name, run in runs.items()]),
        "", f"Fingerprint (datasets' `Hasher.hash`, median of {args.repeats}): score_columns(scorer) "
        f"{fingerprint['helper_ms']:.2f} ms before scoring, {fingerprint['helper_after_scoring_ms']:.2f} ms after "
        f"({fingerprint['cached_embeddings']} embeddings cached); the plain closure {fingerprint['closure_ms']:.2f} ms. "
        f"Hashing the scorer's state as it was pickled before scorers pickled as their settings (weights and "
        f"embedding cache, median of 3): {fingerprint['old_state_ms']:.0f} ms."]
    write_results(folder, "dataset_map", result, lines)


if __name__ == "__main__":
    main()
