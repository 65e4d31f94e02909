"""Every code block of README.md and docs/*.md runs as pasted from a clone, so the docs cannot rot.

The rules a block follows (write new blocks by them):
- ```python blocks run as `python -` (the text on stdin, cwd on sys.path), ```bash/```sh/```shell
  blocks as `bash -e -o pipefail`, each in its own process with a timeout (a python block's is a
  fork of a warm interpreter that has imported torch, transformers, datasets and evaluate and
  nothing else, with the state `python -` starts in: tests/warm_python.py; its namespace is empty,
  so a missing import still fails; a bash block's `bertscore` runs the installed console script in
  such a fork too, with the shell's stdin, stdout, stderr and exit status) (one test each, spread
  over the xdist workers of `make test`: tests/parallel.py), each in its own temporary copy of the clone (the files git lists, untracked ones included: a block can
  never rewrite the repository's files, nor meet another's), with what the two set-up commands give: the venv's bin
  first on PATH (as `. .venv/bin/activate`), this checkout on PYTHONPATH, and offline
  (HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1). The model is the embedded MiniLM; files are those the
  repository ships (examples/, tests/data/).
- A block whose first line is `# needs the Hub`, `# needs a GPU` or `# needs data outside the
  clone` (more words may follow) is not run: the test is skipped with that line as the reason. A
  block whose first line is `# needs the ray extra` runs in `make test-ray` (which installs ray and
  sets BERTSCORE_RAY_TESTS=1) and is skipped, saying so, elsewhere.
- A block right after the line `<!-- docs test: set-up -->` (make demo, make test, `. .venv/bin/activate`,
  installs) or `<!-- docs test: serves -->` (make app: runs until Ctrl-C) is not run: those commands
  build virtual environments, install into them or run this very test. The reader sees the commands
  alone (the comment does not render). Its `make TARGET` lines are checked instead: the target must
  exist (`make -n`); an `. .venv/bin/activate` line must name that venv. (A line ending in a
  `# set-up` or `# serves` comment is treated the same, as a safety net, but tests/test_docs_links.py
  keeps such marks out of the pages: readers would copy them.)
- A block writes its files into a scratch folder (`out=$(mktemp -d)`, `tempfile.mkdtemp()`) or an
  ignored one, never beside the clone's files: a file it leaves that git would list fails its test.
  Nor does it send a command's stderr to /dev/null: a refusal hidden there reads as success.
- Sample output, transcripts and templates with placeholders use a fence that is not run:
  ```text or ```console. A ```text block right after the line `<!-- output of the block above -->`
  is the exact stdout of the runnable block before it, and is checked against a real run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from warm_python import WarmPython

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
NEEDS = ("# needs the Hub", "# needs a GPU", "# needs data outside the clone")
NEEDS_EXTRA = {"# needs the ray extra": "ray"}  # a block run where this module is importable, else skipped
LINE_MARKS = ("# set-up", "# serves")
BLOCK_MARKS = ("<!-- docs test: set-up -->", "<!-- docs test: serves -->")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
TIMEOUT_S = 600  # a hang guard only: a block past it fails with TimeoutExpired naming the command
OUTPUT_MARK = "<!-- output of the block above -->"


@dataclass(frozen=True)
class Block:
    file: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    shows_output: bool = False  # a ```text block marked as the output of the block before it
    not_run: bool = False  # a block right after a BLOCK_MARKS comment: set-up or serving, checked, never run

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of one markdown file (fences may be indented, as in lists)."""
    found, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or not opening.group(2):
            i += 1
            continue
        indent, language, start = opening.group(1), opening.group(2).lower(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        assert i < len(lines), f"{path.name}:{start + 1}: a ``` fence that is never closed"
        before = [line.strip() for line in lines[:start] if line.strip()][-1:]
        found.append(Block(path.relative_to(ROOT).as_posix(), start + 1, language, "\n".join(body) + "\n",
                           before == [OUTPUT_MARK], bool(before) and before[0] in BLOCK_MARKS))
        i += 1
    return found


ALL_BLOCKS = [block for path in DOC_FILES for block in blocks_of(path)]
RUN_BLOCKS = [block for block in ALL_BLOCKS if block.language in RUNNABLE]
# runnable block id -> the sample output the docs show for it
SHOWN_OUTPUT = {previous.id: block.text for previous, block in zip(ALL_BLOCKS, ALL_BLOCKS[1:])
                if block.shows_output and previous.file == block.file and previous.language in RUNNABLE}


@pytest.fixture(scope="session")
def warm_python(clone: Path, tmp_path_factory) -> WarmPython:
    """This worker's warm interpreter, with the environment every python block gets."""
    warm = WarmPython(block_env(clone), tmp_path_factory.mktemp("warm_python"))
    yield warm
    warm.close()


@pytest.fixture(scope="session")
def clone(tmp_path_factory) -> Path:
    """A copy of the files a clone has (tracked, plus untracked ones git does not ignore)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode("utf-8").split("\0")
    target = tmp_path_factory.mktemp("clone")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name, follow_symlinks=False)
    return target


def block_env(clone: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(clone), MPLBACKEND="Agg",
               VIRTUAL_ENV=str(Path(bin_dir).parent), PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    for name in ("OUT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PYTHONSTARTUP"):
        env.pop(name, None)
    return env


def check_marked_line(line: str, clone: Path) -> None:
    """A set-up or serving line is not run; its make targets must exist, its venv be this one."""
    parts = line.split("#", 1)[0].split("&&")
    if len(parts) > 1:
        for part in parts:
            check_marked_line(part, clone)
        return
    command = shlex.split(parts[0])
    while command and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command[0]):
        command = command[1:]  # VAR=value make ...
    if command[:1] == ["make"]:
        targets = [word for word in command[1:] if not word.startswith("-") and "=" not in word]
        assert targets, line
        done = subprocess.run(["make", "-n", *targets], cwd=clone, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{line!r}: make -n {' '.join(targets)}: {done.stderr}"
    elif command[:1] in (["."], ["source"]):
        assert command[1:] == [".venv/bin/activate"], line
        assert (Path(sys.executable).parent / "activate").is_file(), "the tests run outside a venv"


def needs_line(block: Block) -> str | None:
    """The block's `# needs ...` first line, if it has one."""
    first = block.text.lstrip().splitlines()[0] if block.text.strip() else ""
    return first if first.startswith(NEEDS) else None


def run_block(block: Block, clone: Path, folder: Path,
              warm: WarmPython) -> tuple[str, subprocess.CompletedProcess | None, list[str]]:
    """Check the block's marked lines, then run the rest in its own copy of the clone (so that
    blocks running side by side cannot meet in a file); also return the untracked files it left there."""
    kept = []
    for line in block.text.splitlines():
        if block.not_run or any(mark in line for mark in LINE_MARKS):
            check_marked_line(line, clone)
        else:
            kept.append(line)
    text = "\n".join(kept) + "\n"
    if not text.strip():
        return text, None, []  # every line was a checked set-up line
    work = folder / "clone"
    shutil.copytree(clone, work, symlinks=True)
    before = files_under(work)
    try:
        if RUNNABLE[block.language] == "python":  # as typed into `python -`: the current folder on sys.path
            done = warm.run(text, work, block_env(work), TIMEOUT_S)
        else:  # from a file outside the copy, so that a command reading stdin cannot eat the script
            script = folder / "block.sh"
            script.write_text(text, encoding="utf-8")
            done = subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=work, capture_output=True,
                                  env=warm.command_env(block_env(work)), text=True, timeout=TIMEOUT_S)
        left = litter(work, before)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return text, done, left


