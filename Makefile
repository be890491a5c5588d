# Two commands on a fresh machine: `make synth` and `make test`. Everything they need is installed here.
# `make synth` installs only what synthesis needs (the package in .venv, a supported Node, the pinned CDK CLI);
# `make test` adds the test tools and their venvs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export KUEUE_CRDS_DIR ?= $(abspath ../shared/kueue-crds)
# uv (pinned, from PyPI into .venv) installs every venv: it downloads in parallel and resolves in a second,
# where pip took minutes. It does not compile every module (aws-cdk-lib alone takes a minute of CPU); Python
# writes the bytecode of the modules it really imports into the venvs as it goes, even where the shell's
# environment turned that off, so the second synth starts as fast as a compiled install.
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
UV_INSTALL = $(UV) pip install --quiet --python $(1)/bin/python
UV_VENV = $(UV) venv --quiet --clear --python $(PYTHON) $(1)
export PYTHONDONTWRITEBYTECODE :=

# jsii and the CDK CLI run on a Node.js LTS that is still supported (22 or later). A machine whose `node` is
# older (or absent) gets this pinned Node from the npm registry in .node/, first on PATH for every recipe.
NODE_VERSION := 24.22.3
NODE_MIN_MAJOR := 22
SYSTEM_NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
ifeq ($(shell [ "$(SYSTEM_NODE_MAJOR)" -ge "$(NODE_MIN_MAJOR)" ] 2>/dev/null && echo supported),supported)
NODE_STAMP :=
else
NODE_ARCH := $(subst aarch64,arm64,$(subst x86_64,x64,$(shell uname -m)))
NODE_PACKAGE := node-linux-$(NODE_ARCH)@$(NODE_VERSION)
NODE_PREFIX := $(CURDIR)/.node
NODE_STAMP := $(NODE_PREFIX)/.stamp-$(NODE_VERSION)
export PATH := $(NODE_PREFIX)/node_modules/node-linux-$(NODE_ARCH)/bin:$(PATH)
endif

include tools/control-plane.mk

.PHONY: setup test-setup synth test test-cluster lint typecheck unit clean validate schema promtool chromium jq chargeback-screenshot node docs

$(NODE_STAMP):
	@command -v npm >/dev/null || { echo "npm not found: install Node.js $(NODE_MIN_MAJOR) or later (it brings npm)"; exit 1; }
	@echo "==> Node $$(node --version 2>/dev/null || echo missing) is older than $(NODE_MIN_MAJOR): installing $(NODE_PACKAGE) into .node/"
	rm -rf $(NODE_PREFIX)
	npm install --prefix $(NODE_PREFIX) --no-save --no-package-lock --no-audit --no-fund --loglevel=error $(NODE_PACKAGE)
	touch $@

# prints the Node that jsii and the CDK CLI run on, and fails on one older than NODE_MIN_MAJOR
node: $(NODE_STAMP)
	@v=$$(node -p process.versions.node) && echo "Node v$$v ($$(command -v node))" \
		&& [ "$${v%%.*}" -ge $(NODE_MIN_MAJOR) ] || { echo "Node $$v is older than $(NODE_MIN_MAJOR)"; exit 1; }

# the package and what synthesis needs (with the plan's extra: `make synth` writes the plan), nothing else
$(VENV)/.stamp: pyproject.toml
	@echo "==> .venv: the package and its plan extra (uv pip install -e '.[plan]')"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile "uv==$(UV_VERSION)"
	$(call UV_INSTALL,$(VENV)) -e ".[plan]"
	touch $@

# the test and lint tools and the package's extras (the chargeback and webhook commands are tested too)
$(VENV)/.test-stamp: $(VENV)/.stamp
	@echo "==> .venv: the extras and the dev group (pytest, cfn-lint, cdk-nag, moto, ruff, mypy, ...)"
	$(call UV_INSTALL,$(VENV)) --group dev -e ".[chargeback,webhook,plan,explain]"
	touch $@

# network-config-analyzer pins PyYAML 6.0.2, cfn-lint needs >=6.0.3: it lives in its own venv.
.venv-nca/.stamp: $(VENV)/.stamp
	@echo "==> .venv-nca: network-config-analyzer"
	$(call UV_VENV,.venv-nca)
	$(call UV_INSTALL,.venv-nca) "network-config-analyzer==2.1.0"
	touch $@

# The HyperPod CLI/SDK (sagemaker-hyperpod, pyproject group hyperpod-sdk) pins pytest, ruff and click versions
# the dev group cannot share: its own venv, run by tests/support/hyperpod_sdk.py as a subprocess. It also pins
# zstandard==0.15.2, which has no wheel for Python 3.11 and compiles for two minutes, yet the CLI and SDK never
# import it: tests/support/hyperpod-sdk-overrides.txt lifts that pin to a release with wheels.
.venv-hyperpod/.stamp: pyproject.toml tests/support/hyperpod-sdk-overrides.txt $(VENV)/.stamp
	@echo "==> .venv-hyperpod: the HyperPod CLI and SDK"
	$(call UV_VENV,.venv-hyperpod)
	$(call UV_INSTALL,.venv-hyperpod) --group hyperpod-sdk --override tests/support/hyperpod-sdk-overrides.txt
	touch $@

# checkov (tests/test_checkov.py) has a large dependency tree of its own: it lives in its own venv too.
CHECKOV_VERSION := 3.3.30
.venv-checkov/.stamp: $(VENV)/.stamp
	@echo "==> .venv-checkov: checkov"
	$(call UV_VENV,.venv-checkov)
	$(call UV_INSTALL,.venv-checkov) "checkov==$(CHECKOV_VERSION)"
	touch $@

