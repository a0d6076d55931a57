# Two commands on a fresh clone: `make book` and `make test`.
# Both create .venv (once) and install relpos with the pins of constraints.txt,
# each with only the extras it needs (pyproject.toml):
#   make book, make pdf   .[site]                        (no jupyterlab, no nbgrader)
#   make student          .[student]                     (nbgrader and its jupyterlab)
#   make test, make env   .[site,student,test,interop,export] (the suite builds both)
# On Linux without a GPU, PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
# before `make` installs the CPU build of torch instead of the multi-GB CUDA one.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv installs into .venv (a clean install takes seconds; pip's took minutes, the
# largest step of a clean `make test`). uv reads no pip configuration, so pip's
# find-links (where a machine keeps wheels, such as torch's CPU build) and extra
# index are passed on from pip's variables or its configuration.
UV_VERSION := 0.13.9
PIP_CONFIG = $(shell $(PYTHON) -m pip config get global.$(1) 2>/dev/null)
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(call PIP_CONFIG,find-links))
EXTRA_INDEX ?= $(PIP_EXTRA_INDEX_URL)
PIP_INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python -c constraints.txt \
	$(addprefix --find-links ,$(FIND_LINKS)) \
	$(addprefix --extra-index-url ,$(EXTRA_INDEX)) \
	$(if $(EXTRA_INDEX),--index-strategy unsafe-best-match)
SITE_ENV := $(VENV)/.installed-site
STUDENT_ENV := $(VENV)/.installed-student
TEST_ENV := $(VENV)/.installed-test
# Where `make lock` finds torch's CPU wheels (overridable, e.g. with --find-links DIR).
TORCH_CPU ?= --extra-index-url https://download.pytorch.org/whl/cpu

.PHONY: book student-site student-pdf test unit unit-main unit-pages unit-slow unit-grading unit-fast notebooks site colab clean env student pdf lock sweeps task-sweeps wide-sweeps text-sweeps slides ledger interventions

env: $(TEST_ENV)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)

$(SITE_ENV): pyproject.toml constraints.txt | $(BIN)/uv
	$(PIP_INSTALL) -e ".[site]"
	touch $@

$(STUDENT_ENV): pyproject.toml constraints.txt | $(BIN)/uv
	$(PIP_INSTALL) -e ".[student]"
	touch $@

$(TEST_ENV): pyproject.toml constraints.txt | $(BIN)/uv
	$(PIP_INSTALL) -e ".[site,student,test,interop,export]"
	touch $@ $(SITE_ENV) $(STUDENT_ENV)

# Two editions (book/_ext/editions.py; book/instructors.md says which to publish):
# the instructors' (`make book`, `make pdf`: every solution, folded on the site) and
# the students' (every solution taken out, not hidden), in _build/students/.
book: $(SITE_ENV)
	$(BIN)/jupyter-book build . --path-output . --keep-going

student-site: $(SITE_ENV)
	RELPOS_EDITION=students $(BIN)/jupyter-book build . --path-output _build/students \
	    --keep-going

# The suites run in two lanes at once (the machines have two cores), each lane's
# output printed whole when it ends (--output-sync): the pages (the site, the
# Colab runs, then two files of slow unit tests, UNIT_PAGES) and the unit tests
# (slow and fast in one run, then the grading cycle, tests/test_grading.py).
# UNIT_PAGES is what balances the two lanes: move a file between it and unit-main
# when one lane ends minutes before the other.
# Each lane runs every suite (-k) and fails if one fails, on one thread
# (OMP_NUM_THREADS=1: two lanes of two threads each would share two cores). On a
# clean clone on a 2-core AMD EPYC (2026-12-06, commit fb39e2b), one thread a lane,
# torch's inductor cache empty, nothing else running: site 5.8, colab 5.2,
# unit-pages 3.0 (pages 14.0); unit-main 9.7, grading 3.7 (units 13.4 minutes);
# 14.8 minutes in all with the install (0.7), 1678 s of CPU on the two cores. The
# same tree on CI has taken 11 to 15% less time than on this machine. The stored
# notebooks are checked inside `colab`: each chapter runs once, alone, under nbval
# there (`make notebooks` runs nbval here, in .venv, without the Colab part).
test: $(TEST_ENV)
	OMP_NUM_THREADS=1 $(MAKE) --no-print-directory -j2 --output-sync=target \
	  test-pages test-units

