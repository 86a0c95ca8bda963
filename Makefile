# `make demo` and `make test` install what they need into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Tests use a private database per test worker on the system Postgres at 127.0.0.1:5432 when
# one answers, else on an embedded one (OMNI_TEST_ADMIN_DSN overrides both).

.PHONY: install lock system-deps test lint docs unit conformance conformance-latest demo bench bench-scale bench-pipeline clean

# uv (the version `make lock` pins) installs the lock: it fetches and unpacks in parallel where
# pip goes one package at a time (a fresh .venv from an empty cache: about 80 s, plus 70 CPU-s
# of bytecode over both cores, against pip's 3.5 min). pip upgrades itself as it installs uv
# (the image tests run the venv's pip with options a fresh venv's pip 23.2 refuses); bytecode
# is compiled as pip does, so a process that imports through a read-only view of the venv (the
# sandbox) does not compile each module again.
UV_INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv==$(UV_VERSION)
	$(UV_INSTALL) $(TORCH_CPU_SOURCE) -c constraints.txt -e '.[airflow,whisper,speaker,dev]'
	$(UV_INSTALL) --no-deps resemblyzer==0.1.4  # pyproject.toml, `speaker`
	touch $(STAMP)

install: $(STAMP)

# The two locks, resolved (uv pip compile) from every extra of pyproject.toml for the images'
# platform, Linux x86_64 and Python 3.11; never edited by hand. constraints.txt: torch is
# PyTorch's CPU build (`make install`, docker/Dockerfile). constraints-gpu.txt: PyPI's torch, the
# CUDA build, with its nvidia-* wheels and triton (docker/Dockerfile.gpu); every other package
# is held to its constraints.txt pin. Pins already in a lock stay where they still resolve (uv
# reads its output file as preferences); `make lock LOCK_UPGRADE=--upgrade` takes the newest.
# The +cpu torch comes from PyTorch's CPU index or, on a machine that cannot reach that index
# and holds the wheel in the folder pip's find-links names (PIP_FIND_LINKS or pip.conf, as the
# machines here do), there: uv reads neither, so it is handed pip's setting.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
TORCH_CPU_SOURCE ?= $(if $(FIND_LINKS),--find-links $(FIND_LINKS),--extra-index-url $(TORCH_CPU_INDEX) --index-strategy unsafe-best-match)
LOCK_FOR := --all-extras --python-platform x86_64-manylinux_2_28 --python-version 3.11
UV_VERSION := 0.13.9
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q uv==$(UV_VERSION)
	$(BIN)/uv pip compile -q pyproject.toml $(LOCK_FOR) $(LOCK_UPGRADE) $(TORCH_CPU_SOURCE) \
		--annotation-style line -o constraints.txt
	grep -q -E '^torch==[^ ]+\+cpu ' constraints.txt || { echo 'constraints.txt: torch is not the +cpu build'; exit 1; }
	{ printf '%s\n' '# The CPU lock. `make lock` regenerates it and constraints-gpu.txt; never edit by hand.' \
		'# Its torch, the +cpu build, is PyTorch'"'"'s CPU build, from $(TORCH_CPU_INDEX): an install that' \
		'# takes torch from this lock adds `--extra-index-url $(TORCH_CPU_INDEX)`.'; \
	  cat constraints.txt; } > $(VENV)/constraints.txt.new && mv $(VENV)/constraints.txt.new constraints.txt
	grep -v -E '^(torch|triton|nvidia-)' constraints.txt > $(VENV)/lock-shared-pins.txt
	$(BIN)/uv pip compile -q pyproject.toml $(LOCK_FOR) $(LOCK_UPGRADE) -c $(VENV)/lock-shared-pins.txt \
		--annotation-style line -o constraints-gpu.txt
	{ printf '%s\n' '# The GPU lock (docker/Dockerfile.gpu). `make lock` regenerates it and constraints.txt;' \
		'# never edit by hand. torch is PyPI'"'"'s CUDA build with its nvidia-* wheels and triton; every' \
		'# other package is pinned as in constraints.txt (its pins, torch aside, are the -c file).'; \
	  cat constraints-gpu.txt; } > $(VENV)/constraints-gpu.txt.new && mv $(VENV)/constraints-gpu.txt.new constraints-gpu.txt

