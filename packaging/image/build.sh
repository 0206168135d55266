#!/bin/bash
# make image: an OCI image archive of the project's own package, built offline (no registry, no
# container runtime): the .deb's files, the shared libraries its binary links (as this Debian 12
# build machine has them) and nothing else, in one reproducible layer (sorted names, fixed owner
# and mtime), with the OCI layout's JSON written here. `podman load -i ARCHIVE` (or skopeo, or
# `ctr images import`) reads it. The entrypoint is the daemon; it writes only below /run (its
# state, the claims) and the metrics directory, so the root filesystem can be read-only.
#
# usage: packaging/image/build.sh PACKAGE.deb OUT.oci.tar
set -euo pipefail
deb=$1 out=$2
[ -f "$deb" ] || { echo "image: no package $deb (make deb first)" >&2; exit 2; }
version=$(dpkg-deb -f "$deb" Version); version=${version%-*}
arch=$(dpkg-deb -f "$deb" Architecture)
case $arch in amd64|arm64) ;; *) echo "image: architecture $arch of $deb is not amd64 or arm64" >&2; exit 2;; esac
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null || echo unknown)
source=${IMAGE_SOURCE:-$(git -C "$(dirname "$0")" config --get remote.origin.url 2>/dev/null || echo unknown)}
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

mkdir -p "$layout/blobs/sha256"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$root" -cf "$work/layer.tar" .
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
gzip -n -9 "$work/layer.tar"
blob() { # blob FILE: moves FILE into the layout by its digest; prints "digest size"
  local d s; d=$(sha256sum "$1" | cut -d' ' -f1); s=$(stat -c %s "$1")
  mv "$1" "$layout/blobs/sha256/$d"; echo "$d $s"
}
read -r layer_digest layer_size < <(blob "$work/layer.tar.gz")
labels=$(printf '"org.opencontainers.image.title":"irqwise","org.opencontainers.image.description":"Places NVMe and NIC interrupts on the right CPUs, exactly as the kernel spreads them, and keeps them there","org.opencontainers.image.version":"%s","org.opencontainers.image.revision":"%s","org.opencontainers.image.source":"%s","org.opencontainers.image.licenses":"MIT OR Apache-2.0","org.opencontainers.image.created":"%s"' \
  "$version" "$revision" "$source" "$created")
printf '{"architecture":"%s","os":"linux","created":"%s","config":{"Entrypoint":["/usr/sbin/irqwise"],"Cmd":["run","--watch-config"],"Env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],"WorkingDir":"/","StopSignal":"SIGTERM","Labels":{%s}},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"%s","created_by":"make image: %s"}]}' \
  "$arch" "$created" "$labels" "$diff_id" "$created" "$(basename "$deb")" > "$work/config.json"
read -r config_digest config_size < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}],"annotations":{%s}}' \
  "$config_digest" "$config_size" "$layer_digest" "$layer_size" "$labels" > "$work/manifest.json"
read -r manifest_digest manifest_size < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"%s:%s"}}]}' \
  "$manifest_digest" "$manifest_size" "$arch" "$name" "$version" > "$layout/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"
mkdir -p "$(dirname "$out")"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$layout" -cf "$out" .
echo "image: $out ($name:$version, $arch): $(stat -c %s "$out") bytes, layer $layer_size bytes compressed, $(stat -c %s "$root$(printf /usr/sbin/irqwise)") bytes binary; manifest sha256:$manifest_digest"