node_modules/.stamp: package.json package-lock.json $(NODE_STAMP)
	@echo "==> node_modules: the pinned CDK CLI"
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# promtool checks and unit-tests the chargeback's Prometheus alerting rules (tests/test_chargeback_pipeline.py);
# Debian/Ubuntu ship it in the `prometheus` package. Installed as root on a fresh machine, else say how.
promtool:
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && echo "==> promtool (apt-get install prometheus)" \
		&& apt-get update -qq && apt-get install -y --no-install-recommends prometheus >/dev/null; } \
		|| { echo "promtool missing: run 'sudo apt-get install -y prometheus' (the rule tests fail without it)"; }

# Chromium (headless, driven by Playwright) lays out the chargeback's HTML report in
# tests/test_chargeback_report_browser.py; Debian's `chromium` package. Installed as root on a fresh machine, else
# say how (the browser tests fail without it). After promtool: two apt-gets at once would contend for dpkg's lock.
chromium: | promtool
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && echo "==> chromium (apt-get install chromium)" \
		&& apt-get update -qq && apt-get install -y --no-install-recommends chromium >/dev/null; } \
		|| { echo "chromium missing: run 'sudo apt-get install -y --no-install-recommends chromium' (the report's browser tests fail without it)"; }

# jq runs the offboarding runbook's selectors in tests/test_onboarding.py, as the runbook does; after chromium
# for the same dpkg lock
jq: | chromium
	@command -v jq >/dev/null || { [ "$$(id -u)" = 0 ] && echo "==> jq (apt-get install jq)" \
		&& apt-get update -qq && apt-get install -y --no-install-recommends jq >/dev/null; } \
		|| { echo "jq missing: run 'sudo apt-get install -y jq' (the offboarding runbook test fails without it)"; }

# what `make synth` needs: the venv and the Node side install side by side
setup:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(VENV)/.stamp node_modules/.stamp
	$(MAKE) --no-print-directory node

# what `make test` needs on top: the test venvs are independent of each other, so they install side by side
TEST_SETUP := $(VENV)/.test-stamp .venv-nca/.stamp .venv-hyperpod/.stamp .venv-checkov/.stamp promtool chromium jq \
	$(CONTROL_PLANE)
test-setup: setup
	$(MAKE) --no-print-directory -j4 --output-sync=target $(TEST_SETUP)

# the cloud assembly, then the tenancy plan beside it (cdk.out/plan.md, cdk.out/plan.png)
synth: setup
	npx cdk synth --quiet '**'
	$(VENV)/bin/hyperpod-tenancy plan platform.yaml --markdown cdk.out/plan.md --png cdk.out/plan.png

validate: $(VENV)/.stamp
	$(VENV)/bin/hyperpod-tenancy validate platform.yaml

# JSON Schema of platform.yaml, generated from the policy model (tests fail when it is stale)
schema: $(VENV)/.stamp
	$(PY) -m hyperpod_tenancy.policy.json_schema schema/platform.schema.json

# the docs' screenshot of the reference month's chargeback report (headless Chromium)
chargeback-screenshot: $(VENV)/.test-stamp chromium
	$(PY) tests/support/chargeback_browser.py docs/images/chargeback-report.png

# the documentation site (docs/, Sphinx with MyST) into docs/_build/html, warnings as errors; `make test` builds
# it too (tests/test_docs.py), with its link check and the docs' offline examples
docs: $(VENV)/.test-stamp
	$(VENV)/bin/sphinx-build -W --keep-going -n -q -b html docs docs/_build/html

# `make lint` (typecheck, unit) alone sets up first; `make test` names what each needs instead
CHECKS_AFTER ?= test-setup
LINT_AFTER ?= $(CHECKS_AFTER)
lint: $(LINT_AFTER)
	$(VENV)/bin/ruff check src tests app.py benchmarks
	$(VENV)/bin/ruff format --check src tests app.py benchmarks
	$(VENV)/bin/lint-imports

typecheck: $(LINT_AFTER)
	$(VENV)/bin/mypy

unit: $(CHECKS_AFTER)
	NCA_BIN=$(abspath .venv-nca/bin/nca) HYPERPOD_SDK_PYTHON=$(abspath .venv-hyperpod/bin/python) \
		CHECKOV_BIN=$(abspath .venv-checkov/bin/checkov) $(CONTROL_PLANE_ENV) $(PY) -m pytest -n auto --dist loadfile

# only the tests on the real control plane (pytest -m cluster; docs/testing.md)
test-cluster: $(VENV)/.test-stamp $(CONTROL_PLANE)
	$(CONTROL_PLANE_ENV) $(PY) -m pytest -m cluster

# One make builds what each check needs and runs it as soon as that is there: ruff and mypy need only .venv's
# dev group, so they run while the other test venvs install (network and disk, not CPU); pytest starts when
# every test venv is there, with both cores to itself. Output is interleaved as it comes (pytest shows its
# progress); any of them failing fails `make test`.
test: setup
	$(MAKE) --no-print-directory -j6 lint typecheck unit LINT_AFTER=$(VENV)/.test-stamp CHECKS_AFTER="$(TEST_SETUP)"

clean:
	rm -rf cdk.out $(VENV) .venv-nca .venv-hyperpod .venv-checkov .node node_modules .pytest_cache .mypy_cache .ruff_cache
