"""Every figure the README quotes comes from a committed result file, and this test holds the quote to
the file: rerun a benchmark with --update-results and a stale quote fails here, naming the phrase
the page should now read. The scored results quoted carry a hash in today's format (device and
tokenizers version named), except those listed in STALE_HASHES with the reason they were not rerun.
Cheap: it reads JSON and TSV files, no model."""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from pathlib import Path
from statistics import mean

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BASELINES = ROOT / "bertscore" / "data" / "rescale_baseline" / "en"
# The hash as bertscore/scoring/hashcode.py writes it today: the device before the versions, tokenizers named.
TODAY = re.compile(r"_(cpu|cuda|mps)_version=bertscore-[^()]+\(transformers=[^,()]+,tokenizers=[^,()]+"
                   r"(,sentencepiece=[^,()]+)?,torch=[^,()]+\)$")
# Quoted results whose hashes predate today's format, and why they were not rerun.
STALE_HASHES = {
    "bias.json": "needs the Metric-Fairness data (github.com/txsun1997/Metric-Fairness), not vendored",
    "system_level.json": "a run takes about 2 hours (170,180 segments)",
    "long_texts.json": "a run takes about 17 minutes, after system_level's",
}


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def page(name: str) -> str:
    """The page's text with its line breaks as spaces (a phrase may wrap)."""
    return re.sub(r"\s+", " ", (ROOT / name).read_text(encoding="utf-8"))


def sci(value: float, digits: int) -> str:
    """Scientific notation as the pages write it: 1.8e-7, not Python's 1.8e-07."""
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def baseline_f1(model_file: str, layer: int) -> float:
    with open(BASELINES / model_file, encoding="utf-8", newline="") as handle:
        rows = {int(row["LAYER"]): float(row["F"]) for row in csv.DictReader(handle)}
    return rows[layer]


def readme_quotes() -> list[tuple[str, str]]:
    """(phrase the README must contain, the result it comes from), built from the files."""
    speed, memory, corr = load("speed_cpu.json"), load("memory.json"), load("correlation.json")
    bias, spots = load("bias.json"), load("blind_spots.json")
    below = [spots["results"][name]["f1"]["share_systems_below"]
             for name in ("numbers changed", "negation flipped", "entities swapped")]
    return [
        (f"{speed['methods']['ours_fp32']['x_official_throughput']:.2f}x the official package's pairs per second",
         "speed_cpu.json"),
        (f"same {speed['pairs']:,} WMT17 pairs", "speed_cpu.json"),
        (f"peak memory grows {memory['growth']['ours']['ratio']:.2f}x from {memory['growth']['ours']['small']:,} "
         f"to {memory['growth']['ours']['large']:,} pairs; the official package's grows "
         f"{memory['growth']['official']['ratio']:.1f}x", "memory.json"),
        (f"Pearson r {corr['mean']['bertscore_f1']:.3f} (sentence-BLEU {corr['mean']['sentbleu_sacrebleu']:.3f}, "
         f"chrF {corr['mean']['chrf_sacrebleu']:.3f})", "correlation.json"),
        (f"on {sum(bias['rows'].values()) // 2} sentence pairs", "bias.json"),
        (f"its bias score is {mean(bias['metrics']['ours-f1'].values()):.2f} against BLEU's "
         f"{mean(bias['metrics']['bleu'].values()):.2f}", "bias.json"),
        (f"outscores {min(below):.0%}-{max(below):.0%} of real translations".replace("%-", "-"), "blind_spots.json"),
        (f"unrelated sentences score about {baseline_f1('sentence-transformers/all-MiniLM-L6-v2.tsv', 6):.2f} "
         f"with MiniLM and {baseline_f1('roberta-large.tsv', 17):.2f} with roberta-large", "rescale baselines"),
    ]


@pytest.mark.parametrize("phrase, source", readme_quotes(), ids=[source for _, source in readme_quotes()])
def test_the_readme_quotes_the_committed_result(phrase: str, source: str) -> None:
    assert phrase in page("README.md"), f"README.md should read {phrase!r} (from {source})"


