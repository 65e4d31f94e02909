# Two commands for a fresh machine:
#   make demo   set up, then score examples/ on the embedded offline model
#   make test   set up, then run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
MODEL := sentence-transformers/all-MiniLM-L6-v2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test browser bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml requirements.txt
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install -e ".[test,app,bench]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/bertscore -c examples/candidates.txt -r examples/references.txt examples/references2.txt \
		--model $(MODEL) --idf

browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -q && apt-get install -y -q chromium; \
		else echo "install Debian's chromium for the browser tests (sudo apt-get install chromium)"; fi; \
	fi

test: setup browser
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python benchmarks/correlation.py
	$(BIN)/python benchmarks/speed.py
	$(BIN)/python benchmarks/memory.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
