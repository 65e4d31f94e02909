"""The Space app as a person reads it, in a real headless Chromium (Python playwright, the
machine's chromium, chromium-browser or google-chrome, else playwright's own) against a real Gradio server: the text on screen, where the scores sit in the
viewport, the page and `/compute` agreeing, messages in the page's own terms.

One server and one browser serve every test of the module. A screenshot of each tab (and of the
API page) is kept in pytest's temporary folder (its path is printed) and, when
BERTSCORE_SAVE_SCREENSHOTS=<dir> is set, copied there too (docs/app-pair.png and docs/app-batch.png
are made that way).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """A Chromium-family browser: the first of BROWSER_NAMES on PATH (Debian's is chromium, Ubuntu's
    chromium-browser), else the one `playwright install chromium` downloaded; None when there is none."""
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            bundled = playwright.chromium.executable_path
    except Exception:  # no playwright, or its driver cannot start: no bundled browser either
        return None
    return bundled if os.path.exists(bundled) else None


CHROMIUM = find_browser()
LOOKED_FOR = f"{', '.join(BROWSER_NAMES)} on PATH, or playwright's own chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}

if os.environ.get("BERTSCORE_SKIP_BROWSER", "") not in ("", "0"):
    pytest.skip(f"BERTSCORE_SKIP_BROWSER={os.environ['BERTSCORE_SKIP_BROWSER']}: browser tests skipped on request "
                "(unset it, and have Debian's chromium, to run them)", allow_module_level=True)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason=f"no browser: looked for {LOOKED_FOR} (apt-get install -y chromium, "
                       "or python -m playwright install chromium)"),
]

playwright_sync = pytest.importorskip("playwright.sync_api")
pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import app  # noqa: E402
import bertscore  # noqa: E402
from conftest import free_port  # noqa: E402

expect = playwright_sync.expect
MODEL = bertscore.EMBEDDED_MODEL_NAME
TIMEOUT_MS = 60_000  # how long expect() polls for what it asserts: a hang guard; its failure says what it expected
CANDIDATE = "The quick brown fox jumps over the lazy dog near the river bank today while the sun sets slowly"
REFERENCE = "A fast brown fox leaps over a lazy dog by the river bank as the sun slowly sets in the west this evening"


@pytest.fixture(scope="module")
def url():
    config = app.AppConfig.from_env({"BERTSCORE_APP_MODELS": f"{MODEL},roberta-large", "BERTSCORE_APP_MAX_ROWS": "50"})
    demo = app.build_demo(config)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture(scope="module")
def client(url):
    """`/compute` of the same server, as an API user calls it."""
    return gradio_client.Client(url, verbose=False)


@pytest.fixture(scope="module")
def page():
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            yield context.new_page()
        finally:
            browser.close()


@pytest.fixture(scope="module")
def screenshot_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def shots(screenshot_dir, capsys):
    """save(page, name): a full-page screenshot kept as an artifact; its path is printed."""
    extra = os.environ.get("BERTSCORE_SAVE_SCREENSHOTS")

    def save(page, name: str) -> Path:
        path = screenshot_dir / name
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 1000
        if extra:
            os.makedirs(extra, exist_ok=True)
            shutil.copy(path, Path(extra) / name)
        with capsys.disabled():
            print(f"\nscreenshot: {path}")
        return path

    return save


def _open(page, url: str, tab: str | None = None) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#candidate textarea").wait_for(timeout=TIMEOUT_MS)
    if tab:
        page.get_by_role("tab", name=tab).click()


def _field(page, elem_id: str):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


def _shown_text(page, *elem_ids: str):
    """The rendered Markdown of these blocks (not the progress overlay Gradio lays over them while busy)."""
    return page.locator(", ".join(f"#{elem_id} [data-testid=markdown]" for elem_id in elem_ids))


def _score_pair(page, candidate: str, references: list[str], expect_text: str = "Winning reference") -> str:
    """Fill the One pair tab, press Score, wait for `expect_text` in the scores or the error; their text."""
    _field(page, "candidate").fill(candidate)
    _field(page, "references").fill("\n".join(references))
    page.locator("#pair-button").click()
    where = _shown_text(page, "pair-scores", "pair-error").filter(has_text=expect_text).first
    expect(where).to_contain_text(expect_text, timeout=TIMEOUT_MS)
    return where.inner_text().strip()


def _score_batch(page, expect_text: str = "corpus mean") -> str:
    page.locator("#batch-button").click()
    where = _shown_text(page, "batch-summary", "batch-error").filter(has_text=expect_text).first
    expect(where).to_contain_text(expect_text, timeout=TIMEOUT_MS)
    return where.inner_text().strip()


def _compute(client, candidates: list[str], groups: list[list[str]], **options) -> dict:
    result = client.predict(json.dumps(candidates), json.dumps(groups), **options, api_name="/compute")
    assert "error" not in result, result
    return result


def shows(text: str, expected: float) -> bool:
    """True when `text` is `expected` written with 4 decimals, to within 1e-6: the page and the test's
    own score() are different calls (other batches), whose floats may differ in the last bits, and a
    value at a rounding boundary would then show another 4th decimal."""
    _, _, decimals = text.strip().partition(".")
    return len(decimals) == 4 and abs(float(text) - expected) <= 5e-5 + 1e-6


def all_show(texts: list[str], expected: list[float]) -> bool:
    return len(texts) == len(expected) and all(shows(t, x) for t, x in zip(texts, expected))


def _table_row(text: str, label: str) -> list[str]:
    """The cells of the Markdown table row starting with `label` in a block's inner text."""
    line = next(line for line in text.splitlines() if line.split("\t")[0].strip() == label)
    return [cell.strip() for cell in line.split("\t")[1:]]