def test_the_parity_claim_holds_in_every_committed_row() -> None:
    """'within 1e-5 of the official bert-score' (README, exactness.md): every parity and family row."""
    assert "within 1e-5 of the official `bert-score`" in page("README.md")
    deltas = [row["max_abs_delta"] for row in load("parity.json")["rows"]]
    assert deltas and max(deltas) < 1e-5


def test_the_default_layers_quoted_are_the_models_defaults() -> None:
    from bertscore.models.tables import MODEL_TO_LAYERS

    assert MODEL_TO_LAYERS["roberta-large"] == 17
    assert MODEL_TO_LAYERS["sentence-transformers/all-MiniLM-L6-v2"] == 6


def test_performance_page_quotes_the_correlation_result() -> None:
    corr = load("correlation.json")["mean"]
    phrase = (f"averages **{corr['bertscore_f1']:.3f}** ({corr['bertscore_f1_idf']:.3f} with idf), against "
              f"{corr['sentbleu_sacrebleu']:.3f} for sentence-BLEU and {corr['chrf_sacrebleu']:.3f} for chrF")
    assert phrase in page("docs/performance.md")


def _hashes(value) -> list[str]:
    if isinstance(value, dict):
        return [h for v in value.values() for h in _hashes(v)]
    if isinstance(value, list):
        return [h for v in value for h in _hashes(v)]
    return [value] if isinstance(value, str) and "_version=bertscore-" in value else []


@pytest.mark.parametrize("name", sorted(["correlation.json", *STALE_HASHES]))
def test_quoted_scores_carry_a_hash_in_todays_format(name: str) -> None:
    hashes = _hashes(load(name))
    assert hashes, f"{name} records no scorer hash"
    if name in STALE_HASHES:
        assert not all(TODAY.search(h) for h in hashes), f"{name} is current now: drop it from STALE_HASHES"
        pytest.skip(f"{name}: hash predates today's format, not rerun: {STALE_HASHES[name]}")
    assert all(TODAY.search(h) for h in hashes), f"{name}: rerun it with --update-results ({hashes})"


def test_the_format_check_accepts_what_the_code_writes_today() -> None:
    """TODAY is the format bertscore/scoring/hashcode.py writes (with and without sentencepiece), and the
    README's printed hash (checked against a real run by tests/test_docs.py) is in it."""
    from bertscore.scoring.hashcode import ScoreSettings

    for sentencepiece in ("", "0.2.3"):
        settings = ScoreSettings(model="m", revision=None, num_layers=6, all_layers=False, idf="no-idf", rescale="",
                                 max_length=512, long_texts="truncate", prefix_space=False, dtype="float32",
                                 device="cpu", version="0.1.0", transformers_version="5.24.0", torch_version="2.13.0",
                                 tokenizers_version="0.23.3", sentencepiece_version=sentencepiece)
        assert TODAY.search(settings.hashcode()), settings.hashcode()
    shown = re.search(r"^hash: (\S+)$", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.M)
    assert shown and TODAY.search(shown.group(1))


