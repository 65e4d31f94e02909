"""The Space app: its parsing and guard rails, and the real server driven through gradio_client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import app  # noqa: E402
import bertscore  # noqa: E402
from conftest import free_port  # noqa: E402

MODEL = bertscore.EMBEDDED_MODEL_NAME


# ----- pure parsing ----------------------------------------------------------------------------
def test_parse_csv_tsv_jsonl_and_multi_reference() -> None:
    cands, groups = app.parse_table("prediction,reference\na b,a c\nd e,d f\n")
    assert cands == ["a b", "d e"] and groups == [["a c"], ["d f"]]
    cands, groups = app.parse_table("Hypothesis\treference_2\treference_1\nx\ty2\ty1\nz\t\tw1\n")
    assert cands == ["x", "z"] and groups == [["y1", "y2"], ["w1"]]
    jsonl = '{"candidate": "a", "references": ["b", "c"]}\n\n{"candidate": "d", "references": "e"}\n'
    assert app.parse_table(jsonl) == (["a", "d"], [["b", "c"], ["e"]])
    assert app.parse_table('candidate,references\na,"[""b"", ""c""]"\n') == (["a"], [["b", "c"]])
    assert app.parse_table('[{"prediction": "a", "reference_1": "b", "reference_2": "c"}]') == (["a"], [["b", "c"]])
    with pytest.raises(app.UserError, match="array of objects"):
        app.parse_table('[1, 2]')


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "is empty"),
        (b"   \n", "is empty"),
        (b"\x00\x01\x02binary\x00", "binary"),
        ("candidate,reference\ncaf\u00e9,x\n".encode("latin-1"), "not UTF-8"),
        (b"text,gold\na,b\n", "missing a candidate column"),
        (b"candidate,other\na,b\n", "reference column"),
        (b"candidate,reference\n", "no rows"),
        (b'{"candidate": "a", "reference": "b"}\n{"candidate": \n', "line 2 is not valid JSON"),
        (b'{"candidate": "a", "reference": "b"}\n[1, 2]\n', "expected an object"),
    ],
)
def test_bad_uploads_give_clear_messages(data: bytes, message: str) -> None:
    with pytest.raises(app.UserError, match=message):
        app.parse_table(app.decode_upload(data, "f.csv"), "f.csv")


def test_row_limit_and_config_from_env() -> None:
    with pytest.raises(app.UserError, match="at most 2"):
        app.parse_table("candidate,reference\na,b\nc,d\ne,f\n", max_rows=2)
    config = app.AppConfig.from_env({
        "BERTSCORE_APP_MODELS": "roberta-large, bert-base-uncased", "BERTSCORE_APP_DEFAULT_MODEL": MODEL,
        "BERTSCORE_APP_MAX_CHARS": "50", "BERTSCORE_APP_MAX_ROWS": "7",
    })
    assert config.models == (MODEL, "roberta-large", "bert-base-uncased") and config.default_model == MODEL
    assert (config.max_chars, config.max_rows) == (50, 7)
    with pytest.raises(ValueError, match="BERTSCORE_APP_MAX_ROWS"):
        app.AppConfig.from_env({"BERTSCORE_APP_MAX_ROWS": "many"})
    assert app.parse_layer("") is None and app.parse_layer("3") == 3
    with pytest.raises(app.UserError):
        app.parse_layer("-1")


# ----- the real server ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server():
    config = app.AppConfig.from_env({
        "BERTSCORE_APP_MODELS": f"{MODEL},roberta-large", "BERTSCORE_APP_MAX_CHARS": "300",
        "BERTSCORE_APP_MAX_ROWS": "20",
    })
    demo = app.build_demo(config)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                max_file_size="1mb")
    try:
        client = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
        yield client
    finally:
        demo.close()


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
    (p, r, f) = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL, num_layers=3)
    assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    assert "_L3_" in result["hashcode"]
    assert result["rescaled"] is False and any("no packaged rescale baseline" in n for n in result["notes"])


def test_errors_are_messages_and_server_keeps_serving(server, tmp_path: Path) -> None:
    too_long = server.predict("x " * 400, "y", MODEL, "", False, False, "", api_name="/compute")
    assert "at most 300" in too_long["error"]
    assert "allow-list" in server.predict("a", "b", "gpt2", api_name="/compute")["error"]
    assert "not valid JSON" in server.predict("[1,", "b", api_name="/compute")["error"]
    assert "one entry per prediction" in server.predict('["a", "b"]', '["c"]', api_name="/compute")["error"]
    # A model that needs the (unreachable) hub: a clear loading message, no crash.
    missing = server.predict("a", "b", "roberta-large", "", False, False, "", api_name="/compute")
    assert "could not load model 'roberta-large'" in missing["error"]
    # A bad upload through the batch endpoint: the error markdown says why.
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    outputs = server.predict(gradio_client.handle_file(str(bad)), "", MODEL, "", False, False, "",
                             api_name="/score_batch")
    assert "binary" in outputs[0]
    missing_column = tmp_path / "cols.csv"
    missing_column.write_text("text,gold\na,b\n")
    outputs = server.predict(gradio_client.handle_file(str(missing_column)), "", MODEL, "", False, False, "",
                             api_name="/score_batch")
    assert "missing a candidate column" in outputs[0]
    # ... and the next request is served normally.
    ok = server.predict("the cat sat", "a cat sat", MODEL, api_name="/compute")
    assert "error" not in ok and 0 < ok["f1"][0] <= 1


def test_batch_endpoint_good_upload(server, tmp_path: Path) -> None:
    good = tmp_path / "good.tsv"
    good.write_text("candidate\treference_1\treference_2\nthe cat sat\ta cat sat\tthe dog sat\nhello\thi\t\n")
    error, table, summary, histogram, download = server.predict(
        gradio_client.handle_file(str(good)), "", MODEL, "", False, False, "", api_name="/score_batch"
    )
    assert error == ""
    p, r, f = bertscore.score(["the cat sat", "hello"], [["a cat sat", "the dog sat"], ["hi"]], model_type=MODEL)
    assert [row[-1] for row in table["data"]] == [f"{x:.4f}" for x in f.tolist()]
    assert f"F1 {f.mean().item():.4f}" in summary
    pasted = server.predict(None, "candidate,reference_1,reference_2\nthe cat sat,a cat sat,the dog sat\n", MODEL, "", False, False, "",
                            api_name="/score_batch")
    assert pasted[0] == "" and pasted[1]["data"][0][-1] == table["data"][0][-1]
    csv_text = Path(download).read_text()
    assert csv_text.splitlines()[0] == "row,candidate,references,precision,recall,f1,hashcode"


def test_pair_handler_direct() -> None:
    handlers = app.Handlers(app.ScoringService(app.AppConfig.from_env({"BERTSCORE_APP_MAX_CHARS": "100"})))
    error, scores, figure, table = handlers.pair("the cat sat", "a cat sat\nthe dog sat", MODEL, "", True, True, "")
    assert error == "" and figure is not None
    p, r, f = bertscore.score(["the cat sat"], [["a cat sat", "the dog sat"]], model_type=MODEL, idf=True)
    assert f"| raw | {p.item():.4f} | {r.item():.4f} | {f.item():.4f} |" in scores
    assert "no packaged rescale baseline" in scores and "Winning reference:** #1" in scores
    assert list(table.columns) == ["side", "#", "token", "weight", "best match", "cosine"]
    error, scores, figure, _ = handlers.pair("x" * 101, "y", MODEL, "", False, False, "")
    assert "at most 100" in error and figure is None
    error, *_ = handlers.pair("a", "b", MODEL, "1.5", False, False, "")
    assert "whole number" in error