.PHONY: test-pages test-units
test-pages: $(TEST_ENV)
	$(MAKE) --no-print-directory -k site colab unit-pages

test-units: $(TEST_ENV)
	$(MAKE) --no-print-directory -k unit-main unit-grading

# Each suite ends its report with its slowest steps (where test time goes).
PYTEST := $(BIN)/python -m pytest --durations=15
UNIT := $(PYTEST) tests --ignore=tests/site --ignore=tests/colab
# Two files of slow unit tests (the cache on every kernel, and export to torch.export
# and ONNX), run in the pages lane, apart from unit-main, so that a failure in one
# still lets the other report.
UNIT_PAGES := tests/test_cache.py tests/test_export.py

unit: $(TEST_ENV)
	$(UNIT)

# The other unit tests, slow and fast, in one run: the suite is collected once.
unit-main: $(TEST_ENV)
	$(UNIT) --ignore=tests/test_grading.py $(addprefix --ignore=,$(UNIT_PAGES))

unit-pages: $(TEST_ENV)
	$(PYTEST) $(UNIT_PAGES)

unit-slow: $(TEST_ENV)
	$(UNIT) -m slow --ignore=tests/test_grading.py

unit-grading: $(TEST_ENV)
	$(PYTEST) tests/test_grading.py

unit-fast: $(TEST_ENV)
	$(UNIT) -m "not slow"

# Builds the site offline with warnings as errors, then reads it in headless Chromium.
site: $(TEST_ENV)
	$(PYTEST) tests/site

notebooks: $(TEST_ENV)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with book/sanitize.cfg book

# Each chapter alone, as Colab opens it: a separate Python (.venv-colab) with only
# torch, numpy, matplotlib and a kernel (and pytest and nbval to run it); the setup
# cell installs this clone's HEAD; every output is compared with the stored one.
# All chapters run in one nbval process, each copied alone into its own folder and
# run in its own kernel there; each is still its own test, with its own report.
colab: $(TEST_ENV)
	$(PYTEST) tests/colab


# The trained sweeps (relpos/book/results/protocol/sweep*.json), one command each,
# under one protocol (sweep schema 3): every (setting, task, scheme,
# training size) tunes its own learning rate on two tuning seeds (100, 101), kept
# apart from the ten measured seeds, over a log-spaced grid extended one step past
# an edge holding the best validation loss until the best is interior (at most 6
# rates); each cell's mean comes with its 95% bootstrap interval over the seeds.
# Every finished run is a record in .sweep-runs/, so an interrupted `make sweeps`
# resumes where it stopped, and a run that two sweeps share trains once. Runs go
# to one process per core (--workers); see the README for a cluster. Wall time on
# two workers: each file records its own (`wall_seconds`). Chapters 9 to 12 read
# these files. relpos/book/results/first_pass/ (sweep*.json, schema 2) archives the
# first pass, the history chapter 12 compares the protocol with (ledger records
# first-pass-<id>): five seeds, one rate per (setting, task, scheme) chosen from
# three at 128 sequences by validation accuracy, with relpos 0.3.0's command.
EXPERIMENTS := $(BIN)/python -m relpos.book.experiments --runs-dir .sweep-runs --quiet
PROTOCOL_SEEDS := --seeds 0,1,2,3,4,5,6,7,8,9 --tune-seeds 100,101 --max-rates 6
PROTOCOL := $(EXPERIMENTS) $(PROTOCOL_SEEDS) --learning-rates 1e-3,3.16e-3,1e-2
RESULTS := relpos/book/results
PROTOCOL_RESULTS := $(RESULTS)/protocol
SCHEMES_MAIN := none,absolute,sinusoidal,shaw,transformer_xl,t5,alibi,rotary,deberta,$\
	deberta-buckets,deberta-emd
# The schemes of the published causal studies, and the windowed schemes, where a
# second layer could compose two distances.
SCHEMES_CAUSAL := none,absolute,t5,alibi,rotary,shaw,deberta
SCHEMES_LAYERS := absolute,shaw,transformer_xl,t5,rotary,deberta,deberta-buckets
# The sinusoid with a learned scale (one factor, or one per dimension), each tuned
# like any scheme: the intervention on the sinusoid's data hunger, made fair.
SCHEMES_SCALE := sinusoidal,sinusoidal-scale,sinusoidal-scale-dims,absolute
SCHEMES_ABLATION := deberta,deberta-c2p,deberta-p2c,deberta-no-norm,$\
	deberta-separate-keys,shaw,shaw-keys

