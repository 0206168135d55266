#!/usr/bin/python3
"""The checks of tests/k8s/check.sh that need Python (Debian's python3-yaml, python3-jsonschema).

    checks.py json YAML OUT.json                 YAML file -> JSON (the Go renderer reads JSON)
    checks.py merge OUT.json VALUES.yaml...      values merged as `helm -f` merges them -> JSON
    checks.py schema SCHEMA VALUES.json          validate merged values; exit 1 with each error
    checks.py compare MANIFEST RENDERED          the DaemonSets agree in substance, and so do the
                                                 effective [global] settings of the ConfigMaps
    checks.py consistent RENDERED                a rendered chart agrees with itself: drop-ins
                                                 parse, metrics_file's directory is mounted, and
                                                 so are kubelet_cpu_manager_state's (read-only)
                                                 and nri_socket's; no checksum annotation rolls
                                                 pods on config changes
    checks.py versions CARGO CHART MANIFEST      appVersion is Cargo.toml's version; the manifest
                                                 runs that image tag and the deb's binary path
    checks.py dropins RENDERED VALUES.json       the ConfigMap holds each of the values' drop-ins,
                                                 byte for byte, under its own key, and nothing else
    checks.py bad CASES VALUES SCHEMA WORK -- RENDER...
                                                 every case of CASES (values layered over VALUES)
                                                 is refused, by SCHEMA or by the chart (RENDER,
                                                 the renderer's command line, with the case's
                                                 values appended as -values), naming its value
"""

import json
import os
import re
import subprocess
import sys
import tomllib

import yaml

# The daemon's defaults for the settings the chart and the manifest set (config/irqwise.toml).
DEFAULT_GLOBAL = {
    "restore_on_exit": False,
    "metrics_file": "/var/lib/prometheus/node-exporter/irqwise.prom",
    "nri": False,
    "nri_socket": "/var/run/nri/nri.sock",
    "nri_exclusive_cpus": False,
    "kubelet_cpu_manager_state": "",
}

# The DaemonSet fields that must agree between the plain manifest and the chart's defaults.
POD_FIELDS = [
    "hostNetwork", "hostPID", "priorityClassName", "tolerations", "nodeSelector", "volumes",
    "serviceAccountName", "automountServiceAccountToken", "enableServiceLinks",
    "terminationGracePeriodSeconds",
]
CONTAINER_FIELDS = [
    "image", "imagePullPolicy", "command", "args", "securityContext", "resources", "volumeMounts",
    "readinessProbe", "livenessProbe", "env",
]


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def load_all(path):
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        raise SystemExit("  %s does not parse as YAML: %s" % (path, " ".join(str(e).split())))


