"""Notes: one per call at every door, at the user's line, in each door's spelling; the process
left as found; the hash names the weights and tokenizer libraries; hub probes expire."""

from __future__ import annotations

import html
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore import notes as notes_module
from bertscore.scoring.idf import TokenWeights
from conftest import REPO_ROOT, SENTENCES

MODEL = EMBEDDED_MODEL_NAME
CUNEIFORM = "\U00012000\U00012001\U00012002 \U00012003"  # a script MiniLM's WordPiece cannot read: [UNK] [UNK]
LONG_WORD = "a" * 20000  # one word past WordPiece's 100-character limit: one [UNK]
LONG_TEXT = "x " * 600  # 600 content tokens: past MiniLM's 510


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    for name in ("PYTHONWARNINGS", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def _run_script(tmp_path: Path, source: str) -> tuple[subprocess.CompletedProcess, Path, list[str]]:
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=REPO_ROOT, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, script, script.read_text(encoding="utf-8").splitlines()


def _line_of(lines: list[str], marker: str) -> int:
    """1-based number of the one script line holding `marker` (found independently of the code)."""
    found = [i + 1 for i, line in enumerate(lines) if line.endswith(marker)]
    assert len(found) == 1, marker
    return found[0]


# ----- a note per call, at the user's line, in a fresh interpreter with default filters ----------
@pytest.mark.slow
def test_notes_repeat_every_call_at_the_users_line_and_the_process_is_left_as_found(tmp_path):
    done, script, lines = _run_script(tmp_path, f"""
        import logging, random, sys, warnings
        import numpy as np
        import torch
        import evaluate
        import transformers  # its import sets up its own logger: before the snapshot
        import bertscore
        from bertscore import BERTScorer, score
        from bertscore.models import devices
        from bertscore.notes import BERTScoreNote

        def state():
            loggers = {{name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers),
                              logging.getLogger(name).propagate, logging.getLogger(name).disabled)
                       for name in ("", "bertscore", "transformers", "torch", "evaluate", "datasets")}}
            return (torch.get_rng_state().tolist(), np.random.get_state()[1].tolist(), random.getstate(),
                    torch.get_num_threads(), torch.get_num_interop_threads(), loggers)

        metric = evaluate.load("bertscore_metric.py")  # evaluate's own loading: before the snapshot
        random.seed(1); np.random.seed(1); torch.manual_seed(1)
        before = state()
        M = {MODEL!r}
        print("PHASE score", file=sys.stderr, flush=True)
        for epoch in range(3):
            score(["", "a cat sat"], ["a cat sat", "a dog sat"], model_type=M)  # MARK-score
        print("PHASE scorer", file=sys.stderr, flush=True)
        scorer = BERTScorer(model_type=M)
        for epoch in range(2):
            scorer.score([{LONG_TEXT!r}, "a"], ["a", "b"])  # MARK-scorer
        print("PHASE evaluate", file=sys.stderr, flush=True)
        for epoch in range(3):
            metric.compute(predictions=["", "a"], references=["a", "b"], model_type=M)  # MARK-evaluate
        print("PHASE dtype", file=sys.stderr, flush=True)
        devices.cpu_slowdown = lambda dtype: 3.0  # as on a CPU that emulates bf16
        slow = BERTScorer(model_type=M, dtype="bfloat16")
        for epoch in range(2):
            slow.score(["a cat"], ["a dog"])  # MARK-dtype
        print("PHASE filters", file=sys.stderr, flush=True)
        assert state() == before, "process-wide state changed"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BERTScoreNote)
            scorer.score([""], ["a"])  # MARK-ignored
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                scorer.score([""], ["a"])
            except BERTScoreNote as error:
                print("RAISED", str(error)[:20], file=sys.stderr)
        with warnings.catch_warnings():
            warnings.simplefilter("once")
            for epoch in range(2):
                scorer.score([""], ["b"])  # MARK-once
    """)
    err = done.stderr
    phases = dict(re.findall(r"PHASE (\w+)\n(.*?)(?=PHASE |\Z)", err, flags=re.S))

    def shown(phase: str, marker: str, text: str) -> int:
        where = f"{script}:{_line_of(lines, marker)}: BERTScoreNote: "
        found = re.findall(re.escape(where) + r"(.*)", phases[phase])
        assert all(text in note for note in found), found
        others = phases[phase].count("BERTScoreNote") - len(found)
        assert others == 0, phases[phase]  # nothing pointed anywhere else, nothing twice
        return len(found)

    assert shown("score", "MARK-score", "no content tokens") == 3
    assert shown("scorer", "MARK-scorer", "truncated") == 2
    assert shown("evaluate", "MARK-evaluate", "no content tokens") == 3
    assert shown("dtype", "MARK-dtype", "dtype=bfloat16 measured 3.0x") == 2
    filters = phases["filters"]
    assert "RAISED no content tokens" in filters  # "error" still raises
    assert filters.count("BERTScoreNote:") == 1  # "ignore" silences, "once" shows once
    assert f":{_line_of(lines, 'MARK-once')}: BERTScoreNote" in filters


def test_a_list_keeps_notes_and_no_warning_is_shown(minilm_scorer):
    collected: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minilm_scorer.score(["", "a"], ["a", "b"], notes=collected)
    assert len(collected) == 1 and "candidates[0]" in collected[0]


def test_report_keeps_its_signature():
    collected: list[str] = []
    notes_module.report("m", collected, stacklevel=5)
    notes_module.report("n", collected)
    assert collected == ["m", "n"]
    with pytest.warns(notes_module.BERTScoreNote, match="shown") as record:
        notes_module.report("shown", None, stacklevel=2)
    assert record[0].filename == __file__  # the first frame outside the package


def test_a_door_points_later_notes_at_a_recorded_line():
    """caller_site() records the user's line; notes inside noted_at(site) point there, and only there."""
    site = notes_module.caller_site(); line = sys._getframe().f_lineno  # noqa: E702
    with pytest.warns(notes_module.BERTScoreNote) as record:
        with notes_module.noted_at(site):
            exec(compile("report('later', None)", "someone_elses_loop.py", "exec"), {"report": notes_module.report})
        notes_module.report("after", None)
        with notes_module.noted_at(None):  # None: the caller's line, as ever
            notes_module.report("unpinned", None)
    assert [(r.filename, r.lineno) for r in record][:1] == [(__file__, line)]
    assert [r.filename for r in record][1:] == [__file__, __file__] and record[1].lineno != line


# ----- each door's spelling -------------------------------------------------------------------------
def test_truncation_note_in_python_and_evaluate_spelling(minilm_scorer):
    collected: list[str] = []
    minilm_scorer.score([LONG_TEXT], ["a"], notes=collected)
    assert "pass long_texts='window' to score them whole" in collected[0]
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    with pytest.warns(notes_module.BERTScoreNote) as record:
        metric.compute(predictions=[LONG_TEXT], references=["a"], model_type=MODEL)
    truncated = [w for w in record if "truncated" in str(w.message)]
    assert len(truncated) == 1 and "pass long_texts='window' to compute() to score them whole" in str(truncated[0].message)
    assert truncated[0].filename == __file__  # the compute() line above, past evaluate and the module


def test_spelling_table():
    cli = notes_module.command_line({"model_type": "--model"})
    assert cli.advice("long_texts", "window") == "pass --long-texts window"
    assert cli.setting("idf", True) == "--idf" and cli.setting("model_type", "m") == "--model m"
    assert notes_module.PYTHON.setting("dtype", "auto") == "dtype='auto'"
    with notes_module.spelled(cli):
        assert notes_module.advice("dtype", "float32") == "pass --dtype float32"
    assert notes_module.advice("dtype", "float32") == "pass dtype='float32'"  # restored on leaving


@pytest.mark.parametrize("module", ["main", "layers", "baseline"])
def test_each_command_spells_options_by_its_own_parser(module):
    """The flags come from the parser (no copy of them in notes.py): `--model` for model_type, and
    every option of the parser by its own long flag. Fails if the table drifts from the parser."""
    import importlib

    command = importlib.import_module(f"bertscore.cli.{module}")
    parser = command.build_parser()
    spelling = parser.spelling()
    assert spelling.setting("model_type", "m") == "--model m"
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert spelling.setting(action.dest, "v") == f"{max(action.option_strings, key=len)} v", action.dest


@pytest.mark.slow
def test_cli_notes_spell_cli_options_name_lines_and_show_once(tmp_path, capsys):
    """Through the command's `main` in this process (the notes of a real CLI process: test_long_texts.py)."""
    from bertscore.cli import main

    cands = tmp_path / "c.txt"
    cands.write_text(f"a cat sat\n{LONG_TEXT}\n{CUNEIFORM}\n{LONG_WORD}\nthe cat {CUNEIFORM[0]}\n", encoding="utf-8")
    refs = tmp_path / "r.txt"
    refs.write_text("a cat sat\na cat\na dog\na bird\nthe cat sat\n", encoding="utf-8")
    returncode = main(["-c", str(cands), "-r", str(refs), "-m", MODEL, "--format", "tsv", "--chunk-size", "2"])
    stderr = capsys.readouterr().err
    assert returncode == 0, stderr
    notes = [line for line in stderr.splitlines() if line.startswith("bertscore: note:")]
    truncated = [n for n in notes if "truncated" in n]
    assert len(truncated) == 1 and "pass --long-texts window" in truncated[0] and "long_texts=" not in truncated[0]
    assert f"line 2 of {cands}" in truncated[0]
    unknown = [n for n in notes if "unknown token" in n]  # chunks of 2 lines: lines 3 and 4 share one
    assert len(unknown) == 1 and f"line 3 of {cands}" in unknown[0] and f"line 4 of {cands}" in unknown[0]
    assert f"line 5 of {cands}" not in unknown[0]  # half of its content, not more


def test_cli_shows_a_repeated_note_once_per_run(monkeypatch, tmp_path, capsys):
    from bertscore.models import devices
    from bertscore.cli import main

    monkeypatch.setattr(devices, "cpu_slowdown", lambda dtype: 3.0)
    cands = tmp_path / "c.txt"
    cands.write_text("a\nb\nc\n", encoding="utf-8")
    assert main(["-c", str(cands), "-r", str(cands), "-m", MODEL, "--dtype", "bfloat16", "--chunk-size", "1",
                 "--format", "tsv"]) == 0
    err = capsys.readouterr().err
    assert err.count("measured 3.0x") == 1 and "pass --dtype float32" in err and "dtype='" not in err


@pytest.mark.slow
def test_space_notes_name_its_controls_and_compute_its_parameters():
    pytest.importorskip("gradio")
    gradio_client = pytest.importorskip("gradio_client")
    sys.path.insert(0, str(REPO_ROOT))
    import app
    from conftest import free_port

    demo = app.build_demo(app.AppConfig.from_env({"BERTSCORE_APP_MODELS": MODEL, "BERTSCORE_APP_MAX_CHARS": "30000"}))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
        pasted = f"candidate,reference\n{LONG_TEXT.strip()},a cat\n{LONG_WORD},a dog\n"
        # upload, pasted, model, layer, rescale, baseline language, whole texts, system B, idf
        error, _, summary, _, _ = client.predict(None, pasted, MODEL, "", False, "", False, None, False,
                                                 api_name="/score_batch")
        assert error == ""
        summary = html.unescape(summary)  # the page shows notes as typed: punctuation as character references
        assert f'tick "{app.WHOLE_TEXTS_LABEL}"' in summary and "long_texts=" not in summary
        assert "unknown token" in summary and "row 2 (candidate)" in summary and "candidates[" not in summary
        assert summary.count("mostly unknown tokens") == 1 and summary.count("truncated") == 1  # once per call
        out = client.predict(json.dumps([LONG_TEXT, CUNEIFORM]), json.dumps(["a", "b"]), MODEL, api_name="/compute")
        joined = " ".join(out["notes"])
        assert "pass long_texts='window'" in joined and "unknown token" in joined and "predictions[1]" in joined
        assert len(out["notes"]) == 2
    finally:
        demo.close()


# ----- the unknown-token note ----------------------------------------------------------------------------
def test_mostly_unknown_texts_are_named(minilm_scorer):
    tokenizer = minilm_scorer.model.tokenizer
    texts = ["a cat sat", CUNEIFORM, LONG_WORD, f"the {CUNEIFORM[:1]} {CUNEIFORM[1]}", f"cat {CUNEIFORM[0]}"]
    # which are "mostly unknown", counted here with the tokenizer itself
    expected = []
    for index, text in enumerate(texts):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if 2 * sum(i == tokenizer.unk_token_id for i in ids) > len(ids):
            expected.append(f"candidates[{index}]")
    assert expected == ["candidates[1]", "candidates[2]", "candidates[3]"]  # "cat [UNK]" is half: not more
    collected: list[str] = []
    minilm_scorer.score(texts, ["a cat"] * len(texts), notes=collected)
    unknown = [n for n in collected if "unknown token" in n]
    assert len(unknown) == 1 and "'[UNK]'" in unknown[0]
    named = re.findall(r"candidates\[\d+\]", unknown[0])
    assert named == expected


def test_evaluate_notes_name_texts_as_its_errors_do_predictions():
    """compute(predictions=...) names a bad input `predictions[1]`; its notes said `candidates[1]`."""
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    with pytest.raises(TypeError, match=r"predictions\[1\]"):
        metric.compute(predictions=["a cat", 3], references=["a cat", "a dog"], model_type=MODEL)
    with pytest.warns(notes_module.BERTScoreNote) as record:
        metric.compute(predictions=["a cat sat", CUNEIFORM, LONG_TEXT], references=["a cat", "a dog", CUNEIFORM],
                       model_type=MODEL)
    messages = [str(w.message) for w in record]
    unknown = [m for m in messages if "unknown token" in m]
    truncated = [m for m in messages if "truncated" in m]
    assert len(unknown) == 1 and "predictions[1], references[2]" in unknown[0] and "candidates[" not in unknown[0]
    assert len(truncated) == 1 and "predictions[2]" in truncated[0]


# ----- idf_dict and token weights ------------------------------------------------------------------------
def test_idf_dict_default_is_the_official_one(minilm_scorer):
    bert_score = pytest.importorskip("bert_score")
    texts = list(SENTENCES)
    theirs = bert_score.utils.get_idf_dict(texts, minilm_scorer.model.tokenizer, nthreads=0)
    ours = BERTScorer(loaded_model=minilm_scorer.model, idf=texts).idf_dict
    vocab = minilm_scorer.model.vocab_size
    unseen = next(i for i in range(1000, vocab) if i not in theirs)
    for token_id in (vocab, vocab + 5, 10**7, unseen):
        assert ours[token_id] == pytest.approx(theirs[token_id], abs=1e-6)
    assert ours[10**7] == pytest.approx(math.log(len(texts) + 1))


def test_weights_are_checked_with_the_size_named(minilm_scorer):
    vocab = minilm_scorer.model.vocab_size
    short = TokenWeights(torch.ones(vocab - 10))
    with pytest.raises(ValueError, match=f"{vocab - 10} entries, but the tokenizer's vocabulary has {vocab}"):
        minilm_scorer.score(["a"], ["b"], weights=short)
    with pytest.raises(ValueError, match=f"{vocab - 10} entries"):
        BERTScorer(loaded_model=minilm_scorer.model, idf=short)
    for bad, shown in ((float("nan"), "nan"), (float("inf"), "inf"), (-1.0, "-1.0")):
        table = torch.ones(vocab)
        table[7] = bad
        with pytest.raises(ValueError, match=f"finite and >= 0: token id 7 has {shown}"):
            minilm_scorer.score(["a"], ["b"], weights=TokenWeights(table))
    with pytest.raises(ValueError, match=f"token id {vocab}, outside the tokenizer's vocabulary of {vocab}"):
        BERTScorer(loaded_model=minilm_scorer.model, idf=defaultdict(lambda: 1.0, {vocab: 2.0}))
    with pytest.raises(ValueError, match="token id 3 has nan"):
        BERTScorer(loaded_model=minilm_scorer.model, idf=defaultdict(lambda: 1.0, {3: float("nan")}))


def test_the_returned_hash_names_the_weights_of_the_call(minilm_scorer):
    cands, refs = SENTENCES[:3], SENTENCES[3:6]
    plain = BERTScorer(loaded_model=minilm_scorer.model)
    other = BERTScorer(loaded_model=minilm_scorer.model, idf=list(SENTENCES))
    weights = other.idf_weights_for(refs)
    (scores, code) = plain.score(cands, refs, weights=weights, return_hash=True)
    assert torch.equal(torch.stack(scores), torch.stack(other.score(cands, refs)))  # other numbers...
    assert code != plain.hash and f"_idf-weights:{weights.fingerprint()}_" in code  # ...another hash
    own = TokenWeights(plain.idf_weights_for(refs).table.clone())  # its own table, by content
    assert plain.score(cands, refs, weights=own, return_hash=True)[1] == plain.hash
    # idf over a corpus that this call scores a chunk of (the CLI's streaming, which says so with
    # label="idf"): still "idf"
    per_call = BERTScorer(loaded_model=minilm_scorer.model, idf=True)
    vocab, zero = minilm_scorer.model.vocab_size, minilm_scorer.model.zero_weight_ids
    corpus = TokenWeights.from_documents(per_call.pipeline.document_ids(SENTENCES), vocab, zero, label="idf")
    assert per_call.score(cands, refs, weights=corpus, return_hash=True)[1] == per_call.hash
    # a table from other documents, built the default way, is named by content on an idf=True scorer
    # too: other numbers than the per-call idf never go out under its "idf" hash
    other_docs = TokenWeights.from_documents(per_call.pipeline.document_ids(["the the the cat", "mat mat dog"]), vocab, zero)
    (scores, code) = per_call.score(cands, refs, weights=other_docs, return_hash=True)
    assert not torch.equal(torch.stack(scores), torch.stack(per_call.score(cands, refs)))
    assert code != per_call.hash and f"_idf-weights:{other_docs.fingerprint()}_" in code


# ----- the hash names the tokenizer libraries --------------------------------------------------------------
def test_hash_names_tokenizers_and_sentencepiece_where_used(minilm_scorer, tiny_models):
    from importlib.metadata import version

    assert f"tokenizers={version('tokenizers')}" in minilm_scorer.hash
    assert "sentencepiece" not in minilm_scorer.hash  # WordPiece: no sentencepiece model
    xlmr = BERTScorer(model_type=str(tiny_models["xlmr"]), num_layers=2)  # a sentencepiece.bpe.model tokenizer
    assert f"sentencepiece={version('sentencepiece')}" in xlmr.hash and "tokenizers=" in xlmr.hash
    official = xlmr.official_hash()
    assert "tokenizers" not in official and "sentencepiece" not in official


# ----- hub probes expire -------------------------------------------------------------------------------------
def test_a_failed_hub_probe_is_retried_after_a_short_wait(monkeypatch):
    from bertscore import sources

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example:8443")
    monkeypatch.setattr(sources, "_HUB_REACHABLE", {})
    answers = iter([False, True])
    probes: list[tuple[str, int]] = []

    def probe(host: str, port: int) -> bool:
        probes.append((host, port))
        return next(answers)

    clock = [1000.0]
    monkeypatch.setattr(sources, "_probe_hub", probe)
    monkeypatch.setattr(sources, "_now", lambda: clock[0])
    assert sources.hub_reachable() is False
    clock[0] += sources.HUB_FAILURE_TTL / 2
    assert sources.hub_reachable() is False and len(probes) == 1  # cached for a short while
    clock[0] += sources.HUB_FAILURE_TTL
    assert sources.hub_reachable() is True and len(probes) == 2  # then probed again: the blip is over
    clock[0] += sources.HUB_FAILURE_TTL * 2
    assert sources.hub_reachable() is True and len(probes) == 2  # a success is kept longer
    assert probes[0] == ("hub.example", 8443)
    assert 10 <= sources.HUB_FAILURE_TTL <= 120 and sources.HUB_SUCCESS_TTL > sources.HUB_FAILURE_TTL


@pytest.mark.parametrize("hub, transformers, probed", [
    (None, "1", False),  # TRANSFORMERS_OFFLINE alone: huggingface_hub is offline, so no probe (no 3 s wait)
    ("1", None, False),
    ("0", "1", True),  # HF_HUB_OFFLINE set wins, as in huggingface_hub
    (None, None, True),
])
def test_offline_mode_is_read_as_huggingface_hub_reads_it(monkeypatch, hub, transformers, probed):
    from bertscore import sources

    for name, value in (("HF_HUB_OFFLINE", hub), ("TRANSFORMERS_OFFLINE", transformers)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(sources, "_HUB_REACHABLE", {})
    probes: list[tuple[str, int]] = []
    monkeypatch.setattr(sources, "_probe_hub", lambda host, port: probes.append((host, port)) or True)
    assert sources.hub_reachable() is probed and bool(probes) is probed


def test_notes_from_python_dash_c_and_stdin_are_shown_not_raised():
    """`python -c` and `python -` run in a __main__ whose loader (BuiltinImporter) cannot give
    source: passing its globals to warn_explicit raised ImportError instead of showing the note."""
    code = "import bertscore.notes as n\nfor _ in range(2): n.report('a note', None)\n"
    for args, stdin in (([sys.executable, "-c", code], None), ([sys.executable, "-"], code)):
        done = subprocess.run(args, input=stdin, cwd=REPO_ROOT, env=_env(), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stderr.count("BERTScoreNote: a note") == 2, done.stderr