sweeps: $(TEST_ENV)
	$(PROTOCOL) --tasks relative,absolute,far --schemes $(SCHEMES_MAIN) \
	  --train-sizes 32,512 --output $(PROTOCOL_RESULTS)/sweep.json --plot $(PROTOCOL_RESULTS)/sweep.png
	$(PROTOCOL) --settings causal --tasks relative,absolute,far \
	  --schemes $(SCHEMES_CAUSAL) --train-sizes 512 \
	  --output $(PROTOCOL_RESULTS)/sweep_causal.json --plot $(PROTOCOL_RESULTS)/sweep_causal.png
	$(PROTOCOL) --tasks relative --schemes $(SCHEMES_ABLATION) \
	  --train-sizes 8,32,128 --output $(PROTOCOL_RESULTS)/sweep_ablation.json \
	  --plot $(PROTOCOL_RESULTS)/sweep_ablation.png
	$(PROTOCOL) --layers 2 --tasks far --schemes $(SCHEMES_LAYERS) \
	  --train-sizes 512 --output $(PROTOCOL_RESULTS)/sweep_layers.json \
	  --plot $(PROTOCOL_RESULTS)/sweep_layers.png
	$(PROTOCOL) --tasks relative,window --schemes deberta,deberta-sinusoidal \
	  --train-sizes 32,512 --output $(PROTOCOL_RESULTS)/sweep_band.json \
	  --plot $(PROTOCOL_RESULTS)/sweep_band.png
	$(PROTOCOL) --tasks absolute --schemes shaw,shaw-keys --train-sizes 512 \
	  --output $(PROTOCOL_RESULTS)/sweep_values.json --plot $(PROTOCOL_RESULTS)/sweep_values.png
	$(PROTOCOL) --tasks relative --schemes $(SCHEMES_SCALE) --train-sizes 32 \
	  --output $(PROTOCOL_RESULTS)/sweep_scale.json \
	  --plot $(PROTOCOL_RESULTS)/sweep_scale.png
	# the trained tables of chapter 3's interactive figure (about 40 s)
	$(BIN)/python -m relpos.book.interactive
	$(MAKE) ledger

# The second scale (results/wide/sweep.json, sweep_causal.json + .png): the
# headline verdicts' tasks (relative, far) at width 128 (four heads of 32, so
# rotary turns 16 frequencies), two layers, an FFN of 256, 512 training
# sequences, encoder and causal, for the schemes those verdicts name (causal: no
# positions, the learned table, T5 and rotary); the protocol's tuning (two tuning seeds, a grid 1e-3 .. 1e-2 extended until
# interior, at most 5 rates) and five measured seeds (WIDE_SEEDS; ten, for an
# interval per cell, is `make wide-sweeps WIDE_SEEDS=0,1,2,3,4,5,6,7,8,9`, about
# twice the time). The files keep the first scale's names, so the same verdict
# rules read them (verdicts.wide). About 300 runs of 500 steps, 12 to 55 s each
# on one core of a 2-core Intel Xeon; each file records its wall time.
SCHEMES_WIDE := none,absolute,transformer_xl,t5,rotary,deberta
SCHEMES_WIDE_CAUSAL := none,absolute,t5,rotary
WIDE_SEEDS := 0,1,2,3,4
WIDE := $(EXPERIMENTS) --seeds $(WIDE_SEEDS) --tune-seeds 100,101 --max-rates 5 \
	--tasks relative,far --train-sizes 512 \
	--hidden-size 128 --num-heads 4 --intermediate-size 256 --layers 2 \
	--learning-rates 1e-3,3.16e-3,1e-2
WIDE_RESULTS := $(RESULTS)/wide

wide-sweeps: $(TEST_ENV)
	$(WIDE) --settings encoder --schemes $(SCHEMES_WIDE) \
	  --output $(WIDE_RESULTS)/sweep.json \
	  --plot $(WIDE_RESULTS)/sweep.png
	$(WIDE) --settings causal --schemes $(SCHEMES_WIDE_CAUSAL) \
	  --output $(WIDE_RESULTS)/sweep_causal.json \
	  --plot $(WIDE_RESULTS)/sweep_causal.png
	$(MAKE) ledger