def performance_quotes() -> list[str]:
    """The phrases of docs/performance.md that quote speed_cpu.json, memory.json, families.json, host_speed.json,
    cli_exit.json and cli_startup.json."""
    speed, memory, families = load("speed_cpu.json"), load("memory.json"), load("families.json")
    host, cli_exit, startup = load("host_speed.json"), load("cli_exit.json"), load("cli_startup.json")
    ours_cli, before_cli, *_, official_cli = startup["median_wall_s"].values()  # the ways in cli_startup.py's order
    frozen, plain = (statistics.median(walls) for walls in cli_exit["wall_s"].values())
    methods, deltas, repeat = speed["methods"], speed["deltas"], speed["repeat"]
    rows = [f"| official bert-score 0.3.13 (fp32) | {methods['official_fp32']['pairs_per_s']:.1f} | 1.00x | "
            f"{methods['official_fp32']['x_floor_time']:.2f}x |",
            f"| torchmetrics BERTScore (fp32, speed only) | {methods['torchmetrics_fp32']['pairs_per_s']:.1f} | "
            f"{methods['torchmetrics_fp32']['x_official_throughput']:.2f}x | {methods['torchmetrics_fp32']['x_floor_time']:.2f}x |",
            f"| **ours, fp32** | **{methods['ours_fp32']['pairs_per_s']:.1f}** | "
            f"**{methods['ours_fp32']['x_official_throughput']:.2f}x** | {methods['ours_fp32']['x_own_encoder_time']:.2f}x",
            f"| ours, bfloat16 | {methods['ours_bf16']['pairs_per_s']:.1f} | {methods['ours_bf16']['x_official_throughput']:.2f}x"
            f" | {methods['ours_bf16']['x_own_encoder_time']:.2f}x"]
    bf16 = methods["ours_bf16"]["pairs_per_s"] / methods["ours_fp32"]["pairs_per_s"]
    official = {run["pairs"]: run["peak_rss_bytes"] for run in memory["runs"] if run["package"] == "official"}
    probe, cost = families["probe"], families["one_length_cost"]
    return rows + [
        f"is {bf16:.1f}x faster than fp32 ({methods['ours_bf16']['pairs_per_s']:.0f} against "
        f"{methods['ours_fp32']['pairs_per_s']:.0f} pairs/s",
        f"max |ΔF| {sci(deltas['bf16_max_abs_dF_vs_fp32'], 2)}, Pearson "
        f"{math.floor(deltas['bf16_pearson_F_vs_fp32'] * 1e5) / 1e5:.5f}",  # 0.9999951: five nines, not 1.00000
        f"the second call is {repeat['speedup']:.2f}x faster", f"{repeat['token_bound']:.2f}x by tokens",
        f"at 50,000 pairs is {memory['growth']['ours']['ratio']:.2f}x the peak at 5,000 pairs; the official package's "
        f"grows {memory['growth']['official']['ratio']:.1f}x ({official[5000] / 2**30:.1f} → {official[50000] / 2**30:.1f} GiB)",
        f"{probe['probe_seconds']['cpu'] * 1000:.0f} ms of CPU time",
        f"a scoring call of 300 pairs takes {probe['score_300_pairs_seconds']['cpu']:.2f} s",
        f"{cost['seconds']['one length']['cpu']:.2f} s of CPU time against {cost['seconds']['padded']['cpu']:.2f} s for "
        f"padded batches ({cost['ratio']:.2f}x; {cost['batches']['one length']} encoder batches against "
        f"{cost['batches']['padded']})",
        f"equal one text a batch to {sci(cost['one_length_vs_alone'], 1)} instead of moving by {sci(cost['padded_vs_alone'], 1)}",
        f"on {host['pairs']:,} WMT17 pairs ours scores {host['ratio']:.2f}x the official package's pairs/s",
        f"best of {host['rounds']} on a shared 2-core machine",
        f"the run is {cli_exit['median_wall_ratio']:.2f}x as fast ({frozen:.2f} s against {plain:.2f} s, "
        f"median of {cli_exit['rounds']};",
        f"so the tokenizer ({host['phases']['tokenize_ahead']:.1f} s of one core there) leaves the",
        f"the encoder's own forward ({host['phases']['encode']:.1f} s) is most of what is left",
        f"takes {ours_cli:.2f} s (median of {startup['rounds']}), {startup['cli_vs_baseline_rev']:.2f}x the time with "
        f"transformers' model classes ({before_cli:.2f} s),",
        f"and {startup['cli_vs_official_cli']:.2f}x the official command's ({official_cli:.2f} s for `bert-score`)",
    ]


@pytest.mark.parametrize("phrase", performance_quotes())
def test_the_performance_page_quotes_the_committed_results(phrase: str) -> None:
    assert phrase in page("docs/performance.md"), f"docs/performance.md should read {phrase!r}"


def test_exactness_quotes_the_official_packages_batching_drift() -> None:
    drift = load("speed_cpu.json")["deltas"]["max_abs_delta_vs_official_fp32"]
    assert f"differ from ours by up to {sci(drift, 1)} on 2,000 WMT17 pairs" in page("docs/exactness.md")


