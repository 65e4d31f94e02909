# Two commands for a fresh machine:
#   make demo   set up, then score examples/ on the embedded offline model
#   make test   set up, then run the whole test suite (BERTSCORE_SKIP_BROWSER=1: no chromium, no browser tests)
# Set-up installs torch's CPU build from PyTorch's index, then the package with the test, app and bench
# extras, held to the tested versions of constraints.txt (README.md's Install section runs the same).
# and, once set up:
#   make app    serve the Space (app.py) locally on http://127.0.0.1:7860
# make test-compat runs the core tests again on the newest transformers 4.x and the gradio floor (in
# .venv-tf4), then make test-hub: the Hub rehearsed in fresh venvs (tests/test_hub_rehearsal.py).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
MODEL := sentence-transformers/all-MiniLM-L6-v2
TORCH := $(shell sed -n "s/^\(torch==[^ ]*\).*/\1/p" constraints.txt)
TORCH_INDEX := https://download.pytorch.org/whl/cpu
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo app test test-ray test-compat test-hub browser bench clean test-isa test-unprivileged

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml requirements.txt constraints.txt
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install $(TORCH) --index-url $(TORCH_INDEX)
	@# the distribution was called bertscore-done-right before: drop it from older environments
	@if $(BIN)/pip show -q bertscore-done-right 2>/dev/null; then $(BIN)/pip uninstall -y bertscore-done-right; fi
	$(BIN)/pip install -e ".[test,app,bench]" -c constraints.txt
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/bertscore -c examples/candidates.txt -r examples/references.txt examples/references2.txt \
		--model $(MODEL)

app: setup
	$(BIN)/python app.py

