#!/bin/bash
# make mutants: mutation testing of irqwise's pure core with cargo-mutants (installed from
# crates.io when missing). Each mutant (a one-token change cargo-mutants makes to a function) is
# built and the pure core's tests run on it: the library's unit tests and the tests that check
# the kernel algorithms, plans and the guard end to end (MUTANTS_TESTS). A mutant that every
# test still passes is "missed": either a test is missing or the change is equivalent.
# env: MUTANTS_FILES="src/plan/guard.rs ..."  the files to mutate (default: the pure core below)
#      MUTANTS_TESTS="--lib ..."  the nextest arguments each mutant is tested with
#      MUTANTS_OUT=DIR   where mutants.out goes (default: target/mutants)
#      MUTANTS_ARGS="--timeout 90 ..."  more cargo-mutants options
# Prints, per file, mutants tried / caught / missed / timed out / unviable, then the missed ones.
set -euo pipefail
cd "$(dirname "$0")/.."
CORE="src/kernel/** src/strategy/** src/cpuset/** src/plan/** src/policy.rs src/devices/irq_names.rs src/devices/recognise.rs src/devices/name_table.rs src/topology/isolation.rs src/config/**"
FILES=${MUTANTS_FILES:-$CORE}
TESTS=${MUTANTS_TESTS:---lib --test conformance --test plan --test placement --test config_plan --test guard --test driver_names --test config --test config_errors --test plan_scripts --test plan_edges --test whole_queue --test xps --test balance --test claims --test isolation --test report --test hostile_machine}
OUT=${MUTANTS_OUT:-${CARGO_TARGET_DIR:-target}/mutants}
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
args=()
for f in $FILES; do args+=(--file "$f"); done
# The test selection goes to the build too (-C): cargo-mutants' build step otherwise builds every
# test target of the crate, three quarters of each mutant's time. mold links when installed.
for t in $TESTS; do args+=(-C "$t"); done
command -v mold >/dev/null && export RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-fuse-ld=mold"
mkdir -p "$OUT"
start=$(date +%s)
# cargo-mutants exits 2 when mutants were missed, 3 on timeouts: the report below says which.
# shellcheck disable=SC2086 # TESTS is a list of arguments
cargo mutants "${args[@]}" --test-tool nextest --profile mutants --output "$OUT" --no-shuffle ${MUTANTS_ARGS:-} || true
secs=$(($(date +%s) - start))
m=$OUT/mutants.out
for kind in caught missed timeout unviable; do [ -f "$m/$kind.txt" ] || : > "$m/$kind.txt"; done
echo
echo "| file | mutants | caught | missed | timed out | unviable |"
echo "|---|---|---|---|---|---|"
awk -F: '{ k = FILENAME; sub(/.*\//, "", k); sub(/\.txt$/, "", k); n[k, $1]++; files[$1] = 1 }
  END { for (f in files) { c = n["caught", f]; m = n["missed", f]; t = n["timeout", f]; u = n["unviable", f]
    printf "| %s | %d | %d | %d | %d | %d |\n", f, c + m + t + u, c, m, t, u } }' \
  "$m/caught.txt" "$m/missed.txt" "$m/timeout.txt" "$m/unviable.txt" | sort
count() { wc -l < "$m/$1.txt"; }
echo
echo "$(($(count caught) + $(count missed) + $(count timeout))) viable mutants: $(count caught) caught, $(count missed) missed, $(count timeout) timed out ($(count unviable) unviable); ${secs} s"
if [ -s "$m/missed.txt" ]; then
  echo
  echo "Missed:"
  sed 's/^/- /' "$m/missed.txt"
fi
