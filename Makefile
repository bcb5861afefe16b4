# The collection's developer and CI entry points. `make test` runs everything
# on a fresh Debian 12 machine: it makes the venv, links the collection where
# ansible finds it, starts a Docker engine, then runs every suite.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
# The steps of `test` build on each other; they never run side by side.
.NOTPARALLEL:

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What the modules need, then what the tests and linters need.
REQUIREMENTS := requirements.txt tests/requirements.txt
# The oldest ansible-core the collection supports, in a virtualenv of its own.
VENV_OLDEST := .venv-2.18
REQUIREMENTS_OLDEST := requirements.txt tests/requirements-2.18.txt
COLLECTIONS := .cache/collections
LINK := $(COLLECTIONS)/ansible_collections/col_agents/tx9

# pip trusts the host's CA bundle (TLS to PyPI may be inspected).
CA_BUNDLE := /etc/ssl/certs/ca-certificates.crt
ifeq ($(origin PIP_CERT),undefined)
ifneq ($(wildcard $(CA_BUNDLE)),)
export PIP_CERT := $(CA_BUNDLE)
endif
endif
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: test venv venv-2.18 collection-link engine image unit unit-2.18 static sanity sanity-2.18 lint python-checks \
	galaxy-import docs-lint docs integration test-fleet fleet-a fleet-b soak \
	fleet-halves bench create-box clean

# The suites that `test` runs; a narrower path runs part of one (make test FLEET_TESTS=tests/fleet/test_bed.py).
INTEGRATION_TESTS ?= tests/integration
FLEET_TESTS ?=
# Without FLEET_TESTS the fleet suite runs in two halves side by side, each on a bed of its own
# (slots 0 and 1; the molecule scenarios read slot 0's inventory).
FLEET_A := tests/fleet/test_backups.py tests/fleet/test_bed.py tests/fleet/test_distribute.py \
	tests/fleet/test_inventory.py tests/fleet/test_molecule.py tests/fleet/test_tools.py tests/fleet/test_link_drop.py \
	tests/fleet/test_engine_death.py tests/fleet/test_arrived_moves.py
FLEET_B := tests/fleet/test_fleet_from_nothing.py tests/fleet/test_migrate.py tests/fleet/test_upgrade.py \
	tests/fleet/test_egress.py tests/fleet/test_precopy_moves.py tests/fleet/test_two_controllers.py \
	tests/fleet/test_import_faults.py
SIDE_BY_SIDE := MAKE="$(MAKE)" scripts/side-by-side.sh

# Unit tests first (a quick verdict), then the box image; then two streams side by side, each
# pairing a suite that mostly waits on an engine with one that keeps the CPU busy: integration
# (this machine's engine), then the first fleet half; sanity and lint, then the second half.
# scripts/side-by-side.sh prints each target's output whole as it ends.
test: venv collection-link engine unit image
ifneq ($(strip $(FLEET_TESTS)),)
	@$(SIDE_BY_SIDE) integration static+test-fleet
else
	@$(SIDE_BY_SIDE) integration+fleet-a static+fleet-b
endif

# The static checks, and what the oldest supported ansible-core (2.18) makes of the collection:
# its unit tests and sanity run in .venv-2.18 (the newest, 2.19, runs everywhere else; 2.20 and later
# need a Python newer than this machine's 3.11). The docs site is built here too, so that a page
# that stops building fails the suite.
static: sanity lint python-checks galaxy-import docs-lint docs unit-2.18 sanity-2.18

# galaxy-importer, the checks Galaxy and Automation Hub run on upload, on the built tarball
# (tests/galaxy-importer.cfg); any ERROR or WARNING line fails.
galaxy-import: venv collection-link
	scripts/galaxy-import.sh

# The docs as antsibull-docs reads them (markup, references between plugins and roles, links.yml),
# and the changelog fragments as antsibull-changelog reads them.
docs-lint: venv collection-link
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/antsibull-docs lint-collection-docs --plugin-docs .
	$(BIN)/antsibull-changelog lint

# The HTML documentation site (.cache/docsite/build/html); any Sphinx warning fails it.
docs: venv collection-link
	scripts/docs.sh

# ruff (lint and format) and mypy (pyproject.toml) over the collection's Python and the guest runtime;
# the tests get ruff's pyflakes rules (names that are unused, undefined or defined twice).
PYTHON_TREES := plugins assets/guest
python-checks: venv collection-link
	$(BIN)/ruff check --no-cache $(PYTHON_TREES)
	$(BIN)/ruff check --no-cache --select F tests
	$(BIN)/ruff format --no-cache --check $(PYTHON_TREES)
	$(BIN)/mypy -p ansible_collections.col_agents.tx9.plugins -p tx9guest