# mypy on two worker processes: a clean clone has no cache, and checking it from scratch is
# ~100 CPU-s that one process spends alone (measured: the same 98 CPU-s either way, split
# over two cores by -n 2).
lint: install
	$(BIN)/ruff check omni_tasks tests bench
	$(BIN)/ruff format --check omni_tasks tests bench
	$(BIN)/mypy --num-workers 2

# Chromium, docker-compose and Redis (installed when root, else the command to run is printed).
system-deps:
	.ci/system-deps

# The documentation (docs/, mkdocs.yml), built strictly: a broken link or anchor, a page missing
# from the nav, or a command reference older than the CLI fails the build. Not -q: strict mode
# counts only the warnings it logs, so -q let every broken link through. `make test` leaves it
# out: tests/integration/test_docs.py runs both commands and asserts what they say.
docs: install
	$(BIN)/python -m tests.cli_reference docs/users/cli-reference.md --check
	$(BIN)/mkdocs build --strict -d "$$(mktemp -d)"

# --dist loadgroup: tests that share one expensive fixture (an `xdist_group` mark, e.g. the
# Celery night of tests/reliability/conftest.py) run on one worker, so it is built once; every
# other test is handed out one at a time to whichever worker is free.
# compileall first: where PYTHONDONTWRITEBYTECODE is set (the dev machines here set it)
# or a process reads the tree read-only (the sandbox), every Airflow process, CLI call and
# task compiled our modules from source again; a .pyc on disk is read either way.
test: lint system-deps
	$(BIN)/python -m compileall -q -j 2 omni_tasks dags plugins tests bench
	$(BIN)/pytest -n 2 --dist loadgroup -q --durations=25

unit: install
	$(BIN)/pytest -q tests/unit

# vLLM-Omni's released code (pinned wheels, fetched and hash-checked on first use) against
# ours; `make test` runs it too.
conformance: install
	$(BIN)/pytest -q tests/conformance

# The suite against vllm-omni releases newer than the pinned ones (newest stable, and the
# newest pre-release, flagged): what fails, and which upstream definitions it reads changed.
# VLLM_OMNI_CHECKOUT=DIR (a vllm-omni checkout) also compares our deploy overlay with its CI one.
conformance-latest: install
	$(BIN)/python -m tests.conformance.latest --json conformance-latest.json \
		$(if $(VLLM_OMNI_CHECKOUT),--vllm-omni-checkout $(VLLM_OMNI_CHECKOUT))

demo: install
	$(BIN)/omni-tasks demo

# Default scale runs in a few minutes; `make bench-scale` adds the 1 M / 10 M / 30 M curve.
bench: install
	$(BIN)/python bench/bench_stats.py
	$(BIN)/python bench/bench_ingest.py
	$(BIN)/python bench/bench_platform.py
	$(BIN)/python bench/bench_fleet.py
	$(BIN)/python bench/bench_fleet_history.py
	$(BIN)/python bench/bench_gate_advice.py
	$(BIN)/python bench/bench_ab.py
	$(BIN)/python bench/bench_client.py
	$(BIN)/python bench/bench_grading.py
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_report.py
	$(BIN)/python bench/bench_dag_parse.py

bench-scale: install
	$(BIN)/python bench/bench_scale.py --sizes 1e6 1e7 3e7

# About 25 minutes: synthesis alone takes 3 minutes by design, then the demo nightly.
bench-pipeline: install
	$(BIN)/python bench/bench_pipeline.py
	$(BIN)/python bench/bench_pipeline.py --demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