def test_the_statistics_page_quotes_the_committed_results() -> None:
    rows = {row["case"]: row for row in load("stats_speed.json")["rows"]}
    level = load("system_level.json")
    totals = level["totals"]
    text = page("docs/statistics.md")
    phrases = [
        f"1,000 resamples over {load('stats_speed.json')['segments']:,} segments take "
        f"{rows['bootstrap_ci']['seconds_best']:.1f} s (`bootstrap_ci`) and {rows['paired_bootstrap']['seconds_best']:.1f} s "
        f"(`paired_bootstrap`)",
        f"all {totals['systems']} systems, {totals['segments']:,} segments",
        f"mean system-level Pearson r with human DA {level['mean_pearson']:.3f}",
        f"of the {totals['pairs']} system pairs the permutation test separates {totals['separated_permutation']} at "
        f"p < 0.05, and the human ordering agrees with {totals['agree_permutation']} of those "
        f"({totals['agree_permutation'] / totals['separated_permutation']:.0%})",
    ]
    assert [phrase for phrase in phrases if phrase not in text] == []


def test_the_limitations_page_tables_are_the_committed_results() -> None:
    """docs/limitations.md's bias and blind-spot tables, row by row, from bias.json and blind_spots.json."""
    text = (ROOT / "docs" / "limitations.md").read_text(encoding="utf-8")
    metrics = load("bias.json")["metrics"]
    order = ["age", "gender", "physical-appearance", "race", "religion", "socioeconomic"]
    labels = {"BLEU": "bleu", "chrF": "chrf", "BERTScore, BERT-base": "bertscore-bert-base",
              'BERTScore, RoBERTa-large (`lang="en"`)': "bertscore-roberta-large",
              "**BERTScore, MiniLM (our default), F1**": "ours-f1", "MiniLM precision": "ours-precision",
              "MiniLM recall": "ours-recall"}
    expected = []
    for label, key in labels.items():
        values = [metrics[key][name] for name in order] + [mean(metrics[key].values())]
        cells = [f"**{v:.2f}**" if label.startswith("**") else f"{v:.2f}" for v in values]
        expected.append(f"| {label} | " + " | ".join(cells) + " |")
    results = load("blind_spots.json")["results"]
    rows = {"every number changed": "numbers changed", "negation flipped": "negation flipped",
            "two names swapped": "entities swapped",
            "sentences shuffled, 4-sentence texts": "sentence order, 4-sentence documents",
            'sentences shuffled, 32-sentence texts, `long_texts="window"`': "sentence order, 32-sentence documents, window"}
    for label, key in rows.items():
        f1, chrf, bleu = results[key]["f1"], results[key]["chrf"], results[key]["bleu"]
        expected.append(f"| {label} | {f1['drop']:.3f} ({f1['drop_share_of_system_gap']:.0%}) | "
                        f"{f1['share_systems_below']:.0%} | {chrf['drop']:.1f} ({chrf['drop_share_of_system_gap']:.0%}) | "
                        f"{bleu['drop']:.1f} ({bleu['drop_share_of_system_gap']:.0%}) |")
    assert [row for row in expected if row not in text] == []


def test_the_long_texts_page_tables_are_the_committed_results() -> None:
    """docs/long-texts.md's cost table and its correlation table, from long_texts.json."""
    text = (ROOT / "docs" / "long-texts.md").read_text(encoding="utf-8")
    result = load("long_texts.json")
    mib = 2**20
    runs = {(tuple(run["content_tokens"]), run["mode"]): run for run in result["resources"]}
    expected = []
    for tokens in sorted({key[0] for key in runs}):
        cut, whole = runs[tokens, "truncate"], runs[tokens, "window"]
        expected.append(f"| {tokens[0]:,} / {tokens[1]:,} | {cut['seconds']:.1f} / {cut['peak_rss_bytes'] / mib:.0f} MiB | "
                        f"{whole['seconds']:.1f} ({whole['encoder_seconds']:.1f}) / {whole['peak_rss_bytes'] / mib:.0f} MiB |")
    pairs = [pair["summary"] for pair in result["correlation"]["pairs"]]
    assert [pair["lp"] for pair in pairs] == ["cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en"]
    for label, key in (("(a) documents, truncate", "truncate"), ("(b) documents, window", "window"),
                       ("(c) mean sentence F1", "sentence")):
        values = [pair[key] for pair in pairs]
        expected.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {mean(values):.3f} |")
    assert [row for row in expected if row not in text] == []


