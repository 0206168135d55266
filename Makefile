# irqwise: `make run` shows the plan for this machine, `make test` runs the whole suite.
CARGO ?= cargo
BIN := target/release/irqwise
# Release builds that are installed or packaged run with the builder's paths remapped (the binary
# names none of them, so any checkout builds the same bytes): packaging/release-flags.sh.
RELEASE := packaging/release-flags.sh

.PHONY: run test deps build bench fmt clippy assets deb rpm install uninstall package-test fuzz mutants image

build: deps
	$(RELEASE) $(CARGO) build --release

run: build
	$(BIN) topology
	$(BIN) plan

# Installs missing build dependencies (Debian or Ubuntu, as root); otherwise stops with the exact
# command that installs them.
deps:
	@missing=""; \
	for p in libudev-dev pkg-config ethtool iproute2; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else echo "missing build dependencies; install them with: sudo apt-get install -y$$missing" >&2; exit 1; fi; \
	fi

# Style first (formatting, then clippy with warnings as errors), then every test target, then the
# Kubernetes manifest and Helm chart rendered (Helm's template engine, Go text/template) and
# validated against the Kubernetes API types (tests/k8s/check.sh).
test: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --all-targets --no-fail-fast && $(CARGO) test --doc; \
	else $(CARGO) test --all-targets --no-fail-fast; fi
	tests/k8s/check.sh

# Hostile input at length: 500 mutated fixture roots through the real plan, topology and apply
# (every --json output checked to be valid JSON whatever bytes the names hold), and
# 10,000 cases of each parser property (make test runs the same tests with 24 and 256 cases).
fuzz: deps
	IRQWISE_FUZZ_CASES=500 PROPTEST_CASES=10000 $(CARGO) test --release --test fuzz_roots --test parser_props -- --nocapture

bench: deps
	$(CARGO) bench --bench spreading
	$(CARGO) bench --bench plan
	$(CARGO) bench --bench daemon
	$(CARGO) bench --bench scale

# Mutation testing of the pure core (scripts/mutants.sh; cargo-mutants installed when missing).
# Hours for the whole core on 2 CPUs; MUTANTS_FILES="src/plan/guard.rs" for one file.
mutants: deps
	scripts/mutants.sh

fmt:
	$(CARGO) fmt --all

clippy:
	$(CARGO) clippy --all-targets -- -D warnings

# --- Packaging (issue 7) ------------------------------------------------------------------------
# Generated assets and packages live in the project's target/ (the paths Cargo.toml's package
# metadata names); the compiled binary in $(CARGO_TARGET_DIR) when set.
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
ASSETS := target/assets
PACKAGES := target/packages
PREFIX ?= /usr
DESTDIR ?=

# Man page irqwise.8 (+ .gz) and bash/zsh/fish completions, generated from the clap definition.
assets:
	$(CARGO) run --quiet --example gen-assets -- $(ASSETS)
	gzip -9nkf $(ASSETS)/irqwise.8