# ----- what a fresh page shows (item 11 of issue 27) -----------------------------------------------------
def test_a_fresh_page_has_no_placeholder_tables(page, url, shots) -> None:
    """Before any run: no empty plot, no table headed "1 | 2 | 3", on either tab."""
    _open(page, url)
    for elem_id in ("heatmap", "tokens"):
        expect(page.locator(f"#{elem_id}")).to_be_hidden()
    assert page.locator("th").all_inner_texts() == []
    shots(page, "app-fresh-pair.png")
    page.get_by_role("tab", name="Batch").click()
    for elem_id in ("batch-table", "histogram", "download"):
        expect(page.locator(f"#{elem_id}")).to_be_hidden()
    assert page.locator("th").all_inner_texts() == []
    shots(page, "app-fresh-batch.png")


# ----- the page and /compute (item 12) --------------------------------------------------------------------
def test_the_page_and_compute_give_the_same_numbers_by_default(page, url, client) -> None:
    """Rescale starts unticked, saying that /compute and score() default to raw scores too; the default
    page and /compute's defaults give the same numbers and hash for the same pair."""
    _open(page, url)
    expect(page.locator("#rescale input[type=checkbox]")).not_to_be_checked()
    expect(page.locator("#rescale")).to_contain_text("off by default, as in /compute and score()")
    text = _score_pair(page, CANDIDATE, [REFERENCE])
    api = _compute(client, [CANDIDATE], [[REFERENCE]])  # /compute's defaults, as an API user calls it
    (p, r, f), hashcode = bertscore.score([CANDIDATE], [REFERENCE], model_type=MODEL, return_hash=True)
    row = _table_row(text, "raw")
    assert all_show(row, [p.item(), r.item(), f.item()]) and all_show(row, [api[k][0] for k in ("precision", "recall", "f1")])
    assert "rescaled" not in text and api["hashcode"] == hashcode and hashcode in text


def test_the_api_page_describes_every_parameter_and_its_default(page, url, shots) -> None:
    """"Use via API" names each /compute parameter with its description (not "the input value that is
    provided in the 1st Api component"), and says rescale defaults to False as the page's box does."""
    from bertscore.space.api import ComputeEndpoint

    doc = inspect.getdoc(ComputeEndpoint.compute)
    names = list(inspect.signature(ComputeEndpoint.compute).parameters)[1:]
    _open(page, url)
    page.get_by_text("Use via API").click()
    api_page = page.locator("body")
    expect(api_page).to_contain_text(f"Accepts {len(names)} parameters", timeout=TIMEOUT_MS)
    text = " ".join(api_page.inner_text().split())
    for name in names:  # each parameter, then the first words of its docstring's description
        described = re.search(rf"^ *{name}: (.+)$", doc, re.M).group(1)[:40]
        assert f'provided in the "{name}" Api component. {described}' in text, (name, described)
    assert '"1st"' not in text and '"2nd"' not in text
    assert ('rescale bool Default:False The input value that is provided in the "rescale" Api component. False (the '
            """default, as the page's "Rescale with baseline" box and score()): raw scores.""") in text
    assert "The defaults are the page's and score()'s: raw scores (no rescaling)" in text
    shots(page, "app-api.png")


