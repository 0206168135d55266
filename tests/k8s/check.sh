#!/usr/bin/env bash
# Offline checks of irqwise's Kubernetes deployment: the plain manifest
# (packaging/kubernetes/irqwise-daemonset.yaml) and the Helm chart (packaging/helm/irqwise).
# No cluster, no Helm, no network (besides apt-get for missing Debian packages, as root):
#
#   1. the chart is rendered with Helm's template engine, Go's text/template, by
#      tests/k8s/render (the few Helm functions the chart uses, as Helm defines them: a template
#      using any other fails to parse), with the default values, with tests/k8s/values-all.yaml
#      (every optional value set), with tests/k8s/values-off.yaml (every optional part off) and
#      with tests/k8s/values-hostile.yaml (drop-in texts YAML cannot carry unescaped: each must
#      come out of the ConfigMap byte for byte);
#   2. those values (merged over values.yaml as `helm -f` merges them) validate against
#      values.schema.json, tests/k8s/values-bad.yaml is rejected, naming each error, and so is
#      every case of tests/k8s/values-bad-cases.yaml (host system directories mounted
#      read-write, overlapping mounts, what the API server refuses), by the schema or by the
#      chart's templates, naming the value;
#   3. every rendered object and the plain manifest validate against the Kubernetes 1.22 API
#      types (tests/k8s/validate.py), and tests/k8s/broken-daemonset.yaml is rejected, naming
#      each defect with its path;
#   4. the chart's default DaemonSet and configuration are the plain manifest's in substance,
#      each render is consistent with itself, and the versions agree with Cargo.toml.
#
# Usage: tests/k8s/check.sh   (exit status 0 when every check passed)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
chart=$top/packaging/helm/irqwise
manifest=$top/packaging/kubernetes/irqwise-daemonset.yaml
# Debian's interpreter: python3-yaml, -jsonschema and -kubernetes are installed for it (a python3
# earlier in PATH, such as pyenv's, would not see them).
py=/usr/bin/python3
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

step() { printf '\n== %s\n' "$*"; }
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

# --- Dependencies: Debian packages, installed when missing (as root), like `make deps`. -------
missing=""
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
[ -x "$py" ] || missing="$missing python3"
if [ -x "$py" ]; then
    "$py" -c 'import yaml' 2>/dev/null || missing="$missing python3-yaml"
    "$py" -c 'import jsonschema' 2>/dev/null || missing="$missing python3-jsonschema"
    "$py" -c 'import kubernetes.client' 2>/dev/null || missing="$missing python3-kubernetes"
fi
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing$missing"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    else
        echo "missing packages; install them with: sudo apt-get install -y$missing" >&2
        exit 1
    fi
fi

step "build the renderer (tests/k8s/render, Go $(go env GOVERSION), standard library only)"
# No network (GOPROXY=off: the renderer has no dependencies); a build cache even without $HOME.
[ -n "${HOME:-}" ] || [ -n "${GOCACHE:-}" ] || export GOCACHE="$work/gocache"
(cd "$here/render" && GOFLAGS= GOPROXY=off GO111MODULE=on go build -o "$work/render" .)
pass "render built"

step "versions and paths"
if "$py" "$here/checks.py" versions "$top/Cargo.toml" "$chart/Chart.yaml" "$manifest"; then
    pass "Cargo.toml, Chart.yaml and the manifest agree"
else
    fail "versions or paths disagree"
fi
"$py" "$here/checks.py" json "$chart/Chart.yaml" "$work/Chart.json"
"$py" "$here/checks.py" json "$chart/values.yaml" "$work/values.json"

# render NAME [VALUES.yaml]: schema-check the merged values, render, validate the objects.
render() {
    local name=$1 extra=${2:-} layers=("-values" "$work/values.json")
    step "chart, $name values"
    if [ -n "$extra" ]; then
        "$py" "$here/checks.py" json "$extra" "$work/$name.layer.json"
        layers+=("-values" "$work/$name.layer.json")
        "$py" "$here/checks.py" merge "$work/$name.merged.json" "$chart/values.yaml" "$extra"
    else
        cp "$work/values.json" "$work/$name.merged.json"
    fi
    if "$py" "$here/checks.py" schema "$chart/values.schema.json" "$work/$name.merged.json"; then
        pass "values valid against values.schema.json"
    else
        fail "$name values: values.schema.json rejects them"
    fi
    if ! "$work/render" -chart "$chart" -chart-json "$work/Chart.json" "${layers[@]}" \
        -notes "$work/$name.NOTES.txt" >"$work/$name.yaml"; then
        fail "$name values: the chart does not render"
        return
    fi
    pass "rendered: $(grep -c '^# Source: ' "$work/$name.yaml") templates, $(grep -c '^kind: ' "$work/$name.yaml") objects ($(grep '^kind: ' "$work/$name.yaml" | cut -d' ' -f2 | paste -sd' ' -))"
    if [ -s "$work/$name.NOTES.txt" ]; then
        pass "NOTES.txt rendered ($(wc -l <"$work/$name.NOTES.txt") lines)"
    else
        fail "$name values: NOTES.txt renders empty"
    fi
    if "$py" "$here/validate.py" "$work/$name.yaml" | sed "s|$work/||"; then
        pass "every object valid against the Kubernetes API types"
    else
        fail "$name values: rendered objects invalid (above)"
    fi
    if "$py" "$here/checks.py" consistent "$work/$name.yaml"; then
        pass "render consistent"
    else
        fail "$name values: render inconsistent (above)"
    fi
    if "$py" "$here/checks.py" dropins "$work/$name.yaml" "$work/$name.merged.json"; then
        pass "every drop-in in the ConfigMap as given"
    else
        fail "$name values: drop-ins not rendered as given (above)"
    fi
}