# Reinstalls only when the requirements files' content differs from the one installed.
define make_venv
	@want=$$(cat $(2) | sha256sum | cut -d' ' -f1); \
	if [ -x $(1)/bin/python ] && [ "$$(cat $(1)/.requirements.sha256 2>/dev/null)" = "$$want" ]; then \
		echo "venv: $(1) is up to date with $(2)"; \
	else \
		[ -x $(1)/bin/python ] || $(PYTHON) -m venv $(1); \
		$(1)/bin/python -m pip install --quiet $(addprefix -r ,$(2)); \
		echo "$$want" > $(1)/.requirements.sha256; \
		echo "venv: installed $(2) into $(1)"; \
	fi
endef

venv:
	$(call make_venv,$(VENV),$(REQUIREMENTS))

venv-2.18:
	$(call make_venv,$(VENV_OLDEST),$(REQUIREMENTS_OLDEST))

collection-link:
	@mkdir -p $(dir $(LINK))
	@if [ "$$(readlink $(LINK) 2>/dev/null)" != "$(CURDIR)" ]; then \
		rm -rf $(LINK); ln -s $(CURDIR) $(LINK); \
	fi
	@echo "collection-link: $(LINK) -> $(CURDIR)"

engine:
	roles/tx9_host/files/ensure-docker.sh

# The box image, built through the real playbook once before the suites that use it start
# (a no-op when the engine has it built from these assets).
image: venv collection-link engine
	$(BIN)/ansible-playbook playbooks/build-image.yml

unit: venv collection-link
	$(BIN)/pytest tests/unit -q --timeout=300

sanity: venv collection-link
	scripts/sanity.sh

unit-2.18: venv-2.18 collection-link
	$(VENV_OLDEST)/bin/pytest tests/unit -q --timeout=300 -p no:cacheprovider

sanity-2.18: venv-2.18 collection-link
	VENV=$(CURDIR)/$(VENV_OLDEST) scripts/sanity.sh

lint: venv collection-link
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/ansible-lint

integration: venv collection-link engine
	$(BIN)/pytest $(INTEGRATION_TESTS) -x -v --durations=15

# The multi-host test bed only (tests/fleet, docs/testing.md): hosts in their own
# namespaces on this machine, driven over SSH, with the molecule scenarios of
# extensions/molecule run on it (tests/fleet/test_molecule.py); torn down at the end.
test-fleet: venv collection-link engine
ifneq ($(strip $(FLEET_TESTS)),)
	$(BIN)/pytest $(FLEET_TESTS) -x -v --durations=15
else
	@$(MAKE) --no-print-directory fleet-halves
	@$(SIDE_BY_SIDE) fleet-a fleet-b
endif

# Every fleet test file belongs in one half.
fleet-halves:
	@[ "$(sort $(wildcard tests/fleet/test_*.py))" = "$(sort $(FLEET_A) $(FLEET_B))" ] || \
		{ echo "test-fleet: every tests/fleet/test_*.py belongs in FLEET_A or FLEET_B of the Makefile"; exit 1; }

fleet-a: venv collection-link engine fleet-halves
	TX9_FLEET_SLOT=0 $(BIN)/pytest $(FLEET_A) -x -v --durations=15 -p no:cacheprovider

fleet-b: venv collection-link engine fleet-halves
	TX9_FLEET_SLOT=1 $(BIN)/pytest $(FLEET_B) -x -v --durations=15 -p no:cacheprovider

# The benchmarks, in order: the box no-op one, backup, import, migrate and upgrade
# (each on a fleet bed of its own, slot TX9_FLEET_SLOT, default 9), then egress
# (a confined box against an open one); each runs even when an earlier one failed,
# and bench fails when any did.
bench: venv collection-link
	@status=0; \
	$(BIN)/python tests/bench/run.py || status=1; \
	$(BIN)/python tests/bench/backup_bench.py || status=1; \
	$(BIN)/python tests/bench/import_bench.py || status=1; \
	$(BIN)/python tests/bench/migrate_bench.py --relayed || status=1; \
	$(BIN)/python tests/bench/upgrade_bench.py || status=1; \
	$(BIN)/python tests/bench/egress_bench.py || status=1; \
	$(BIN)/python tests/bench/tools_bench.py || status=1; \
	exit $$status

# Thirty cycles of a box's life over a fleet bed (tests/soak/soak.py; not part of test): what is left
# behind afterwards, and whether a cycle's time or memory grows.
soak: venv collection-link
	$(BIN)/python tests/soak/soak.py

create-box: venv collection-link engine
	$(BIN)/ansible-playbook playbooks/create-box.yml $(if $(BOX),-e box_name=$(BOX))

clean:
	rm -rf $(VENV) $(VENV_OLDEST) .cache tests/output .pytest_cache