# The interventions of chapters 9 and 10 (results/protocol/interventions.json):
# each mechanism the chapters assert, tested by changing its cause alone, ten seeds
# per compared pair, at the protocol sweeps' settings and chosen learning rates
# (so run it after `make sweeps`). Its own runs folder: its records share configs
# with the sweeps' (deberta-buckets on relative, for one) but not their contents.
# Interrupted, the same command resumes. About 13 minutes on two workers of a
# 2-core AMD EPYC shared with other work (11 runs per seed, 78 s of wall time per
# seed measured with --seeds 0; each record keeps its own job_seconds).
interventions: $(TEST_ENV)
	$(BIN)/python -m relpos.book.experiments.interventions --quiet --workers 2 \
	  --runs-dir .sweep-runs/interventions \
	  --output $(PROTOCOL_RESULTS)/interventions.json

# The mechanisms of chapters 11 to 13 by intervention (issue 34, item 3): designs,
# predictions and falsifiers, written before any run, in relpos.book.experiments.
# interventions.mechanisms; verdicts in verdicts.mechanisms (one ledger record per
# design, `untested` naming this target until its records exist). `mechanisms`
# trains three interventions of the interventions CLI at the committed sweeps'
# settings, ten seeds: DeBERTa on mqar at three rates (30 runs, 25 s each), the
# sinusoids and the table on relative at one rate (40 runs, 8 s) and DeBERTa on
# copy at k = 8 and 16 (20 runs, 35 s); one run of each timed on one core of a
# 2-core machine shared with other work: about 1650 s of runs, 15 minutes on two
# workers. Its runs folder is committed, keyed on the interventions' MEASURES,
# not the version, so it resumes across sessions. `mechanisms-text`: causal T5
# on text with its buckets ending at L and at L / 2, and FIRE with its threshold
# starting at L and at L / 4 (`fire-quarter`), each tuned on two tuning seeds,
# then ten seeds: about 4 x 17 runs; one run (T5 ending at L / 2, seed 0) took
# 277 s on the loaded machine (225 s training; the text sweep's T5 and FIRE runs
# took 60 to 90 s with the cores free): about 40 minutes to 2.5 hours on two
# workers. Its runs share the text sweeps' folder (keyed on the version).
MECHANISMS := mqar_rates,sinusoid_one_rate,deberta_reach
MECHANISMS_TEXT := $(BIN)/python -m relpos.book.text --runs-dir .sweep-runs --quiet \
	--setting causal --seeds 0,1,2,3,4,5,6,7,8,9 --tune-seeds 100,101 \
	--train-length 64 --eval-lengths 64,128,256,512,1024 --eval-bytes 32768 \
	--steps 1000 --workers 2

# Chapter 11's causal sweep on the protocol (issue 34): the length probe's job and
# runs folder, so its nine schemes' runs are read back, not trained again, with
# Shaw's table and Transformer-XL beside them: eleven schemes, rates tuned on two
# seeds, ten seeds, every reading on the whole test split
# (relpos/book/results/text_causal_protocol.json and .png).
.PHONY: text-causal-protocol
text-causal-protocol: $(TEST_ENV)
	$(BIN)/python -m relpos.book.text.length_probe --quiet --workers 2 \
	  --schemes none,absolute,rotary,t5,alibi,kerple,fire,shaw,transformer_xl,deberta,deberta-buckets \
	  --seeds 0,1,2,3,4,5,6,7,8,9 --tune-seeds 100,101 --train-length 64 \
	  --eval-lengths 64,128,256,512 --steps 1000 \
	  --learning-rates 1e-3,3.16e-3,1e-2 --max-rates 8 \
	  --output $(RESULTS)/text_causal_protocol.json

# `mechanism-far-keys`: chapter 11's masked rise by intervention
# (relpos.book.text.far_keys): the masked byte models with DeBERTa's and Shaw's
# clipped tables (k = 32), tuned on two seeds and trained on ten, each read at
# L, 4L, 8L and 16L as trained and with the keys k or more away cut (both sides,
# ahead, behind). Its runs folder is committed and keyed on the intervention's
# schema, so it resumes across sessions.
.PHONY: mechanisms mechanisms-text mechanism-far-keys
mechanism-far-keys: $(TEST_ENV)
	$(BIN)/python -m relpos.book.text.far_keys --quiet --workers 2 \
	  --learning-rates 1e-3,3.16e-3,1e-2 --max-rates 8 --steps 1000 \
	  --train-length 64
	$(PROBE_AFTER)

