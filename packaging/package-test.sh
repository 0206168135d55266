#!/usr/bin/env bash
# Package test (CI, as root on Debian): installs the built .deb on this machine, checks what it put
# where, purges it and checks everything is gone; lists the .rpm and checks its contents; builds
# the OCI image of the .deb twice, from two checkouts under two umasks, and compares them.
# Usage: packaging/package-test.sh PACKAGE_DIR   (run by `make package-test` after `make deb rpm`)
set -uo pipefail

dir=${1:?usage: package-test.sh PACKAGE_DIR}
failures=0

. "$(dirname "$0")/check-lib.sh"

# Succeeds when a command prints nothing on stderr (and exits 0); stderr is shown on failure.
quiet_stderr() {
	local err
	err=$("$@" 2>&1 >/dev/null) || { echo "$err"; return 1; }
	[ -z "$err" ] || { echo "$err"; return 1; }
}

# rpm_scriptlet_parses RPM TAG: the scriptlet TAG (PREIN, POSTIN, ...) is absent, or has /bin/sh
# as its interpreter and parses with sh -n.
rpm_scriptlet_parses() {
	local body prog
	body=$(rpm -qp --qf "%{$2}" "$1" 2>/dev/null)
	[ "$body" = "(none)" ] && return 0
	prog=$(rpm -qp --qf "%{${2}PROG}" "$1" 2>/dev/null)
	# No interpreter tag means /bin/sh, rpm's default.
	[ "$prog" = /bin/sh ] || [ "$prog" = "(none)" ] || { echo "interpreter: $prog"; return 1; }
	sh -n <<<"$body"
}

# same_unit RPM DEB: the unit file in both packages is byte for byte the tree's.
same_unit() {
	local unit=usr/lib/systemd/system/irqwise.service tree rpm_unit deb_unit dir
	dir=$(mktemp -d) && trap 'rm -rf "$dir"' RETURN
	tree=$(cd "$(dirname "$0")/.." && pwd)/systemd/irqwise.service
	# Whole archives first: a reader that stops after the one file would fail the pipe (pipefail).
	# rpm2cpio 4.18 (Debian 12) exits 1 after writing a complete archive: its status says nothing,
	# the file extracted from the archive does.
	rpm2cpio "$1" > "$dir/rpm.cpio" || true
	dpkg-deb --fsys-tarfile "$2" > "$dir/deb.tar" || return 1
	rpm_unit=$(cpio -i --quiet --to-stdout "./$unit" < "$dir/rpm.cpio") && [ -n "$rpm_unit" ] ||
		{ echo "no $unit in the .rpm"; return 1; }
	deb_unit=$(tar -xOf "$dir/deb.tar" "./$unit") || return 1
	[ "$rpm_unit" = "$(cat "$tree")" ] || { echo "the .rpm's unit differs from $tree"; diff <(echo "$rpm_unit") "$tree"; return 1; }
	[ "$deb_unit" = "$(cat "$tree")" ] || { echo "the .deb's unit differs from $tree"; diff <(echo "$deb_unit") "$tree"; return 1; }
}

absent() { for p in "$@"; do [ ! -e "$p" ] && [ ! -L "$p" ] || { echo "still present: $p"; return 1; }; done; }

deb=$(ls -t "$dir"/irqwise_*.deb 2>/dev/null | head -n 1)
rpmfile=$(ls -t "$dir"/irqwise-*.rpm 2>/dev/null | head -n 1)
check "a .deb was built ($deb)" test -f "$deb"
check "an .rpm was built ($rpmfile)" test -f "$rpmfile"

unit=/usr/lib/systemd/system/irqwise.service
wants=/etc/systemd/system/multi-user.target.wants/irqwise.service
installed=(/usr/sbin/irqwise "$unit" /etc/irqwise/irqwise.toml /usr/share/man/man8/irqwise.8.gz
	/usr/lib/systemd/catalog/irqwise.catalog
	/usr/share/bash-completion/completions/irqwise /usr/share/zsh/vendor-completions/_irqwise
	/usr/share/fish/vendor_completions.d/irqwise.fish
	/usr/share/doc/irqwise/examples/50-latency.toml.example
	/usr/share/doc/irqwise/examples/oci-hook-irqwise-claim
	/usr/share/doc/irqwise/examples/oci-hook-irqwise-claim.json
	/usr/share/irqwise/prometheus/irqwise-rules.yml /usr/share/irqwise/grafana/irqwise-dashboard.json
	/usr/share/irqwise/schemas/plan.schema.json /usr/share/irqwise/schemas/status.schema.json)

# --- .deb: install, verify, purge ---------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
	echo "FAIL: installing the .deb needs root (CI runs as root)"
	failures=$((failures + 1))