def files_under(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if not path.is_dir()}


def litter(work: Path, before: set[str]) -> list[str]:
    """The files a block added to its copy of the clone that git would list as untracked (ignored
    ones, such as __pycache__/, are fine)."""
    new = sorted(files_under(work) - before)
    if not new:
        return []
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(new),
                             capture_output=True, text=True).stdout.splitlines()
    return sorted(set(new) - set(ignored))


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[block.id for block in RUN_BLOCKS])
def test_block_runs_as_pasted(block: Block, clone: Path, tmp_path: Path, warm_python: WarmPython) -> None:
    reason = needs_line(block)
    if reason:
        pytest.skip(f"{block.id}: {reason.lstrip('# ')}")
    extra = next((module for mark, module in NEEDS_EXTRA.items() if block.text.lstrip().startswith(mark)), None)
    if extra is not None and (importlib.util.find_spec(extra) is None or os.environ.get("BERTSCORE_RAY_TESTS") != "1"):
        pytest.skip(f"{block.id}: needs the {extra} extra: make test-ray runs it (BERTSCORE_RAY_TESTS=1)")
    text, done, left = run_block(block, clone, tmp_path, warm_python)  # the server starts on the first python block
    if done is None:
        return
    assert done.returncode == 0, (f"{block.id} ({block.language}) exited {done.returncode}\n--- block\n{text}"
                                  f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-5000:]}")
    if block.id in SHOWN_OUTPUT:  # the docs' sample output is this command's real output
        assert printed_alike(SHOWN_OUTPUT[block.id].rstrip(), done.stdout.rstrip()), \
            f"{block.id}: paste the real output:\n{done.stdout}"
    assert left == [], (f"{block.id}: the block leaves {left} in the clone, where git status lists them: write "
                        "to a scratch folder (out=$(mktemp -d), tempfile.mkdtemp()) or an ignored one")