# The browser tests drive Debian's chromium. As root, install it (saying so first: it pulls in
# about a hundred packages); otherwise say how. BERTSCORE_SKIP_BROWSER=1 skips both.
# packages.txt lists the Debian packages the Space installs on the Hub (fonts for the heatmap's
# non-Latin tokens: CJK, Arabic, Devanagari, ...); as root they are installed here too, saying so,
# and matplotlib's font list is rebuilt so that it sees them; otherwise the font test skips, saying how.
SPACE_PACKAGES := $(shell cat packages.txt)
browser:
	@if [ -n "$$BERTSCORE_SKIP_BROWSER" ] && [ "$$BERTSCORE_SKIP_BROWSER" != 0 ]; then \
		echo "browser: BERTSCORE_SKIP_BROWSER=$$BERTSCORE_SKIP_BROWSER: not installing chromium; the browser tests will be skipped"; \
	elif [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "browser: the browser tests (tests/test_app_browser.py) need Debian's chromium, which is absent."; \
		echo "browser: running 'apt-get update && apt-get install -y chromium' now (on a bare Debian: about 115 packages, with upgrades of system libraries)."; \
		echo "browser: to skip the install and those tests instead: BERTSCORE_SKIP_BROWSER=1 make test"; \
		apt-get update -q && apt-get install -y -q chromium; \
	else \
		echo "browser: /usr/bin/chromium is absent, so the browser tests will skip."; \
		echo "browser: to run them: sudo apt-get install chromium; to silence this: BERTSCORE_SKIP_BROWSER=1"; \
	fi
	@missing=$$(for p in $(SPACE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "browser: the Space's Debian packages (packages.txt) are absent: $$missing"; \
		echo "browser: running 'apt-get install -y $$missing' now (fonts, about 14 MB), then rebuilding matplotlib's font list."; \
		(apt-get install -y -q $$missing || (apt-get update -q && apt-get install -y -q $$missing)) && \
		rm -f "$$($(BIN)/python -c 'import matplotlib; print(matplotlib.get_cachedir())')"/fontlist-*.json; \
	else \
		echo "browser: the Space's Debian packages (packages.txt) are absent: $$missing; the heatmap's non-Latin font tests will skip."; \
		echo "browser: to run them: sudo apt-get install $$missing"; \
	fi

test: setup browser
	$(BIN)/python -m pytest -q -n auto

# The whole suite as a normal user runs it: as root (CI), after the set-up that needs root (make setup
# browser: chromium and the fonts), `make test` again with every capability dropped (setpriv).
UNPRIVILEGED := setpriv --bounding-set=-all --inh-caps=-all
test-unprivileged: setup browser
	@if [ "$$(id -u)" = 0 ]; then echo "test-unprivileged: make test with root's capabilities dropped ($(UNPRIVILEGED))"; \
		$(UNPRIVILEGED) $(MAKE) test; else $(MAKE) test; fi

# The exactness tests (bit for bit, parity with the official package) on AVX2 code paths whatever this
# CPU: ATen's kernels, MKL and oneDNN capped at AVX2 (an AVX-512 Xeon then takes the paths of an AVX2-only
# CPU such as an AMD EPYC's). The first line shows that torch honours the cap.
ISA_CAPS := ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
EXACTNESS_TESTS := $(addprefix tests/,test_bert_encoder.py test_parity.py test_families.py test_matching.py \
	test_windows.py test_long_texts.py test_pipeline.py test_contract.py test_performance.py test_state.py \
	test_scorer.py test_shared_models.py test_notes.py test_idf.py test_dropin_helpers.py test_guest_precision.py)
test-isa: setup
	$(ISA_CAPS) $(BIN)/python -c "import torch; c = torch.backends.cpu.get_cpu_capability(); \
		print('ATen CPU capability:', c); assert c == 'AVX2', 'this CPU has no AVX2: ' + c"
	$(ISA_CAPS) $(BIN)/python -m pytest -q -n auto -p no:cacheprovider $(EXACTNESS_TESTS)

# The Ray Data door (bertscore/ray_data.py) on a local 2-CPU Ray cluster: the [ray] extra installed into
# the venv, then its tests and its doc block (a few minutes). make test needs no ray: without
# BERTSCORE_RAY_TESTS=1 they skip, saying so.
test-ray: setup
	$(BIN)/pip install -e ".[ray]" -c constraints.txt
	BERTSCORE_RAY_TESTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_ray_data.py
	BERTSCORE_RAY_TESTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_docs.py -k scaling-out

# The newest transformers 4.x (it needs huggingface_hub < 1), tested on the core subset, with the
# oldest gradio requirements.txt allows (app.py's keywords are gradio 6's): the Space is built there.
TF4_VERSION := 4.57.6
GRADIO_FLOOR := $(shell sed -n 's/^gradio>=\([0-9.]*\).*/\1/p' requirements.txt)
VENV_TF4 := .venv-tf4
CORE_TESTS := $(addprefix tests/,test_baselines.py test_cli.py test_contract.py test_hashcode.py test_idf.py \
	test_inputs.py test_long_texts.py test_matching.py test_metric.py test_parity.py test_scorer.py \
	test_state.py test_windows.py test_settings.py test_pipeline.py test_models_table.py test_families.py \
	test_hub_front_matter.py)
# Minutes on what does not depend on transformers (the official package at batch_size=1 on
# multi-reference and baseline rescaling; CLI and Space subprocesses): `make test` covers them.
COMPAT_SKIP := $(addprefix --deselect tests/test_parity.py::,test_minilm_multi_reference test_minilm_custom_baseline) \
	$(addprefix --deselect tests/test_long_texts.py::,test_cli_notes_truncation_on_stderr_and_windows \
	test_space_api_notes_truncation_and_takes_the_window_settings)

$(VENV_TF4)/.installed: pyproject.toml requirements.txt Makefile
	$(PYTHON) -m venv $(VENV_TF4)
	$(VENV_TF4)/bin/pip install --upgrade pip
	$(VENV_TF4)/bin/pip install $(TORCH) --index-url $(TORCH_INDEX)
	$(VENV_TF4)/bin/pip install -e ".[test]" transformers==$(TF4_VERSION) "huggingface_hub<1" gradio==$(GRADIO_FLOOR)
	touch $@

test-compat: $(VENV_TF4)/.installed
	$(VENV_TF4)/bin/python -c "import torch, transformers, tokenizers, gradio; print('torch', torch.__version__, \
		'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'gradio', gradio.__version__); \
		assert transformers.__version__ == '$(TF4_VERSION)' and gradio.__version__ == '$(GRADIO_FLOOR)'"
	BERTSCORE_GRADIO_FLOOR=$(GRADIO_FLOOR) $(VENV_TF4)/bin/python -m pytest -q -n auto $(CORE_TESTS) $(COMPAT_SKIP)
	$(MAKE) test-hub

# The Hub rehearsed (tests/test_hub_rehearsal.py): a user's fresh venv loading the metric through
# evaluate's Hub path, without the package and with it installed from the Space repository, and the
# Space's fresh venv from requirements.txt serving /compute. Minutes; skipped by a plain pytest run.
test-hub: setup
	BERTSCORE_HUB_REHEARSAL=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_hub_rehearsal.py

# Benchmarks write to benchmarks/scratch/ (git-ignored); make bench BENCH_FLAGS=--update-results
# rewrites the tracked figures in benchmarks/results/.
BENCH_FLAGS ?=
bench: setup
	$(BIN)/python benchmarks/correlation.py $(BENCH_FLAGS)
	$(BIN)/python benchmarks/speed.py $(BENCH_FLAGS)
	$(BIN)/python benchmarks/memory.py $(BENCH_FLAGS)

# Mutation testing of the core math (matching, idf, padding, windows, tokens, resampling, stats): mutmut 3
# (the [mutation] extra) plants small bugs one at a time and runs the fast tests that reach each (settings:
# [tool.mutmut] in pyproject.toml; no model loads), caching verdicts in mutants/ (git-ignored) so that a
# rerun checks only what changed; then benchmarks/mutation.py writes the score per module to
# benchmarks/results/mutation.{json,md} (tests/test_mutation_score.py checks it). Not part of make test:
# a first full run takes hours on a loaded 2-core machine (docs/testing.md).
MUTATION_CHILDREN ?= 2
MUTATION_FLAGS ?= --update-results
.PHONY: mutation
mutation: setup
	$(BIN)/pip install -e ".[mutation]" -c constraints.txt
	$(BIN)/mutmut run --max-children $(MUTATION_CHILDREN)
	$(BIN)/python benchmarks/mutation.py $(MUTATION_FLAGS)

clean:
	rm -rf $(VENV) $(VENV_TF4) build *.egg-info .pytest_cache
