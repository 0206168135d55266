#!/usr/bin/python3
"""Writes the JSON of an OCI image layout (config, manifest, index) for packaging/image/build.sh.

    oci-layout.py LAYOUT_DIR KEY=VALUE...

Keys: arch, created, version, revision, source, name, diff_id, layer_digest, layer_size, deb.
Every value is data, whatever it holds: json.dumps writes each as a JSON string (quotes,
backslashes, control characters escaped), so no value can end its string, add a key or replace
the entrypoint. The source URL loses any user name, password or token (`user:token@`), query and
fragment. The blobs go to LAYOUT_DIR/blobs/sha256/<digest>, index.json and oci-layout beside them,
each with sorted keys and no whitespace, so the same values give the same bytes. Prints the
manifest's digest.
"""

import hashlib
import json
import os
import re
import sys

ENTRYPOINT = ["/usr/sbin/irqwise"]
CMD = ["run", "--watch-config"]
KEYS = {"arch", "created", "version", "revision", "source", "name", "diff_id", "layer_digest",
        "layer_size", "deb"}


def public_url(url):
    """url without credentials (user, password or token before an `@`), query or fragment: a URL
    (scheme://[userinfo@]host[/path]) loses its userinfo as git reads it (up to the first `/`),
    an scp-like address (user@host:path) its user; any other text stays as it is."""
    scheme, sep, rest = url.partition("://")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        authority, slash, path = rest.partition("/")
        authority = re.split(r"[?#]", authority.rpartition("@")[2], maxsplit=1)[0]
        path = re.split(r"[?#]", path, maxsplit=1)[0]
        return scheme + "://" + authority + slash + path
    user, at, address = url.partition("@")
    if at and "/" not in user and ":" in address:
        return address
    return url


def dump(value):
    """The one JSON encoding of every file: sorted keys, no whitespace, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def blob(layout, data):
    """Stores data as a blob of the layout; returns (digest, size)."""
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    layout, values = argv[1], {}
    for arg in argv[2:]:
        key, sep, value = arg.partition("=")
        if not sep or key not in KEYS:
            sys.exit("oci-layout.py: %r is not one of %s=VALUE" % (arg, "|".join(sorted(KEYS))))
        values[key] = value
    missing = sorted(KEYS - set(values))
    if missing:
        sys.exit("oci-layout.py: missing %s" % ", ".join(missing))
    labels = {
        "org.opencontainers.image.title": "irqwise",
        "org.opencontainers.image.description": "Places NVMe and NIC interrupts on the right CPUs, "
        "exactly as the kernel spreads them, and keeps them there",
        "org.opencontainers.image.version": values["version"],
        "org.opencontainers.image.revision": values["revision"],
        "org.opencontainers.image.source": public_url(values["source"]),
        "org.opencontainers.image.licenses": "MIT OR Apache-2.0",
        "org.opencontainers.image.created": values["created"],
    }
    config = {
        "architecture": values["arch"],
        "os": "linux",
        "created": values["created"],
        "config": {
            "Entrypoint": ENTRYPOINT,
            "Cmd": CMD,
            "Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            "WorkingDir": "/",
            "StopSignal": "SIGTERM",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + values["diff_id"]]},
        "history": [{"created": values["created"], "created_by": "make image: " + values["deb"]}],
    }
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    config_digest, config_size = blob(layout, dump(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": "sha256:" + values["layer_digest"], "size": int(values["layer_size"])}],
        "annotations": labels,
    }
    manifest_digest, manifest_size = blob(layout, dump(manifest))
    index = {
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest,
            "size": manifest_size,
            "platform": {"architecture": values["arch"], "os": "linux"},
            "annotations": {"org.opencontainers.image.ref.name": values["name"] + ":" + values["version"]},
        }],
    }
    with open(os.path.join(layout, "index.json"), "wb") as f:
        f.write(dump(index))
    with open(os.path.join(layout, "oci-layout"), "wb") as f:
        f.write(dump({"imageLayoutVersion": "1.0.0"}))
    print(manifest_digest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
