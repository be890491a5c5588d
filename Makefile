# Two commands on a fresh machine: `make synth` and `make test`. Everything they need is installed here.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export KUEUE_CRDS_DIR ?= $(abspath ../shared/kueue-crds)

.PHONY: setup synth test lint typecheck unit clean validate schema promtool

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=25.1"
	$(PY) -m pip install --quiet --group dev -e .
	touch $@

# network-config-analyzer pins PyYAML 6.0.2, cfn-lint needs >=6.0.3: it lives in its own venv.
.venv-nca/.stamp:
	$(PYTHON) -m venv .venv-nca
	.venv-nca/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	.venv-nca/bin/python -m pip install --quiet "network-config-analyzer==2.1.0"
	touch $@

# The HyperPod CLI/SDK (sagemaker-hyperpod, pyproject group hyperpod-sdk) pins pytest, ruff and click versions
# the dev group cannot share: its own venv, run by tests/support/hyperpod_sdk.py as a subprocess.
.venv-hyperpod/.stamp: pyproject.toml
	$(PYTHON) -m venv .venv-hyperpod
	.venv-hyperpod/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	.venv-hyperpod/bin/python -m pip install --quiet --group hyperpod-sdk
	touch $@

# checkov (tests/test_checkov.py) has a large dependency tree of its own: it lives in its own venv too.
CHECKOV_VERSION := 3.3.30
.venv-checkov/.stamp:
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	.venv-checkov/bin/python -m pip install --quiet "checkov==$(CHECKOV_VERSION)"
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# promtool checks and unit-tests the chargeback's Prometheus alerting rules (tests/test_chargeback_pipeline.py);
# Debian/Ubuntu ship it in the `prometheus` package. Installed as root on a fresh machine, else say how.
promtool:
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y --no-install-recommends prometheus >/dev/null; } \
		|| { echo "promtool missing: run 'sudo apt-get install -y prometheus' (the rule tests are skipped without it)"; }

setup: $(VENV)/.stamp .venv-nca/.stamp .venv-hyperpod/.stamp .venv-checkov/.stamp node_modules/.stamp promtool

synth: setup
	npx cdk synth --quiet

validate: $(VENV)/.stamp
	$(VENV)/bin/hyperpod-tenancy validate platform.yaml

# JSON Schema of platform.yaml, generated from the policy model (tests fail when it is stale)
schema: $(VENV)/.stamp
	$(PY) -m hyperpod_tenancy.policy.json_schema schema/platform.schema.json

lint: $(VENV)/.stamp
	$(VENV)/bin/ruff check src tests app.py benchmarks
	$(VENV)/bin/ruff format --check src tests app.py benchmarks
	$(VENV)/bin/lint-imports

typecheck: $(VENV)/.stamp
	$(VENV)/bin/mypy

unit: setup
	NCA_BIN=$(abspath .venv-nca/bin/nca) HYPERPOD_SDK_PYTHON=$(abspath .venv-hyperpod/bin/python) \
		CHECKOV_BIN=$(abspath .venv-checkov/bin/checkov) $(PY) -m pytest

test: lint typecheck unit

clean:
	rm -rf cdk.out $(VENV) .venv-nca .venv-hyperpod .venv-checkov node_modules .pytest_cache .mypy_cache .ruff_cache
