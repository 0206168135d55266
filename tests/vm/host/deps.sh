# Host dependencies of the VM suite (sourced by tests/vm/run.sh).
# Guarantees after ensure_packages: qemu-system-x86_64, a Debian linux-image kernel with its
# /lib/modules tree, a static busybox and cpio (the kernel tier), debootstrap and mkfs.ext4 (the
# systemd tier's root and disk image) are present, or the function exits non-zero naming what
# is missing. Installs only as root, and only what `dpkg -s` says is missing.

VM_PACKAGES="qemu-system-x86 linux-image-amd64 busybox-static cpio debootstrap e2fsprogs"

ensure_packages() {
  local missing="" p
  for p in $VM_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "test-vm: missing packages:$missing (run as root, or install them)" >&2
    return 1
  fi
  echo "test-vm: installing$missing" >&2
  apt-get update -qq
  # No recommends: qemu's recommends pull in a GUI stack; the kernel's pull in firmware.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
}

# guest_kernel: sets KVER to the newest kernel that has both /boot/vmlinuz-KVER and
# /lib/modules/KVER (the host's own kernel may have neither: the guest never uses it).
guest_kernel() {
  local k
  KVER=""
  for k in $(ls /lib/modules 2>/dev/null | sort -V); do
    [ -r "/boot/vmlinuz-$k" ] && [ -d "/lib/modules/$k/kernel" ] && KVER=$k
  done
  [ -n "$KVER" ] || { echo "test-vm: no kernel with modules in /boot and /lib/modules" >&2; return 1; }
}

# fetch_irqbalance DIR: unpacks the irqbalance package into DIR (cached) without installing it,
# so no service is started. Sets IRQBALANCE to the binary. Non-fatal: empty IRQBALANCE on failure.
fetch_irqbalance() {
  local dir=$1 deb
  IRQBALANCE=""
  if [ ! -x "$dir/root/usr/sbin/irqbalance" ]; then
    mkdir -p "$dir"
    (cd "$dir" && rm -f irqbalance_*.deb && apt-get download irqbalance >/dev/null 2>&1) || {
      echo "test-vm: apt-get download irqbalance failed; irqbalance comparison skipped" >&2; return 0; }
    deb=$(ls "$dir"/irqbalance_*.deb | head -1)
    dpkg-deb -x "$deb" "$dir/root"
  fi
  IRQBALANCE=$dir/root/usr/sbin/irqbalance
  if ldd "$IRQBALANCE" | grep -q 'not found'; then
    echo "test-vm: irqbalance libraries missing on the host:" >&2
    ldd "$IRQBALANCE" | grep 'not found' >&2
    IRQBALANCE=""
  fi
}

# extract_vmlinux BZIMAGE OUT: the uncompressed vmlinux inside a bzImage, kept only if it is an
# ELF with a PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY, type 0x12), which QEMU boots directly and
# so skips the in-guest decompression (seconds under TCG).
extract_vmlinux() {
  local img=$1 out=$2 fmt magic off
  for fmt in xz zstd gzip; do
    case $fmt in xz) magic='\xfd7zXZ\x00';; zstd) magic='\x28\xb5\x2f\xfd';; gzip) magic='\x1f\x8b\x08';; esac
    for off in $(LC_ALL=C grep -obUaP "$magic" "$img" | cut -d: -f1 | head -5); do
      tail -c +$((off + 1)) "$img" | $fmt -dc 2>/dev/null > "$out.tmp" || true
      if [ "$(head -c 4 "$out.tmp" | od -An -c | tr -d ' ')" = '177ELF' ] &&
         readelf -n "$out.tmp" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'; then
        mv "$out.tmp" "$out"; return 0
      fi
    done
  done
  rm -f "$out.tmp"; return 1
}