def test_the_deploy_page_quotes_the_wheel_sizes() -> None:
    """docs/deploy.md's table of the Space's build (decimal MB, as the Hub and pip show sizes)."""
    wheels = load("space_wheels.json")
    mb = 1e6
    stack = sum(wheels["gpu_stack"].values())
    cuda = wheels["torch_cuda_wheel"] + stack
    rows = [f"| torch {wheels['torch_version']} from PyPI (CUDA) | {cuda / mb:,.0f} MB (torch "
            f"{wheels['torch_cuda_wheel'] / mb:,.0f} MB + {len(wheels['gpu_stack'])} nvidia/cuda/triton wheels "
            f"{stack / mb:,.0f} MB) | {wheels['total_with_cuda_torch'] / mb:,.0f} MB |",
            f"| torch {wheels['torch_version']}+cpu (the CPU index) | {wheels['torch_cpu_wheel'] / mb:,.0f} MB | "
            f"{wheels['total_with_cpu_torch'] / mb:,.0f} MB |",
            f"| whole build ({wheels['packages']} wheels) |"]
    text = page("docs/deploy.md")
    assert [row for row in rows if row not in text] == []


def test_the_space_page_quotes_the_load_result() -> None:
    """docs/space.md's 'Under load' paragraph, from space_load.json (before and after, per client count)."""
    runs = {run["label"]: {level["clients"]: level for level in run["levels"]} for run in load("space_load.json")["runs"]}
    before, after = runs["before"], runs["after"]
    phrases = [
        f"{before[60]['served']} served and {before[60]['refused']} refused with \"Queue is full!\" before; now all "
        f"{after[60]['served']} are served within {after[60]['wall_s']:.1f} s ({after[60]['pairs_per_s']:.0f} pairs/s "
        f"against {before[60]['pairs_per_s']:.0f})",
        f"10 clients: {after[10]['pairs_per_s']:.0f} against {before[10]['pairs_per_s']:.0f} pairs/s (p95 "
        f"{after[10]['p95_s']:.1f} s against {before[10]['p95_s']:.1f} s)",
        f"200 clients: {after[200]['served']} served and {after[200]['refused']} told how long to wait (before: "
        f"{before[200]['served']} and {before[200]['refused']})",
        f"p95 {after[200]['p95_s']:.0f} s",
    ]
    text = page("docs/space.md")
    assert [phrase for phrase in phrases if phrase not in text] == []


def test_the_layers_page_quotes_the_layer_ranking() -> None:
    """docs/layers.md's ranking over all WMT17 to-English segments, from layers.json's mean r per layer."""
    r = load("layers.json")["mean_pearson"]
    phrase = (f"layer 6 r {r[6]:.3f}, layer 4 {r[4]:.3f}, layer 5 {r[5]:.3f}, layer 0 {r[0]:.3f}")
    assert phrase in page("docs/layers.md")
    assert max(range(len(r)), key=lambda layer: r[layer]) == 6  # 'the default is also the best'


def test_the_datasets_page_quotes_the_fingerprint_times() -> None:
    """docs/datasets.md's fingerprint times, from dataset_map.json (the fastest and slowest of today's
    fingerprints, against hashing the scorer's weights and cache as it was before)."""
    fingerprint = load("dataset_map.json")["fingerprint"]
    today = [fingerprint[key] for key in ("helper_ms", "closure_ms", "helper_after_scoring_ms")]
    phrase = (f"({min(today):.1f}-{max(today):.1f} ms, where hashing MiniLM's weights and cache would take "
              f"{fingerprint['old_state_ms'] / 1000:.1f} s)")
    assert phrase in page("docs/datasets.md"), f"docs/datasets.md should read {phrase!r}"


