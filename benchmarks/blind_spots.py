"""What BERTScore does not see: F1 when a WMT17 reference is changed in ways a person calls wrong.

Each corrupted reference is scored as the candidate against the original reference (the embedded
MiniLM's F1, raw and rescaled with its shipped baseline; sacrebleu's sentence chrF and BLEU), next to
the real outputs of the human-judged systems for the same segments (`compare`; the report says what
each figure means).

Corruptions (stated rules; the text is lowercased and Moses-tokenised):
- numbers: every maximal digit run becomes another number of as many digits (seeded);
- negation: the first negation is removed ("not" dropped; "didn &apos;t" -> "did", ...), or, when
  there is none, "not" is inserted after the first auxiliary (is, are, was, were, will, would, can,
  could, should, must, may, might, has, have, had);
- entities: two names exchanged (every occurrence). A name is a word that Tatoeba's English
  sentences (natural casing, ../shared/data/tatoeba) write only capitalised, at least once
  mid-sentence (e.g. clinton, trump, prague, somalia); weekday and month names are left out, and
  consecutive names are one entity ("hillary clinton"); the first two distinct entities swap;
- sentence order: pseudo-documents of consecutive references (sid order) of one language pair,
  sentences shuffled so that each moves; short ones (within the model's 510-token limit) and long
  ones (past it), the long ones scored both in the default truncate mode and in long_texts="window".
  System documents: the same segments of each system, concatenated the same way.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/blind_spots.py [--data ../shared/data] [--sentences 100]

Writes blind_spots.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

from harness import sentence_metrics, table, tatoeba_english, timed, wmt17_syslevel
from machine import begin, command, header, machine_line, write_results

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer

NEGATED = {"don": "do", "doesn": "does", "didn": "did", "isn": "is", "aren": "are", "wasn": "was", "weren": "were",
           "hasn": "has", "haven": "have", "hadn": "had", "couldn": "could", "wouldn": "would", "shouldn": "should",
           "won": "will", "can": "can", "mustn": "must"}
AUXILIARIES = ("is", "are", "was", "were", "will", "would", "can", "could", "should", "must", "may", "might",
               "has", "have", "had")
NOT_NAMES = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february",
             "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}
METRICS = ("f1", "f1_rescaled", "chrf", "bleu")
IDENTITY = {"f1": 1.0, "f1_rescaled": 1.0, "chrf": 100.0, "bleu": 100.0}


# ----- corruptions (pure text functions) ------------------------------------------------------------
def change_numbers(text: str, rng: np.random.Generator) -> str | None:
    """Every digit run replaced by a different number of as many digits; None when there is none."""
    def other(match: re.Match) -> str:
        digits = match.group(0)
        while True:
            first = str(rng.integers(1 if len(digits) > 1 else 0, 10))
            new = first + "".join(str(d) for d in rng.integers(0, 10, len(digits) - 1))
            if new != digits:
                return new
    changed = re.sub(r"\d+", other, text)
    return changed if changed != text else None


def flip_negation(text: str) -> str | None:
    """Remove the first negation, or insert "not" after the first auxiliary; None when neither applies."""
    tokens = text.split()
    for i, token in enumerate(tokens):
        if token == "not":
            return " ".join(tokens[:i] + tokens[i + 1:])
        if token in NEGATED and i + 1 < len(tokens) and tokens[i + 1] == "&apos;t":
            return " ".join(tokens[:i] + [NEGATED[token]] + tokens[i + 2:])
    for i, token in enumerate(tokens):
        if token in AUXILIARIES:
            return " ".join(tokens[: i + 1] + ["not"] + tokens[i + 1:])
    return None


def tatoeba_names(data: Path) -> set[str]:
    """Words Tatoeba's English sentences write only capitalised, at least once mid-sentence."""
    capitalised, lower = set(), set()
    for sentence in dict.fromkeys(tatoeba_english(data)):
        for index, word in enumerate(re.findall(r"[A-Za-z]+", sentence)):
            if word.islower():
                lower.add(word)
            elif index > 0 and word[0].isupper() and word[1:].islower():
                capitalised.add(word.lower())
    return {w for w in capitalised - lower - NOT_NAMES if len(w) > 1}


