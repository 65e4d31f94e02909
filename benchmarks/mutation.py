"""The mutation score of the core math: how many small bugs planted by mutmut the fast tests catch.

`make mutation` asks this script which mutated functions the committed record (mutation.json's
"functions": per function its name, source digest, tests digest and verdicts) does not describe
(`--stale`), runs mutmut on those alone, then merges mutmut's fresh verdicts (mutants/**/*.py.meta)
into the record and writes the score per module: killed / (all - argued equivalent). docs/testing.md
("Mutation testing of the core math") says what each outcome means and how records match the code.

    .venv/bin/python benchmarks/mutation.py [--update-results | --out FOLDER]
    .venv/bin/python benchmarks/mutation.py --stale   # mutmut patterns of the functions to rerun
"""

import argparse
import ast
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from harness import table
from machine import RESULTS, ROOT, add_output_options, output_folder, write_results

MUTANTS = ROOT / "mutants"
RECORD = RESULTS / "mutation.json"  # the committed record the fresh verdicts are merged into
EQUIVALENT = RESULTS / "mutation_equivalent.json"  # the arguments, kept with the figures
SURVIVORS = RESULTS / "mutation_survivors.json"  # survivors left alive, with why
# mutmut's exit codes (mutmut.stats.status_by_exit_code), as the outcomes counted here
KILLED_CODES = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}  # failed, pytest error, timeout, type check, crash
SURVIVED_CODES = {0}
NO_TESTS_CODES = {5, 33}
VERDICTS = ("killed", "survived", "no_tests")  # what the record keeps per mutant
OUTCOMES = ("killed", "survived", "equivalent", "no_tests", "not_checked")
CLASS_SEPARATOR = "ǁ"  # mutmut's, in a method's mangled name: xǁClassǁmethod


class Function(NamedTuple):
    """A function of a mutated module as the code holds it now."""

    module: str  # the file's stem (matching), the key of the per-module figures
    dotted: str  # the module's import path (bertscore.scoring.matching), the prefix of mutmut's mutant names
    name: str  # qualified name: greedy_match, TokenWeights.__init__
    sha256: str  # of ast.dump(node, annotate_fields=False), as mutmut's own function hash

    @property
    def mangled(self) -> str:
        """mutmut's name of the function: x_greedy_match, xǁTokenWeightsǁ__init__."""
        *classes, name = self.name.split(".")
        if not classes:
            return f"x_{name}"
        return f"x{CLASS_SEPARATOR}{'.'.join(classes)}{CLASS_SEPARATOR}{name}"

    @property
    def pattern(self) -> str:
        """The `mutmut run` pattern of every mutant of this function."""
        return f"{self.dotted}.{self.mangled}__mutmut_*"


def settings() -> dict[str, Any]:
    """pyproject.toml's [tool.mutmut]."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]


def source_digests(source: str) -> dict[str, str]:
    """Qualified name -> sha256 of each function and method (classes nested as mutmut walks them)."""
    digests: dict[str, str] = {}

    def visit(statements: list[ast.stmt], prefix: str) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                dump = ast.dump(node, annotate_fields=False)
                digests[prefix + node.name] = hashlib.sha256(dump.encode()).hexdigest()
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(source).body, "")
    return digests


def code_functions(paths: list[str] | None = None) -> list[Function]:
    """Every function of the mutated modules (only_mutate), wherever they sit."""
    functions = []
    for path in paths if paths is not None else settings()["only_mutate"]:
        relative = Path(path)
        dotted = ".".join(relative.with_suffix("").parts)
        source = (ROOT / relative).read_text(encoding="utf-8")
        functions += [Function(relative.stem, dotted, name, sha) for name, sha in source_digests(source).items()]
    return functions


def tests_digest() -> str:
    """sha256 of the test files mutmut runs (the selection, and conftest.py that shapes them)."""
    files = sorted({*settings()["pytest_add_cli_args_test_selection"], "tests/conftest.py"})
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{name}\0{hashlib.sha256((ROOT / name).read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def mutant_key(function: str, number: int | str) -> str:
    """The id of a mutant in the record and the argument files: greedy_match__mutmut_67."""
    return f"{function}__mutmut_{number}"


class Fresh(NamedTuple):
    """mutmut's verdicts for one function in mutants/: its hash of the source it mutated, and the exit
    code by mutant number (None: not run)."""

    mutmut_hash: str
    codes: dict[int, int | None]


def read_fresh(mutants: Path) -> dict[tuple[str, str], Fresh]:
    """(dotted module, mangled function) -> mutmut's verdicts in its folder (none without one)."""
    fresh: dict[tuple[str, str], Fresh] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes = data.get("hash_by_function_name", {})
        for mutant, code in data["exit_code_by_key"].items():
            head, number = mutant.rsplit("__mutmut_", 1)
            dotted, mangled = head.rsplit(".", 1)
            fresh.setdefault((dotted, mangled), Fresh(hashes.get(mangled, ""), {})).codes[int(number)] = code
    return fresh