SAMPLE_HASH = "_float32_cpu_version=bertscore-0.1.0(transformers={},tokenizers=0.23.3,torch=2.13.0)"
DECIMAL = re.compile(r"-?\d+\.\d+")
# The libraries a score's hash names, as bertscore/scoring/hashcode.py writes them: `(transformers=5.25.0,...)`.
HASH_LIBRARIES = re.compile(r"(_version=bertscore-[^()\s]+)\(([^()\s]+)\)")


def pinned_versions() -> dict[str, str]:
    """The pins of constraints.txt (`make setup` and the README's install use them): name -> version."""
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "constraints.txt").read_text(encoding="utf-8"), flags=re.M)
    return {name.lower(): version for name, version in pins}


def hash_libraries(text: str) -> list[dict[str, str]]:
    """The library versions each hash in the text names."""
    return [dict(item.split("=", 1) for item in match.group(2).split(",")) for match in HASH_LIBRARIES.finditer(text)]


def printed_alike(shown: str, real: str) -> bool:
    """The same text, every decimal printed to the same places and within one unit of the last
    one: float32 kernels differ by CPU (AVX2 or AVX-512) at the 1e-7 level, which can move the
    sixth printed decimal (README's 0.591550 is 0.591549 on an AVX2 CPU). A hash's library versions
    are those of the environment that runs the block: the docs show the tested ones (constraints.txt,
    test_shown_hashes_name_the_tested_versions), a newer transformers prints its own, so they are left
    out here; the libraries named, the package version and the rest of the hash are compared."""
    def without_versions(text: str) -> str:
        return HASH_LIBRARIES.sub(lambda m: m.group(1) + "(" + ",".join(
            item.split("=", 1)[0] for item in m.group(2).split(",")) + ")", text)

    shown, real = without_versions(shown), without_versions(real)
    if DECIMAL.sub("#", shown) != DECIMAL.sub("#", real):
        return False
    for mine, theirs in zip(DECIMAL.findall(shown), DECIMAL.findall(real)):
        places = len(mine.split(".")[1])
        if len(theirs.split(".")[1]) != places or abs(float(mine) - float(theirs)) > 1.01 * 10.0 ** -places:
            return False
    return True


@pytest.mark.parametrize(("shown", "real", "alike"), [
    ("hash: m_L6" + SAMPLE_HASH.format("5.25.0"), "hash: m_L6" + SAMPLE_HASH.format("5.31.2"), True),  # a newer transformers
    ("hash: m_L6" + SAMPLE_HASH.format("5.25.0"), "hash: m_L5" + SAMPLE_HASH.format("5.25.0"), False),  # another layer
    ("hash: m_L6" + SAMPLE_HASH.format("5.25.0"), "hash: m_L6" + SAMPLE_HASH.format("5.25.0").replace(",torch", ",sentencepiece=0.2.3,torch"),
     False),  # another library named
    ("3\tP=0.591550 F1=0.604720", "3\tP=0.591549 F1=0.604720", True),
    ("3\tP=0.591550 F1=0.604720", "3\tP=0.591548 F1=0.604720", False),  # two units: a real change
    ("3\tP=0.591550", "3\tP=0.59155", False),  # printed otherwise
    ("mean over 4 pairs: P=0.8", "mean over 5 pairs: P=0.8", False),  # the words are exact
])
def test_shown_output_allows_one_unit_in_the_last_printed_place_only(shown, real, alike):
    assert printed_alike(shown, real) is alike


def test_shown_hashes_name_the_tested_versions() -> None:
    """Every hash the docs print names the versions constraints.txt pins, so a user who installs as the
    README says gets the very hash shown; pinning another version there means updating the pages."""
    tested = pinned_versions()
    shown = [(block.id, libraries) for block in ALL_BLOCKS if block.shows_output for libraries in hash_libraries(block.text)]
    assert shown and {"transformers", "tokenizers", "torch"} <= set(tested)
    wrong = [(where, name, version) for where, libraries in shown for name, version in libraries.items()
             if name in tested and version != tested[name]]
    assert wrong == [], f"shown hashes whose versions are not constraints.txt's {tested}: {wrong}"


