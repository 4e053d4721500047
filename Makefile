# nodeguard.failover: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -euo pipefail -c
# The lab builds its own kubectl (matching its v1.35 control plane) into the binary cache; use it.
K8S_VERSION := $(shell awk '/^\tk8s.io\/kubernetes / {print $$2; exit}' lab/k8s-build/go.mod)
export PATH := $(CURDIR)/.venv/bin:$(or $(NODEGUARD_CACHE),$(HOME)/.cache/nodeguard)/k8s/$(K8S_VERSION)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: demo test setup images lab-images lab-build lab-up lab-down lab-status lab-matrix \
        test-unit test-lint test-sanity test-molecule test-integration test-eda test-release bench \
        ee test-ee

## demo: set up, start the lab, tune it with playbooks/tune_failover.yml and roll the workloads that keep the old tolerations
demo: setup lab-up
	ansible-playbook -i lab/.state/inventory.yml playbooks/tune_failover.yml -e failover_preset=fast -e failover_roll_workloads=true

## test: set up and run every test part; a failing part does not stop the others.
## Ends with one summary line per part and exits non-zero if any part failed.
## The parts in TEST_BESIDE run beside the others (scripts/test-parts.sh): the integration suite mostly
## waits for Kubernetes' timers, so sanity, Molecule, release, unit and lint use the cores meanwhile, niced,
## one after another, each one's output printed whole once it has ended. TEST_BESIDE= runs them in turn.
## TEST_PREPARE is built first, once and side by side: the node image (Molecule and the labs), the labs'
## images (Debian packages) and the lab's Go build, which the integration suite waits for.
TEST_PARTS := test-unit test-lint test-sanity test-release test-molecule test-integration
# unit and lint last: they write caches into the tree (.pytest_cache, .ruff_cache), which the labs copy at their start.
TEST_BESIDE := test-sanity test-molecule test-release test-unit test-lint
TEST_PREPARE := $(if $(filter test-integration,$(TEST_PARTS)),lab-images lab-build)
test: setup
	TEST_BESIDE="$(TEST_BESIDE)" TEST_PREPARE="$(TEST_PREPARE)" TEST_MAKE="$(MAKE)" scripts/test-parts.sh $(TEST_PARTS)

setup:
	scripts/setup.sh

# One node image build at a time (make test's TEST_PREPARE and Molecule beside it may ask at once): flock.
images: setup
	flock /var/lock/nodeguard-node-image.lock scripts/build-node-image.sh

## lab-images: the lab's own images on the node image (control plane, workers, real-kubelet worker); each is
## rebuilt only when its recipe hash changes. The private labs of make test then find them built.
lab-images: images
	lab/controlplane/controlplane.sh image
	lab/workers/workers.sh image
	NODEGUARD_LAB_REAL_KUBELET=1 lab/workers/workers.sh image

lab-build: setup
	lab/scripts/build-k8s.sh

lab-up: lab-build images
	lab/scripts/lab.sh up

lab-down:
	lab/scripts/lab.sh down

lab-status:
	lab/scripts/lab.sh status

## lab-matrix: build the 3 binaries of each version in lab/matrix/go/, start them with the model's profiles, write docs/version-matrix.md (not in make test)
lab-matrix: lab-build
	for module in lab/matrix/go/*/; do nice -n 19 lab/matrix/build.sh "$$(basename "$$module")"; done
	nice -n 19 python lab/matrix/run.py

# pytest exits 5 when it collects no tests: that fails the part on purpose (an empty suite is a broken suite).
test-unit: setup
	pytest -q tests/unit

test-lint: setup
	scripts/lint.sh

test-sanity: setup
	scripts/sanity.sh

test-release: setup
	scripts/release-test.sh

test-molecule: images
	scripts/molecule-all.sh

test-integration: lab-build images
	scripts/integration.sh

bench: lab-build images
	bench/run.sh

## ee: build the execution and decision environments from deploy/ee with ansible-builder (docs/execution-environments.md; not in make test)
ee: setup
	scripts/build-ee.sh

## test-ee: node-outage and node-recover run by ansible-runner inside the execution environment, on a private lab (not in make test)
test-ee: lab-build images ee
	NODEGUARD_LAB_EE_IMAGE=1 NODEGUARD_TEST_LAB=$${NODEGUARD_TEST_LAB:-ngee} scripts/integration.sh -k 'test_execution_environment or test_decision_environment'
