# The systemd tier's guest disk (sourced by tests/vm/run.sh).
# debian_base DIR: a `debootstrap --variant=minbase` Debian 12 root with $DEBROOT_PACKAGES in
#   DIR, built once and reused while DIR.stamp names the same suite and packages (CI starts from
#   nothing and builds it; DEBROOT_BUILT says whether this call did). apt's package cache and
#   lists are dropped: the guest installs nothing from the network.
# guest_disk BASE STAGE DEB OUT.img LOG [OCI]: a copy of BASE in STAGE with the .deb installed by
#   `dpkg -i` in a chroot (its output in LOG, as an administrator building an image sees it),
#   the image archive OCI of `make image` as /root/irqwise.oci.tar (65-podman.sh and
#   67-podman-kube.sh load it), the nvme, vmxnet3 and overlay (podman's storage) modules of
#   $KVER, the guest test program (tests/vm/guest/systemd/, run by guest-test.service once the
#   system is up), the guest tools (/usr/local/bin/napi), whatever the functions GUEST_EXTRA
#   names (a list; when set) add to the root they are given (containerd: host/containerd.sh;
#   podman from unstable: host/podman.sh) and, with IRQWISE_VM_BROKEN_UNIT, a broken unit; then
#   packed into the ext4 image OUT.img.

DEBROOT_SUITE=bookworm
# procps is deliberately absent (no /bin/kill): the unit must not need what the package does not
# pull in. irqbalance is installed and, by its package, enabled. podman and crun run the image of
# `make image` as a DaemonSet would, and a container through the claim hook (65-podman.sh);
# netavark is named because containers-common depends on a virtual "container-network-stack",
# which debootstrap does not resolve (the scenario runs only host or no networking: no firewall
# package). debootstrap takes the first of alternatives, so gpgme brings gnupg: 30 packages,
# 60 MB installed, about 4 s more debootstrap here (46 s before).
DEBROOT_PACKAGES="systemd,systemd-sysv,udev,iproute2,kmod,irqbalance,podman,crun,netavark"
DEBROOT_MIRROR=${IRQWISE_VM_MIRROR:-http://deb.debian.org/debian}
DISK_MODULES="nvme vmxnet3 overlay"

debian_base() {
  local dir=$1 stamp="$DEBROOT_SUITE $DEBROOT_PACKAGES"
  DEBROOT_BUILT=no
  if [ -x "$dir/lib/systemd/systemd" ] && [ "$(cat "$dir.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  rm -rf "$dir" "$dir.tmp" "$dir.stamp"
  echo "test-vm: debootstrap $DEBROOT_SUITE ($DEBROOT_PACKAGES) into $dir" >&2
  if ! debootstrap --variant=minbase --include="$DEBROOT_PACKAGES" "$DEBROOT_SUITE" "$dir.tmp" "$DEBROOT_MIRROR" \
      > "$dir.log" 2>&1; then
    echo "test-vm: debootstrap failed; last lines of $dir.log:" >&2
    tail -15 "$dir.log" >&2
    return 1
  fi
  rm -rf "$dir.tmp"/var/cache/apt/archives/*.deb "$dir.tmp"/var/lib/apt/lists/*
  mv "$dir.tmp" "$dir"
  echo "$stamp" > "$dir.stamp"
  DEBROOT_BUILT=yes
}

# break_unit UNITFILE: the deliberate breakage IRQWISE_VM_BROKEN_UNIT names (the tier must fail).
break_unit() {
  local unit=$1
  case ${IRQWISE_VM_BROKEN_UNIT:-} in
    "") return 0;;
    kill-reload)   # the unit before `irqwise reload` existed: /bin/kill is not on a minimal Debian
      sed -i 's|^ExecReload=.*|ExecReload=/bin/kill -HUP $MAINPID|' "$unit";;
    no-netlink)    # no kernel uevents, no rtnetlink
      sed -i 's|^RestrictAddressFamilies=.*|RestrictAddressFamilies=AF_UNIX|' "$unit";;
    restart-loop)  # a configuration error at start is retried every RestartSec
      sed -i '/^RestartPreventExitStatus=/d' "$unit";;
    *) echo "test-vm: IRQWISE_VM_BROKEN_UNIT=$IRQWISE_VM_BROKEN_UNIT: expected kill-reload, no-netlink or restart-loop" >&2
      return 1;;
  esac
  echo "test-vm: IRQWISE_VM_BROKEN_UNIT=$IRQWISE_VM_BROKEN_UNIT: the guest's unit is broken on purpose:" >&2
  grep -E '^(ExecReload|RestrictAddressFamilies|Restart)' "$unit" | sed 's/^/  /' >&2
}

guest_disk() {
  local base=$1 stage=$2 deb=$3 img=$4 log=$5 oci=${6:-} g=$VM_DIR/guest unit
  rm -rf "$stage"
  cp -a "$base" "$stage"
  cp "$deb" "$stage/root/irqwise.deb"
  [ -z "$oci" ] || cp "$oci" "$stage/root/irqwise.oci.tar"
  if ! chroot "$stage" dpkg -i /root/irqwise.deb > "$log" 2>&1; then
    echo "test-vm: dpkg -i $(basename "$deb") failed in the chroot:" >&2
    tail -15 "$log" >&2
    return 1
  fi
  unit=$stage/usr/lib/systemd/system/irqwise.service
  [ -f "$unit" ] || unit=$stage/lib/systemd/system/irqwise.service
  break_unit "$unit" || return 1
  install_modules "$stage" $DISK_MODULES || return 1
  install -d "$stage/guest"
  install -m 755 "$g"/systemd/main.sh $(scenario_files "$g"/systemd) "$stage/guest/"
  install -m 644 "$g"/lib.sh "$g"/planrows.awk "$log" "$stage/guest/"
  guest_tools "$stage/usr/local/bin" || return 1   # napi (56-napi-profile.sh), xdp-pass: static
  local extra
  for extra in ${GUEST_EXTRA:-}; do "$extra" "$stage" || return 1; done
  install -m 644 "$g"/systemd/guest-test.service "$stage/etc/systemd/system/"
  ln -sf /etc/systemd/system/guest-test.service "$stage/etc/systemd/system/multi-user.target.wants/"
  # The console shows the boot; a login prompt on it would only cost CPU time.
  ln -sf /dev/null "$stage/etc/systemd/system/serial-getty@ttyS0.service"
  rm -f "$img"
  truncate -s 1G "$img"
  mkfs.ext4 -q -F -L irqwise-vm -d "$stage" "$img"
}