def test_every_fence_says_what_it_is() -> None:
    """A bare ``` fence is neither run nor marked as output: name it (python, bash, text, console, ...)."""
    bare = []
    for path in DOC_FILES:
        depth = 0
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            opening = FENCE.match(line)
            if opening:
                if depth == 0 and not opening.group(2):
                    bare.append(f"{path.relative_to(ROOT)}:{number}")
                depth = 0 if depth else 1
    assert bare == []


def test_no_block_hides_what_a_command_says() -> None:
    """`2> /dev/null` (or `&> /dev/null`) would hide a refusal, and the block would print what an
    earlier file held: a reader must see the error a command gives."""
    hidden = [f"{b.id}: {line.strip()}" for b in RUN_BLOCKS for line in b.text.splitlines()
              if re.search(r"(?:2|&)>>?\s*/dev/null|>\s*/dev/null\s+2>&1", line)]
    assert hidden == []


def test_a_scoring_command_shows_its_mean_and_hash() -> None:
    """A shown output of a block that scores with `bertscore` holds the mean and hash lines the user sees
    on a terminal (on stderr beside rows written to a file: the block joins them with `2>&1`)."""
    scoring = re.compile(r"(^|[;(&|]\s*)bertscore\s+(?!baseline|layers)")

    def scores(block: Block) -> bool:
        return any(scoring.search(line) and "|| echo" not in line for line in block.text.splitlines())

    missing = [block.id for block in RUN_BLOCKS if block.language != "python" and block.id in SHOWN_OUTPUT
               and scores(block) and "hash: " not in SHOWN_OUTPUT[block.id]]
    assert missing == []


def test_the_readme_says_what_may_differ_here() -> None:
    """The README says what a new user's run may print otherwise (the last digit, by CPU) and what
    `make test` installs as root (Debian's chromium, with apt-get)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`0.591549` on an AVX2 CPU" in readme
    started = readme[readme.index("## Get started"):readme.index("## Install")]
    assert "as root" in started and "apt-get" in started and "chromium" in started and "BERTSCORE_SKIP_BROWSER=1" in started


def test_needs_marks_are_spelled_as_the_test_reads_them() -> None:
    """A misspelled `# needs` line would run a block that cannot run here, or skip none."""
    wrong = [f"{b.id}: {line}" for b in RUN_BLOCKS for line in b.text.splitlines()[:1]
             if line.lstrip().lower().startswith("# needs")
             and not line.lstrip().startswith((*NEEDS, *NEEDS_EXTRA))]
    assert wrong == [] and len(RUN_BLOCKS) >= 10


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings (lower case, punctuation dropped, spaces to -)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_every_relative_link_leads_somewhere() -> None:
    """A deep dive moved or renamed leaves no link (or #anchor) in README or docs pointing at nothing."""
    broken = []
    for path in DOC_FILES:
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s):, mailto:
            name, _, anchor = target.partition("#")
            linked = (path.parent / name).resolve() if name else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_readme_keeps_the_space_front_matter() -> None:
    """The README's YAML header is the Hugging Face Space's configuration: it must stay first and whole."""
    import yaml

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
    assert header["sdk"] == "gradio" and (ROOT / header["app_file"]).is_file()
    assert {"title", "sdk_version", "python_version", "license", "short_description"} <= set(header)
    assert "evaluate" in header["tags"] and "metric" in header["tags"]


def test_every_block_mark_precedes_a_runnable_block() -> None:
    """A set-up/serves comment anywhere else would silence nothing, or a block it was not meant for."""
    marked = sum(path.read_text(encoding="utf-8").count(mark) for path in DOC_FILES for mark in BLOCK_MARKS)
    silenced = [block for block in ALL_BLOCKS if block.not_run]
    assert marked == len(silenced) >= 1 and all(block.language in RUNNABLE for block in silenced)


def test_every_output_mark_follows_a_runnable_block() -> None:
    """An output mark in the wrong place would check nothing."""
    marked = sum(path.read_text(encoding="utf-8").count(OUTPUT_MARK) for path in DOC_FILES)
    checked = [block for block in ALL_BLOCKS if block.shows_output and block.language == "text"]
    assert marked == len(checked) == len(SHOWN_OUTPUT) >= 1
