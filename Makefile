# Two commands for a fresh machine:
#   make demo   set up, then score examples/ on the embedded offline model
#   make test   set up, then run the whole test suite (BERTSCORE_SKIP_BROWSER=1: no chromium, no browser tests)
# Set-up installs torch's CPU build from PyTorch's index, then the package with the test, app and bench
# extras, held to the tested versions of constraints.txt (README.md's Install section runs the same).
# and, once set up:
#   make app    serve the Space (app.py) locally on http://127.0.0.1:7860
# make test-compat runs make test-matrix (the core tests on Python 3.10, 3.12 and 3.13, at pyproject's floors,
# the newest releases and the RL stacks' torch; docs/versions.md), then make test-hub: the Hub rehearsed in
# fresh venvs (tests/test_hub_rehearsal.py).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
MODEL := sentence-transformers/all-MiniLM-L6-v2
TORCH := $(shell sed -n "s/^\(torch==[^ ]*\).*/\1/p" constraints.txt)
TORCH_INDEX := https://download.pytorch.org/whl/cpu
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo app test test-ray test-compat test-matrix test-hub browser bench clean test-isa test-unprivileged \
	test-user-project

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

# The oldest gradio requirements.txt allows (app.py's keywords are gradio 6's): the floor cell builds the Space there.
GRADIO_FLOOR := $(shell sed -n 's/^gradio>=\([0-9.]*\).*/\1/p' requirements.txt)
CORE_TESTS := $(addprefix tests/,test_baselines.py test_cli.py test_contract.py test_hashcode.py test_idf.py \
	test_inputs.py test_long_texts.py test_matching.py test_metric.py test_parity.py test_scorer.py \
	test_state.py test_windows.py test_settings.py test_pipeline.py test_models_table.py test_families.py \
	test_hub_front_matter.py)

# The tested matrix (docs/versions.md): the core tests, and the doors' (devices, the metric through
# evaluate's Hub path, the drop-in, the Trainer, torchmetrics, the RL reward), in a fresh venv per cell,
# on pyenv's Pythons and PyPI's torch (its Linux wheel is the CUDA build: it runs on CPU too, ~3 GB):
#   floor   Python 3.10, every requirement of pyproject (dependencies and the app extra) at its floor
#           (.ci/matrix.py floors), transformers 4.57.6 and gradio 6.0.0 among them
#   newest  Python 3.13, the newest releases on PyPI (when last raised here; torch 2.14.1: see versions.md),
#           the package installed without -e (pip install .)
#   rl      Python 3.12, torch 2.14.0, the RL stacks' pin (vLLM 0.33)
# make test-matrix-CELL runs one; each records what it ran in benchmarks/results/matrix/CELL.json (the
# versions, the hash and the F1 of examples/); test-matrix records make test's environment too (suite.json)
# and holds docs/versions.md's table to the records (python .ci/matrix.py table --write rewrites it).
MATRIX := floor newest rl
MATRIX_TESTS := $(CORE_TESTS) $(addprefix tests/,test_devices.py test_metric_hub.py test_metric_harness.py \
	test_dropin.py test_dropin_helpers.py test_trainer.py test_torchmetrics.py test_reward.py)
MATRIX_PY_floor := 3.10
MATRIX_PY_newest := 3.13
MATRIX_PY_rl := 3.12
# Every version the table of docs/versions.md names is pinned in each cell, so that what a run records is the table.
# datasets 2.19.2: the newest that takes the floors' pyarrow and tqdm (pinned only to spare pip's backtracking)
MATRIX_PINS_floor = $(shell $(PYTHON) .ci/matrix.py floors) datasets==2.19.2 evaluate==0.4.6 huggingface_hub==0.36.2
MATRIX_PINS_newest := torch==2.14.1 transformers==5.25.0 tokenizers==0.23.3 huggingface_hub==2.4.0 evaluate==0.4.6 \
	datasets==5.2.0 gradio==6.31.0 numpy==2.5.5 sentencepiece==0.2.3 protobuf==7.36.2 tqdm==4.70.1 pyarrow==26.0.1
MATRIX_PINS_rl := torch==2.14.0 transformers==5.25.0 tokenizers==0.23.3 huggingface_hub==2.4.0 evaluate==0.4.6 \
	datasets==5.2.0 gradio==6.31.0 numpy==2.5.5 sentencepiece==0.2.3 protobuf==7.36.2 tqdm==4.70.1 pyarrow==26.0.1
