"""The Space app: its parsing and guard rails, and the real server driven through gradio_client."""

from __future__ import annotations

import html
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import app  # noqa: E402
import bertscore  # noqa: E402
from bertscore.space.messages import UserError  # noqa: E402
from bertscore.space.reports import comparison_md  # noqa: E402
from bertscore.space.user_input import parse_layer  # noqa: E402
from conftest import free_port  # noqa: E402

MODEL = bertscore.EMBEDDED_MODEL_NAME


# Two different calls (the server's batch, a fresh score() in the test) may differ in the last bits of
# a float; a value at a rounding boundary would then show another 4th decimal. So a shown figure is
# checked as "this value to 4 decimals, within 1e-6": a wrong column, scale or pair still fails.
def shows(text: str, expected: float) -> bool:
    """True when `text` is `expected` written with 4 decimals (to within 1e-6 of `expected`)."""
    whole, _, decimals = text.strip().partition(".")
    return len(decimals) == 4 and abs(float(text) - expected) <= 5e-5 + 1e-6


def all_show(texts, expected) -> bool:
    texts, expected = list(texts), list(expected)
    return len(texts) == len(expected) and all(shows(t, x) for t, x in zip(texts, expected))


def figure_after(label: str, text: str) -> str:
    """The number written after `label` in `text` (e.g. "F1 0.9123" in a summary)."""
    found = re.search(re.escape(label) + r"([-+]?\d+\.\d+)", text)
    assert found, f"no figure after {label!r} in {text!r}"
    return found.group(1)


def any_shows(label: str, text: str, expected: float) -> bool:
    """Whether one of the numbers written after `label` in `text` shows `expected` (a summary may
    give F1 rescaled, then raw)."""
    return any(shows(found, expected) for found in re.findall(re.escape(label) + r"([-+]?\d+\.\d+)", text))


def table_row(markdown: str, name: str) -> list[str]:
    """The cells after `name` in the markdown table row `| name | P | R | F |`."""
    rows = [line for line in markdown.splitlines() if line.startswith(f"| {name} |")]
    assert len(rows) == 1, f"no single '| {name} |' row in {markdown!r}"
    return [cell.strip() for cell in rows[0].strip("|").split("|")[1:]]


def shown(markdown: str) -> str:
    """The characters a page shows of the app's Markdown (user text in it is character references)."""
    return html.unescape(markdown)


# ----- configuration (table parsing is tested in test_tables.py) -----------------------------------
def test_config_from_env() -> None:
    config = app.AppConfig.from_env({
        "BERTSCORE_APP_MODELS": "roberta-large, bert-base-uncased", "BERTSCORE_APP_DEFAULT_MODEL": MODEL,
        "BERTSCORE_APP_MAX_CHARS": "50", "BERTSCORE_APP_MAX_ROWS": "7",
    })
    assert config.models == (MODEL, "roberta-large", "bert-base-uncased") and config.default_model == MODEL
    assert (config.max_chars, config.max_rows) == (50, 7)
    with pytest.raises(ValueError, match="BERTSCORE_APP_MAX_ROWS"):
        app.AppConfig.from_env({"BERTSCORE_APP_MAX_ROWS": "many"})
    assert parse_layer("") is None and parse_layer("3") == 3
    with pytest.raises(UserError):
        parse_layer("-1")


def test_queue_is_sized_by_the_wait_it_allows() -> None:
    """Requests that may wait: what the server answers within the wait at the assumed speed (1 pair each
    at least), unless set; the queue of the demo and of its merged requests use these numbers."""
    config = app.AppConfig.from_env({"BERTSCORE_APP_MAX_WAIT_S": "12.5", "BERTSCORE_APP_PAIRS_PER_S": "40",
                                     "BERTSCORE_APP_MAX_BATCH_PAIRS": "300"})
    assert (config.max_wait_s, config.pairs_per_s, config.max_batch_pairs, config.max_waiting) == (12.5, 40, 300, 500)
    assert app.AppConfig.from_env({}).max_waiting == 30 * 100
    assert app.AppConfig.from_env({"BERTSCORE_APP_QUEUE_SIZE": "64"}).max_waiting == 64
    for name, value in (("BERTSCORE_APP_MAX_WAIT_S", "0"), ("BERTSCORE_APP_MAX_WAIT_S", "inf"),
                        ("BERTSCORE_APP_PAIRS_PER_S", "fast"), ("BERTSCORE_APP_QUEUE_SIZE", "0")):
        with pytest.raises(ValueError, match=name):
            app.AppConfig.from_env({name: value})
    demo = app.build_demo(config)
    requests = demo.bertscore_service.requests
    assert demo._queue.max_size == 500
    assert (requests.max_wait_s, requests.default_pairs_per_s, requests.max_batch_pairs) == (12.5, 40, 300)


