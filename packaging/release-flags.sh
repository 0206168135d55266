#!/usr/bin/env bash
# Runs a command (cargo build --release, cargo deb) with the flags of every release build that
# is packaged: `make build`, `make deb`, `make rpm`, `make install` and the VM suite use it, so
# they share one set of artifacts.
#
# The flags remap the builder's paths in what the compiler writes into the binary (panic
# locations, file names): this checkout becomes ".", the target directory "./target" and cargo's
# home (the registry's sources) "/cargo". The binary then names no path of the builder's, and
# two checkouts at different paths, or with different homes, build the same bytes
# (packaging/image/check.sh checks it).
#
# CARGO_ENCODED_RUSTFLAGS (flags separated by 0x1f: paths with spaces stay whole) carries them,
# after any RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS of the caller's. Debug builds and tests do not
# use this: their artifacts are not rebuilt for it.
#
# usage: packaging/release-flags.sh COMMAND [ARGUMENT...]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd -P)
cargo_home=$(realpath -m "${CARGO_HOME:-${HOME:-/root}/.cargo}")
sep=$'\x1f'

flags=${CARGO_ENCODED_RUSTFLAGS:-}
if [ -z "$flags" ] && [ -n "${RUSTFLAGS:-}" ]; then
	read -r -a words <<<"$RUSTFLAGS"
	flags=$(IFS=$sep; printf '%s' "${words[*]}")
fi
add() { flags=${flags:+$flags$sep}--remap-path-prefix=$1=$2; }
# rustc applies the last matching prefix: the most specific last.
add "$top" .
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
	add "$(realpath -m "$CARGO_TARGET_DIR")" ./target
fi
add "$cargo_home" /cargo

unset RUSTFLAGS
export CARGO_ENCODED_RUSTFLAGS=$flags
exec "$@"