# `text-masked-protocol`: chapter 11's masked side on the protocol: the far-keys
# intervention's job and runs folder for every scheme of the causal protocol (ten
# seeds, two tuning seeds, the whole test split, per-module sums), read at L, 4L,
# 8L and 16L as trained and with the far keys cut. DeBERTa's and Shaw's runs are
# the intervention's own, read back.
.PHONY: text-masked-protocol
text-masked-protocol: $(TEST_ENV)
	$(BIN)/python -m relpos.book.text.far_keys --quiet --workers 2 \
	  --schemes none,absolute,rotary,t5,alibi,kerple,fire,shaw,transformer_xl,deberta,deberta-buckets \
	  --learning-rates 1e-3,3.16e-3,1e-2 --max-rates 8 --steps 1000 \
	  --train-length 64 --output $(RESULTS)/text_masked_protocol.json

mechanisms: $(TEST_ENV)
	$(BIN)/python -m relpos.book.experiments.interventions --quiet --workers 2 \
	  --only $(MECHANISMS) --runs-dir $(RESULTS)/probes/mechanisms/runs \
	  --output $(PROTOCOL_RESULTS)/mechanisms.json
	$(BIN)/python -m relpos.book.results

mechanisms-text: $(TEST_ENV)
	$(MECHANISMS_TEXT) --schemes t5,fire,fire-quarter --t5-max-distance 64 \
	  --output $(RESULTS)/probes/mechanism_text.json
	$(MECHANISMS_TEXT) --schemes t5 --t5-max-distance 32 \
	  --output $(RESULTS)/probes/mechanism_t5_max_32.json
	$(BIN)/python -m relpos.book.results

# The tasks whose needed distance grows with the length (results/protocol/
# sweep_tasks.json + .png): copy, reverse, multi-query associative recall and
# decimal addition (relpos.book.experiments.layouts), as causal decoders of two
# layers, width 64, trained on every length from 8 to 16 (one length per step)
# and tested at 16, 32 and 64 with per-token and exact-match accuracy; absolute
# and rotary also with randomised positions (Ruoss et al. 2023, P = 256); T5's
# buckets end at the training length (as the main sweep's). The training set
# (32768 sequences) is about as large as the 1000 x 32 draws of a run. The
# protocol of `make sweeps` (rates tuned per cell on two tuning seeds, a grid
# 2e-3 .. 8e-3 extended until interior, at most 5 rates), ten measured seeds:
# 540 runs of 1000 steps, 40 minutes on two workers of a 2-core Intel Xeon
# (the file records its wall time and machine).
TASK_SCHEMES := none,absolute,rotary,t5,alibi,deberta,absolute-randomised,$\
	rotary-randomised

task-sweeps: $(TEST_ENV)
	$(EXPERIMENTS) --settings causal --tasks copy,reverse,mqar,addition \
	  --schemes $(TASK_SCHEMES) --layers 2 --hidden-size 64 --train-length 16 \
	  --min-train-length 8 --test-lengths 16,32,64 --steps 1000 \
	  --t5-max-distance 16 --train-sizes 32768 --learning-rates 2e-3,4e-3,8e-3 \
	  --max-rates 5 --tune-seeds 100,101 --seeds 0,1,2,3,4,5,6,7,8,9 --workers 2 \
	  --output $(PROTOCOL_RESULTS)/sweep_tasks.json \
	  --plot $(PROTOCOL_RESULTS)/sweep_tasks.png

# Claim 1's probe, generalisation across positions (relpos/book/results/probes/
# positions.json + .png; design and prediction in relpos.book.probes.
# positions.design, verdict in verdicts.positions): the token 3 back supervised in
# the first half of each 32-token window and scored in both halves, for 12 arms,
# with the first half or every position supervised; and the data-efficiency curve
# of the main sweep's schemes at 8, 16, 32 and 128 sequences. The protocol: rates
# tuned per cell on seeds 100 and 101 (grid 1e-3 .. 1e-2 extended until interior,
# at most 6 rates), ten measured seeds. Its runs are committed in
# results/probes/positions/runs/, keyed on the probe's schema (not the version):
# the same command resumes where any session stopped. About 1,360 runs (480
# transfer, 880 data; ten tuning runs a cell where the grid grows to five
# rates) of 3 to 8 s of one core each (measured on a 2-core Intel Xeon, 4.5 s
# on average): about 50 minutes on two workers.
.PHONY: probe-positions
probe-positions: $(TEST_ENV)
	$(BIN)/python -m relpos.book.probes.positions --quiet --workers 2 \
	  --runs-dir $(RESULTS)/probes/positions/runs \
	  --output $(RESULTS)/probes/positions.json --plot $(RESULTS)/probes/positions.png
	$(PROBE_AFTER)