def test_the_api_page_names_and_describes_each_compute_parameter() -> None:
    """gradio labels gr.api parameters "1st", "2nd" and describes none: each is labelled with its name
    and described from the docstring, in the signature's order; rescale defaults to False, as the page."""
    import inspect

    from bertscore.space.api import ComputeEndpoint

    endpoint = app.build_demo(app.AppConfig.from_env({})).get_api_info()["named_endpoints"]["/compute"]
    names = list(inspect.signature(ComputeEndpoint.compute).parameters)[1:]
    parameters = endpoint["parameters"]
    assert [p["parameter_name"] for p in parameters] == [p["label"] for p in parameters] == names
    doc = inspect.getdoc(ComputeEndpoint.compute)
    for parameter in parameters:
        first_line = doc.split(f"\n    {parameter['parameter_name']}: ")[1].split("\n")[0]
        assert parameter["python_type"]["description"].startswith(first_line)
    rescale = next(p for p in parameters if p["parameter_name"] == "rescale")
    assert rescale["parameter_default"] is False and "the page's \"Rescale with baseline\" box" in rescale["python_type"]["description"]
    assert endpoint["description"].startswith("BERTScore of predictions against references") and "Returns {" in endpoint["description"]


# ----- the real server ---------------------------------------------------------------------------
def test_layer_and_window_stride_fields_refuse_non_finite_numbers() -> None:
    """"inf" and "nan" parse as floats; they are a message naming the field, not an OverflowError."""
    for text in ("inf", "-inf", "nan", "1e400"):
        with pytest.raises(UserError, match=f"window_stride must be a whole number \\(0 or more\\), or blank for half a "
                                            f"window; got '{text}'"):
            parse_layer(text, "window_stride", "half a window")
    assert parse_layer(" 3 ") == 3 and parse_layer("") is None


def _serve(env: dict[str, str]):
    demo = app.build_demo(app.AppConfig.from_env(env))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                max_file_size="1mb")
    return demo, gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)


@pytest.fixture(scope="module")
def served():
    demo, client = _serve({"BERTSCORE_APP_MODELS": f"{MODEL},roberta-large", "BERTSCORE_APP_MAX_CHARS": "300",
                           "BERTSCORE_APP_MAX_ROWS": "20"})
    try:
        yield demo, client
    finally:
        demo.close()


@pytest.fixture(scope="module")
def server(served):
    return served[1]


def value(output):
    """An output's value: the page shows and hides its tables and figures, so they come as updates."""
    return output["value"] if isinstance(output, dict) and output.get("__type__") == "update" else output


def score_batch(client, upload=None, pasted: str = "", rescale: bool = False, upload_b=None, idf: bool = False):
    """The page's batch endpoint with the page's other controls at their defaults (files as paths)."""
    handle = lambda path: gradio_client.handle_file(str(path)) if path else None  # noqa: E731
    # upload, pasted, model, layer, rescale, lang, whole texts, system B, idf (positional: the endpoint is
    # undocumented, so the client knows no parameter names)
    return client.predict(handle(upload), pasted, MODEL, "", rescale, "", False, handle(upload_b), idf,
                          api_name="/score_batch")


CANDS = ["the cat sat on the mat", "Paris is the capital of France.", "hello world"]
REFS = [["a cat was sitting on the mat"], ["France's capital is Paris.", "Berlin is in Germany."], ["hi there world"]]


