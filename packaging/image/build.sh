#!/bin/bash
# make image: an OCI image archive of the project's own package, built offline (no registry, no
# container runtime): the .deb's files, the shared libraries its binary links (as this Debian 12
# build machine has them) and nothing else, in one reproducible layer, with the OCI layout's JSON
# written by oci-layout.py (a JSON writer: every value a string, whatever it holds).
# `podman load -i ARCHIVE` (or skopeo, or `ctr images import`) reads it. The entrypoint is the
# daemon; it writes only below /run (its state, the claims) and the metrics directory, so the root
# filesystem can be read-only.
#
# Reproducible: the same .deb at the same commit gives the same bytes whoever builds it, wherever
# the checkout is and whatever the umask (sorted names, fixed modes, owner 0:0 and mtimes). Nothing
# is read from the builder's git configuration but the commit: the source label is IMAGE_SOURCE
# (a URL loses any `user:token@`), "unknown" without it. packaging/image/check.sh tests all this.
#
# usage: [IMAGE_SOURCE=URL] [IMAGE_NAME=localhost/irqwise] packaging/image/build.sh PACKAGE.deb OUT.oci.tar
set -euo pipefail
# Files and directories this script creates get the same modes for every builder, and names sort
# the same way in every locale; the layer's modes are set explicitly anyway (tar --mode below).
umask 022
export LC_ALL=C
deb=$1 out=$2
[ -f "$deb" ] || { echo "image: no package $deb (make deb first)" >&2; exit 2; }
version=$(dpkg-deb -f "$deb" Version); version=${version%-*}
arch=$(dpkg-deb -f "$deb" Architecture)
case $arch in amd64|arm64) ;; *) echo "image: architecture $arch of $deb is not amd64 or arm64" >&2; exit 2;; esac
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null || echo unknown)
source=${IMAGE_SOURCE:-unknown}
name=${IMAGE_NAME:-localhost/irqwise}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
root=$work/rootfs layout=$work/layout
dpkg-deb -x "$deb" "$root"
bin=$root/usr/sbin/irqwise
[ -x "$bin" ] || { echo "image: $deb has no /usr/sbin/irqwise" >&2; exit 2; }
# The libraries the binary links, with the loader, at the paths ldd names.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
  install -D -m 644 "$(readlink -f "$lib")" "$root$lib"
done
chmod 755 "$root"/lib64/ld-linux-*.so.* 2>/dev/null || true
# What a container does not use: the unit, the manual, completions, dashboards (in the package).
rm -rf "$root/usr/lib/systemd" "$root/usr/share/man" "$root/usr/share/bash-completion" \
  "$root/usr/share/zsh" "$root/usr/share/fish" "$root/usr/share/irqwise/grafana"
mkdir -p "$root"/{run,tmp,proc,sys,dev,etc/irqwise/conf.d,var/lib/prometheus/node-exporter}
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
find "$root" -exec touch -h -d "@$epoch" {} +

# One archive form for both tars: GNU format, names sorted, owner root, one mtime, and modes
# normalised (rwx for the owner, r-x for others on directories and executables, rw-r--r-- on the
# rest) so the builder's umask and the modes dpkg-deb extracted with never reach the image.
repro_tar() { # repro_tar DIR OUT
  tar --format=gnu --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    --mode='u=rwX,go=rX' -C "$1" -cf "$2" .
}
mkdir -p "$layout/blobs/sha256"
repro_tar "$root" "$work/layer.tar"
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
gzip -n -9 "$work/layer.tar"
layer_digest=$(sha256sum "$work/layer.tar.gz" | cut -d' ' -f1)
layer_size=$(stat -c %s "$work/layer.tar.gz")
mv "$work/layer.tar.gz" "$layout/blobs/sha256/$layer_digest"
manifest_digest=$(python3 "$(dirname "$0")/oci-layout.py" "$layout" arch="$arch" created="$created" \
  version="$version" revision="$revision" source="$source" name="$name" diff_id="$diff_id" \
  layer_digest="$layer_digest" layer_size="$layer_size" deb="$(basename "$deb")")
mkdir -p "$(dirname "$out")"
repro_tar "$layout" "$out"
echo "image: $out ($name:$version, $arch): $(stat -c %s "$out") bytes, layer $layer_size bytes compressed, $(stat -c %s "$bin") bytes binary; manifest $manifest_digest"
