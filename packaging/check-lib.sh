# Sourced by packaging/package-test.sh and packaging/image/check.sh: one PASS/FAIL line per check.
# The sourcing script sets failures=0 first and exits non-zero when it is not 0 at the end.

# check NAME COMMAND...: runs COMMAND quietly; prints PASS or FAIL (with the command's output).
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "PASS: $name"
	else
		echo "FAIL: $name"
		[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/      /'
		failures=$((failures + 1))
	fi
}