@pytest.mark.parametrize("idf", [False, True])
def test_compute_endpoint_equals_library(server, idf: bool) -> None:
    result = server.predict(json.dumps(CANDS), json.dumps(REFS), MODEL, "", idf, False, "", api_name="/compute")
    assert "error" not in result, result
    (p, r, f), hashcode = bertscore.score(CANDS, REFS, model_type=MODEL, idf=idf, return_hash=True)
    assert result["precision"] == pytest.approx(p.tolist(), abs=1e-6)
    assert result["recall"] == pytest.approx(r.tolist(), abs=1e-6)
    assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    assert result["hashcode"] == hashcode


def test_compute_plain_text_layer_and_rescale_note(server) -> None:
    result = server.predict("the cat sat", "a cat sat\nthe dog sat", MODEL, "3", False, True, "", api_name="/compute")
    (p, r, f) = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL, num_layers=3,
                                rescale_with_baseline=True)  # the embedded model's packaged English baseline
    assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    assert "_L3_" in result["hashcode"]
    assert result["rescaled"] is True and any("packaged en baseline" in n for n in result["notes"])


def test_errors_are_messages_and_server_keeps_serving(server, tmp_path: Path) -> None:
    too_long = server.predict("x " * 400, "y", MODEL, "", False, False, "", api_name="/compute")
    assert "at most 300" in too_long["error"]
    assert "allow-list" in server.predict("a", "b", "gpt2", api_name="/compute")["error"]
    assert "not valid JSON" in server.predict("[1,", "b", api_name="/compute")["error"]
    assert "got 2 predictions but 1 references" in server.predict('["a", "b"]', '["c"]', api_name="/compute")["error"]
    # A model that needs the (unreachable) hub: a clear loading message, no crash.
    missing = server.predict("a", "b", "roberta-large", "", False, False, "", api_name="/compute")
    assert missing["error"] == (
        "roberta-large cannot be loaded here: this server has no copy of it and cannot reach the Hugging Face Hub to "
        f"download it. Choose {MODEL} (this server's default), or run this Space where the Hub is reachable.")
    # Settings named as /compute's parameters (the page names its controls: test_app_browser.py).
    assert server.predict("a", "b", MODEL, "99", api_name="/compute")["error"] == (
        f"num_layers=99 is out of range: {MODEL} has layers 0 to 6 (blank: its default, 6)")
    assert server.predict("a", "b", MODEL, "1.5", api_name="/compute")["error"] == (
        "num_layers must be a whole number (0 or more), or blank for the model's default; got '1.5'")
    assert server.predict("a", "b", MODEL, "", False, True, "de", api_name="/compute")["error"] == (
        f"lang='de': {MODEL} has no packaged rescale baseline in that language; it has en (blank: en)")
    # A bad upload through the batch endpoint: the error markdown says why.
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    outputs = score_batch(server, bad)
    assert "binary" in shown(outputs[0])
    missing_column = tmp_path / "cols.csv"
    missing_column.write_text("text,gold\na,b\n")
    outputs = score_batch(server, missing_column)
    assert "missing a candidate column" in shown(outputs[0])
    too_many = tmp_path / "many.csv"
    too_many.write_text("candidate,reference\n" + "a,b\n" * 21)
    outputs = score_batch(server, too_many)
    assert "many.csv: has more than 20 rows; at most 20 are accepted here" in shown(outputs[0])
    null_cell = tmp_path / "null.jsonl"
    null_cell.write_text('{"candidate": "a", "reference": "b"}\n{"candidate": "c", "reference": null}\n')
    outputs = score_batch(server, null_cell)
    assert "null.jsonl, row 2 (line 2), column 'reference': is null" in shown(outputs[0])
    # ... and the next request is served normally.
    ok = server.predict("the cat sat", "a cat sat", MODEL, api_name="/compute")
    assert "error" not in ok and 0 < ok["f1"][0] <= 1