# ----- One pair: the heatmap (items 7, 8, 13) ------------------------------------------------------------
def test_the_heatmap_says_which_f1_is_raw_and_which_rescaled(page, url, client, shots) -> None:
    """Rescale ticked: the table's rows equal /compute's (rescale=True and not), and the heatmap's label
    (and title) gives its F1 as raw and rescaled, not a bare number beside the rescaled table."""
    _open(page, url)
    expect(_field(page, "lang")).to_be_disabled()  # a baseline language means nothing without rescaling
    page.locator("#rescale input[type=checkbox]").check()
    expect(_field(page, "lang")).to_be_enabled(timeout=TIMEOUT_MS)
    text = _score_pair(page, CANDIDATE, [REFERENCE], "rescaled")
    raw_api = _compute(client, [CANDIDATE], [[REFERENCE]])
    api = _compute(client, [CANDIDATE], [[REFERENCE]], rescale=True)
    p, r, f = bertscore.score([CANDIDATE], [REFERENCE], model_type=MODEL, rescale_with_baseline=True)
    rescaled, raw = _table_row(text, "rescaled"), _table_row(text, "raw")
    assert all_show(rescaled, [p.item(), r.item(), f.item()])
    assert all_show(rescaled, [api[k][0] for k in ("precision", "recall", "f1")])
    assert all_show(raw, [raw_api[k][0] for k in ("precision", "recall", "f1")])
    expect(page.locator("#heatmap")).to_contain_text(
        f"Token similarity, candidate vs reference #1: F1 {raw[2]} raw, {rescaled[2]} rescaled", timeout=TIMEOUT_MS)
    expect(page.locator("#tokens")).to_contain_text("[CLS]")
    shots(page, "app-pair.png")


def test_a_long_pair_draws_a_heatmap_that_fits_the_window(page, url) -> None:
    """A 36-word pair (38 x 38 tokens and more): the heatmap fits the window (not ~1,600 px tall); its axes
    label tokens however long the pair (test_plot.py reads them back)."""
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
    candidate = " ".join(words[i % 16] for i in range(36))
    reference = " ".join(words[(3 * i) % 16] for i in range(36))
    _open(page, url)
    _score_pair(page, candidate, [reference])
    image = page.locator("#heatmap img").first
    expect(image).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#heatmap img').naturalHeight > 0", timeout=TIMEOUT_MS)
    natural = page.evaluate("() => { const i = document.querySelector('#heatmap img'); return [i.naturalWidth, i.naturalHeight]; }")
    box = image.bounding_box()
    assert natural[0] <= VIEWPORT["width"] and natural[1] <= 720, natural
    assert box["height"] <= 720 and box["x"] + box["width"] <= VIEWPORT["width"], box