def merge(base, layer):
    """Helm's coalescing of -f files: maps key by key, the rest replaced, null deleting."""
    out = dict(base)
    for key, value in layer.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def find(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    if len(found) != 1:
        raise SystemExit("expected one %s, found %d" % (kind, len(found)))
    return found[0]


def effective_global(configmap, where):
    """The [global] table the daemon ends up with from the ConfigMap's drop-ins (lexical order,
    later keys winning), over the defaults of the settings compared."""
    merged = dict(DEFAULT_GLOBAL)
    for name in sorted(configmap.get("data") or {}):
        try:
            table = tomllib.loads(configmap["data"][name])
        except tomllib.TOMLDecodeError as e:
            raise SystemExit("%s: drop-in %s is not valid TOML: %s" % (where, name, e))
        merged.update(table.get("global", {}))
    return merged


def diff_named(label, left, right, key, problems):
    """Lists of named items (volumes, mounts), whose order is irrelevant: item by item."""
    a = {item.get(key): item for item in left or []}
    b = {item.get(key): item for item in right or []}
    for name in sorted(set(a) | set(b), key=str):
        if a.get(name) != b.get(name):
            problems.append("%s %s: manifest %s, chart %s"
                            % (label, name, json.dumps(a.get(name)), json.dumps(b.get(name))))


def cmd_json(src, out):
    with open(out, "w") as f:
        json.dump(load_yaml(src), f, default=str)


def cmd_merge(out, *files):
    values = {}
    for path in files:
        values = merge(values, load_yaml(path) or {})
    with open(out, "w") as f:
        json.dump(values, f, default=str)


def schema_errors(schema_path, values):
    """Each error of values against the schema, as "PATH: MESSAGE" (PATH "(top)" for the root).

    Patterns are matched as Helm's validators (Go regexp) and JSON Schema (ECMA 262) match them:
    `$` is the end of the text. Python's `$` also matches before a final newline, which would
    accept "32Mi" and a newline where Helm refuses it."""
    import jsonschema

    with open(schema_path) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", patrn), instance):
            yield jsonschema.ValidationError("%r does not match %r" % (instance, patrn))

    cls = jsonschema.validators.extend(cls, {"pattern": pattern})
    errors = sorted(cls(schema).iter_errors(values), key=lambda e: list(e.absolute_path))
    return ["%s: %s" % (".".join(str(p) for p in e.absolute_path) or "(top)", e.message) for e in errors]


def cmd_schema(schema_path, values_path):
    with open(values_path) as f:
        values = json.load(f)
    errors = schema_errors(schema_path, values)
    for e in errors:
        print("  " + e)
    return 1 if errors else 0


def cmd_compare(manifest_path, rendered_path):
    manifest, rendered = load_all(manifest_path), load_all(rendered_path)
    problems = []
    a = find(manifest, "DaemonSet")["spec"]["template"]["spec"]
    b = find(rendered, "DaemonSet")["spec"]["template"]["spec"]
    for field in POD_FIELDS:
        if field == "volumes":
            diff_named("pod volume", a.get(field), b.get(field), "name", problems)
        elif a.get(field) != b.get(field):
            problems.append("pod %s: manifest %s, chart %s" % (field, json.dumps(a.get(field)), json.dumps(b.get(field))))
    ca, cb = a["containers"], b["containers"]
    if len(ca) != len(cb):
        problems.append("containers: manifest %d, chart %d" % (len(ca), len(cb)))
    for x, y in zip(ca, cb):
        for field in CONTAINER_FIELDS:
            left, right = x.get(field), y.get(field)
            if field == "volumeMounts":
                diff_named("container %s volumeMount" % x.get("name"), left, right, "name", problems)
            elif left != right:
                problems.append("container %s %s: manifest %s, chart %s"
                                % (x.get("name"), field, json.dumps(left), json.dumps(right)))
    sa = find(manifest, "DaemonSet")["spec"]
    sb = find(rendered, "DaemonSet")["spec"]
    for field in ("updateStrategy", "selector"):
        if sa.get(field) != sb.get(field):
            problems.append("%s: manifest %s, chart %s" % (field, json.dumps(sa.get(field)), json.dumps(sb.get(field))))
    ga = effective_global(find(manifest, "ConfigMap"), manifest_path)
    gb = effective_global(find(rendered, "ConfigMap"), rendered_path)
    for key in DEFAULT_GLOBAL:
        if ga.get(key) != gb.get(key):
            problems.append("configuration [global] %s: manifest %r, chart %r" % (key, ga.get(key), gb.get(key)))
    sva = find(manifest, "ServiceAccount").get("automountServiceAccountToken")
    svb = find(rendered, "ServiceAccount").get("automountServiceAccountToken")
    if sva is not False or svb is not False:
        problems.append("ServiceAccount automountServiceAccountToken: manifest %r, chart %r" % (sva, svb))
    for p in problems:
        print("  " + p)
    if not problems:
        print("  same: pod %s; container %s; updateStrategy, selector; [global] %s"
              % (", ".join(POD_FIELDS), ", ".join(CONTAINER_FIELDS), ", ".join(DEFAULT_GLOBAL)))
    return 1 if problems else 0


def cmd_consistent(rendered_path):
    docs = load_all(rendered_path)
    problems = []
    ds = find(docs, "DaemonSet")
    pod = ds["spec"]["template"]
    cm = find(docs, "ConfigMap")
    settings = effective_global(cm, rendered_path)
    mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0].get("volumeMounts") or []}
    metrics_file = settings["metrics_file"]
    if metrics_file:
        directory = metrics_file.rsplit("/", 1)[0]
        mount = mounts.get(directory)
        if mount is None or mount.get("readOnly"):
            problems.append("metrics_file %s: its directory is not mounted writable" % metrics_file)
    kubelet_state = settings["kubelet_cpu_manager_state"]
    if kubelet_state:
        mount = mounts.get(kubelet_state.rsplit("/", 1)[0])
        if mount is None or not mount.get("readOnly"):
            problems.append("kubelet_cpu_manager_state %s: its directory is not mounted read-only" % kubelet_state)
    if settings["nri"]:
        if settings["nri_socket"].rsplit("/", 1)[0] not in mounts:
            problems.append("nri_socket %s: its directory is not mounted" % settings["nri_socket"])
    for path in ("/etc/irqwise/conf.d", "/run/irqwise"):
        if path not in mounts:
            problems.append("%s is not mounted" % path)
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    config_volume = volumes.get(mounts.get("/etc/irqwise/conf.d", {}).get("name"), {})
    if (config_volume.get("configMap") or {}).get("name") != cm["metadata"]["name"]:
        problems.append("/etc/irqwise/conf.d does not mount ConfigMap %s" % cm["metadata"]["name"])
    if mounts.get("/etc/irqwise/conf.d", {}).get("subPath"):
        problems.append("/etc/irqwise/conf.d is a subPath mount: it would never see ConfigMap updates")
    for key in (pod.get("metadata") or {}).get("annotations") or {}:
        if key.startswith("checksum/"):
            problems.append("pod annotation %s: a ConfigMap change would roll every pod, and the "
                            "daemon reloads it by itself" % key)
    for p in problems:
        print("  " + p)
    if not problems:
        print("  drop-ins parse (%s); restore_on_exit = %s; metrics_file = %r%s; nri = %s%s; "
              "kubelet_cpu_manager_state = %r%s; no checksum annotation"
              % (", ".join(sorted(cm.get("data") or {})), str(settings["restore_on_exit"]).lower(),
                 metrics_file, " (directory mounted)" if metrics_file else "",
                 str(settings["nri"]).lower(), " (socket directory mounted)" if settings["nri"] else "",
                 kubelet_state, " (directory mounted read-only)" if kubelet_state else ""))
    return 1 if problems else 0


