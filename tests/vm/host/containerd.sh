# The systemd-sid tier's containerd guest (sourced by tests/vm/run.sh), for
# guest/systemd/66-containerd-nri.sh (issue 62): containerd 2.x with NRI on, driven through CRI
# as a kubelet would, no registry and no CNI.
# containerd_prepare CACHE: fetches and builds what the guest needs, cached below CACHE/containerd:
#   containerd from Debian unstable (by package name through host/deps.sh's private apt state;
#   it depends only on runc and libc 2.34), runc from Debian 12 itself (the host's apt, as
#   irqbalance: unstable's runc needs libc 2.38, Debian 12 has 2.36), the CRI client
#   guest/cri/kubelet.go built with Debian unstable's Go and its packages of the CRI API and gRPC
#   (GOPATH mode, as Debian builds them; the toolchain and sources are removed once it is built,
#   the binary is kept while kubelet.go and the packages' versions stay the same), and one OCI
#   archive holding two images built here: the pod sandbox's pause (guest/cri/pause.c, static)
#   and a busybox (the host's static busybox) for the containers. Sets CONTAINERD_DEBS,
#   CRI_KUBELET and CRI_IMAGES; fails naming what could not be fetched or built.
# containerd_install STAGE: installs those into the guest root STAGE (dpkg -i in a chroot, the
#   unit left disabled: the scenario starts it and times it), an /etc/hosts (which containerd
#   copies into a host-network pod) where the root has none, the client as
#   /usr/local/bin/cri-kubelet and the archive as /root/cri-images.oci.tar.

# The Go packages the client's imports need (the -dev packages' own Depends pull in their test
# and optional dependencies: some 160 packages; Go in GOPATH mode needs only the imported trees).
CRI_GO_DEV="golang-k8s-cri-api-dev golang-google-grpc-dev golang-google-protobuf-dev golang-google-genproto-dev
  golang-golang-x-net-dev golang-golang-x-sys-dev golang-golang-x-text-dev golang-github-golang-protobuf-1-5-dev"
CRI_PAUSE_IMAGE=localhost/irqwise-vm/pause:1
CRI_BUSYBOX_IMAGE=localhost/irqwise-vm/busybox:1

# sid_versions PKG...: "PKG=VERSION" for each PKG (amd64 or all) in the private unstable state
# APT names, in one apt-cache call (each parses the whole lists: seconds on a loaded host).
sid_versions() {
  apt-cache "${APT[@]}" show $(for p in "$@"; do echo "$p:amd64"; done) 2>/dev/null |
    awk '$1 == "Package:" { p = $2 } $1 == "Version:" && !(p in seen) { seen[p] = 1; print p "=" $2 }'
}

