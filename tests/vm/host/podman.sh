# The systemd-sid tier's podman from Debian unstable (sourced by tests/vm/run.sh), for
# guest/systemd/67-podman-kube.sh (issue 62): `podman kube play` of the shipped DaemonSet
# manifest. podman plays a DaemonSet from 4.7 on; Debian 12 has 4.3, so this tier's guest gets
# unstable's podman over the Debian 12 root's (the 6.1 tier keeps 4.3 for 65-podman).
# podman_prepare CACHE BASE: PODMAN_DEBS, the packages (amd64 or all) that installing
#   $PODMAN_SID_PACKAGES from unstable into the Debian 12 root BASE needs, as apt resolves them
#   against BASE's own dpkg status with unstable's lists (host/deps.sh's private apt state):
#   podman 5.x and crun need libc 2.38 (Debian 12 has 2.36), so libc6 comes too, with what its
#   Breaks name (base-files) and what the two need (libgpgme45, libseccomp2 2.6, libsubid6,
#   libblake3-0 and theirs): 18 packages, 34 MB of .deb for 5.8. conmon and netavark stay
#   Debian 12's (unstable's conmon would bring GLib 2.78). Resolved once into CACHE/podman-sid,
#   again when unstable's lists (fetched anew every 6 hours), the root or the package list
#   change; downloaded again only when the versions apt names change. Sets PODMAN_VERSION; fails naming what could not be resolved or fetched.
# podman_install STAGE: installs PODMAN_DEBS into the guest root STAGE with `apt-get install` of
#   the files in a chroot (its output in STAGE/root/podman-install.log; PODMAN_INSTALL_S = its
#   seconds) and copies the manifest packaging/kubernetes/irqwise-daemonset.yaml, unchanged, to
#   /root/irqwise-daemonset.yaml.

# crun: Debian 12's 1.8.1 refuses the configuration podman 5.8 writes ("crun: unknown version
# specified: OCI runtime error" at the pod's start). catatonit: the pause process of the pod's
# infra container, which podman 5 builds as a local image (Debian's podman only recommends it).
# The configuration packages (registries, seccomp profile, containers.conf) match podman's.
PODMAN_SID_PACKAGES="podman crun catatonit golang-github-containers-common golang-github-containers-image"

podman_prepare() {
  local cache=$1 base=$2 dir=$1/podman-sid key debs
  archive_apt "$cache/archive/apt-sid" sid || return 1
  # apt's answer stands while unstable's lists, the root and the package list stay the same.
  key=$( (cat "$cache"/archive/apt-sid/lists/*_InRelease "$base.stamp"; echo "$PODMAN_SID_PACKAGES") 2>/dev/null | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/plan.key" 2>/dev/null)" != "$key" ] || ! [ -s "$dir/plan" ]; then
    mkdir -p "$dir"
    podman_plan "$base" > "$dir/plan.tmp" || return 1
    mv "$dir/plan.tmp" "$dir/plan"; echo "$key" > "$dir/plan.key"
  fi
  PODMAN_VERSION=$(sed -n 's/^podman=//p' "$dir/plan")
  [ -n "$PODMAN_VERSION" ] || { echo "test-vm: apt would not install sid's podman into $base: $(cat "$dir/plan")" >&2; return 1; }
  # The packages, kept while apt names the same versions.
  debs=$dir/debs-$(sha256sum < "$dir/plan" | cut -c1-16)
  for key in "$dir"/debs-*; do [ "$key" = "$debs" ] || rm -rf "$key"; done
  # shellcheck disable=SC2046
  sid_debs "$debs" $(cut -d= -f1 "$dir/plan") || return 1
  PODMAN_DEBS=$(ls "$debs"/*.deb)
}

# podman_plan BASE: prints NAME=VERSION, sorted, for each package apt would install from
# unstable to install $PODMAN_SID_PACKAGES into the root BASE (its dpkg status as the state).
podman_plan() {
  local out
  # shellcheck disable=SC2086
  out=$(apt-get "${APT[@]}" -o Dir::State::status="$1/var/lib/dpkg/status" -s install \
          --no-install-recommends $PODMAN_SID_PACKAGES 2>&1) ||
    { echo "test-vm: apt cannot install $PODMAN_SID_PACKAGES from sid into $1:" >&2; printf '%s\n' "$out" | tail -8 >&2; return 1; }
  # "Inst NAME [OLD] (NEW Debian:unstable [ARCH])"
  printf '%s\n' "$out" | awk '$1 == "Inst" { v = $3; if (v ~ /^\[/) v = $4; sub(/^\(/, "", v); print $2 "=" v }' | sort
}

podman_install() {
  local stage=$1 log=$1/root/podman-install.log deb t
  mkdir -p "$stage/root/podman-debs"
  for deb in $PODMAN_DEBS; do cp "$deb" "$stage/root/podman-debs/"; done
  t=$(secs)
  # apt orders the unpacks and configures as the packages' Breaks need (dpkg -i of them all at
  # once fails: libc-gconv-modules-extra breaks the installed libc6 until libc6 is unpacked).
  if ! chroot "$stage" sh -c 'apt-get install -y -q --no-install-recommends -o APT::Sandbox::User=root /root/podman-debs/*.deb' > "$log" 2>&1; then
    echo "test-vm: apt-get install of podman from sid failed in the chroot ($log):" >&2; tail -15 "$log" >&2; return 1
  fi
  PODMAN_INSTALL_S=$(since "$t")
  rm -rf "$stage/root/podman-debs"
  cp "$REPO/packaging/kubernetes/irqwise-daemonset.yaml" "$stage/root/irqwise-daemonset.yaml"
}
