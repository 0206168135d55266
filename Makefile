# irqwise: `make run` shows the plan for this machine, `make test` runs the whole suite.
CARGO ?= cargo
BIN := target/release/irqwise

.PHONY: run test deps build bench fmt clippy

build:
	$(CARGO) build --release

run: build
	$(BIN) topology
	$(BIN) plan

# Installs missing build dependencies (Debian, as root), then runs every test target.
deps:
	@missing=""; \
	for p in libudev-dev pkg-config; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else echo "missing build dependencies:$$missing (run as root or install them)" >&2; exit 1; fi; \
	fi

test: deps
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --all-targets --no-fail-fast && $(CARGO) test --doc; \
	else $(CARGO) test --all-targets --no-fail-fast; fi

bench: deps
	$(CARGO) bench --bench spreading

fmt:
	$(CARGO) fmt --all

clippy:
	$(CARGO) clippy --all-targets -- -D warnings

# Real-kernel end-to-end suite (tests/vm/): boots Debian's stock kernel in QEMU (2 NUMA nodes,
# NVMe, vmxnet3), runs `irqwise run` through CPU/link/device hot-plug and SIGHUP, compares with
# irqbalance. Installs qemu-system-x86, linux-image-amd64, busybox-static, cpio when root.
.PHONY: test-vm
test-vm:
	tests/vm/run.sh