containerd_prepare() {
  local dir=$1/containerd ver
  mkdir -p "$dir"
  archive_apt "$1/archive/apt-sid" sid || return 1
  ver=$(sid_versions containerd); ver=${ver#*=}
  [ -n "$ver" ] || { echo "test-vm: $ARCHIVE_MIRROR sid lists no containerd" >&2; return 1; }
  sid_debs "$dir/containerd-$ver" containerd || return 1
  if [ -z "$(ls "$dir"/runc/runc_*.deb 2>/dev/null)" ]; then
    rm -rf "$dir/runc"; mkdir -p "$dir/runc"
    (cd "$dir/runc" && apt-get download runc >"$dir/runc/download.log" 2>&1) ||
      { echo "test-vm: apt-get download runc (Debian 12) failed:" >&2; tail -3 "$dir/runc/download.log" >&2; return 1; }
  fi
  CONTAINERD_DEBS="$(ls "$dir/containerd-$ver"/containerd_*.deb) $(ls "$dir"/runc/runc_*.deb | head -1)"
  cri_kubelet "$dir" || return 1
  cri_images "$dir/cri-images.oci.tar" || return 1
}

# sid_debs DIR PKG...: the packages (amd64 or all) downloaded from unstable into DIR, unless DIR
# already holds one .deb per package.
sid_debs() {
  local d=$1; shift
  [ "$(ls "$d"/*.deb 2>/dev/null | wc -l)" -ge $# ] && return 0
  rm -rf "$d"; mkdir -p "$d"
  (cd "$d" && apt-get "${APT[@]}" download $(for p in "$@"; do echo "$p:amd64"; done) >"$d/download.log" 2>&1) ||
    { echo "test-vm: apt-get download $* (sid) failed:" >&2; tail -3 "$d/download.log" >&2; return 1; }
}

# cri_kubelet DIR: CRI_KUBELET = DIR/cri-kubelet-KEY, the static client built from
# guest/cri/kubelet.go, KEY hashing the source and every package version it was built with.
cri_kubelet() {
  local dir=$1 go src key p v pkgs vers t
  go=$(apt-cache "${APT[@]}" depends golang-go:amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^golang-1\.[0-9]+-go/ { sub(/:.*$/, "", $2); print $2; exit }')
  [ -n "$go" ] || { echo "test-vm: $ARCHIVE_MIRROR sid: golang-go depends on no golang-1.N-go" >&2; return 1; }
  pkgs="$go ${go%-go}-src $CRI_GO_DEV"
  # shellcheck disable=SC2086
  vers=$(sid_versions $pkgs)
  for p in $pkgs; do
    [[ $'\n'$vers == *$'\n'$p=* ]] || { echo "test-vm: $ARCHIVE_MIRROR sid lists no $p" >&2; return 1; }
  done
  src=$VM_DIR/guest/cri/kubelet.go
  key=$( (cat "$src"; echo "$vers") | sha256sum | cut -c1-16)
  CRI_KUBELET=$dir/cri-kubelet-$key
  [ -x "$CRI_KUBELET" ] && return 0
  rm -f "$dir"/cri-kubelet-*
  t=$dir/go-build
  # shellcheck disable=SC2086
  sid_debs "$t/debs" $pkgs || return 1
  for p in "$t"/debs/*.deb; do dpkg-deb -x "$p" "$t/root" || return 1; done
  v=${go#golang-}
  if ! (export GOROOT=$t/root/usr/lib/go-${v%-go} GOPATH=$t/root/usr/share/gocode GO111MODULE=off GOTOOLCHAIN=local \
          GOCACHE=$t/cache GOFLAGS= CGO_ENABLED=0 HOME=$t
        "$GOROOT/bin/go" build -trimpath -ldflags=-s -o "$CRI_KUBELET.tmp" "$src") > "$dir/go-build.log" 2>&1; then
    echo "test-vm: go build $src failed ($go; $dir/go-build.log):" >&2; tail -15 "$dir/go-build.log" >&2
    rm -rf "$t"; return 1
  fi
  mv "$CRI_KUBELET.tmp" "$CRI_KUBELET"
  echo "$vers" > "$CRI_KUBELET.versions"
  rm -rf "$t"
}

# cri_images OUT: the OCI archive (one layout, two images) of the pause and busybox images.
cri_images() {
  local out=$1 w busybox a
  w=$(mktemp -d)
  mkdir -p "$w/pause" "$w/busybox/bin" "$w/layout/blobs/sha256"
  gcc -static -O2 -Wall -s -o "$w/pause/pause" "$VM_DIR/guest/cri/pause.c" ||
    { echo "test-vm: gcc -static guest/cri/pause.c failed" >&2; rm -rf "$w"; return 1; }
  busybox=$(command -v busybox) || { echo "test-vm: no busybox" >&2; rm -rf "$w"; return 1; }
  cp "$busybox" "$w/busybox/bin/busybox"
  for a in sh sleep cat; do ln -s busybox "$w/busybox/bin/$a"; done
  : > "$w/manifests"
  oci_add "$w" "$w/pause" "$CRI_PAUSE_IMAGE" '["/pause"]' || return 1
  oci_add "$w" "$w/busybox" "$CRI_BUSYBOX_IMAGE" '["/bin/sh"]' || return 1
  printf '{"schemaVersion":2,"manifests":[%s]}' "$(paste -sd, "$w/manifests")" > "$w/layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$w/layout/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$w/layout" -cf "$out" .
  CRI_IMAGES=$out
  rm -rf "$w"
}

# oci_add WORK ROOTFS REF ENTRYPOINT_JSON: ROOTFS as one layer of an amd64 image named REF,
# its blobs in WORK/layout, its index entry appended to WORK/manifests.
oci_add() {
  local w=$1 root=$2 ref=$3 entry=$4 diff layer lsize config csize manifest msize
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$w/layer.tar" . || return 1
  diff=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  gzip -n "$w/layer.tar"
  read -r layer lsize < <(oci_blob "$w" "$w/layer.tar.gz")
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$diff" > "$w/config.json"
  read -r config csize < <(oci_blob "$w" "$w/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$config" "$csize" "$layer" "$lsize" > "$w/manifest.json"
  read -r manifest msize < <(oci_blob "$w" "$w/manifest.json")
  printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"%s","io.containerd.image.name":"%s"}}\n' \
    "$manifest" "$msize" "$ref" "$ref" >> "$w/manifests"
}

# oci_blob WORK FILE: FILE moved into WORK/layout by its digest; prints "digest size".
oci_blob() {
  local d s; d=$(sha256sum "$2" | cut -d' ' -f1); s=$(stat -c %s "$2")
  mv "$2" "$1/layout/blobs/sha256/$d"; echo "$d $s"
}

containerd_install() {
  local stage=$1 deb log=$1/root/containerd-install.log
  for deb in $CONTAINERD_DEBS; do cp "$deb" "$stage/root/"; done
  # shellcheck disable=SC2046
  if ! chroot "$stage" dpkg -i $(for deb in $CONTAINERD_DEBS; do echo "/root/${deb##*/}"; done) > "$log" 2>&1; then
    echo "test-vm: dpkg -i containerd runc failed in the chroot:" >&2; tail -15 "$log" >&2; return 1
  fi
  chroot "$stage" systemctl disable containerd.service >> "$log" 2>&1
  for deb in $CONTAINERD_DEBS; do rm -f "$stage/root/${deb##*/}"; done
  # A node has /etc/hosts, which containerd copies into a host-network pod; minbase has none.
  [ -e "$stage/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$stage/etc/hosts"
  install -m 755 "$CRI_KUBELET" "$stage/usr/local/bin/cri-kubelet"
  cp "$CRI_IMAGES" "$stage/root/cri-images.oci.tar"
  printf '%s\n%s\n' "$CRI_PAUSE_IMAGE" "$CRI_BUSYBOX_IMAGE" > "$stage/root/cri-images.names"
}
