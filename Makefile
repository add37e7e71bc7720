# pagefleet — two commands on a fresh machine:
#   make run    set everything up, generate fixtures/, process them on the embedded default
#   make test   set everything up, run the tests (real Redis, Celery workers, S3 server, Tesseract)

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= out
PAGE    = $(BIN)/python -m bench.page  # runs a benchmark and writes its page under docs/benchmarks/
APT_PACKAGES = tesseract-ocr tesseract-ocr-eng tesseract-ocr-heb tesseract-ocr-ara tesseract-ocr-osd \
               poppler-utils redis-server fonts-dejavu-core chromium unpaper gcc libc6-dev \
               libreoffice-writer-nogui fonts-noto-core libfribidi0
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system venv native compiled fixtures run lint test test-fast bench budget eval eval-structure eval-ocr eval-wse eval-producers faults fuzz capacity docs clean

setup: system venv native compiled

system:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev,gpu]"
	touch $@

# rung 1's text walk in C (pagefleet/workers/pdf/stextwalk.c), against the MuPDF headers and library
# of the installed PyMuPDF wheel; without a C compiler the Python path is used (nothing fails)
NATIVE = pagefleet/workers/pdf/_stextwalk.so
native: $(NATIVE)

$(NATIVE): pagefleet/workers/pdf/stextwalk.c pagefleet/workers/pdf/stextrows.c pagefleet/workers/pdf/stextorder.c pagefleet/workers/pdf/stextrows.h $(VENV)/.installed
	@command -v $${CC:-cc} >/dev/null || { echo "no C compiler: the text walk stays in Python"; exit 0; }; \
	$(BIN)/python -m pagefleet.workers.pdf.fastwalk build

# the gate, repairs, run order and chunking compiled with mypyc (pagefleet/routing/compiled.py) into
# pagefleet/routing/_build/: less gate CPU, the same decisions. The fleet's start-up (pagefleet/workers/__init__.py)
# runs the build while it matches its sources. Without a C compiler, or if the build fails, the
# sources run (nothing fails; the build removes what it left). PAGEFLEET_COMPILED=0 runs the sources anyway
COMPILED = pagefleet/routing/_compiled.json
COMPILED_SRC = $(wildcard pagefleet/routing/*.py pagefleet/routing/structure/*.py) pagefleet/workers/pdf/runs.py pagefleet/workers/ladder/accept.py \
               pagefleet/workers/ladder/textlayer.py
compiled: $(COMPILED)

$(COMPILED): $(COMPILED_SRC) $(VENV)/.installed
	@command -v $${CC:-cc} >/dev/null || { echo "no C compiler: the gate stays in Python"; exit 0; }; \
	$(BIN)/python -c "from pagefleet.routing.compiled import build; print('mypyc build recorded in', build())" \
	  || echo "mypyc build failed: the gate runs from its sources"

fixtures: venv
	$(BIN)/python fixtures/make_fixtures.py fixtures
	$(BIN)/python fixtures/make_structure_fixtures.py fixtures/structure

run: setup fixtures
	$(BIN)/pagefleet run fixtures fixtures/structure --out $(OUT)

# the tree as `ruff format` writes it (line length 100), and `ruff check` (pyproject.toml [tool.ruff])
lint: venv
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

test: setup lint
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(OUT)/site
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not integration and not slow"

bench: setup  # BENCH_ARGS=--quick while iterating
	$(BIN)/python bench/bench_fleet.py ../shared/corpus --markdown docs/benchmarks/throughput.md $(BENCH_ARGS)

# a page's CPU stage by stage, each alone in one process (BUDGET_ARGS="--pages 200")
budget: setup
	$(PAGE) docs/benchmarks/budget.md -- $(BIN)/python bench/page_budget.py ../shared/corpus $(BUDGET_ARGS)

eval: setup
	$(PAGE) docs/benchmarks/corpus.md -- $(BIN)/pagefleet eval ../shared/corpus --labels ../shared/corpus/LABELS.json

# headings, tables, reading order and pages/s, pagefleet beside pymupdf4llm
eval-structure: setup
	$(BIN)/python fixtures/make_structure_fixtures.py fixtures/structure
	$(PAGE) docs/benchmarks/structure.md -- $(BIN)/python -m bench.eval_structure --fixtures fixtures/structure \
	  --corpus ../shared/corpus

# OCR against known text (64 generated scans), pagefleet beside tesseract and ocrmypdf;
# EVAL_OCR_ARGS=--quick for the 16-page subset
eval-ocr: setup
	$(PAGE) docs/benchmarks/ocr.md -- $(BIN)/python -m bench.eval_ocr $(EVAL_OCR_ARGS)

# Word Shape Encoding: generated RTL tables + corpus tables, encoded vs direct, per parser
eval-wse: setup
	$(PAGE) docs/benchmarks/wse.md -- $(BIN)/python bench/wse_eval.py --corpus ../shared/corpus $(EVAL_WSE_ARGS)

# known text through real PDF producers (LibreOffice from .docx and .odt, Chromium, fpdf2), the fleet
# beside PyMuPDF, pdftotext, pymupdf4llm and arafix; EVAL_PRODUCERS_ARGS=--reuse keeps the documents
eval-producers: setup
	$(BIN)/python -m bench.eval_producers --markdown docs/benchmarks/producers.md $(EVAL_PRODUCERS_ARGS)

# the fault drills (a fleet hurt on purpose; they also run in `make test`) and the fuzzer
faults: setup
	mkdir -p $(OUT) && rm -f $(OUT)/faults.jsonl
	PAGEFLEET_FAULTS_RESULTS=$(abspath $(OUT))/faults.jsonl $(BIN)/python -m pytest -m faults -v
	$(PAGE) docs/benchmarks/faults.md --raw -- $(BIN)/python bench/faults_table.py $(OUT)/faults.jsonl

fuzz: setup
	$(PAGE) docs/benchmarks/fuzz.md -- $(BIN)/python tests/support/fuzz_inputs.py ../shared/corpus --count 500

# Redis commands and bytes, S3 requests and bytes, per page of each kind, on a real local fleet, and the
# ceilings they imply (docs/capacity.md); CAPACITY_ARGS=--quick for smaller workloads. Its last line:
# redis_ops_per_page=X s3_requests_per_page=Y (born-digital pages)
capacity: setup
	$(BIN)/python bench/capacity.py ../shared/corpus --markdown docs/capacity.md $(CAPACITY_ARGS)

# the docs site (mkdocs.yml): the generated references rewritten from the code, then a strict build → site/
docs: venv
	$(BIN)/python scripts/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(OUT) $(NATIVE) fixtures/*.pdf fixtures/bad fixtures/structure fixtures/wse .pytest_cache
	rm -rf $(COMPILED) pagefleet/routing/_build *__mypyc*.so && find pagefleet -name '*.cpython-*.so' -delete