def verdict(code: int | None) -> str:
    """The outcome of mutmut's exit code."""
    return next((kind for kind, codes in zip(VERDICTS, (KILLED_CODES, SURVIVED_CODES, NO_TESTS_CODES))
                 if code in codes), "not_checked")


def load_record(path: Path = RECORD) -> dict[tuple[str, str], dict[str, Any]]:
    """(name, source sha256) -> the committed record of that function."""
    return {(f["function"], f["source_sha256"]): f for f in read_json(path).get("functions", [])}


def merge(functions: list[Function], record: dict[tuple[str, str], dict[str, Any]],
          fresh: dict[tuple[str, str], Fresh], tests_sha256: str) -> list[dict[str, Any]]:
    """Per function of the code: the recorded verdicts where its source is unchanged, overwritten by
    mutmut's fresh ones for the same source; mutants neither holds stay not checked."""
    merged = []
    for f in functions:
        old = record.get((f.name, f.sha256))
        tests = old["tests_sha256"] if old else None
        verdicts = {n: kind for kind in (*VERDICTS, "not_checked") for n in (old or {}).get(kind, [])}
        new = fresh.get((f.dotted, f.mangled))
        # only mutmut's verdicts on this very source (its hash is the first 12 digits of ours), so a
        # leftover mutants/ of older code is never taken for this one
        if new is not None and new.mutmut_hash == f.sha256[:12]:
            for number, code in new.codes.items():
                if code is not None or number not in verdicts:
                    verdicts[number] = verdict(code)
                    tests = tests_sha256 if code is not None else tests
        elif not old:
            verdicts = {n: "not_checked" for n in _mutant_numbers(f)}
        by_kind = {kind: sorted(n for n, v in verdicts.items() if v == kind) for kind in (*VERDICTS, "not_checked")}
        merged.append({"module": f.module, "function": f.name, "source_sha256": f.sha256,
                       "tests_sha256": tests, **by_kind})
    return merged


