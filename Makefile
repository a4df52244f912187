# Lifeboat: the two commands of the README, and the tools around them.
# Everything the tests need is installed by this file into .venv (Python 3.11+).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_AT ?= 2026-12-01T14:05:00Z
# A DescribeInstanceStatus response (what the instance status sweep reads): one impaired
# instance, one with an EC2 scheduled event. Not an SQS message, so not in events/*.json.
STATUS_SAMPLE := events/status/describe-instance-status.json

.PHONY: lock demo test bytecode test-bytecode sam-checks lint typecheck typecheck-3.11 typecheck-3.13 docs docs-examples docs-check npm chromium follow bench bench-health-split bench-hand-over soak bench-check mutants clean stackset-template

include sam.mk

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# One lock (requirements/, written by `make lock` with uv from pyproject.toml): what the tests
# run is what the demo runs and what the Lambda layer ships (layers/lifeboat/requirements.txt
# is the layer's part of the same lock). Every package is checked against the lock's hashes;
# the project itself is installed over it without dependencies. Stamp files: reinstall only
# when the lock changes.
LOCK_DEV := requirements/dev.lock
LOCK_RUNTIME := requirements/runtime.lock

$(VENV)/.installed: pyproject.toml $(LOCK_RUNTIME) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK_RUNTIME)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(LOCK_DEV) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK_DEV)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed

