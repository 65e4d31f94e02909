"""`bertscore -r refs.txt --systems base.txt a.txt b.txt`: several systems, one table, paired tests.

Every system is scored against the same references (embedded once, through the scorer's
cache); the table gives each system's mean P, R and F1 with bootstrap intervals and, against
the first system, the F1 difference, its interval and a paired test's p-value (approximate
randomization by default, sacrebleu's paired bootstrap with --paired-bs), marked `*` below 0.05.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from ..inputs import InputError
from ..output_files import check_output, write_text
from ..stats import DEFAULT_RESAMPLES, bootstrap_ci, compare_systems, confidence_label
from ..wording import counted
from .io import decoded_lines, name_lines, open_text, read_files
from .options import build_scorer

SIGNIFICANCE = 0.05
CI_RESAMPLES = 1000


def _read_all(path: str) -> list[str]:
    with open_text(path) as handle:
        return list(decoded_lines(handle, path))


def _names(paths: list[str]) -> list[str]:
    """Each system's file name, or its whole path where two share a name."""
    names = [os.path.basename(p) for p in paths]
    return [p if names.count(n) > 1 else n for p, n in zip(paths, names)]


def run_systems(args: argparse.Namespace) -> int:
    """Score every system of --systems and print (or write) the comparison table."""
    if not args.references:
        raise InputError("--systems needs the references: -r REFERENCES [REFERENCES ...]")
    if "-" in args.systems or "-" in args.references:
        raise InputError("--systems and -r take files, not stdin")
    repeated = sorted({p for p in args.systems if args.systems.count(p) > 1})
    if repeated:
        raise InputError(f"--systems lists {', '.join(repeated)} more than once: give each system once")
    inputs = [*args.systems, *args.references]
    texts = {path: _read_all(path) for path in dict.fromkeys(inputs)}  # every file checked before scoring
    lengths = {path: len(texts[path]) for path in inputs}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{p}: {counted(n, 'line')}" for p, n in lengths.items())
        raise InputError(f"the systems and references differ in length ({detail}): every file needs one line per segment")
    if lengths[args.systems[0]] < 2:
        raise InputError(f"{args.systems[0]} has {lengths[args.systems[0]]} line(s): statistics need at least 2 segments")
    output = Path(args.output) if args.output else None
    if output is not None:
        check_output(output, read_files(args, inputs))  # before any scoring: never an input, a usable folder or a device

    scorer = build_scorer(args, args.device)
    groups = [list(group) for group in zip(*(texts[p] for p in args.references))]
    weights = scorer.idf_weights_for([r for group in groups for r in group]) if args.idf else None
    scores: dict[str, dict[str, list[float]]] = {}
    names = _names(args.systems)
    for name, path in zip(names, args.systems):
        notes: list[str] = []
        precision, recall, f1 = scorer.score(texts[path], groups, verbose=args.progress, notes=notes, weights=weights)
        places = argparse.Namespace(input=None, candidates=path, references=args.references)
        for note in notes:
            print(f"bertscore: note ({name}): {name_lines(note, 0, places)}", file=sys.stderr)
        scores[name] = {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist()}

    cautions: list[str] = []  # few segments or resamples: said once, before the table
    report = _compare(scores, args, cautions)
    for caution in dict.fromkeys(cautions):
        print(f"bertscore: note: {caution}", file=sys.stderr)
    report.update(hashcode=scorer.hash, segments=lengths[args.systems[0]], references=list(args.references))
    rendered = {"json": _as_json, "tsv": _as_tsv}.get(args.format, _as_text)(report)
    if output is None:
        sys.stdout.write(rendered)
    else:
        write_text(output, rendered, read_files(args, inputs))
        print(f"bertscore: wrote the comparison of {len(names)} systems to {output}", file=sys.stderr)
    return 0


