# Builds the guests' initramfs images (sourced by tests/vm/run.sh).
# build_initramfs ROOTDIR OUT.cpio.gz IRQWISE_BIN [IRQBALANCE_BIN]  (the kernel tier)
#   Layout in the guest: /init (tests/vm/guest/init), /guest/* (scenario scripts), /usr/bin/irqwise,
#   /usr/sbin/irqbalance and /usr/sbin/ethtool (+ their shared libraries), the guest tools
#   (/usr/bin/xdp-pass, /usr/bin/napi), busybox applets in /bin, and the nvme and
#   vmxnet3 modules of $KVER (below $MODBASE, default /) with their dependencies, decompressed,
#   with modules.dep; also the drivers of the NICs 36-netdev-survey.sh hot-adds (e1000e, e1000,
#   virtio-net).
# build_boot_initramfs ROOTDIR OUT.cpio.gz INIT MODULE...  (the systemd tier)
#   busybox, the modules with their dependencies, and INIT as /init (it mounts the real root and
#   switches to it).
# install_modules ROOT MODULE...: the modules of $KVER with their dependencies below ROOT, with
#   modules.dep (also used for the systemd tier's disk root).

GUEST_MODULES="nvme vmxnet3 e1000e e1000 virtio_pci virtio_net"

# scenario_files [DIR]: the scenario scripts NN-*.sh in DIR (default: the kernel tier's) to run:
# all, or those whose number prefix is listed in IRQWISE_VM_SCENARIOS, but those whose prefix is
# in SKIP_SCENARIOS (a tier's own choice, tests/vm/README.md).
scenario_files() {
  local f b
  for f in "${1:-$VM_DIR/guest/scenarios}"/[0-9][0-9]-*.sh; do
    b=${f##*/}
    [[ " ${SKIP_SCENARIOS:-} " == *" ${b%%-*} "* ]] && continue
    if [ -z "${IRQWISE_VM_SCENARIOS:-}" ] || [[ " $IRQWISE_VM_SCENARIOS " == *" ${b%%-*} "* ]]; then echo "$f"; fi
  done
}

# copy_in ROOT HOSTPATH GUESTPATH: the file, plus every shared library ldd lists for it.
copy_in() {
  local root=$1 src=$2 dst=$3 lib
  install -D -m "$(stat -c %a "$src")" "$src" "$root$dst"
  if ldd "$src" >/dev/null 2>&1; then
    for lib in $(ldd "$src" | grep -o '/[^ ]*'); do
      [ -e "$root$lib" ] || install -D "$(readlink -f "$lib")" "$root$lib"
    done
  fi
}

# add_module ROOT NAME: the module file of NAME and, first, those it depends on.
add_module() {
  local root=$1 m=$2 f d rel base=${MODBASE:-/} guestdir=/lib/modules/$KVER moddir
  moddir=${base%/}$guestdir
  case " $ADDED_MODULES " in *" $m "*) return 0;; esac
  ADDED_MODULES="$ADDED_MODULES $m"
  f=$(modinfo -b "$base" -k "$KVER" -F filename "$m" 2>/dev/null) || { echo "test-vm: no module $m in $KVER" >&2; return 1; }
  case $f in builtin*|"(builtin)"|"") return 0;; esac
  for d in $(modinfo -b "$base" -k "$KVER" -F depends "$m" | tr ',' ' '); do add_module "$root" "$d"; done
  rel=${f#"$moddir"/}
  mkdir -p "$root$guestdir/$(dirname "$rel")"
  case $f in
    *.ko.xz) xz -dc "$f" > "$root$guestdir/${rel%.xz}";;
    *.ko.zst) zstd -qdc "$f" > "$root$guestdir/${rel%.zst}";;
    *.ko.gz) gzip -dc "$f" > "$root$guestdir/${rel%.gz}";;
    *) cp "$f" "$root$guestdir/$rel";;
  esac
}

# install_modules ROOT MODULE...: see the file header.
install_modules() {
  local root=$1 m; shift
  ADDED_MODULES=""
  for m in "$@"; do add_module "$root" "$m" || return 1; done
  local base=${MODBASE:-/}
  cp "${base%/}/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$KVER/" 2>/dev/null || true
  depmod -b "$root" "$KVER"
}

# busybox_skeleton ROOT: a fresh ROOT with the static busybox and its applets in /bin.
busybox_skeleton() {
  local root=$1 a busybox
  busybox=$(command -v busybox) || { echo "test-vm: no busybox" >&2; return 1; }
  if ldd "$busybox" >/dev/null 2>&1; then echo "test-vm: $busybox is not static (need busybox-static)" >&2; return 1; fi
  rm -rf "$root"
  mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run}
  cp "$busybox" "$root/bin/busybox"
  for a in $("$busybox" --list); do [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"; done
}

pack_cpio() { (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$2"; }

build_initramfs() {
  local root=$1 out=$2 irqwise=$3 irqbalance=${4:-}
  busybox_skeleton "$root" || return 1
  mkdir -p "$root"/{guest,usr/bin,usr/sbin,var/run,cfg/etc/irqwise}
  cp "$VM_DIR"/guest/init "$root/init"
  cp "$VM_DIR"/guest/*.sh "$VM_DIR"/guest/*.awk "$root/guest/"
  cp $(scenario_files) "$root/guest/"
  chmod +x "$root/init" "$root"/guest/*.sh
  copy_in "$root" "$irqwise" /usr/bin/irqwise && chmod 755 "$root/usr/bin/irqwise"
  [ -n "$irqbalance" ] && copy_in "$root" "$irqbalance" /usr/sbin/irqbalance
  # ethtool (with its libraries) and the guest tools (static), for 37-napi-instance.sh and
  # 38-reconfig.sh.
  copy_in "$root" "$(command -v ethtool)" /usr/sbin/ethtool || return 1
  guest_tools "$root/usr/bin" || return 1
  install_modules "$root" $GUEST_MODULES || return 1
  echo "$GUEST_MODULES" > "$root/etc/modules-load"
  echo "${IDLE_S_TIER:-${IRQWISE_VM_IDLE_S:-60}}" > "$root/etc/vm-idle-s"   # idle-cost window, seconds
  echo "${STORM_CYCLES_TIER:-${IRQWISE_VM_STORM_CYCLES:-100}}" > "$root/etc/vm-storm-cycles"   # CPU storm cycles
  pack_cpio "$root" "$out"
}

# guest_tools DIR: tests/vm/guest/tools/*.c built static into DIR: xdp-pass (attach an XDP
# program in driver mode) and napi (the netdev family's napi-get and napi-set).
guest_tools() {
  local c
  for c in "$VM_DIR"/guest/tools/*.c; do
    gcc -static -O2 -Wall -o "$1/$(basename "$c" .c)" "$c" ||
      { echo "test-vm: gcc -static $c failed (libc6-dev gives libc.a)" >&2; return 1; }
  done
}

build_boot_initramfs() {
  local root=$1 out=$2 init=$3; shift 3
  busybox_skeleton "$root" || return 1
  install -m 755 "$init" "$root/init"
  install_modules "$root" "$@" || return 1
  echo "$*" > "$root/etc/modules-load"
  pack_cpio "$root" "$out"
}