elif [ -f "$deb" ]; then
	if dpkg -s irqwise >/dev/null 2>&1; then
		echo "note: irqwise was installed already; purging it first"
		dpkg --purge irqwise >/dev/null
	fi
	check "dpkg -i $(basename "$deb")" dpkg -i "$deb"
	version=$(dpkg-deb -f "$deb" Version)
	check "irqwise --version prints the package's version" \
		bash -c "/usr/sbin/irqwise --version | grep -qx 'irqwise ${version%-*}'"
	check "the installed binary is stripped" bash -c "! readelf -S /usr/sbin/irqwise | grep -q '\.symtab'"
	for f in "${installed[@]}"; do check "installed: $f" test -f "$f"; done
	check "the unit is reachable as /lib/systemd/system/irqwise.service" test -f /lib/systemd/system/irqwise.service
	check "systemd-analyze verify of the installed unit: nothing on stderr" quiet_stderr systemd-analyze verify "$unit"
	check "/etc/irqwise/irqwise.toml is a conffile" \
		bash -c "dpkg-query -W -f='\${Conffiles}' irqwise | grep -q ' /etc/irqwise/irqwise.toml '"
	check "/etc/irqwise/conf.d/ exists and is empty" bash -c '[ -d /etc/irqwise/conf.d ] && [ -z "$(ls -A /etc/irqwise/conf.d)" ]'
	check "the shipped configuration passes check-config" /usr/sbin/irqwise check-config /etc/irqwise/irqwise.toml
	check "postinst enabled the unit (multi-user.target.wants link)" test -L "$wants"
	check "man page decompresses" bash -c 'zcat /usr/share/man/man8/irqwise.8.gz | grep -q "^\.TH irqwise 8"'
	check "man -l renders it without warnings" quiet_stderr env MANWIDTH=80 man --warnings -l /usr/share/man/man8/irqwise.8.gz
	check "man finds it by name (man -w 8 irqwise)" bash -c 'man -w 8 irqwise | grep -q irqwise.8'
	check "bash completion loads" bash -c 'source /usr/share/bash-completion/completions/irqwise && complete -p irqwise'
	# systemd's dpkg trigger on /usr/lib/systemd/catalog ran journalctl --update-catalog.
	check "journalctl knows the catalog (MAPPING_APPLIED explained)" \
		bash -c 'journalctl --list-catalog 8ecce3473d944b3c8c6fde38160ae753 | grep -q "irqwise: IRQ @IRQ@ moved to CPUs"'

	check "dpkg --purge irqwise" dpkg --purge irqwise
	check "purged: package unknown to dpkg" bash -c '! dpkg -s irqwise >/dev/null 2>&1'
	check "purged: every installed file is gone" absent "${installed[@]}" /etc/irqwise "$wants" /usr/share/doc/irqwise
fi

# --- make install: the unit follows PREFIX -----------------------------------------------------
stage=$(mktemp -d)
if make -s -C "$(dirname "$0")/.." install DESTDIR="$stage" PREFIX=/usr/local >/dev/null 2>&1; then
	staged_unit=$stage/usr/local/lib/systemd/system/irqwise.service
	check "make install PREFIX=/usr/local: ExecStart= and ExecReload= run /usr/local/sbin/irqwise" \
		bash -c "[ \$(grep -c '^Exec[A-Za-z]*=/usr/local/sbin/irqwise ' '$staged_unit') = 2 ] && ! grep -q '/usr/sbin/irqwise' '$staged_unit'"
else
	echo "FAIL: make install DESTDIR=$stage PREFIX=/usr/local"
	failures=$((failures + 1))
fi
rm -rf "$stage"

# --- .rpm: contents and scriptlets ---------------------------------------------------------------
if ! command -v rpm >/dev/null 2>&1 || ! command -v cpio >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rpm cpio >/dev/null
	fi
fi
if [ -f "$rpmfile" ] && command -v rpm >/dev/null 2>&1; then
	list=$(rpm -qlp "$rpmfile" 2>/dev/null)
	for f in /usr/sbin/irqwise /usr/lib/systemd/system/irqwise.service /etc/irqwise/irqwise.toml \
		/usr/share/man/man8/irqwise.8.gz /usr/share/bash-completion/completions/irqwise \
		/usr/share/zsh/site-functions/_irqwise /usr/share/fish/vendor_completions.d/irqwise.fish \
		/usr/share/doc/irqwise/examples/50-latency.toml.example /usr/lib/systemd/catalog/irqwise.catalog \
		/usr/share/doc/irqwise/examples/oci-hook-irqwise-claim /usr/share/irqwise/prometheus/irqwise-rules.yml \
		/usr/share/irqwise/grafana/irqwise-dashboard.json /usr/share/irqwise/schemas/plan.schema.json; do
		check "rpm lists $f" grep -qxF "$f" <<<"$list"
	done
	check "rpm: /etc/irqwise/irqwise.toml is %config(noreplace)" \
		bash -c "rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' '$rpmfile' 2>/dev/null | grep -qx '/etc/irqwise/irqwise.toml cn'"
	check "rpm: scriptlets (conf.d and preset on install, disable --now on erase)" \
		bash -c "s=\$(rpm -qp --scripts '$rpmfile' 2>/dev/null); grep -q 'systemctl preset irqwise.service' <<<\"\$s\" && grep -q 'disable --now irqwise.service' <<<\"\$s\" && grep -q 'mkdir -p /etc/irqwise/conf.d' <<<\"\$s\""
	# Each scriptlet as the package carries it: run by /bin/sh, and sh -n parses it.
	for tag in PREIN POSTIN PREUN POSTUN; do
		check "rpm: %{$tag} scriptlet (if any) runs under /bin/sh and parses (sh -n)" rpm_scriptlet_parses "$rpmfile" "$tag"
	done
	check "rpm and deb carry the same unit file, which is systemd/irqwise.service" same_unit "$rpmfile" "$deb"
elif [ -f "$rpmfile" ]; then
	echo "FAIL: rpm is not installed (apt-get install rpm)"
	failures=$((failures + 1))
fi

# --- make image: one image from any checkout and umask, its JSON written by a JSON writer -------
# (packaging/image/check.sh: its own PASS/FAIL lines; a few seconds on the .deb just built)
if [ -f "$deb" ] && ! bash "$(dirname "$0")/image/check.sh" "$deb"; then
	failures=$((failures + 1))
fi

if [ "$failures" -eq 0 ]; then
	echo "package-test: PASS"
else
	echo "package-test: FAIL ($failures failed checks)"
	exit 1
fi