render default
render all "$here/values-all.yaml"
render off "$here/values-off.yaml"
render hostile "$here/values-hostile.yaml"

step "values-bad.yaml must be rejected by values.schema.json"
"$py" "$here/checks.py" merge "$work/bad.merged.json" "$chart/values.yaml" "$here/values-bad.yaml"
if out=$("$py" "$here/checks.py" schema "$chart/values.schema.json" "$work/bad.merged.json"); then
    fail "values-bad.yaml accepted"
else
    printf '%s\n' "$out" | sed 's/^/  | /'
    if grep -q "restoreOnExit: 'yes' is not of type 'boolean'" <<<"$out" &&
        grep -q "'priorityClass' was unexpected" <<<"$out"; then
        pass "rejected, naming the wrong type and the unknown key"
    else
        fail "values-bad.yaml rejected, but not for both of its errors"
    fi
fi

step "values-bad-cases.yaml: each case refused, naming its value"
if "$py" "$here/checks.py" bad "$here/values-bad-cases.yaml" "$chart/values.yaml" "$chart/values.schema.json" \
    "$work" -- "$work/render" -chart "$chart" -chart-json "$work/Chart.json" -values "$work/values.json" \
    >"$work/bad-cases.out" 2>&1; then
    cat "$work/bad-cases.out"
    pass "$(grep -c '^ok' "$work/bad-cases.out") cases refused"
else
    cat "$work/bad-cases.out"
    fail "values-bad-cases.yaml: $(grep -c '^FAIL' "$work/bad-cases.out") case(s) not refused as they should be (above)"
fi

step "plain manifest: packaging/kubernetes/irqwise-daemonset.yaml"
if "$py" "$here/validate.py" "$manifest" | sed "s|$top/||"; then
    pass "every object valid against the Kubernetes API types"
else
    fail "the manifest is invalid (above)"
fi
if "$py" "$here/checks.py" consistent "$manifest"; then
    pass "manifest consistent"
else
    fail "manifest inconsistent (above)"
fi

step "broken-daemonset.yaml must be rejected by validate.py"
if out=$("$py" "$here/validate.py" "$here/broken-daemonset.yaml"); then
    fail "broken-daemonset.yaml accepted"
else
    printf '%s\n' "$out" | sed "s|$here/||; s/^/  | /"
    expected=(
        "DaemonSet/irqwise: spec.template.spec.containers[0].securityContext.privilegd: unknown field"
        "DaemonSet/irqwise: spec.template.spec.hostNetwork: expected true or false, got string 'true'"
        "DaemonSet/irqwise: spec.template.spec.containers[0].volumeMounts[0].mountPath: required field missing"
        "DaemonSet/irqwise: spec.template.spec.volumes[0].hostPath.type: 'DirectoryOrCreat' is not one of"
        "DaemonSet/irqwise: spec.template.spec.containers[0].resources.requests.memory: 0.25Gi must be less than or equal to the memory limit 128Mi"
    )
    unreported=0
    for line in "${expected[@]}"; do
        if ! grep -qF "$line" <<<"$out"; then
            fail "broken-daemonset.yaml: not reported: $line"
            unreported=$((unreported + 1))
        fi
    done
    [ "$unreported" != 0 ] || pass "rejected, each of its ${#expected[@]} defects named with its path"
fi

step "the chart's defaults against the plain manifest"
if [ ! -s "$work/default.yaml" ]; then
    fail "no default render to compare"
elif "$py" "$here/checks.py" compare "$manifest" "$work/default.yaml"; then
    pass "chart (default values) and manifest agree"
else
    fail "chart (default values) and manifest differ (above): change both"
fi

printf '\n%s: %d failure(s), %ss\n' "$(basename "$0")" "$failures" "$(($(date +%s) - start))"
[ "$failures" = 0 ]
