# Host dependencies of the VM suite (sourced by tests/vm/run.sh).
# Guarantees after ensure_packages: qemu-system-x86_64, a Debian linux-image kernel with its
# /lib/modules tree, a static busybox and cpio (the kernel tier), debootstrap and mkfs.ext4 (the
# systemd tier's root and disk image), kmod and xz-utils (modules of the archive's kernels,
# .ko.xz), ethtool and libc6-dev (the guest's ethtool and static tools) are present, or the
# function exits non-zero naming what is missing. Installs only as root, and only what `dpkg -s` says is missing.

VM_PACKAGES="qemu-system-x86 linux-image-amd64 busybox-static cpio debootstrap e2fsprogs kmod ethtool xz-utils libc6-dev"

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
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $missing >&2
}

# guest_kernel: sets KVER to Debian 12's default kernel (the release linux-image-amd64 depends
# on: 6.1), KIMG to its image and MODBASE to / (its modules are installed). Falls back to the
# newest kernel that has both /boot/vmlinuz-KVER and /lib/modules/KVER (the host's own kernel may
# have neither: the guest never uses it).
guest_kernel() {
  local k dep
  KVER="" MODBASE=/
  dep=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null | grep -o 'linux-image-[^ ,]*' | head -1)
  k=${dep#linux-image-}
  if [ -n "$k" ] && [ -r "/boot/vmlinuz-$k" ] && [ -d "/lib/modules/$k/kernel" ]; then
    KVER=$k
  else
    for k in $(ls /lib/modules 2>/dev/null | sort -V); do
      [ -r "/boot/vmlinuz-$k" ] && [ -d "/lib/modules/$k/kernel" ] && KVER=$k
    done
  fi
  [ -n "$KVER" ] || { echo "test-vm: no kernel with modules in /boot and /lib/modules" >&2; return 1; }
  KIMG=/boot/vmlinuz-$KVER
}

# KERNEL_612_META: the package that names Debian 12's current 6.12 kernel (linux-image-6.12.*+deb12-amd64).
KERNEL_612_META=linux-image-6.12-amd64