## lock: resolve pyproject.toml's dependencies again (uv, for every platform and Python >= 3.11,
## with hashes) into requirements/, and the layer's part into layers/lifeboat/requirements.txt
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet 'uv>=0.5'
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra plot --universal --python-version 3.11 \
		--generate-hashes --no-header --upgrade -o $(LOCK_DEV)
	$(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 \
		--generate-hashes --no-header -c $(LOCK_DEV) -o $(LOCK_RUNTIME)
	$(BIN)/python requirements/layer.py

## demo: replay every sample event against the sample cluster, one line per decision
demo: $(VENV)/.installed
	$(BIN)/lifeboat replay $(sort $(wildcard events/*.json)) $(STATUS_SAMPLE) --cluster events/cluster.yaml --at $(DEMO_AT) --same-instant

## follow: the same, following deferred work through time until nothing is pending
follow: $(VENV)/.installed
	$(BIN)/lifeboat replay $(sort $(wildcard events/*.json)) --cluster events/cluster.yaml --at $(DEMO_AT) --same-instant --follow

## test: lint, type-check, the SAM template validated and built offline and the docs site
## built and checked (these four side by side: each is mostly one process), then the whole
## test suite (what .ci/run runs). One pytest worker more than the machine has cores: many
## tests wait on the processes and servers they start (kubectl, sam, lifeboat serve, the
## emulator's threads), and a third worker on two cores used that time (pytest 226 -> 198 s,
## back to back). worksteal: a worker that runs out of tests takes some from another's queue,
## so a few long tests at the end do not leave a core idle. Branch coverage of the layer is
## measured on the way and held to its floors (tests/support/coverage_floor.py).
# Bytecode is written while testing, whatever PYTHONDONTWRITEBYTECODE says: else every
# process the tests start (lifeboat serve, the CLI, the fleet's invocations) compiles the
# project again (half a second each), and pytest rewrites every test module's asserts again
# in each worker. The project's own sources are compiled first, beside the other checks.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
test: export PYTHONDONTWRITEBYTECODE =
test: $(VENV)/.installed-dev
	$(MAKE) --no-print-directory -j2 --output-sync=target bytecode test-bytecode lint typecheck-3.11 typecheck-3.13 sam-checks docs-check
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --cov \
		--cov-report=json:coverage.json \
		--cov-report=
	$(BIN)/python -m tests.support.coverage_floor coverage.json

bytecode: $(VENV)/.installed-dev
	$(BIN)/python -m compileall -q -j0 layers/lifeboat/lifeboat local functions bench docsite

# pytest's assertion rewriting done once, beside the other checks: collecting writes each
# test module's rewritten bytecode, which the workers then load. On a new clone each worker
# otherwise rewrote every test module itself (the same tree with and without that bytecode,
# pytest only: 207 s and 288 s). After bytecode: the layer's own files are compiled by then.
test-bytecode: $(VENV)/.installed-dev bytecode
	$(BIN)/python -m pytest --collect-only -q -p no:cacheprovider > /dev/null

# In order (-j1: the sub-make would otherwise inherit make test's -j2 and measure the layer
# before it is built), after the bytecode (sam build copies the layer's sources while
# compileall would be renaming files into them).
sam-checks: $(VENV)/.installed-dev bytecode
	$(MAKE) --no-print-directory -j1 sam-validate sam-build layer-size

## docs: the documentation site into build/site (MkDocs Material, --strict: a broken link or
## anchor fails), then every internal link of the built site checked. Mermaid comes from the
## npm registry (pinned, integrity-checked), the windows chart is drawn from the sample cluster.
DOCS_PLOT := docs/assets/generated/windows.svg
docs: $(VENV)/.installed-dev npm
	$(BIN)/python -m docsite.mermaid
	@mkdir -p $(dir $(DOCS_PLOT))
	$(BIN)/lifeboat windows --cluster events/cluster.yaml --at $(DEMO_AT) --days 2 --plot $(DOCS_PLOT) > /dev/null
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m docsite.links build/site

## docs-examples: run every example the docs show again and write docs/examples/ (the test
## test_docs_examples.py fails when a rerun differs from what is committed)
docs-examples: $(VENV)/.installed-dev
	$(BIN)/python -m docsite.examples

## docs-check: the site built, then its pages opened in headless Chromium (navigation there,
## every Mermaid diagram drawn, no CDN reachable); screenshots in build/screenshots/
docs-check: docs chromium
	$(BIN)/python -m docsite.browser

# Node.js's npm fetches Mermaid (npm pack), and Debian's Chromium runs the browser check: each
# installed with apt-get when missing (CI is a fresh machine running as root).
npm:
	@command -v npm >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm; }

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The tests run on Python 3.11 (the oldest the code supports); the Lambda runs 3.13. The
# second pass checks the shipped code against 3.13's standard library and typing as well.
# Two targets, so make test's -j2 runs the passes side by side.
typecheck: typecheck-3.11 typecheck-3.13

typecheck-3.11: $(VENV)/.installed-dev
	$(BIN)/mypy layers/lifeboat/lifeboat local/lifeboat_local local/kubemu functions/interruption tests bench docsite

typecheck-3.13: $(VENV)/.installed-dev
	$(BIN)/mypy --python-version 3.13 layers/lifeboat/lifeboat functions/interruption

## bench: the benchmark harness (requests per event, storm latency, cold start, layer size,
## the storm on a throttled account); exits 1 when a ratio or count target is missed
## (absolute times are reported, never failing: they depend on the machine's load)
bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench --check --out bench-results/summary.json

## bench-health-split: one AWS Health event naming 500 instances, as one message and split,
## the longest invocation against the 60 s function timeout
bench-health-split: $(VENV)/.installed-dev
	$(BIN)/python -m bench.health_split --json bench-results/health-split.json

## bench-check: the benchmark's quick configuration, failing when a ratio or count target
## is missed, then the tests marked bench (runs of the bench itself, tiny and quick, its
## fleet of processes and moto storm; the soaks at 250-2,000 events, make test runs one
## small; the template linted with each kind switched off alone), then the property tests at
## their full number of examples (make test tries a quarter: tests/support/properties.py)
bench-check: $(VENV)/.installed-dev
	$(BIN)/python -m bench --quick --check --no-layer-build --out bench-results/quick.json
	$(BIN)/python -m pytest -q -n 2 -m bench
	LIFEBOAT_PROPERTY_DEPTH=full $(BIN)/python -m pytest -q -n 2 \
		$(shell grep -rl "tests.support.properties import" tests)

## bench-hand-over: a voluntary notice's hand-over at-once vs when-ready, with Karpenter's
## drift running in the replay's simulation (pod-Pending-seconds, peak disrupting vs budget)
bench-hand-over: $(VENV)/.installed-dev
	$(BIN)/python -m bench.hand_over --json bench-results/hand-over.json

## soak: 10,000 mixed events with injected faults and duplicates; accounts for every message
soak: $(VENV)/.installed-dev
	$(BIN)/python -m bench.soak --events 10000

## stackset-template: the packaged template (sam package) as plain CloudFormation for a
## service-managed StackSet (docs/organisation.md)
STACKSET_PACKAGED ?= .aws-sam/packaged.yaml
STACKSET_ARTIFACT_PREFIX ?=
STACKSET_DEPLOYMENT_TYPE ?= Canary10Percent5Minutes
stackset-template: $(VENV)/.installed-dev
	$(BIN)/python -m lifeboat_local.stackset $(STACKSET_PACKAGED) --out .aws-sam/stackset.json \
		--parameter DeploymentType=$(STACKSET_DEPLOYMENT_TYPE) \
		$(if $(STACKSET_ARTIFACT_PREFIX),--artifact-bucket-prefix $(STACKSET_ARTIFACT_PREFIX))

## mutants: mutation testing (cosmic-ray) of decide/, budgets*, cron, act, node_patches,
## pool_lock, deadline, staleness, pool_usage, convert/, rotation/ and its rollback against
## their tests, in a copy of the tree; kill rate per target in mutation-results/report.md
## (survivors stated equivalent in mutation/__main__.py's EQUIVALENTS counted apart).
## Long: MUTANTS_ARGS="--sample 20" runs a random sample per target, "--target act" one.
MUTANTS_ARGS ?=
mutants: $(VENV)/.installed-dev
	$(BIN)/python -m mutation $(MUTANTS_ARGS)

clean:
	rm -rf $(VENV) .sam-venv .aws-sam build docs/assets/generated docs/assets/javascripts/mermaid.* .mypy_cache .ruff_cache .pytest_cache .hypothesis mutation-results