MATRIX_ENV_floor := BERTSCORE_GRADIO_FLOOR=$(GRADIO_FLOOR)
# How a cell installs the package: floor and rl editable (-e, the clone's source); newest as a user or a
# packager tests an installed package (pip install ., into site-packages), reinstalled before each run
# so that what it tests is the clone's current code.
MATRIX_EDITABLE_floor := -e
MATRIX_EDITABLE_newest :=
MATRIX_EDITABLE_rl := -e

.PRECIOUS: .venv-matrix/%/.installed
.venv-matrix/%/.installed: pyproject.toml requirements.txt
	rm -rf .venv-matrix/$*
	python=$$($(PYTHON) .ci/matrix.py python $(MATRIX_PY_$*)) && "$$python" -m venv .venv-matrix/$*
	.venv-matrix/$*/bin/pip install -q --upgrade pip
	.venv-matrix/$*/bin/pip install $(MATRIX_EDITABLE_$*) ".[test,app]" $(MATRIX_PINS_$*)
	touch $@

test-matrix-%: .venv-matrix/%/.installed
	$(if $(MATRIX_EDITABLE_$*),,.venv-matrix/$*/bin/pip install -q --no-deps --force-reinstall .)
	$(MATRIX_ENV_$*) .venv-matrix/$*/bin/python -m pytest -q -p no:cacheprovider -n 2 $(MATRIX_TESTS)
	.venv-matrix/$*/bin/python .ci/matrix.py record $*

test-matrix: setup $(addprefix test-matrix-,$(MATRIX))
	$(BIN)/python .ci/matrix.py record suite
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_versions_table.py tests/test_hub_front_matter.py

# The matrix, then the Hub rehearsed.
test-compat: test-matrix
	$(MAKE) test-hub

# The Hub rehearsed (tests/test_hub_rehearsal.py): a user's fresh venv loading the metric through
# evaluate's Hub path, without the package and with it installed from the Space repository, and the
# Space's fresh venv from requirements.txt serving /compute. Minutes; skipped by a plain pytest run.
test-hub: setup
	BERTSCORE_HUB_REHEARSAL=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_hub_rehearsal.py

# A user's project, tested as used (.ci/user_project.py): a fresh venv on Python 3.13 with PyPI's torch 2.14.1
# (the CUDA build, as the newest cell: one download for both), transformers, datasets, evaluate and accelerate
# first; then README.md's install as printed, torch, numpy and transformers unchanged; then a Seq2SeqTrainer
# script run from a folder outside the clone, against the official bert-score (a few minutes past the download).
test-user-project:
	$(PYTHON) .ci/user_project.py --python 3.13 --torch torch==2.14.1 --venv .venv-user

# Benchmarks write to benchmarks/scratch/ (git-ignored); make bench BENCH_FLAGS=--update-results
# rewrites the tracked figures in benchmarks/results/.
BENCH_FLAGS ?=
bench: setup
	$(BIN)/python benchmarks/correlation.py $(BENCH_FLAGS)
	$(BIN)/python benchmarks/speed.py $(BENCH_FLAGS)
	$(BIN)/python benchmarks/memory.py $(BENCH_FLAGS)

# Mutation testing of the core math (matching, idf, padding, windows, tokens, resampling, stats): mutmut 3
# (the [mutation] extra) plants small bugs one at a time and runs the fast tests that reach each (settings:
# [tool.mutmut] in pyproject.toml; no model loads). The committed record (benchmarks/results/mutation.json)
# holds each mutated function's source digest beside its verdicts, so only the functions it does not
# describe (changed or new: `mutation.py --stale`) are rerun, plus any mutmut patterns in MUTANTS (e.g.
# MUTANTS='bertscore.scoring.matching.x_greedy_match__mutmut_*' after adding a test); then benchmarks/mutation.py
# merges the fresh verdicts into the record and writes the score per module to
# benchmarks/results/mutation.{json,md} (tests/test_mutation_score.py checks it against the code).
# Not part of make test: a run from scratch takes hours on a loaded 2-core machine (docs/testing.md).
MUTATION_CHILDREN ?= 2
MUTATION_FLAGS ?= --update-results
MUTANTS ?=
.PHONY: mutation
mutation: setup
	$(BIN)/pip install -e ".[mutation]" -c constraints.txt
	set -f; names="$$($(BIN)/python benchmarks/mutation.py --stale) $(MUTANTS)"; set -- $$names; \
	if [ $$# -gt 0 ]; then $(BIN)/mutmut run --max-children $(MUTATION_CHILDREN) "$$@"; \
	else echo "make mutation: the record describes every mutated function, nothing to rerun"; fi
	$(BIN)/python benchmarks/mutation.py $(MUTATION_FLAGS)

clean:
	rm -rf $(VENV) .venv-matrix .venv-user build *.egg-info .pytest_cache
