"""The docs read as a whole, as a newcomer reads them: every page is reachable from the README's
"More" table and leads back to it, and no page uses words a reader outside the project cannot
resolve (issue numbers, in-house names, test-harness marks inside the commands a reader copies).
Cheap: it reads the markdown only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
BACK = "[Back to the README](../README.md)"

# Words only the project's own history explains, and what a reader gets instead.
JARGON = {
    r"\bissues? #?\d+": "an issue number (say what changed, or link the result file)",
    r"\bPR #?\d+": "a pull-request number",
    r"this project's (?:\w+ )?machines?": "the project's own machines (say what machine: cores, CPU, load)",
    r"\brehears(?:al|als|e|ed|es|ing)\b": "'rehearsal' (name the command: `make test-hub`)",
    r"\bfour doors\b|\bone contract\b": "'four doors with one contract' (name the entry points)",
    r"#\s*set-up\b|#\s*serves\b": "a test-harness mark in a command (use <!-- docs test: set-up --> before the block)",
}


def _prose(path: Path) -> str:
    """The page as a reader sees it: HTML comments dropped (they do not render)."""
    return re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.S)


def _links(path: Path) -> set[Path]:
    """The local markdown files a page links to (anchors and web links left out)."""
    found = set()
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path)):
        name = target.split("#", 1)[0]
        if name and not re.match(r"^[a-z]+:", name) and name.endswith(".md"):
            found.add((path.parent / name).resolve())
    return found


def test_the_readme_more_table_lists_every_page() -> None:
    """A page no one can find from the front door is a page no one reads: each docs page has its
    row in the README's "More" table (and the table names no page that does not exist)."""
    more = README.read_text(encoding="utf-8").split("\n## More\n", 1)
    assert len(more) == 2, "the README has no '## More' section"
    listed = set(re.findall(r"^\| \[docs/([\w.-]+\.md)\]\(docs/\1\) \|", more[1], flags=re.M))
    assert listed == {page.name for page in PAGES}, (
        f"pages without a row: {sorted({p.name for p in PAGES} - listed)}; rows without a page: "
        f"{sorted(listed - {p.name for p in PAGES})}")


def test_every_page_is_reachable_from_the_readme_by_links() -> None:
    reached, frontier = set(), {README.resolve()}
    while frontier:
        page = frontier.pop()
        reached.add(page)
        frontier |= {linked for linked in _links(page) if linked.exists()} - reached
    assert [p.name for p in PAGES if p.resolve() not in reached] == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_page_leads_back_to_the_readme(page: Path) -> None:
    """The back link sits under the title, where a reader who arrived from a search looks first."""
    lines = [line for line in page.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines[0].startswith("# ") and lines[1] == BACK, f"{page.name}: put {BACK} right under the title"


@pytest.mark.parametrize("page", [README, *PAGES], ids=["README.md", *[p.name for p in PAGES]])
def test_no_words_a_reader_outside_the_project_cannot_resolve(page: Path) -> None:
    text = _prose(page)
    text = re.sub(r"\S*test_hub_rehearsal\.py\S*", "", text)  # a file name is resolvable: the reader can open it
    found = []
    for pattern, why in JARGON.items():
        for match in re.finditer(pattern, text, flags=re.I):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{page.name}:~{line}: {match.group(0)!r}: {why}")
    assert found == []


def test_the_jargon_check_catches_what_it_names() -> None:
    """The patterns match the phrases they were written for (a typo in one would pass every page)."""
    samples = ["see issue 24's measurement", "issue #25", "on this project's machines", "this project's CPU machine", "the rehearsal",
               "four doors with one contract", "make demo   # set-up: builds .venv", "make app  # serves"]
    for sample in samples:
        assert any(re.search(pattern, sample, flags=re.I) for pattern in JARGON), sample
    assert not any(re.search(pattern, "an issue of scale; 24 issues were filed", flags=re.I) for pattern in JARGON)