def cmd_versions(cargo_path, chart_path, manifest_path):
    with open(cargo_path, "rb") as f:
        cargo = tomllib.load(f)
    version = cargo["package"]["version"]
    chart = load_yaml(chart_path)
    problems = []
    if str(chart.get("appVersion")) != version:
        problems.append("Chart.yaml appVersion %r, Cargo.toml version %r" % (chart.get("appVersion"), version))
    assets = cargo["package"]["metadata"]["deb"]["assets"]
    binary = ["/" + a[1].rstrip("/") + "/irqwise" for a in assets if a[0] == "target/release/irqwise"]
    ds = find(load_all(manifest_path), "DaemonSet")
    container = ds["spec"]["template"]["spec"]["containers"][0]
    image = container["image"]
    if not image.endswith(":" + version):
        problems.append("manifest image %s: not tag %s" % (image, version))
    for where, labels in (("metadata", ds["metadata"].get("labels") or {}),
                          ("pod", ds["spec"]["template"]["metadata"].get("labels") or {})):
        if labels.get("app.kubernetes.io/version") != version:
            problems.append("manifest %s label app.kubernetes.io/version %r, not %s"
                            % (where, labels.get("app.kubernetes.io/version"), version))
    probe = ((container.get("readinessProbe") or {}).get("exec") or {}).get("command") or []
    if probe and binary and probe[0] != binary[0]:
        problems.append("readinessProbe runs %s, the package installs %s" % (probe[0], binary[0]))
    if container.get("args") != ["run", "--watch-config"] or container.get("command"):
        problems.append("the container must run the image's entrypoint with args run --watch-config")
    for p in problems:
        print("  " + p)
    if not problems:
        print("  version %s (Cargo.toml = Chart.yaml appVersion = manifest image tag and labels); "
              "binary %s" % (version, binary[0] if binary else "?"))
    return 1 if problems else 0