# After a probe's sweep: the ledger rebuilt from every result file, then the
# chapters that print it (the claims table in chapter 1, the claims chapter 10
# states, chapter 11's text measurements, and the probes' sections and verdicts
# in chapter 14) executed again, so that their stored outputs are the new
# verdicts (nbval compares them).
PROBE_AFTER = $(BIN)/python -m relpos.book.results && \
	$(BIN)/python tools/run_notebooks.py book/01_absolute_to_relative.ipynb \
	  book/10_testing_debertas_design.ipynb book/11_real_text.ipynb \
	  book/14_the_four_claims_probed.ipynb

# The language models on the Python standard library's docstrings
# (relpos/book/results/text_*.json): every scheme of the main sweep plus FIRE and
# KERPLE, causal and masked, trained at L = 64 for 1000 steps and evaluated at
# 64 .. 1024 on 32 KiB of the test split. Each (setting, scheme) tunes its rate
# on validation text at L (grid 1e-3 .. 1e-2, extended until it brackets the
# best; three or four rates per cell here), then three measured seeds: 6 or 7
# runs per cell, 26 cells. Wall time on two workers of a 2-core AMD EPYC shared
# with other work: 81 minutes causal, 46 masked (each file records its own). What
# was cut to fit (steps, width, seeds) is listed in the sweeps appendix. The runs folder is the sweeps' own: an
# interrupted run resumes.
TEXT := $(BIN)/python -m relpos.book.text --runs-dir .sweep-runs --quiet \
	--schemes $(SCHEMES_MAIN),fire,kerple --seeds 0,1,2 --train-length 64 \
	--eval-lengths 64,128,256,512,1024 --eval-bytes 32768 --steps 1000 --workers 2

text-sweeps: $(TEST_ENV)
	$(TEXT) --setting causal --output $(RESULTS)/text_causal.json
	$(TEXT) --setting masked --output $(RESULTS)/text_masked.json
	$(TEXT_AFTER)

# The probe of claim 3, linguistic alignment (relpos/book/probes/alignment): byte
# LMs (width 64, two layers, L = 64) trained on a generated grammar (agreement
# across attractors, Dyck-2) and scored on 1,200 committed minimal pairs at 4
# distances x 3 offsets inside L; eight arms, each rate tuned on two tuning seeds
# (grid 1e-3 .. 1e-2 extended until interior, at most 6 rates), ten measured
# seeds; at 300 steps (the verdict's budget: results/probes/alignment.json, its
# per-item table and figure) and at 1000 (alignment_full.json, beside it). The
# runs folder results/probes/alignment/runs/ is committed, so the same command
# resumes across sessions (records keyed on the probe's schema, not the relpos
# version). About 150 runs per budget (48 tuning runs before any grid extension,
# 80 measured); one run of 300 steps took 13 s (t5) to 19 s (DeBERTa) on one core
# of a 2-core AMD EPYC shared with other work, 1000 steps about 3.3 times that:
# about 20 + 70 minutes on two workers with the cores free.
PROBE_ALIGNMENT := $(BIN)/python -m relpos.book.probes.alignment --workers 2 \
	--quiet --runs-dir $(RESULTS)/probes/alignment/runs

.PHONY: probe-alignment
probe-alignment: $(TEST_ENV)
	$(PROBE_ALIGNMENT) --steps 300
	$(PROBE_ALIGNMENT) --steps 1000 \
	  --output $(RESULTS)/probes/alignment_full.json \
	  --per-item $(RESULTS)/probes/alignment/per_item_full.json \
	  --plot $(RESULTS)/probes/alignment_full.png
	$(PROBE_AFTER)

# After the sweeps: the two-objective study (about 2 minutes) and the ledger of
# claims computed from the results.
TEXT_AFTER = $(BIN)/python -m relpos.book.text.gradients \
	  --output $(RESULTS)/text_gradients.json && \
	$(BIN)/python -m relpos.book.results

