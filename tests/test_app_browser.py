"""The Space app in a real headless Chromium (Python playwright, system /usr/bin/chromium).

Screenshots go to a temp dir and, when BERTSCORE_SAVE_SCREENSHOTS=<dir> is set, there too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

if os.environ.get("BERTSCORE_SKIP_BROWSER", "") not in ("", "0"):
    pytest.skip(f"BERTSCORE_SKIP_BROWSER={os.environ['BERTSCORE_SKIP_BROWSER']}: browser tests skipped on request "
                "(unset it, and have Debian's chromium, to run them)", allow_module_level=True)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"),
]

playwright_sync = pytest.importorskip("playwright.sync_api")
pytest.importorskip("gradio")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import app  # noqa: E402
import bertscore  # noqa: E402
from conftest import free_port  # noqa: E402

MODEL = bertscore.EMBEDDED_MODEL_NAME
TIMEOUT_MS = 60_000


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
def page():
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            yield context.new_page()
        finally:
            browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    directory = tmp_path_factory.mktemp("screenshots")
    extra = os.environ.get("BERTSCORE_SAVE_SCREENSHOTS")

    def save(page, name: str, locator=None) -> Path:
        path = directory / name
        (locator or page).screenshot(path=str(path), **({} if locator else {"full_page": True}))
        assert path.stat().st_size > 1000
        if extra:
            os.makedirs(extra, exist_ok=True)
            shutil.copy(path, Path(extra) / name)
        return path

    return save


def _open(page, url: str, tab: str | None = None) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#candidate textarea").wait_for(timeout=TIMEOUT_MS)
    if tab:
        page.get_by_role("tab", name=tab).click()


def test_one_pair_scores_and_heatmap(page, url, shots) -> None:
    candidate = "The quick brown fox jumps over the lazy dog."
    references = ["A fast brown fox leaps over a lazy dog.", "Dogs are sleeping."]
    _open(page, url)
    page.locator("#idf input[type=checkbox]").check()
    page.locator("#candidate textarea").fill(candidate)
    page.locator("#references textarea").fill("\n".join(references))
    page.locator("#pair-button").click()
    scores = page.locator("#pair-scores")
    playwright_sync.expect(scores).to_contain_text("Winning reference", timeout=TIMEOUT_MS)
    # Rescaled by default (the embedded model's packaged baseline), next to the raw scores.
    (p, r, f), hashcode = bertscore.score([candidate], [references], model_type=MODEL, idf=True,
                                          rescale_with_baseline=True, return_hash=True)
    raw = bertscore.score([candidate], [references], model_type=MODEL, idf=True)
    text = scores.inner_text()
    for value in (p, r, f, *raw):
        assert f"{value.item():.4f}" in text
    assert "#1" in text and hashcode in text
    plot = page.locator("#heatmap")
    image = plot.locator("img, canvas").first  # matplotlib figures render as an <img> (svg: only icons)
    image.wait_for(timeout=TIMEOUT_MS)
    box = image.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100
    playwright_sync.expect(page.locator("#tokens")).to_contain_text("[CLS]")
    shots(page, "app-pair.png")


def test_batch_upload_table_and_bad_file(page, url, shots, tmp_path: Path) -> None:
    rows = [("the cat sat on the mat", "a cat was sitting on the mat"),
            ("Paris is the capital of France.", "France's capital is Paris."),
            ("hello world", "goodbye moon")]
    good = tmp_path / "pairs.csv"
    good.write_text("candidate,reference\n" + "".join(f'"{c}","{r}"\n' for c, r in rows))
    system_b = tmp_path / "system_b.csv"
    system_b.write_text("candidate,reference\n" + "".join(f'"{r}","{r}"\n' for _, r in rows))
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(good))
    page.locator("#upload-b input[type=file]").set_input_files(str(system_b))
    page.locator("#batch-button").click()
    summary = page.locator("#batch-summary")
    playwright_sync.expect(summary).to_contain_text("corpus mean", timeout=TIMEOUT_MS)
    cands, refs = [c for c, _ in rows], [r for _, r in rows]
    p, r, f = bertscore.score(cands, refs, model_type=MODEL, rescale_with_baseline=True)
    f_b = bertscore.score(refs, refs, model_type=MODEL, rescale_with_baseline=True)[2]
    text = summary.inner_text()
    assert f"F1 {f.mean().item():.4f} [" in text and "bootstrap intervals" in text
    assert f"ΔF1 {(f_b - f).mean().item():+.4f}" in text
    table = page.locator("#batch-table")
    for value in f.tolist():
        playwright_sync.expect(table).to_contain_text(f"{value:.4f}")
    histogram = page.locator("#histogram").locator("img, canvas").first
    histogram.wait_for(timeout=TIMEOUT_MS)
    assert histogram.bounding_box()["width"] > 200
    playwright_sync.expect(page.locator("#download a[href*='bertscore_results.csv']")).to_have_count(1)
    shots(page, "app-batch.png")

    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary junk")
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(bad))
    page.locator("#batch-button").click()
    playwright_sync.expect(page.locator("#batch-error")).to_contain_text("looks binary", timeout=TIMEOUT_MS)
    shots(page, "app-batch-error.png")


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
    page.locator("#candidate textarea").fill("the cat sat on the mat")
    page.locator("#references textarea").fill("\n".join(references))
    page.locator("#pair-button").click()
    scores = page.locator("#pair-scores")
    playwright_sync.expect(scores).to_contain_text("Winning reference", timeout=TIMEOUT_MS)
    text = scores.inner_text()
    for reference in references:
        assert reference in text, (reference, text)
    assert scores.locator("img, a, em, del, h1, script, .katex").count() == 0
    assert [t.strip() for t in scores.locator("code").all_inner_texts()] == [text.split("Hash:")[1].split()[0]]
    assert sorted(scores.locator("strong").all_inner_texts()) == ["(best)", "Hash:", "Per reference", "Winning reference:"]
    # the per-reference table has one row per reference, the text in its second cell
    cells = scores.locator("table").nth(1).locator("tbody tr td:nth-child(2)").all_inner_texts()
    assert cells == references
    shots(page, "app-pair-escaped.png")

    # An error message quoting the user's text (the layer field), in the page and in the toast.
    bad_layer = f"<img src=http://127.0.0.1:{port}/z.png>**2**"
    page.locator("#layer textarea, #layer input").first.fill(bad_layer)
    page.locator("#pair-button").click()
    error = page.locator("#pair-error")
    playwright_sync.expect(error).to_contain_text("whole number", timeout=TIMEOUT_MS)
    assert repr(bad_layer) in error.inner_text() and error.locator("img").count() == 0
    toast = page.locator(".toast-body").filter(has_text="whole number").first
    playwright_sync.expect(toast).to_contain_text(repr(bad_layer), timeout=TIMEOUT_MS)
    assert toast.locator("img").count() == 0
    page.locator("#layer textarea, #layer input").first.fill("")

    # The batch tab: the same texts as candidates, in the table and its summary.
    table_file = tmp_path / "markup.tsv"
    table_file.write_text("candidate\treference\n" + "".join(f"{r}\ta plain reference\n" for r in references))
    _open(page, url, "Batch")
    page.locator("#upload input[type=file]").set_input_files(str(table_file))
    page.locator("#batch-button").click()
    playwright_sync.expect(page.locator("#batch-summary")).to_contain_text("corpus mean", timeout=TIMEOUT_MS)
    table = page.locator("#batch-table")
    for reference in references:
        playwright_sync.expect(table).to_contain_text(reference)
    assert table.locator("img, a[href*='javascript'], strong").count() == 0
    page.wait_for_timeout(1000)  # anything the page would fetch has had time to start
    assert hits == [], hits
    assert not [u for u in requested if f":{port}/" in u or u.startswith("javascript:")], requested