def test_japanese_and_arabic_tokens_draw_with_no_missing_glyph(page, url, shots) -> None:
    """The heatmap labels kana, kanji and Arabic letters in installed fonts (packages.txt): the server
    draws both pairs with no "Glyph ... missing from font(s)" warning."""
    if not _installed_font_has("か"):
        pytest.skip("no installed font has kana (apt-get install $(cat packages.txt); make test does it as root)")
    _open(page, url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the server draws in its threads: its warnings land here
        for candidate, reference, token in (("猫がマットの上に座った", "猫はマットに座っていた", "##マ"),
                                            ("جلست القطة على الحصيرة", "القطة تجلس على الحصيرة", "##ص")):
            _score_pair(page, candidate, [reference])
            expect(page.locator("#tokens")).to_contain_text(token, timeout=TIMEOUT_MS)
            expect(page.locator("#heatmap img").first).to_be_visible(timeout=TIMEOUT_MS)
            page.wait_for_timeout(300)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert missing == []
    shots(page, "app-pair-arabic.png")


def _installed_font_has(char: str) -> bool:
    """Whether any font matplotlib knows draws `char` (read from the font files, not by the app's code)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    for entry in font_manager.fontManager.ttflist:
        try:
            if ord(char) in FT2Font(entry.fname).get_charmap():
                return True
        except (OSError, RuntimeError):
            continue
    return False


# ----- One pair: options and messages (items 1, 4, 5, 9, 10) -------------------------------------------
def test_notes_name_texts_as_the_page_does(page, url) -> None:
    """The page counts from 1 and names what it shows: "reference #2" on One pair, "row 2 (candidate)" on
    Batch (not references[0][1], candidates[1])."""
    _open(page, url)
    text = _score_pair(page, "the cat sat", ["a cat sat", "\u200b"])  # reference #2: nothing MiniLM reads
    assert "no content tokens (empty, whitespace or characters the tokenizer drops) in reference #2:" in text
    page.get_by_role("tab", name="Batch").click()
    _field(page, "pasted").fill("candidate,reference\nthe cat sat,a cat sat\n,a dog sat\n")
    summary = _score_batch(page)
    assert "no content tokens (empty, whitespace or characters the tokenizer drops) in row 2 (candidate):" in summary
    assert not re.search(r"references\[|candidates\[", text + summary)


def test_a_candidate_over_the_limit_is_refused_not_cut(page, url) -> None:
    """Past the app's 2,000 characters a candidate is not cut by its text box and scored: it is refused,
    saying so, as a reference is."""
    _open(page, url)
    long_text = "word " * 419 + "words"  # 2,100 characters
    error = _score_pair(page, long_text, ["a reference"], "characters")
    assert error == "Could not score: the candidate has 2,100 characters; this app accepts at most 2,000 per text: shorten it"
    assert len(_field(page, "candidate").input_value()) == 2100
    error = _score_pair(page, "a candidate", ["a reference", long_text], "reference #2 has")
    assert error == "Could not score: reference #2 has 2,100 characters; this app accepts at most 2,000 per text: shorten it"


def test_idf_on_one_pair_is_offered_only_where_it_means_something(page, url) -> None:
    """Over one reference, idf weighs every reference token 0 (R = F1 = 0): the box is disabled, and says
    why, until two different references are entered."""
    _open(page, url)
    idf = page.locator("#pair-idf input[type=checkbox]")
    expect(page.locator("#pair-idf")).to_contain_text("needs 2 or more different ones")
    expect(idf).to_be_disabled()
    _field(page, "references").fill(REFERENCE)
    page.wait_for_timeout(500)
    expect(idf).to_be_disabled()
    references = [REFERENCE, "Dogs are sleeping."]
    _field(page, "references").fill("\n".join(references))
    expect(idf).to_be_enabled(timeout=TIMEOUT_MS)
    idf.check()
    text = _score_pair(page, CANDIDATE, references)
    p, r, f = bertscore.score([CANDIDATE], [references], model_type=MODEL, idf=True)
    assert all_show(_table_row(text, "raw"), [p.item(), r.item(), f.item()])
    assert float(_table_row(text, "raw")[2]) > 0.5
    _field(page, "references").fill(REFERENCE)  # back to one reference: unticked and disabled again
    expect(idf).to_be_disabled(timeout=TIMEOUT_MS)
    expect(idf).not_to_be_checked()


def test_messages_speak_the_pages_terms(page, url) -> None:
    """Layer errors name the Layer field both ways; one message per error, under its button, headed as
    the page heads errors (no "Warning" pop-up beside an inline "Error:"); no "(as score())", "text(s)"
    or "segments" in the page's notes."""
    _open(page, url)
    layer = _field(page, "layer")
    layer.fill("1.5")
    error = _score_pair(page, "the cat sat", ["a cat sat"], "whole number")
    assert error == "Could not score: Layer must be a whole number (0 or more), or blank for the model's default; got '1.5'"
    layer.fill("99")
    error = _score_pair(page, "the cat sat", ["a cat sat"], "out of range")
    assert error == f"Could not score: Layer 99 is out of range: {MODEL} has layers 0 to 6 (blank: its default, 6)"
    expect(page.locator(".toast-body")).to_have_count(0)
    layer.fill("")
    text = _score_pair(page, "the cat sat", ["a cat sat", "the dog sat"])
    assert "multi-reference: P, R and F1 are each the max over the references, as in the official package" in text
    page.get_by_role("tab", name="Batch").click()
    _field(page, "pasted").fill("candidate,reference\n" + "x " * 600 + ",a short reference\nb,c\n")  # 600 tokens
    summary = _score_batch(page)
    assert ("1 text longer than the model's limit of 510 content tokens (max_length=512 with its special tokens) was "
            "truncated there, as in the official package: row 1 (candidate); tick \"Whole long texts (windows past "
            "the model's limit)\" to score them whole") in summary
    assert "only 2 rows: a bootstrap interval from so few is too narrow" in summary
    assert not re.search(r"score\(\)|text\(s\)|segment", text + summary)


def test_a_model_that_cannot_load_is_said_once_and_whole(page, url) -> None:
    _open(page, url)
    page.locator("#model input").click()
    page.get_by_role("option", name="roberta-large").click()
    error = _score_pair(page, "the cat sat", ["a cat sat"], "cannot be loaded")
    assert error == ("Could not score: roberta-large cannot be loaded here: this server has no copy of it and cannot "
                     "reach the Hugging Face Hub to download it. Choose sentence-transformers/all-MiniLM-L6-v2 (this "
                     "server's default), or run this Space where the Hub is reachable.")


# ----- Batch (items 2, 3, 6) -------------------------------------------------------------------------------
ROWS = [
    ("the cat sat on the mat and looked out of the window at the birds",
     "a cat was sitting on the mat and looking out of the window at birds"),
    ("", "an empty candidate in this row still has a reference with twelve words"),
    ("Paris is the capital of France and also its largest city by far",
     "France's capital is Paris, which is also the largest city in the country"),
    ("hello world this is a fourth row with about twelve words in it",
     "goodbye moon this is a fourth reference with about twelve words too"),
]


def _write_rows(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("candidate,reference\n" + "".join(f'"{c}","{r}"\n' for c, r in rows))
    return path


def test_an_empty_cell_is_said_to_read_below_zero_rescaled(page, url) -> None:
    """The Batch tab does not promise that an empty cell "scores 0": rescaled, its 0 reads below 0, and
    the summary says what it reads and that it counts in the means."""
    _open(page, url, "Batch")
    expect(page.get_by_text("An empty cell is an empty text")).to_contain_text(
        'An empty cell is an empty text: its raw scores are 0 (with "Rescale with baseline" ticked, that 0 reads '
        "below 0), and it counts in the means and the histogram like every row")
    page.locator("#rescale input[type=checkbox]").check()
    _field(page, "pasted").fill("candidate,reference\n" + "".join(f'"{c}","{r}"\n' for c, r in ROWS))
    summary = _score_batch(page)
    cands, refs = [c for c, _ in ROWS], [r for _, r in ROWS]
    p, r, f = bertscore.score(cands, refs, model_type=MODEL, rescale_with_baseline=True)
    assert f[1].item() < 0
    assert (f"raw scores 0 in row 2: rescaled, a raw 0 reads P {p[1].item():.4f}, R {r[1].item():.4f}, "
            f"F1 {f[1].item():.4f}") in summary
    assert "these rows count in the corpus means and the histogram like every row" in summary


def test_batch_scores_come_first_in_view_labelled_and_equal_compute(page, url, client, shots, tmp_path: Path) -> None:
    """12-word texts and a system B: every score column is in view, before the texts; each is labelled
    raw or rescaled; the numbers equal /compute's."""
    rows = [row for row in ROWS if row[0]]
    _open(page, url, "Batch")
    page.locator("#rescale input[type=checkbox]").check()
    page.locator("#upload input[type=file]").set_input_files(str(_write_rows(tmp_path / "pairs.csv", rows)))
    page.locator("#upload-b input[type=file]").set_input_files(
        str(_write_rows(tmp_path / "system_b.csv", [(r, r) for _, r in rows])))
    summary = _score_batch(page)
    cands, refs = [c for c, _ in rows], [r for _, r in rows]
    f = bertscore.score(cands, refs, model_type=MODEL, rescale_with_baseline=True)[2]
    f_b = bertscore.score(refs, refs, model_type=MODEL, rescale_with_baseline=True)[2]
    api = _compute(client, cands, [[x] for x in refs], rescale=True)

    table = page.locator("#batch-table")
    expect(table).to_contain_text(re.compile(r"\d\.\d{4}"), timeout=TIMEOUT_MS)  # scored (values checked below)
    table.scroll_into_view_if_needed()
    headers = table.locator("th")
    names = [t.strip() for t in headers.all_inner_texts()]
    area = table.bounding_box()
    right = min(area["x"] + area["width"], VIEWPORT["width"])
    for index, name in enumerate(names):  # every score column, and the start of the candidates, in view
        if name in ("row", "candidate (B)", "references"):
            continue
        box = headers.nth(index).bounding_box()
        assert area["x"] <= box["x"] and box["x"] + (box["width"] if name != "candidate" else 40) <= right, (name, box)
    scores = ["F1 (rescaled)", "F1 (B, rescaled)", "P (rescaled)", "R (rescaled)", "F1 (raw)", "P (raw)", "R (raw)"]
    assert names == ["row", *scores, "candidate", "candidate (B)", "references"]
    difference = re.search(r"ΔF1 \(rescaled\) ([-+]?\d+\.\d+)", summary)
    assert difference and shows(difference.group(1), (f_b - f).mean().item()), summary
    column = names.index("F1 (rescaled)")
    shown = [table.locator(f"[data-testid=cell-{i}-{column}]").inner_text().strip() for i in range(len(rows))]
    assert all_show(shown, f.tolist()) and all_show(shown, api["f1"])
    expect(page.locator("#histogram img").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#download a[href*='bertscore_results.csv']")).to_have_count(1)
    shots(page, "app-batch.png")


def test_a_file_and_pasted_rows_together_are_refused(page, url, tmp_path: Path) -> None:
    """Not one of them ignored in silence: the page says both were given and how to choose."""
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(_write_rows(tmp_path / "pairs.csv", ROWS[:1])))
    _field(page, "pasted").fill("candidate,reference\nhello world,goodbye moon\n")
    error = _score_batch(page, "both a file")
    assert error == ("Could not score: both a file (pairs.csv) and pasted rows: the Batch tab scores one table at a "
                     "time. Remove the file (the × on the upload) or clear the pasted rows, then score again")
    expect(page.locator("#batch-table")).to_be_hidden()


def test_a_bad_file_is_a_message(page, url, shots, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary junk")
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(bad))
    error = _score_batch(page, "looks binary")
    assert error.startswith("Could not score: bad.csv")
    shots(page, "app-batch-error.png")


# ----- user text is text -------------------------------------------------------------------------------
@pytest.fixture
def counting_server():
    """A loopback HTTP server that counts every request it gets (the page must send it none)."""
    import http.server
    import threading

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()


def _payloads(port: int) -> list[str]:
    return [
        f"![t](http://127.0.0.1:{port}/x.png)",
        "[x](javascript:alert(1))",
        f"<img src=http://127.0.0.1:{port}/y.png>",
        "**bold** and _it_ and `code`",
        "$$x^2$$ | a cell | ~~gone~~",
        "<b>tag</b> &amp; & www.example.com",
        "# not a heading",
    ]


def test_user_text_is_shown_as_typed_and_loads_nothing(page, url, shots, counting_server, tmp_path: Path) -> None:
    """References holding Markdown and HTML: the page shows the characters, fetches nothing, links nothing."""
    port, hits = counting_server
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    references = _payloads(port)
    _open(page, url)
    text = _score_pair(page, "the cat sat on the mat", references)
    scores = page.locator("#pair-scores")
    for reference in references:
        assert reference in text, (reference, text)
    assert scores.locator("img, a, em, del, h1, script, .katex").count() == 0
    assert [t.strip() for t in scores.locator("code").all_inner_texts()] == [text.split("Hash:")[1].split()[0]]
    assert sorted(scores.locator("strong").all_inner_texts()) == ["(best)", "Hash:", "Per reference", "Winning reference:"]
    # the per-reference table has one row per reference, the text in its second cell
    cells = scores.locator("table").nth(1).locator("tbody tr td:nth-child(2)").all_inner_texts()
    assert cells == references
    shots(page, "app-pair-escaped.png")

    # An error message quoting the user's text (the layer field), in the page.
    bad_layer = f"<img src=http://127.0.0.1:{port}/z.png>**2**"
    _field(page, "layer").fill(bad_layer)
    error = _score_pair(page, "the cat sat on the mat", references, "whole number")
    assert repr(bad_layer) in error and page.locator("#pair-error img").count() == 0
    _field(page, "layer").fill("")

    # The batch tab: the same texts as candidates, in the table and its summary.
    table_file = tmp_path / "markup.tsv"
    table_file.write_text("candidate\treference\n" + "".join(f"{r}\ta plain reference\n" for r in references))
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(table_file))
    _score_batch(page)
    table = page.locator("#batch-table")
    for reference in references:
        expect(table).to_contain_text(reference)
    assert table.locator("img, a[href*='javascript'], strong").count() == 0
    page.wait_for_timeout(1000)  # anything the page would fetch has had time to start
    assert hits == [], hits
    assert not [u for u in requested if f":{port}/" in u or u.startswith("javascript:")], requested