# The ledger of claims (relpos/book/results/claims.json), every record computed by
# a rule from the result files (relpos.book.experiments.verdicts on results/protocol/
# for chapters 9 and 10, relpos.book.text.verdicts for chapter 11, for chapter 12
# verdicts.first_pass on results/first_pass/ and verdicts.interventions, and for
# chapter 14 verdicts.probes on results/probes/); under a minute.
ledger: $(TEST_ENV)
	$(BIN)/python -m relpos.book.results

# The student edition: every chapter without its solutions (the code between
# nbgrader's ### BEGIN/END SOLUTION markers becomes a stub; the check stays).
student: $(STUDENT_ENV)
	$(BIN)/python tools/student_edition.py _build/student

# The graded assignments: an nbgrader course in _build/course, one problem set per
# chapter (source/: solutions, points, hidden tests; release/: what students get,
# written by nbgrader generate_assignment). Grading runs the problem sets, so it
# installs the site extra too (book, transformers); book/instructors.md grades.
# FIRST_SESSION=2026-09-14T10:00+02:00 sets the due dates (book/course/plan.yml),
# VARIANT=N (an int, a seed) other numbers than the book's.
.PHONY: assignments
assignments: $(SITE_ENV) $(STUDENT_ENV)
	$(BIN)/python tools/assignments.py _build/course \
	    $(if $(FIRST_SESSION),--first-session $(FIRST_SESSION)) \
	    $(if $(VARIANT),--variant $(VARIANT)) \
	    $(if $(PER_STUDENT),--per-student $(if $(STUDENTS),--students $(STUDENTS)))

# The exam: a paper and its answer key drawn from book/course/exam.yml, written to
# _build/exam (never into book/, so no edition of the site holds the key).
# SEED=N (an int) or SEED=2026-autumn (a term's name) names the variant.
.PHONY: exam
exam: $(SITE_ENV)
	$(if $(SEED),,$(error make exam needs SEED=N or SEED=TERM, e.g. SEED=2026-autumn))
	$(BIN)/python tools/exam.py $(SEED) --output _build/exam

# The print edition: the whole book as one PDF in _build/pdf, typeset by LaTeX
# (Jupyter Book's LaTeX builder, then latexmk with xelatex). Debian: apt-get install
# texlive-xetex latexmk texlive-fonts-recommended texlive-latex-extra fonts-freefont-otf
pdf: $(SITE_ENV)
	$(BIN)/python tools/build_pdf.py _build/pdf/relpos-book.pdf

student-pdf: $(SITE_ENV)
	RELPOS_EDITION=students $(BIN)/python tools/build_pdf.py \
	    _build/students/pdf/relpos-book.pdf

# The session slides: a reveal.js deck per session and an index in _build/slides, offline
# (reveal.js and KaTeX pinned in book/slides/package-lock.json; the script runs
# `npm ci --prefix book/slides` when node_modules is missing or unlike the lock).
slides: $(SITE_ENV)
	$(BIN)/python tools/build_slides.py _build/slides

# Regenerates constraints.txt with uv: every extra resolved for .venv's Python, each
# pin with the packages that need it ("# via"). Pins already there are kept unless
# pyproject.toml now needs another version (uv prefers the output file's versions);
# `make lock UV_ARGS=--upgrade` moves everything to the newest. torch is resolved
# from its CPU index and pinned without the "+cpu" label, which matches both builds.
lock: | $(BIN)/uv
	sed 's/^torch==\([^+ ]*\)$$/torch==\1+cpu/' constraints.txt > constraints.txt.new
	$(BIN)/uv pip compile pyproject.toml --all-extras --python $(BIN)/python \
	    $(TORCH_CPU) --index-strategy unsafe-best-match --no-header $(UV_ARGS) \
	    -o constraints.txt.new --quiet
	{ printf '%s\n' \
	    "# Pins for .venv (make book, make test, make student) and CI: every package of" \
	    "# every extra in pyproject.toml, each with what needs it. Generated by uv:" \
	    "#     make lock" \
	    "# (uv pip compile pyproject.toml --all-extras --python .venv/bin/python" \
	    "#  --extra-index-url https://download.pytorch.org/whl/cpu" \
	    "#  --index-strategy unsafe-best-match; torch's +cpu label dropped)." \
	    "# Used as pip constraints: pip install -c constraints.txt -e '.[site]'"; \
	  sed 's/^torch==\(.*\)+cpu$$/torch==\1/' constraints.txt.new; } > constraints.txt
	rm constraints.txt.new

