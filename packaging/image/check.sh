#!/usr/bin/env bash
# Checks of `make image` (packaging/image/build.sh) on one .deb, offline, in seconds (run by
# packaging/package-test.sh, so by `make package-test` and CI):
#
#   1. the packaged binary names no builder path: neither this checkout's nor cargo's home (the
#      release builds remap them, packaging/release-flags.sh), so two checkouts at different
#      paths build the same binary, hence the same image;
#   2. reproducible: the image built here under umask 022 and the one built by a clone of this
#      checkout at another path, under umask 077, are the same bytes (one manifest digest);
#   3. written by a JSON writer: the clone's origin URL holds a token and a quote, IMAGE_SOURCE a
#      token and a value crafted to close its string and replace the entrypoint, IMAGE_NAME a
#      quote: every JSON file of each image parses and its digests hold, no token is anywhere in
#      the archive, the entrypoint and command are the daemon's, the labels are the values given
#      (the source without its credentials).
#
# usage: packaging/image/check.sh PACKAGE.deb   (PASS/FAIL lines; exit status 1 on any failure)
set -uo pipefail

deb=$(realpath "${1:?usage: check.sh PACKAGE.deb}")
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(cd "$here/../.." && pwd -P)
cargo_home=$(realpath -m "${CARGO_HOME:-${HOME:-/root}/.cargo}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

. "$here/../check-lib.sh"

# no_builder_path BINARY PATH...: no string of BINARY contains any PATH.
no_builder_path() {
	local bin=$1 path n bad=0
	shift
	for path in "$@"; do
		n=$(grep -a -o -F -- "$path/" "$bin" | wc -l)
		if [ "$n" != 0 ]; then
			echo "$n strings name $path, such as:"
			strings -a "$bin" | grep -F -- "$path/" | head -3 | cut -c1-160
			bad=1
		fi
	done
	return $bad
}

# image_ok ARCHIVE SOURCE NAME: the OCI archive's JSON parses, its digests and sizes hold, the
# entrypoint and command are the daemon's, the source label is SOURCE and the ref name NAME:VERSION,
# and no byte sequence "SECRET" is anywhere in the archive.
image_ok() {
	python3 - "$@" <<'PY'
import hashlib, json, sys, tarfile
archive, source, name = sys.argv[1:4]
problems = []
with open(archive, "rb") as f:
    if b"SECRET" in f.read():
        problems.append("the archive contains SECRET")
with tarfile.open(archive) as tar:
    def member(path):
        return tar.extractfile("./" + path).read()
    def blob(digest, size=None):
        data = member("blobs/sha256/" + digest.split(":", 1)[1])
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest or (size is not None and len(data) != size):
            problems.append("blob %s: wrong digest or size" % digest)
        return data
    try:
        index = json.loads(member("index.json"))
        entry = index["manifests"][0]
        manifest = json.loads(blob(entry["digest"], entry["size"]))
        config = json.loads(blob(manifest["config"]["digest"], manifest["config"]["size"]))
        for layer in manifest["layers"]:
            blob(layer["digest"], layer["size"])
    except (KeyError, ValueError, IndexError, TypeError) as e:
        sys.exit("the image's JSON does not parse or lacks a field: %s: %s" % (type(e).__name__, e))
run = config.get("config", {})
if run.get("Entrypoint") != ["/usr/sbin/irqwise"] or run.get("Cmd") != ["run", "--watch-config"]:
    problems.append("entrypoint %r, command %r" % (run.get("Entrypoint"), run.get("Cmd")))
labels = run.get("Labels", {})
if labels.get("org.opencontainers.image.source") != source:
    problems.append("source label %r, expected %r" % (labels.get("org.opencontainers.image.source"), source))
if manifest.get("annotations") != labels:
    problems.append("the manifest's annotations are not the config's labels")
version = labels.get("org.opencontainers.image.version")
ref = entry.get("annotations", {}).get("org.opencontainers.image.ref.name")
if ref != "%s:%s" % (name, version):
    problems.append("ref name %r, expected %r" % (ref, "%s:%s" % (name, version)))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
}

# build UMASK SCRIPT OUT [VAR=VALUE...]: builds the image with SCRIPT under UMASK, with
# IMAGE_SOURCE and IMAGE_NAME unset but for the VAR=VALUE given; its output in OUT.log.
build() {
	local mask=$1 script=$2 out=$3
	shift 3
	(umask "$mask" && env -u IMAGE_SOURCE -u IMAGE_NAME "$@" "$script" "$deb" "$out") >"$out.log" 2>&1 || {
		echo "build.sh failed:"
		tail -5 "$out.log"
		return 1
	}
}

same_bytes() { # same_bytes A B: cmp, and the manifest digest each build printed
	cmp "$1" "$2" || { grep -ho 'manifest sha256:[0-9a-f]*' "$1.log" "$2.log"; return 1; }
}

binary=$work/irqwise
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/sbin/irqwise >"$binary"
check "the packaged binary names neither the checkout ($top) nor cargo's home ($cargo_home)" \
	no_builder_path "$binary" "$top" "$cargo_home"

# A clone at another path, with a token and a quote in its origin URL (never contacted), running
# this checkout's build.sh and oci-layout.py (as they are, committed or not).
clone=$work/another/checkout
git clone -q "$top" "$clone" && cp "$here"/build.sh "$here"/oci-layout.py "$clone/packaging/image/" &&
	git -C "$clone" remote set-url origin 'https://user:ghp_SECRET@example.invalid/x"y.git'
check "build.sh here, umask 022" build 022 "$here/build.sh" "$work/a.oci.tar"
check "build.sh in the clone, umask 077" build 077 "$clone/packaging/image/build.sh" "$work/b.oci.tar"
check "umask 022 here, umask 077 in a clone at another path: the same image ($(grep -o 'manifest sha256:[0-9a-f]*' "$work/a.oci.tar.log"))" \
	same_bytes "$work/a.oci.tar" "$work/b.oci.tar"
check "the clone's image: JSON parses, daemon's entrypoint, no token of the origin URL" \
	image_ok "$work/b.oci.tar" unknown localhost/irqwise

crafted='https://user:ghp_SECRET@example.invalid/x"},"Entrypoint":["/bin/sh"],"z":{"a":"y.git'
check "build.sh with a crafted IMAGE_SOURCE and IMAGE_NAME" \
	build 022 "$here/build.sh" "$work/c.oci.tar" IMAGE_SOURCE="$crafted" IMAGE_NAME='localhost/irq"wise'
check "IMAGE_SOURCE with a token and a crafted entrypoint, IMAGE_NAME with a quote: JSON parses, daemon's entrypoint, no token" \
	image_ok "$work/c.oci.tar" 'https://example.invalid/x"},"Entrypoint":["/bin/sh"],"z":{"a":"y.git' 'localhost/irq"wise'

if [ "$failures" = 0 ]; then
	echo "image check: PASS"
else
	echo "image check: FAIL ($failures failed checks)"
	exit 1
fi