def call_over_http(served, body: object) -> tuple[str, object]:
    """What `curl -X POST URL/gradio_api/call/compute -d BODY` and then `curl -N
    URL/gradio_api/call/compute/EVENT_ID` get, done as they do (urllib, no gradio_client, which
    fills in left-out parameters itself): the stream's final event, its name and its data."""
    import urllib.request

    base = served[0].local_url.rstrip("/") + "/gradio_api/call/compute"
    posted = urllib.request.Request(base, data=json.dumps(body).encode(), method="POST",
                                    headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(posted, timeout=60) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(f"{base}/{event_id}", timeout=300) as stream:
        text = stream.read().decode("utf-8")
    events = [dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
              for block in text.split("\n\n") if block.strip()]
    final = [event for event in events if event.get("event") in ("complete", "error")]
    assert len(final) == 1, text
    return final[0]["event"], json.loads(final[0]["data"])


def test_plain_http_requests_that_stop_early_get_scores_or_a_named_error(served) -> None:
    """docs/space.md: clients that stop at `lang` keep working. Over plain HTTP a request sends only the
    values it has; gradio answered 7 of 9 with `event: error`, `data: {"error": null}`. Now the left-out
    parameters take their defaults (the scores equal score()'s), and too few or too many values get one
    error naming what is missing or extra."""
    cands, refs = json.dumps(CANDS), json.dumps(REFS)
    expected_p, expected_r, expected_f = bertscore.score(CANDS, REFS, model_type=MODEL, idf=True)
    for values in ([cands, refs, MODEL, "", True, False, ""],  # stops at lang: the 7 values the docs promise
                   [cands, refs, MODEL, "", True, False, "", "truncate", ""]):  # all 9
        event, data = call_over_http(served, {"data": values})
        assert event == "complete", data
        result = data[0]
        assert "error" not in result, result
        assert result["f1"] == pytest.approx(expected_f.tolist(), abs=1e-6)
        assert result["precision"] == pytest.approx(expected_p.tolist(), abs=1e-6)
        assert result["recall"] == pytest.approx(expected_r.tolist(), abs=1e-6)
    # Only the two texts: every setting at its default (the app's default model, raw, no idf).
    event, data = call_over_http(served, {"data": [cands, refs]})
    (_, _, f), hashcode = bertscore.score(CANDS, REFS, model_type=MODEL, return_hash=True)
    assert event == "complete" and data[0]["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    assert data[0]["hashcode"] == hashcode and data[0]["rescaled"] is False
    form = ("/compute takes predictions, references (required), then model, num_layers, idf, rescale, lang, "
            "long_texts, window_stride (optional, in this order; a request may stop after any of them)")
    assert call_over_http(served, {"data": [cands]}) == ("complete", [{"error": f"references is missing: {form}"}])
    assert call_over_http(served, {"data": []}) == (
        "complete", [{"error": f"predictions and references are missing: {form}"}])
    event, data = call_over_http(served, {"data": [cands, refs, MODEL, "", False, False, "", "truncate", "", "x"]})
    assert event == "error" and data["error"] == f"10 values for 9 parameters: {form}", data


def test_plain_text_references_get_a_note_saying_how_they_were_read(served) -> None:
    """A references value that is not JSON is read as the page reads its box, one reference per line:
    the answer says so (and scores it so), where it used to be scored with no word."""
    event, data = call_over_http(served, {"data": ["the cat sat", "a cat sat\n\nthe dog sat\n"]})
    assert event == "complete"
    result = data[0]
    f = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL)[2]
    assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    assert result["notes"] == ["references is plain text, not a JSON list: read as the page reads its box, one "
                               "reference per non-blank line (2 references)"]
    as_json = call_over_http(served, {"data": ['["the cat sat"]', '[["a cat sat", "the dog sat"]]']})[1][0]
    assert as_json["notes"] == [] and as_json["f1"] == result["f1"]


def test_batch_endpoint_good_upload(server, tmp_path: Path) -> None:
    """Fails when the batch endpoint puts another score in the F1 column, averages wrongly, or drops
    the multi-reference row; figures checked to 4 decimals against score() (`shows`)."""
    good = tmp_path / "good.tsv"
    good.write_text("candidate\treference_1\treference_2\nthe cat sat\ta cat sat\tthe dog sat\nhello\thi\t\n")
    error, table, summary, histogram, download = map(value, score_batch(server, good))
    assert error == ""
    p, r, f = bertscore.score(["the cat sat", "hello"], [["a cat sat", "the dog sat"], ["hi"]], model_type=MODEL)
    assert table["headers"] == ["row", "F1 (raw)", "P (raw)", "R (raw)", "candidate", "references"]
    assert all_show([row[1] for row in table["data"]], f.tolist())  # F1 in its column, as score() gives it
    assert any_shows("F1 ", summary, f.mean().item()), summary
    pasted = score_batch(server, pasted="candidate,reference_1,reference_2\nthe cat sat,a cat sat,the dog sat\n")
    assert pasted[0] == "" and value(pasted[1])["data"][0][1] == table["data"][0][1]
    csv_text = Path(download).read_text()
    assert csv_text.splitlines()[0] == "row,F1 (raw),P (raw),R (raw),candidate,references,hashcode"
    both = score_batch(server, good, pasted="candidate,reference\na,b\n")
    assert "both a file (good.tsv) and pasted rows" in shown(both[0]) and both[1]["visible"] is False


def test_batch_handler_shows_raw_scores_next_to_rescaled_ones(tmp_path: Path) -> None:
    """The rescale checkbox promises "raw scores are shown too": in the batch tab as well."""
    handlers = app.Handlers(app.ScoringService(app.AppConfig.from_env({})))
    table = tmp_path / "t.csv"
    table.write_text("candidate,reference\nthe cat sat,a cat sat\nhello world,goodbye moon\n")
    cands, refs = ["the cat sat", "hello world"], ["a cat sat", "goodbye moon"]
    error, shown, summary, _, download = handlers.batch(str(table), "", MODEL, "", True, "", False, None,
                                                          progress=lambda *a, **k: None)
    assert error == "" and shown["visible"] and download["visible"]
    shown = shown["value"]
    rescaled = bertscore.score(cands, refs, model_type=MODEL, rescale_with_baseline=True)
    raw = bertscore.score(cands, refs, model_type=MODEL)
    for name, values in zip(("P (rescaled)", "R (rescaled)", "F1 (rescaled)"), rescaled):
        assert all_show(shown[name].tolist(), values.tolist()), name
    for name, values in zip(("P (raw)", "R (raw)", "F1 (raw)"), raw):
        assert all_show(shown[name].tolist(), values.tolist()), name
    assert any_shows("F1 ", summary, raw[2].mean().item()) and "corpus mean (raw)" in summary
    header = Path(download["value"]).read_text().splitlines()[0]
    assert header == ("row,F1 (rescaled),P (rescaled),R (rescaled),F1 (raw),P (raw),R (raw),candidate,references,"
                      "hashcode")


def test_pair_handler_direct() -> None:
    """Fails when the pair tab's raw or rescaled row shows other numbers than score() with idf over
    two references (to 4 decimals, `shows`), or a too-long text is not refused with its length."""
    handlers = app.Handlers(app.ScoringService(app.AppConfig.from_env({"BERTSCORE_APP_MAX_CHARS": "100"})))
    error, scores, figure, table = handlers.pair("the cat sat", "a cat sat\nthe dog sat", MODEL, "", True, "",
                                                 idf=True)
    assert error == "" and figure["visible"] and figure["value"] is not None and table["visible"]
    assert figure["label"].startswith("Token similarity, candidate vs reference #1: F1 ") and "rescaled" in figure["label"]
    table = table["value"]
    p, r, f = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL, idf=True)
    assert all_show(table_row(scores, "raw"), [p.item(), r.item(), f.item()])
    p, r, f = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL, idf=True,
                              rescale_with_baseline=True)
    assert all_show(table_row(scores, "rescaled"), [p.item(), r.item(), f.item()])
    assert "packaged en baseline" in shown(scores) and "Winning reference:** #1" in scores
    assert list(table.columns) == ["side", "#", "token", "weight", "best match", "cosine"]
    error, scores, figure, table = handlers.pair("x" * 101, "y", MODEL, "", False, "")
    assert shown(error) == "**Could not score:** the candidate has 101 characters; this app accepts at most 100 per text: shorten it"
    assert figure == table == {"__type__": "update", "value": None, "visible": False}  # hidden, not left stale
    error, *_ = handlers.pair("a", "b", MODEL, "1.5", False, "")
    assert "Layer must be a whole number" in shown(error)