def test_exactness_quotes_the_torchmetrics_comparison() -> None:
    """docs/exactness.md's table of torchmetrics' BERTScore and the official package batched against the
    definition, row by row from torchmetrics_compare.json, and the pairing count under it."""
    result = load("torchmetrics_compare.json")

    def cells(stats: dict, big: bool = False) -> str:
        style = (lambda v: f"{v:.2f}") if big else (lambda v: sci(v, 1))
        return f"{stats['differ']} / {stats['of']} | {style(stats['mean_abs'])} | {style(stats['max_abs'])} |"

    version = result["versions"]["torchmetrics"]
    rows = [
        "| `bertscore.torchmetrics.BERTScore`, update per batch, compute | " + cells(result["ours"]["f1"]),
        f"| torchmetrics {version} `BERTScore`, update per batch, compute once | "
        + cells(result["torchmetrics_epoch"]["f1"], big=True),
        f"| torchmetrics {version} `BERTScore`, forward per batch of {result['batch']} | "
        + cells(result["torchmetrics_per_batch"]["f1"], big=True),
        "| official package, `batch_size=64`, the same pairs | " + cells(result["official_batched"]["f1"]),
        f"| official package, `batch_size=64`, all pairs of {result['grid']} candidates x {result['grid']} references | "
        + cells(result["all_pairs"]["official_batched"]["f1"]),
    ]
    pairings = result["torchmetrics_per_batch"]["pairings"]
    text = page("docs/exactness.md")
    assert [row for row in rows if row not in text] == []
    assert f"{pairings['another_pairing']} are the definition's F1 of *another*" in text
    assert f"{pairings['own_pairing']} that of their own pair" in text


def test_the_testing_page_quotes_the_suite_time() -> None:
    """docs/testing.md's run times and costliest files are benchmarks/suite_time.py's last result,
    whose runs all passed."""
    result, text = load("suite_time.json"), page("docs/testing.md")
    assert result["runs"] and all(run["exit_code"] == 0 and not run["failures"] for run in result["runs"])
    quiet = [run for run in result["runs"] if not run["busy_core"]]
    busy = [run for run in result["runs"] if run["busy_core"]]
    assert ", ".join(f"{run['pytest_s']:.0f} s" for run in quiet) in text
    assert not busy or f"{busy[0]['pytest_s']:.0f} s with a busy loop on one core" in text
    assert f"({result['runs'][0]['counts']['passed']:,} passed" in text
    for row in result["by_file"][:10]:
        assert f"| `{row['file']}` | {row['tests']} | {row['cpu_s']:.0f} |" in text, row


def test_scaling_out_quotes_the_ray_data_cost() -> None:
    """docs/scaling-out.md's cost of 2 actors within one machine is benchmarks/ray_data.py's last result:
    every repeat exact and complete, the range of its ratios and of the texts 2 actors embedded, streamed and
    grouped by reference."""
    result, text = load("ray_data.json"), page("docs/scaling-out.md")
    repeats = [run for run in result["ray"] if "repeat" in run]
    assert repeats and all(run["every_id_once"] and run["max_abs_diff"] <= 1e-6 for run in repeats)
    streamed, grouped = result["two_actor_ratios"], result["grouped_ratios"]
    assert (f"2 actors score {repeats[0]['pairs']:,} WMT17 pairs at {min(streamed):.2f}x to {max(streamed):.2f}x the "
            f"pairs/s of one process on both cores as the input streams, and at {min(grouped):.2f}x to "
            f"{max(grouped):.2f}x grouped by reference") in text
    one_process = {job["texts_embedded"] for job in result["one_process_jobs"]}
    assert len(one_process) == 1  # one process embeds each distinct text once, whatever the repeat
    embedded = {way: [run["texts_embedded"] for run in repeats if run["grouped"] == way] for way in (False, True)}
    assert (f"{min(embedded[False]):,} to {max(embedded[False]):,} texts embedded against {one_process.pop():,}"
            in text)
    assert f"grouped, {min(embedded[True]):,} to {max(embedded[True]):,}" in text