def cmd_dropins(rendered_path, values_path):
    """The rendered ConfigMap's data is the chart's own drop-in and the values' `config`, each
    text byte for byte under its own name: no text ended its YAML scalar early, no text added a
    key, an object or a kind."""
    with open(values_path) as f:
        config = json.load(f).get("config") or {}
    docs = load_all(rendered_path)
    problems = []
    kinds = sorted(str(d.get("kind")) for d in docs if isinstance(d, dict))
    configmaps = [d for d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"]
    if len(configmaps) != 1 or "Secret" in kinds:
        problems.append("objects %s: expected one ConfigMap and no Secret" % ", ".join(kinds))
    data = (configmaps[0].get("data") or {}) if configmaps else {}
    expected = sorted(["10-helm-values.toml"] + list(config))
    if sorted(data) != expected:
        problems.append("ConfigMap keys %s, expected %s" % (sorted(data), expected))
    for name, text in sorted(config.items()):
        if name in data and data[name] != text:
            problems.append("drop-in %s: %r rendered as %r" % (name, text, data[name]))
    for p in problems:
        print("  " + p)
    if not problems:
        print("  ConfigMap data: %s, each drop-in byte for byte" % ", ".join(expected))
    return 1 if problems else 0


def dotted(values, path):
    """The value at a dotted path of the values (list indices as numbers), or None."""
    for part in path.split("."):
        if isinstance(values, list) and part.isdigit() and int(part) < len(values):
            values = values[int(part)]
        elif isinstance(values, dict):
            values = values.get(part)
        else:
            return None
    return values


def api_refusal(case, n, work, render, value):
    """The case rendered without the schema, through validate.py: its line naming the value
    (indented), or what went wrong."""
    layer = os.path.join(work, "api-case-%d.json" % n)
    with open(layer, "w") as f:
        json.dump(case["values"], f)
    out = subprocess.run(list(render) + ["-values", layer], capture_output=True, text=True)
    if out.returncode != 0:
        return "cannot render it for the API check: " + out.stderr.strip()
    path = os.path.join(work, "api-case-%d.yaml" % n)
    with open(path, "w") as f:
        f.write(out.stdout)
    check = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "validate.py"), path],
                           capture_output=True, text=True)
    named = [line for line in check.stdout.splitlines()
             if line.startswith("  ") and (str(value) in line or repr(value) in line)]
    if check.returncode == 0:
        return "the API server's rules (validate.py) accept it"
    if not named:
        return "validate.py refuses it without naming the value: " + check.stdout.strip()
    return named[0]


def cmd_bad(cases_path, values_path, schema_path, work, dashdash, *render):
    """Every case is refused, where it says (`by`: schema, render or both), and the refusal names
    the value: the schema's error at the case's path `at` names it (the value found there, or
    `names`, a property name refused), the renderer's error names both the path and the value.
    A case marked `api: true` is one the API server itself refuses: rendered without the schema,
    its objects fail validate.py, which names the value (so the schema's rule is the server's)."""
    if dashdash != "--" or not render:
        sys.exit("usage: checks.py bad CASES VALUES SCHEMA WORK -- RENDER...")
    base = load_yaml(values_path)
    failed = 0
    for n, case in enumerate(load_yaml(cases_path)):
        merged = merge(base, case["values"])
        value = case.get("names", dotted(merged, case["at"]))
        label = "%s (%s = %r)" % (case["name"], case["at"], value)
        by = case["by"]
        found = []
        if by in ("schema", "both"):
            errors = [e for e in schema_errors(schema_path, merged) if e.startswith(case["at"] + ": ")]
            named = [e for e in errors if repr(value) in e]
            if not named:
                print("FAIL %s: values.schema.json %s" % (label, "accepts it" if not errors else
                                                         "refuses it without naming the value: " + errors[0]))
                failed += 1
                continue
            found.append("schema: " + named[0])
        if by in ("render", "both"):
            layer = os.path.join(work, "bad-case-%d.json" % n)
            with open(layer, "w") as f:
                json.dump(case["values"], f)
            run = subprocess.run(list(render) + ["-values", layer], capture_output=True, text=True)
            message = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
            if run.returncode == 0:
                print("FAIL %s: the chart renders it" % label)
                failed += 1
                continue
            if case["at"] not in message or str(value) not in message:
                print("FAIL %s: the chart refuses it without naming %s and the value: %s"
                      % (label, case["at"], message))
                failed += 1
                continue
            found.append("render: " + message[message.find("error calling fail: ") + 20:]
                         if "error calling fail: " in message else "render: " + message)
        if case.get("api"):
            refusal = api_refusal(case, n, work, render, value)
            if not refusal.startswith("  "):
                print("FAIL %s: %s" % (label, refusal))
                failed += 1
                continue
            found.append("API server (validate.py): " + refusal.strip())
        print("ok   refused: %s" % label)
        for line in found:
            print("       " + line)
    return 1 if failed else 0


def main(argv):
    commands = {
        "json": cmd_json, "merge": cmd_merge, "schema": cmd_schema, "compare": cmd_compare,
        "consistent": cmd_consistent, "versions": cmd_versions, "dropins": cmd_dropins,
        "bad": cmd_bad,
    }
    if len(argv) < 2 or argv[1] not in commands:
        sys.exit(__doc__)
    return commands[argv[1]](*argv[2:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