def test_concurrent_pair_requests_get_their_own_figures() -> None:
    """Two requests drawing at once (concurrency > 1): each heatmap is its own pair's matrix."""
    import threading

    import numpy as np
    from matplotlib.figure import Figure

    from bertscore.explain import explain_pair
    from bertscore.plot import SIMILARITY_IMAGE

    config = app.AppConfig.from_env({"BERTSCORE_APP_CONCURRENCY": "2"})
    handlers = app.Handlers(app.ScoringService(config))
    pairs = [("the cat sat on the mat", "a cat was sitting on the mat"),
             ("Paris is the capital of France.", "France's capital is Paris.\nBerlin is in Germany.")]
    scorer, _ = handlers.service.scorer(MODEL, "", False, False, "")
    expected = [explain_pair(scorer, c, r.split("\n")).best.similarity.numpy() for c, r in pairs]
    results: dict[int, tuple] = {}
    barrier = threading.Barrier(2)

    def request(index: int) -> None:
        barrier.wait()
        for _ in range(3):
            results[index] = handlers.pair(*pairs[index], MODEL, "", False, "")

    threads = [threading.Thread(target=request, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in range(2):
        error, _, figure, _ = results[index]
        figure = figure["value"]
        assert error == "" and isinstance(figure, Figure)
        image = next(a for a in figure.axes[0].get_children() if a.get_gid() == SIMILARITY_IMAGE)
        np.testing.assert_array_equal(np.asarray(image.get_array()), expected[index])


def test_concurrent_requests_keep_their_notes_apart() -> None:
    """One request's notes (an empty prediction) never show in another's, whatever the timing."""
    import threading

    config = app.AppConfig.from_env({"BERTSCORE_APP_CONCURRENCY": "4"})
    handlers = app.Handlers(app.ScoringService(config))
    results: dict[str, list[dict]] = {"empty": [], "clean": []}
    requests = {"empty": (json.dumps(["", "a cat sat"]), json.dumps(["a dog", "a cat sat"])),
                "clean": (json.dumps(["the cat sat"] * 3), json.dumps(["a cat sat", "the cat", "cats sit"]))}

    def work(kind: str) -> None:
        for _ in range(4):
            results[kind].append(handlers.compute(*requests[kind]))

    threads = [threading.Thread(target=work, args=(kind,)) for kind in ("empty", "clean", "empty", "clean")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results["empty"]) == len(results["clean"]) == 8
    assert all(any("predictions[0]" in note for note in out["notes"]) for out in results["empty"])
    assert all(out["notes"] == [] and "error" not in out for out in results["clean"])
    assert len({tuple(out["f1"]) for out in results["clean"]}) == 1


def test_batch_compares_two_systems_with_intervals(server, tmp_path: Path) -> None:
    """Fails when the comparison shows another system's interval, difference or p-value than the
    statistics module gives for score()'s numbers, or puts B's scores in the wrong column."""
    from bertscore import stats

    refs = ["a cat sat on the mat", "the weather is nice today", "he plays the guitar", "we met at the station"]
    cands_a = ["the cat is on a mat", "nice weather", "guitar he plays", "they met near the station"]
    cands_b = ["a cat sat on the mat", "the weather is nice today", "he plays guitar", "we met at the station"]
    table_a, table_b = tmp_path / "a.csv", tmp_path / "b.csv"
    table_a.write_text("candidate,reference\n" + "".join(f"{c},{r}\n" for c, r in zip(cands_a, refs)))
    table_b.write_text("candidate,reference\n" + "".join(f"{c},{r}\n" for c, r in zip(cands_b, refs)))
    error, table, summary, _, _ = map(value, score_batch(server, table_a, upload_b=table_b))
    assert error == "", error
    f_a = bertscore.score(cands_a, refs, model_type=MODEL)[2].numpy()
    f_b = bertscore.score(cands_b, refs, model_type=MODEL)[2].numpy()
    ci = stats.bootstrap_ci(f_a)
    intervals = re.findall(r"F1 (-?\d+\.\d+) \[(-?\d+\.\d+), (-?\d+\.\d+)\]", summary)
    assert any(all(shows(t, x) for t, x in zip(found, (ci.mean, ci.low, ci.high))) for found in intervals), summary
    test = stats.paired_permutation(f_a, f_b)
    assert shows(figure_after("ΔF1 (raw) ", summary), test.difference)
    # p counts permuted differences at least the observed one: scores a few ulps apart (another call)
    # may tip a tie, 1 in 10,000 resamples each, so within 1e-3 rather than 4 decimals
    assert abs(float(figure_after("p = ", summary)) - test.p_value) <= 1e-3
    assert table["headers"][:3] == ["row", "F1 (raw)", "F1 (B, raw)"]
    assert all_show([row[2] for row in table["data"]], f_b.tolist())
    other_refs = tmp_path / "other.csv"
    other_refs.write_text("candidate,reference\n" + "".join(f"{c},x{r}\n" for c, r in zip(cands_b, refs)))
    error = score_batch(server, table_a, upload_b=other_refs)[0]
    assert "row 1: system B (other.csv) has other references" in shown(error)


def test_comparison_of_identical_systems_says_no_difference() -> None:
    f1 = [0.91, 0.85, 0.78, 0.88, 0.93, 0.81, 0.9, 0.87, 0.86, 0.92, 0.84, 0.89, 0.8]
    text = comparison_md(f1, list(f1))
    assert "p = 0.0001" in text and "no difference: every row scores the same" in text
    assert "significant at" not in text
    better = [x + 0.05 for x in f1]
    assert "(significant at p < 0.05;" in comparison_md(f1, better)


HANG_GUARD_S = 300  # the waits below only end a hung test, saying what they waited for: none is a timing bet


def _gated(gate: threading.Event, call):
    """`call`, held until the test opens `gate` (each test opens it in a `finally`, whatever happens)."""
    def held(*args, **kwargs):
        if not gate.wait(HANG_GUARD_S):
            raise RuntimeError(f"a scoring call waited {HANG_GUARD_S} s for the test to open its gate (gate.set(), "
                               "done once every request is queued, or on the test's way out): the test hung before")
        return call(*args, **kwargs)
    return held


def _wait_until(condition, what: str) -> None:
    """Until `condition()` holds (polled: the queue has no event to wait on); a hang guard fails saying `what`."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {HANG_GUARD_S} s for {what}")
        time.sleep(0.01)  # the polling interval: the outcome does not depend on it


def _solo(**options):
    """A scorer of its own (no cache, no queue) for these options: each request's expected numbers."""
    key = tuple(sorted(options.items()))
    if key not in _SOLO:
        shared = [s for k, s in _SOLO.items() if "num_layers" not in dict(k)]
        loaded = shared[0].model if shared and "num_layers" not in options else None  # one encoder load
        _SOLO[key] = bertscore.BERTScorer(model_type=MODEL, cache_bytes=0, loaded_model=loaded, **options)
    return _SOLO[key]


_SOLO: dict[tuple, bertscore.BERTScorer] = {}


def test_concurrent_requests_merge_and_each_equals_its_solo_result(served, wmt17_de_en, monkeypatch) -> None:
    """Requests with different inputs and options at once through the real server: those with the same
    options are merged into one scoring call, and every answer equals that request scored alone
    (numbers, hash, notes)."""
    demo, client = served
    cands, refs = wmt17_de_en
    cands = [c[:250] for c in cands]
    refs = [r[:250] for r in refs]
    big = (cands[:20], [refs[i: i + 5] for i in range(20)])  # 100 pairs: keeps the worker busy
    requests = [({}, big)]
    for i in range(8):
        size = 1 + i % 4
        part = slice(30 + 10 * i, 30 + 10 * i + size)
        groups = [[r] if j % 2 else [r, refs[j]] for j, r in enumerate(refs[part])]
        requests.append(({}, (cands[part], groups)))
    requests += [({"idf": True}, (cands[100:104], refs[100:104])), ({"idf": True}, (cands[104:106], refs[104:106])),
                 ({"num_layers": 3}, (cands[110:113], refs[110:113])),
                 ({"rescale_with_baseline": True, "lang": "en"}, (cands[120:123], refs[120:123])),
                 # an empty prediction: its own note. Other options than the requests above: a merged call
                 # with a note is scored again request by request (each keeps its notes), not counted as merged
                 ({"num_layers": 4}, (["", cands[130]], [refs[130], refs[131]]))]
    merged_before = demo.bertscore_service.requests.merged_calls

    def send(options, body):
        return client.submit(json.dumps(body[0]), json.dumps(body[1]), MODEL, str(options.get("num_layers", "")),
                             options.get("idf", False), options.get("rescale_with_baseline", False), "",
                             api_name="/compute")

    # Every scoring call waits at a gate until all requests are in the queue (waiting or held in a
    # call), so which requests meet in the queue does not depend on the machine's speed.
    gate = threading.Event()
    monkeypatch.setattr(bertscore.BERTScorer, "score", _gated(gate, bertscore.BERTScorer.score))
    total = sum(len(g) if isinstance(g, list) else 1 for _, (_, groups) in requests for g in groups)
    queue = demo.bertscore_service.requests
    try:
        jobs = [send(*requests[0])]
        _wait_until(lambda: queue.pending_pairs > 0, "the first request to reach the server's queue")
        jobs += [send(options, body) for options, body in requests[1:]]
        _wait_until(lambda: queue.pending_pairs >= total, f"all {total} pairs of the requests to be queued "
                    f"(at {queue.pending_pairs})")
        assert queue.pending_pairs == total
    finally:
        gate.set()
    for job, (options, (c, g)) in zip(jobs, requests):
        result = job.result(timeout=HANG_GUARD_S)
        assert "error" not in result, result
        solo = _solo(**options)
        notes: list[str] = []
        p, r, f = solo.score(c, g, notes=notes)
        assert result["precision"] == pytest.approx(p.tolist(), abs=1e-6)
        assert result["recall"] == pytest.approx(r.tolist(), abs=1e-6)
        assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6)
        assert result["hashcode"] == solo.hash
        assert [n for n in result["notes"] if "baseline" not in n] == [n.replace("candidates[", "predictions[") for n in notes]  # /compute names its parameter
    assert demo.bertscore_service.requests.merged_calls > merged_before


def test_a_busy_server_refuses_at_once_and_says_how_long_to_wait(wmt17_de_en) -> None:
    """A request expected to wait past BERTSCORE_APP_MAX_WAIT_S is answered at once with the wait. Fails
    when the server queues it behind the first (it would be answered only after the gate opens). The
    assumed speed is so low (20 pairs: 2,000 s) that no machine's pace changes the verdict; the wait is
    checked against the seconds that really passed (the clock read, not bet on)."""
    demo, client = _serve({"BERTSCORE_APP_MODELS": MODEL, "BERTSCORE_APP_MAX_WAIT_S": "1000",
                           "BERTSCORE_APP_PAIRS_PER_S": "0.01"})
    service = demo.bertscore_service
    scorer, _ = service.scorer(MODEL, "", False, False, "")  # the pool's scorer for the requests below
    gate = threading.Event()
    scorer.score = _gated(gate, scorer.score)  # busy until the gate opens
    try:
        cands, refs = wmt17_de_en
        started = time.monotonic()
        first = client.submit(json.dumps(cands[:20]), json.dumps(refs[:20]), MODEL, api_name="/compute")
        _wait_until(lambda: service.requests.pending_pairs > 0, "the first request to reach the server's queue")
        refused = client.predict(json.dumps(cands[20:30]), json.dumps(refs[20:30]), MODEL, api_name="/compute")
        passed = time.monotonic() - started
        assert not first.done()  # at once: the first request is still held at the gate (no clock: any machine)
        assert refused["retry_after_s"] >= 1 and "the server is busy" in refused["error"]
        assert "limit of 1000 s" in refused["error"]
        assert f"try again in about {refused['retry_after_s']} s" in refused["error"]
        wait = float(refused["error"].split("would be answered in about ")[1].split(" s")[0])
        # its 10 pairs alone at the assumed 0.01 pairs/s take 1,000 s, and 20 pairs (2,000 s) are ahead,
        # less what the seconds that passed did of them
        assert 3000 - passed <= wait <= 3000, (wait, passed)
    finally:
        gate.set()
    try:
        result = first.result(timeout=HANG_GUARD_S)
        del scorer.score
        assert result["f1"] == pytest.approx(_solo().score(cands[:20], refs[:20])[2].tolist(), abs=1e-6)
    finally:
        demo.close()