def _mutant_numbers(function: Function) -> list[int]:
    """The numbers of the mutants mutmut makes of one function (mutmut generates them, no test runs)."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    path = Path(*function.dotted.split(".")).with_suffix(".py")
    names = mutate_file_contents(str(path), (ROOT / path).read_text(encoding="utf-8")).mutant_names
    prefix = f"{function.mangled}__mutmut_"
    return [int(name[len(prefix):]) for name in names if name.startswith(prefix)]


def summarise(functions: list[dict[str, Any]], equivalent: dict[str, Any], survivors: dict[str, Any],
              old_alive: dict[str, Any], diff: Any = None) -> dict[str, Any]:
    """Per module and in all: the counts of each outcome and the score; the mutants left alive (and
    their diffs: mutmut's where it ran, else the record's or the argument's)."""
    modules: dict[str, dict[str, Any]] = {}
    alive = {}
    for f in functions:
        counts = modules.setdefault(f["module"], dict.fromkeys(("total", *OUTCOMES), 0))
        for kind in (*VERDICTS, "not_checked"):
            for number in f[kind]:
                key = mutant_key(f["function"], number)
                argued = equivalent.get(key)
                argued_now = argued and argued.get("function_sha256") == f["source_sha256"]
                kind_now = "equivalent" if kind == "survived" and argued_now else kind
                counts["total"] += 1
                counts[kind_now] += 1
                if kind_now in ("survived", "no_tests"):
                    known = survivors.get(key)
                    known = known if known and known.get("function_sha256") == f["source_sha256"] else None
                    text = (diff(f, number) if diff else "") or (old_alive.get(key) or {}).get("diff") or \
                        (known or argued or {}).get("diff", "")
                    alive[key] = {"module": f["module"], "outcome": kind_now, "diff": text,
                                  **({"why": known["why"]} if known else {})}
    for counts in modules.values():
        counts["score"] = score(counts)
    modules = dict(sorted(modules.items()))
    totals = {key: sum(m[key] for m in modules.values()) for key in ("total", *OUTCOMES)}
    totals["score"] = score(totals)
    return {"modules": modules, "all": totals, "alive": dict(sorted(alive.items()))}


def score(counts: dict[str, int]) -> float:
    """killed / (all - argued equivalent), 0 where nothing is left to kill."""
    considered = counts["total"] - counts["equivalent"]
    return round(counts["killed"] / considered, 4) if considered else 0.0


def mutmut_diff(mutants: Path, functions: list[Function]) -> Any:
    """mutmut's diff of one mutant (the lines it changed), as `mutmut show` prints it; "" where mutmut
    has none (no mutants/ folder, or a mutant of code it did not mutate this time)."""
    by_record = {(f.name, f.sha256): f for f in functions}

    def diff(function: dict[str, Any], number: int) -> str:
        code = by_record.get((function["function"], function["source_sha256"]))
        if code is None or not mutants.is_dir():
            return ""
        try:
            from mutmut.mutation.diff_apply import get_diff_for_mutant

            path = str(Path(*code.dotted.split(".")).with_suffix(".py"))
            lines = get_diff_for_mutant(f"{code.dotted}.{code.mangled}__mutmut_{number}", path=path).splitlines()
        except Exception:  # noqa: BLE001 - mutmut has no such mutant this time: the record's diff stands
            return ""
        return "\n".join(line for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return diff


def tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mutmut {version('mutmut')}"
    except PackageNotFoundError:
        return read_json(RECORD).get("tool", "mutmut")


def markdown(summary: dict[str, Any]) -> list[str]:
    return [
        "# Mutation score of the core math", "",
        f"{summary['tool']} on the modules of [tool.mutmut] in pyproject.toml, with its fast tests (`make mutation`).",
        "score = killed / (mutants - argued equivalent); a mutant that hangs past mutmut's timeout counts as killed.",
        "Each argued-equivalent mutant has its one-line argument in mutation_equivalent.json (no input through any",
        "public door tells it from the original); survivors left alive say why in mutation_survivors.json.",
        "mutation.json records each function's source digest beside its verdicts: tests/test_mutation_score.py",
        "fails when the code no longer matches them.", "",
        *table(["module", "mutants", "killed", "survived", "argued equivalent", "no tests", "not checked", "score"],
               [[name, m["total"], m["killed"], m["survived"], m["equivalent"], m["no_tests"], m["not_checked"],
                 f"{m['score']:.1%}"] for name, m in [*summary["modules"].items(), ("all", summary["all"])]])]


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output_options(parser)
    parser.add_argument("--mutants", type=Path, default=MUTANTS, help="mutmut's folder (default: mutants/)")
    parser.add_argument("--stale", action="store_true",
                        help="print the mutmut patterns of the functions the record does not describe, and stop")
    args = parser.parse_args()
    functions = code_functions()
    record = load_record()
    if args.stale:
        # the functions no record describes (changed or new) that mutmut makes mutants of
        stale = [f for f in functions if (f.name, f.sha256) not in record and _mutant_numbers(f)]
        print(" ".join(f.pattern for f in stale))
        for f in stale:
            print(f"stale: {f.module}.{f.name}", file=sys.stderr)
        return
    folder = output_folder(args)
    merged = merge(functions, record, read_fresh(args.mutants), tests_digest())
    summary = summarise(merged, read_json(EQUIVALENT), read_json(SURVIVORS), read_json(RECORD).get("alive", {}),
                        mutmut_diff(args.mutants, functions))
    summary = {"tool": tool_version(), **summary}
    write_results(folder, "mutation", {**summary, "functions": merged}, markdown(summary))


if __name__ == "__main__":
    main()