# second_kernel DIR: the 6.12 kernel package unpacked below DIR (cached there), not installed:
# installing it would make it the host's default kernel and run update-initramfs for nothing.
# Sets KVER, KIMG (its vmlinuz) and MODBASE (DIR/root, holding lib/modules/KVER with the
# modules.dep depmod wrote). Fails naming what is missing.
second_kernel() {
  local dir=$1 pkg
  pkg=$(apt-cache depends "$KERNEL_612_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.12/ { print $2; exit }')
  if [ -z "$pkg" ]; then
    [ "$(id -u)" = 0 ] && apt-get update -qq >&2
    pkg=$(apt-cache depends "$KERNEL_612_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.12/ { print $2; exit }')
  fi
  [ -n "$pkg" ] || { echo "test-vm: apt-cache knows no $KERNEL_612_META (Debian 12 archive or bookworm-backports)" >&2; return 1; }
  KVER=${pkg#linux-image-} MODBASE=$dir/root KIMG=$dir/root/boot/vmlinuz-${pkg#linux-image-}
  unpacked_kernel "$dir" "$pkg" "$KVER"
}

# unpacked_kernel DIR PKG KVER: the kernel package PKG (apt-get download's name, with :ARCH for a
# foreign one) unpacked below DIR/root with depmod's modules.dep for KVER; reused when already
# there. Fails naming what is missing.
unpacked_kernel() {
  local dir=$1 pkg=$2 kver=$3 deb
  if [ ! -r "$dir/root/boot/vmlinuz-$kver" ] || [ ! -e "$dir/root/lib/modules/$kver/modules.dep" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    (cd "$dir" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "test-vm: apt-get download $pkg failed" >&2; return 1; }
    deb=$(ls "$dir"/linux-image-*.deb | head -1)
    dpkg-deb -x "$deb" "$dir/root" && rm -f "$deb"
    depmod -b "$dir/root" "$kver" || { echo "test-vm: depmod -b $dir/root $kver failed" >&2; return 1; }
  fi
  [ -r "$dir/root/boot/vmlinuz-$kver" ] || { echo "test-vm: $pkg has no /boot/vmlinuz-$kver" >&2; return 1; }
}

# Kernels newer than Debian 12's come from Debian's own archive by package name: unstable
# (`sid`) for the current 7.x, trixie-backports for 6.16-6.18. apt runs on a private state below
# the cache (its own sources.list, lists and package cache, amd64 and arm64 listed as APT
# architectures), so the host's sources, lists and dpkg architectures stay as they are.
ARCHIVE_MIRROR=${IRQWISE_VM_ARCHIVE_MIRROR:-http://deb.debian.org/debian}

# archive_apt DIR SUITE: sets APT (apt options for SUITE's main component) and fetches its package
# lists into DIR when they are missing or older than ARCHIVE_LISTS_MIN minutes (default 360).
archive_apt() {
  local dir=$1 suite=$2
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $ARCHIVE_MIRROR $suite main" > "$dir/sources.list"
  APT=(-o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$dir/lists"
    -o Dir::Cache="$dir/cache" -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
  if [ -z "$(find "$dir/lists" -maxdepth 1 -name '*_Packages' -mmin -"${ARCHIVE_LISTS_MIN:-360}" 2>/dev/null)" ]; then
    archive_update "$dir" "$suite" || return 1
  fi
}

# archive_update DIR SUITE: fetches the lists of archive_apt's state anew.
archive_update() {
  apt-get "${APT[@]}" update -qq >"$1/update.log" 2>&1 ||
    { echo "test-vm: apt-get update of $ARCHIVE_MIRROR $2 failed (a private state in $1):" >&2; tail -3 "$1/update.log" >&2; return 1; }
}

# archive_kernel DIR SUITE ARCH: the current kernel of SUITE for ARCH (what the suite's
# linux-image-ARCH depends on, found anew from the archive), unpacked below DIR/KVER/root with
# depmod's modules.dep; reused when already there. Since 6.17 Debian splits the image in three:
# linux-binary-KVER (usr/lib/modules/KVER/vmlinuz), linux-modules-KVER (the .ko.xz) and
# linux-base-KVER (config, modules.builtin: without it modinfo cannot tell a built-in driver from
# a missing one); an older unsplit linux-image-KVER (boot/vmlinuz-KVER) works too. Sets ARCHIVE_KVER,
# ARCHIVE_KIMG, ARCHIVE_MODBASE. Fails naming what could not be fetched.
archive_kernel() {
  local dir=$1 suite=$2 arch=$3 pkg kver parts root try
  archive_apt "$dir/apt-$suite" "$suite" || return 1
  for try in 1 2; do
    pkg=$(apt-cache "${APT[@]}" depends "linux-image-$arch:$arch" 2>/dev/null |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { sub(/:.*$/, "", $2); print $2; exit }')
    [ -n "$pkg" ] || { echo "test-vm: $ARCHIVE_MIRROR $suite lists no linux-image-$arch:$arch" >&2; return 1; }
    kver=${pkg#linux-image-} root=$dir/$kver/root
    if [ -r "$root/lib/modules/$kver/modules.dep" ]; then break; fi
    parts=$(apt-cache "${APT[@]}" depends "$pkg:$arch" 2>/dev/null |
      awk -v k="$kver" '$1 == "Depends:" { sub(/:.*$/, "", $2) } $1 == "Depends:" && ($2 == "linux-binary-" k || $2 == "linux-modules-" k || $2 == "linux-base-" k) { print $2 }')
    rm -rf "$dir/$kver"; mkdir -p "$dir/$kver/debs"
    if (cd "$dir/$kver/debs" && apt-get "${APT[@]}" download $(for p in "$pkg" $parts; do echo "$p:$arch"; done) >"$dir/$kver/download.log" 2>&1); then
      local deb
      for deb in "$dir/$kver"/debs/*.deb; do dpkg-deb -x "$deb" "$root" || return 1; done
      rm -rf "$dir/$kver/debs"
      [ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
      depmod -b "$root" "$kver" || { echo "test-vm: depmod -b $root $kver failed" >&2; return 1; }
      break
    fi
    # The archive replaced the version since the lists were fetched: fetch them anew, once.
    [ $try = 1 ] || { echo "test-vm: apt-get download $pkg $parts ($arch, $suite) failed:" >&2; tail -3 "$dir/$kver/download.log" >&2; return 1; }
    archive_update "$dir/apt-$suite" "$suite" || return 1
  done
  ARCHIVE_KVER=$kver ARCHIVE_MODBASE=$root ARCHIVE_KIMG=$root/boot/vmlinuz-$kver
  [ -r "$ARCHIVE_KIMG" ] || ARCHIVE_KIMG=$root/lib/modules/$kver/vmlinuz
  [ -r "$ARCHIVE_KIMG" ] || { echo "test-vm: $pkg ($arch) has neither boot/vmlinuz-$kver nor usr/lib/modules/$kver/vmlinuz" >&2; return 1; }
  [ -r "$root/lib/modules/$kver/modules.builtin" ] || { echo "test-vm: $pkg ($arch) has no modules.builtin (linux-base-$kver missing?)" >&2; return 1; }
}

# pvh_image KIMG CACHE KVER: sets KIMG to the kernel's uncompressed vmlinux with a PVH entry
# (cached in CACHE as vmlinux-KVER), which QEMU boots without in-guest decompression, when one can
# be extracted.
pvh_image() {
  local img=$1 cache=$2 out=$2/vmlinux-$3
  if [ -s "$out" ] || extract_vmlinux "$img" "$out"; then KIMG=$out; else KIMG=$img; fi
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