def _compare(scores: dict[str, dict[str, list[float]]], args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    """The comparison report; `compare_systems`'s cautions (few segments, few resamples) go to `notes`."""
    method = "bootstrap" if args.paired_bs else "permutation"
    n_resamples = args.n_resamples or DEFAULT_RESAMPLES[method]
    ci_resamples = n_resamples if method == "bootstrap" else CI_RESAMPLES
    rows = compare_systems({name: s["f1"] for name, s in scores.items()}, method=method, n_resamples=n_resamples,
                           confidence=args.confidence, seed=args.seed, ci_resamples=CI_RESAMPLES, notes=notes)
    systems = []
    for row, (name, values) in zip(rows, scores.items()):
        entry: dict[str, Any] = {"name": name}
        for column in ("precision", "recall"):
            # Same segments and resamples as compare_systems, which has given its cautions already.
            entry[column] = bootstrap_ci(values[column], ci_resamples, args.confidence, args.seed, notes=[]).to_dict()
        entry["f1"] = {"mean": row.mean, "stderr": row.stderr, "low": row.low, "high": row.high}
        entry["baseline"] = row.is_baseline
        entry["f1_difference"] = None if row.is_baseline else {
            "difference": row.difference, "low": row.difference_low, "high": row.difference_high,
            "p_value": row.p_value, "significant": row.significant(SIGNIFICANCE), "identical": row.identical,
        }
        systems.append(entry)
    test = {"permutation": "paired approximate randomization", "bootstrap": "paired bootstrap resampling"}[method]
    return {"test": {"name": test, "method": method, "n_resamples": n_resamples, "confidence": args.confidence,
                     "interval_resamples": ci_resamples, "seed": args.seed, "significance": SIGNIFICANCE},
            "systems": systems}


def _interval(stats: dict[str, Any]) -> str:
    return f"{stats['mean']:.4f} [{stats['low']:.4f}, {stats['high']:.4f}]"


def _as_text(report: dict[str, Any]) -> str:
    test = report["test"]
    out = io.StringIO()
    out.write(f"BERTScore of {len(report['systems'])} systems on {report['segments']} segments; "
              f"mean [{confidence_label(test['confidence'])} bootstrap interval, {test['interval_resamples']} resamples]\n")
    header = ["system", "P", "R", "F1", f"F1 - {report['systems'][0]['name']}", "p-value"]
    lines = [header]
    for system in report["systems"]:
        diff = system["f1_difference"]
        lines.append([
            system["name"], _interval(system["precision"]), _interval(system["recall"]), _interval(system["f1"]),
            "(baseline)" if diff is None else f"{diff['difference']:+.4f} [{diff['low']:+.4f}, {diff['high']:+.4f}]",
            "" if diff is None else f"{diff['p_value']:.4f}" + (" *" if diff["significant"] else "")
            + (" (identical scores)" if diff["identical"] else ""),
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() + "\n")
    out.write(f"* p < {test['significance']} ({test['name']}, {test['n_resamples']} resamples, seed {test['seed']})\n")
    out.write(f"hash: {report['hashcode']}\n")
    return out.getvalue()


def _as_json(report: dict[str, Any]) -> str:
    return json.dumps(report) + "\n"


def _as_tsv(report: dict[str, Any]) -> str:
    columns = ["system"] + [f"{m}_{k}" for m in ("precision", "recall", "f1") for k in ("mean", "low", "high")]
    columns += ["f1_difference", "f1_difference_low", "f1_difference_high", "p_value"]
    out: IO[str] = io.StringIO()
    out.write("\t".join(columns) + "\n")
    for system in report["systems"]:
        diff = system["f1_difference"] or {}
        cells = [system["name"]] + [f"{system[m][k]:.6f}" for m in ("precision", "recall", "f1") for k in ("mean", "low", "high")]
        cells += [f"{diff[k]:.6f}" if k in diff else "" for k in ("difference", "low", "high", "p_value")]
        out.write("\t".join(cells) + "\n")
    return out.getvalue()