clean:
	rm -rf _build

# Claim 4's probe, "cleaner gradient flow" (relpos/book/probes/gradients; issue 38):
# one causal byte model (width 64, two layers, L = 64, 800 steps) with positions
# added to the input (absolute), as TUPE's untied attention term (tupe) or as
# DeBERTa's relative terms, each trained on next-byte prediction alone and with
# a position objective (recall the byte 3 back); the content cost per arm, the
# position objective's matched level and the gradient cosines on the shared
# parameters. Chapter 12's protocol: each (arm, objectives) cell tunes its rate
# on seeds 100 and 101 (grid 1e-3 .. 1e-2, extended until interior, at most 5
# rates), ten measured seeds. About 110 runs; one run took 84 s (absolute),
# 123 s (tupe) and 206 s (deberta) of wall time on a 2-core machine shared by
# five sessions (load 6); about 2 hours on two workers there, less alone. The
# runs folder is committed (one small JSON per run, keyed on the probe's own
# schema, not relpos's version), so the same command resumes in any session.
.PHONY: probe-gradients
PROBES := $(RESULTS)/probes
probe-gradients: $(TEST_ENV)
	$(BIN)/python -m relpos.book.probes.gradients --quiet --workers 2 \
	  --runs-dir $(PROBES)/gradients/runs --output $(PROBES)/gradients.json \
	  --plot $(PROBES)/gradients.png
	$(PROBE_AFTER)

# The length probe (issue 38, chapter 1's claim 2; relpos/book/text/length_probe.py,
# its prediction and falsifier written there before the runs): the causal byte
# models of nine schemes, trained as `make text-sweeps` trains them (L = 64, width
# 64, two layers, 1000 steps), rates tuned on two seeds (100, 101), ten seeds; each
# read on the whole test split at W = 64 .. 512 three ways: non-overlapping windows,
# sliding windows (stride W / 2, the last W / 2 bytes scored) and the same with
# attention cut to the last L keys. Writes relpos/book/results/probes/length.json
# and .png. Its runs folder, relpos/book/results/probes/length/runs, is committed
# (one JSON per run, keyed on the probe's schema, not the version): the same
# command resumes, in this session or the next.
.PHONY: probe-length
probe-length: $(TEST_ENV)
	$(BIN)/python -m relpos.book.text.length_probe --quiet --workers 2 \
	  --schemes none,absolute,rotary,t5,alibi,kerple,fire,deberta,deberta-buckets \
	  --seeds 0,1,2,3,4,5,6,7,8,9 --tune-seeds 100,101 --train-length 64 \
	  --eval-lengths 64,128,256,512 --steps 1000 \
	  --learning-rates 1e-3,3.16e-3,1e-2 --max-rates 8
	$(PROBE_AFTER)

# Why masked absolute and sinusoidal sit on the plateau of `none` (issue 34, item 2;
# relpos/book/text/masked_baselines.py, its prediction and falsifier written there
# before the runs): the masked byte model of text_masked.json (L = 64, width 64, two
# layers, 1000 steps) with none, absolute, sinusoidal, sinusoids ten times larger,
# TUPE and DeBERTa at rate 3.16e-3, seeds 0 and 1, and absolute at 3.16e-4 and
# 3.16e-2 on seed 0: 14 runs, training curves and validation loss plain and with
# each window scrambled. Writes relpos/book/results/probes/masked_baselines.json and
# .png; its runs folder (committed, keyed on the study's schema) resumes. On a 2-core
# AMD EPYC shared with other sessions (load 8-10, 2026-12-06) one run took 67-265 s
# (absolute 143, DeBERTa 177), 20.5 minutes on two workers; about a third of that
# alone (a 300-step absolute run: 14 s at load 3.5).
.PHONY: masked-baselines
masked-baselines: $(TEST_ENV)
	$(BIN)/python -m relpos.book.text.masked_cli --quiet --workers 2 \
	  --runs-dir $(RESULTS)/probes/masked_baselines/runs \
	  --output $(RESULTS)/probes/masked_baselines.json \
	  --plot $(RESULTS)/probes/masked_baselines.png