def swap_entities(text: str, names: set[str]) -> str | None:
    """The first two distinct entities (runs of consecutive names) exchanged, every occurrence."""
    tokens = text.split()
    spans, i = [], 0
    while i < len(tokens):
        if tokens[i] in names:
            j = i
            while j < len(tokens) and tokens[j] in names:
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    entities = list(dict.fromkeys(tuple(tokens[a:b]) for a, b in spans))
    if len(entities) < 2:
        return None
    first, second = entities[0], entities[1]
    out = []
    cursor = 0
    for a, b in spans:
        out += tokens[cursor:a]
        entity = tuple(tokens[a:b])
        out += list(second if entity == first else first if entity == second else entity)
        cursor = b
    out += tokens[cursor:]
    return " ".join(out)


def shuffle_sentences(sentences: list[str], rng: np.random.Generator) -> list[str]:
    """The sentences in a random order in which every sentence moves (needs 2 or more)."""
    while True:
        order = rng.permutation(len(sentences))
        if not np.any(order == np.arange(len(sentences))):
            return [sentences[k] for k in order]


# ----- scoring --------------------------------------------------------------------------------------
class Scorers:
    """The embedded MiniLM raw and rescaled, truncating and windowed: one encoder, one shared cache."""

    def __init__(self) -> None:
        self.raw = BERTScorer(model_type=EMBEDDED_MODEL_NAME)
        shared = dict(loaded_model=self.raw.model, cache=self.raw.cache)
        self.rescaled = BERTScorer(**shared, rescale_with_baseline=True, lang="en")
        self.window = BERTScorer(**shared, long_texts="window")
        self.window_rescaled = BERTScorer(**shared, long_texts="window", rescale_with_baseline=True, lang="en")

    def score(self, cands: list[str], refs: list[str], window: bool = False,
              notes: list[str] | None = None) -> dict[str, np.ndarray]:
        raw, rescaled = (self.window, self.window_rescaled) if window else (self.raw, self.rescaled)
        return {
            "f1": raw.score(cands, refs, notes=notes)[2].numpy().astype(np.float64),
            "f1_rescaled": rescaled.score(cands, refs, notes=[])[2].numpy().astype(np.float64),  # same notes
            **{name: np.array(values) for name, values in sentence_metrics(cands, refs).items()},
        }

    def content_tokens(self, text: str) -> int:
        return len(self.raw.model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def compare(corrupted: list[str], references: list[str], systems: list[list[str]], scorers: Scorers,
            window: bool = False) -> dict:
    """Scores of corrupted vs reference, and of each item's system outputs vs the same reference."""
    sys_cands = [c for outputs in systems for c in outputs]
    sys_refs = [r for r, outputs in zip(references, systems) for _ in outputs]
    notes: list[str] = []
    seconds, scores = timed(lambda: scorers.score(corrupted + sys_cands, references + sys_refs, window, notes))
    owner = np.repeat(np.arange(len(corrupted)), [len(o) for o in systems])
    result = {"texts": len(corrupted), "system_outputs": len(sys_cands), "seconds": round(seconds, 1), "notes": notes}
    for metric in METRICS:
        mine, theirs = scores[metric][: len(corrupted)], scores[metric][len(corrupted):]
        result[metric] = {
            "corrupted_mean": float(mine.mean()),
            "drop": float(IDENTITY[metric] - mine.mean()),
            "systems_mean": float(theirs.mean()),
            # The drop as a share of how far the real outputs sit from a perfect score: comparable across metrics.
            "drop_share_of_system_gap": float((IDENTITY[metric] - mine.mean()) / (IDENTITY[metric] - theirs.mean())),
            "share_systems_below": float(np.mean(theirs < mine[owner])),
        }
    return result


# ----- the experiment --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=100, help="references sampled per sentence-level corruption")
    parser.add_argument("--docs", type=int, default=40, help="short pseudo-documents sampled")
    parser.add_argument("--doc-sentences", type=int, default=4, help="sentences per short pseudo-document")
    parser.add_argument("--long-docs", type=int, default=8, help="long pseudo-documents (past the limit) sampled")
    parser.add_argument("--long-doc-sentences", type=int, default=32, help="sentences per long pseudo-document")
    parser.add_argument("--seed", type=int, default=0)
    args, _, info = begin(parser, argv, threads=2, data=True, serial_tokenizers=True)
    started = time.perf_counter()
    outputs, references, human = wmt17_syslevel(args.data, human=True)
    judged = set(zip(human.LP, human.SYSTEM))
    outputs = outputs[[(lp, name) in judged for lp, name in zip(outputs.lp, outputs.sys)]]
    by_segment = outputs.groupby(["lp", "sid"]).candidate.apply(list).to_dict()
    systems_of = outputs.groupby("lp").sys.unique().to_dict()
    texts_of = {(lp, name): frame.set_index("sid").candidate.to_dict() for (lp, name), frame in outputs.groupby(["lp", "sys"])}
    references = references[[(lp, sid) in by_segment for lp, sid in zip(references.lp, references.sid)]]
    names = tatoeba_names(args.data)
    scorers = Scorers()
    rng = np.random.default_rng(args.seed)

    results, examples = {}, {}
    rules = {
        "numbers changed": lambda text: change_numbers(text, rng),
        "negation flipped": flip_negation,
        "entities swapped": lambda text: swap_entities(text, names),
    }
    for label, corrupt in rules.items():
        rows = [(lp, sid, ref, changed) for lp, sid, ref in zip(references.lp, references.sid, references.reference)
                if (changed := corrupt(ref)) is not None]
        picked = [rows[k] for k in sorted(rng.choice(len(rows), min(args.sentences, len(rows)), replace=False))]
        results[label] = compare([r[3] for r in picked], [r[2] for r in picked],
                                 [by_segment[(r[0], r[1])] for r in picked], scorers)
        results[label].update(eligible=len(rows), of_references=len(references))
        shortest = min(picked, key=lambda r: len(r[2]))
        examples[label] = {"reference": shortest[2], "corrupted": shortest[3]}
        print(label, {k: results[label][k] for k in ("texts", "system_outputs")}, results[label]["f1"], flush=True)

    def blocks(size: int) -> list[tuple[str, list[str]]]:
        found = []
        for lp, frame in references.groupby("lp"):
            ordered = frame.assign(order=frame.sid.astype(int)).sort_values("order")
            sids = ordered.sid.tolist()
            for start in range(0, len(sids) - size + 1, size):
                chunk = sids[start:start + size]
                if all(all(sid in texts_of[(lp, name)] for sid in chunk) for name in systems_of[lp]):
                    found.append((lp, chunk))
        return found

    refs_by = references.set_index(["lp", "sid"]).reference.to_dict()

    def documents(picked: list[tuple[str, list[str]]]) -> tuple[list[str], list[str], list[list[str]]]:
        originals, shuffled, systems = [], [], []
        for lp, chunk in picked:
            sentences = [refs_by[(lp, sid)] for sid in chunk]
            originals.append(" ".join(sentences))
            shuffled.append(" ".join(shuffle_sentences(sentences, rng)))
            systems.append([" ".join(texts_of[(lp, name)][sid] for sid in chunk) for name in systems_of[lp]])
        return originals, shuffled, systems

    limit = scorers.raw.model.content_limit
    short = [b for b in blocks(args.doc_sentences)]
    short = [short[k] for k in sorted(rng.choice(len(short), min(args.docs, len(short)), replace=False))]
    originals, shuffled, systems = documents(short)
    within = [i for i, text in enumerate(originals) if scorers.content_tokens(text) <= limit]
    originals, shuffled, systems = ([x[i] for i in within] for x in (originals, shuffled, systems))
    label = f"sentence order, {args.doc_sentences}-sentence documents"
    results[label] = compare(shuffled, originals, systems, scorers)
    print(label, results[label]["f1"], flush=True)

    long_blocks = blocks(args.long_doc_sentences)
    order = rng.permutation(len(long_blocks))
    long_picked, lengths = [], []
    for k in order:
        lp, chunk = long_blocks[k]
        tokens = scorers.content_tokens(" ".join(refs_by[(lp, sid)] for sid in chunk))
        if tokens > limit:
            long_picked.append(long_blocks[k])
            lengths.append(tokens)
        if len(long_picked) == args.long_docs:
            break
    originals, shuffled, systems = documents(long_picked)
    for mode in ("truncate", "window"):
        label = f"sentence order, {args.long_doc_sentences}-sentence documents, {mode}"
        results[label] = compare(shuffled, originals, systems, scorers, window=mode == "window")
        results[label]["median_reference_tokens"] = int(np.median(lengths))
        print(label, results[label]["f1"], flush=True)

    import sacrebleu

    result = {
        "command": command("blind_spots.py", sys.argv[1:] if argv is None else argv),
        "model": EMBEDDED_MODEL_NAME,
        "hash": {"raw": scorers.raw.hash, "rescaled": scorers.rescaled.hash, "window": scorers.window.hash,
                 "window_rescaled": scorers.window_rescaled.hash},
        "baseline_f1": float(scorers.rescaled.baseline[2]),
        "content_limit": limit,
        "settings": {"sentences": args.sentences, "docs": args.docs, "doc_sentences": args.doc_sentences,
                     "long_docs": args.long_docs, "long_doc_sentences": args.long_doc_sentences, "seed": args.seed,
                     "threads": args.threads},
        "entity_names": len(names),
        "results": results,
        "examples": examples,
        "versions": {"sacrebleu": sacrebleu.__version__},
        "machine": info,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_results(args.out, "blind_spots", result, render(result))
    return 0


def render(r: dict) -> str:
    s = r["settings"]
    lines = [
        *header("Blind spots: what F1 misses when a reference is made wrong (WMT17 to-English)", None, r["command"],
                " (data: ../shared/data/wmt17/syslevel and tatoeba/, read-only; "
                f"{r['seconds']:.0f} s on this shared CPU)."),
        f"Model `{r['model']}` (embedded), default layer, F1, no idf; rescaled with its shipped baseline "
        f"(F1 baseline {r['baseline_f1']:.4f}); hash `{r['hash']['raw']}` (window mode: `{r['hash']['window']}`). "
        f"chrF and BLEU: sacrebleu {r['versions']['sacrebleu']} `sentence_chrf` / `sentence_bleu` defaults.",
        machine_line(r["machine"]),
        "",
        "Each corrupted reference is the candidate, the original reference the reference; the reference against "
        "itself scores 1 (F1, raw and rescaled) or 100 (chrF, BLEU), so **drop** = that minus the mean corrupted "
        "score, and **(x%)** = that drop as a share of the gap between a perfect score and the mean score of the "
        "real system outputs (second table; comparable across metrics: how big the error looks next to a real "
        "translation's distance from the reference). **below** = share of the human-judged systems' real outputs "
        "for the same segments (same "
        "references) that score below the corrupted text: how many real translations the metric ranks under a "
        "text with the error.",
        f"Sizes (subsampled, seed {s['seed']}): {s['sentences']} references per sentence-level corruption, drawn "
        f"from those the rule applies to; {s['docs']} documents of {s['doc_sentences']} consecutive references "
        f"(kept when within the {r['content_limit']}-token limit); {s['long_docs']} documents of "
        f"{s['long_doc_sentences']} consecutive references past the limit. Rules: see the script's docstring "
        f"(entity names: {r['entity_names']:,} words Tatoeba writes only capitalised).",
        "",
        *table(["corruption", "texts (system outputs)", "F1: drop (x%) / below", "F1 rescaled: drop (x%) / below",
                "chrF: drop (x%) / below", "BLEU: drop (x%) / below"],
               [[label, f"{row['texts']} ({row['system_outputs']:,})",
                 *(f"{row[m]['drop']:.{3 if m.startswith('f1') else 1}f} ({row[m]['drop_share_of_system_gap']:.0%}) / "
                   f"{row[m]['share_systems_below']:.0%}" for m in METRICS)] for label, row in r["results"].items()]),
        "",
        "Mean score of the real system outputs on the same references (for scale):",
        "",
        *table(["corruption", "F1", "F1 rescaled", "chrF", "BLEU"],
               [[label, f"{row['f1']['systems_mean']:.3f}", f"{row['f1_rescaled']['systems_mean']:.3f}",
                 f"{row['chrf']['systems_mean']:.1f}", f"{row['bleu']['systems_mean']:.1f}"]
                for label, row in r["results"].items()]),
    ]
    lines += ["", "Examples (the shortest sampled reference of each rule):", ""]
    for label, example in r["examples"].items():
        lines += [f"- {label}: `{example['reference']}` -> `{example['corrupted']}`"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