# .deb with cargo-deb (installed when missing): stripped binary, unit, config, man, completions.
deb: deps assets
	@$(CARGO) deb --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-deb
	mkdir -p $(PACKAGES) && rm -f $(PACKAGES)/*.deb
	$(RELEASE) $(CARGO) deb --output $(PACKAGES)/

# An OCI image archive of the .deb (offline: no registry, no runtime): `podman load -i` it. The same
# bytes from any checkout, builder and umask (packaging/image/check.sh, run by package-test).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
image: deb
	packaging/image/build.sh $$(ls -t $(PACKAGES)/irqwise_*.deb | head -1) target/image/irqwise-$(VERSION).oci.tar

# .rpm with cargo-generate-rpm (installed when missing); it neither builds nor strips, so we do.
# Installed as a debug build: its release build took 2 min 21 s of a clean CI run; the
# debug build needs 2 min 5 s of CPU, and packs the .rpm in 8 s instead of 2.5 s. The payload is
# byte for byte the same (rpm2cpio of both).
rpm: deps assets
	@$(CARGO) generate-rpm --version >/dev/null 2>&1 || $(CARGO) install --locked --debug cargo-generate-rpm
	$(RELEASE) $(CARGO) build --release
	strip --strip-all $(TARGET_DIR)/release/irqwise
	mkdir -p $(PACKAGES) && rm -f $(PACKAGES)/*.rpm
	$(CARGO) generate-rpm --output $(PACKAGES)/

# The same files as the packages, below $(DESTDIR)$(PREFIX) and $(DESTDIR)/etc. Does not enable or
# start anything: run `systemctl daemon-reload && systemctl enable --now irqwise` afterwards.
install: build assets
	install -D -m 755 $(TARGET_DIR)/release/irqwise $(DESTDIR)$(PREFIX)/sbin/irqwise
	strip --strip-all $(DESTDIR)$(PREFIX)/sbin/irqwise
	install -D -m 644 systemd/irqwise.service $(DESTDIR)$(PREFIX)/lib/systemd/system/irqwise.service
	sed -i 's|/usr/sbin/irqwise|$(PREFIX)/sbin/irqwise|' $(DESTDIR)$(PREFIX)/lib/systemd/system/irqwise.service
	install -D -m 644 systemd/irqwise.catalog $(DESTDIR)$(PREFIX)/lib/systemd/catalog/irqwise.catalog
	@if [ -z "$(DESTDIR)" ] && command -v journalctl >/dev/null 2>&1; then journalctl --update-catalog; \
	else echo "run journalctl --update-catalog on the target so journalctl -x explains irqwise's entries"; fi
	@if [ -e $(DESTDIR)/etc/irqwise/irqwise.toml ]; then echo "keeping existing $(DESTDIR)/etc/irqwise/irqwise.toml"; \
	else install -D -m 644 config/irqwise.toml $(DESTDIR)/etc/irqwise/irqwise.toml; fi
	install -d -m 755 $(DESTDIR)/etc/irqwise/conf.d
	install -d -m 755 $(DESTDIR)$(PREFIX)/share/doc/irqwise/examples
	install -m 644 config/conf.d/*.toml.example $(DESTDIR)$(PREFIX)/share/doc/irqwise/examples/
	install -D -m 644 $(ASSETS)/irqwise.8.gz $(DESTDIR)$(PREFIX)/share/man/man8/irqwise.8.gz
	install -D -m 644 $(ASSETS)/completions/irqwise.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/irqwise
	install -D -m 644 $(ASSETS)/completions/_irqwise $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_irqwise
	install -D -m 644 $(ASSETS)/completions/irqwise.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/irqwise.fish

# Removes what `install` put there, except the configuration in /etc/irqwise.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/irqwise $(DESTDIR)$(PREFIX)/lib/systemd/system/irqwise.service \
		$(DESTDIR)$(PREFIX)/lib/systemd/catalog/irqwise.catalog \
		$(DESTDIR)$(PREFIX)/share/man/man8/irqwise.8.gz \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/irqwise \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_irqwise \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/irqwise.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/irqwise

# CI: build both packages, install/verify/purge the .deb on this machine (root, Debian), list the
# .rpm, build the image of the .deb from here and from a clone elsewhere under another umask (one
# digest; packaging/image/check.sh). One PASS/FAIL line per check; non-zero exit on any failure.
package-test: deb rpm
	bash packaging/package-test.sh $(PACKAGES)

# Real-kernel end-to-end suite (tests/vm/): boots Debian's stock kernel in QEMU (2 NUMA nodes,
# NVMe, vmxnet3), runs `irqwise run` through CPU/link/device hot-plug and SIGHUP, compares with
# irqbalance; then installs the .deb (make deb) in a debootstrapped Debian 12 guest and checks the
# unit under systemd as PID 1. Installs qemu-system-x86, linux-image-amd64, busybox-static, cpio,
# debootstrap, e2fsprogs when root.
.PHONY: test-vm
test-vm:
	tests/vm/run.sh
