#!/usr/bin/python3
"""Validates Kubernetes manifests offline against the API types, without a cluster.

    validate.py FILE...        (multi-document YAML; "-" reads stdin)

The types are those of Debian's python3-kubernetes (22.6: the client models of Kubernetes
1.22). Each model class lists its fields with their JSON names (attribute_map) and types
(openapi_types: 'str', 'int', 'bool', 'dict(str, str)', 'list[V1Container]', 'V1PodSpec',
'object', ...). Every object is walked against its model: an unknown field, a value of the
wrong type or a missing required field (the model's constructor refuses None for those) is a
violation. On top, a few checks the API server makes that the models cannot express: names,
labels, enumerated values of the fields irqwise's manifests use, quantities, int-or-string
values, the DaemonSet's selector against its pod labels, volumes against volume mounts,
tolerations, node selectors, priority class names, annotation keys of the pod template and each
resource request against its limit.

One line per object; one line per violation, "Kind/name: path: message". Exit status 1 when
any object has a violation, 2 when a file cannot be read as YAML.
"""

import re
import sys
from decimal import Decimal

import yaml

try:
    import kubernetes.client as k8s
except ImportError:  # pragma: no cover - the check script installs python3-kubernetes
    sys.exit("validate.py: python3-kubernetes is missing (apt-get install python3-kubernetes)")

# apiVersion/kind -> the API group/version the model belongs to. Only kinds listed here are
# accepted: a model class alone does not know its group (V1DaemonSet is apps/v1, not v1).
KINDS = {
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "Deployment"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass"}

# Enumerations the API server enforces (model class, JSON field) -> allowed values.
ENUMS = {
    ("V1HostPathVolumeSource", "type"): {
        "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
        "BlockDevice",
    },
    ("V1Container", "imagePullPolicy"): {"Always", "IfNotPresent", "Never"},
    ("V1Container", "terminationMessagePolicy"): {"File", "FallbackToLogsOnError"},
    ("V1DaemonSetUpdateStrategy", "type"): {"RollingUpdate", "OnDelete"},
    ("V1Toleration", "operator"): {"Exists", "Equal"},
    ("V1Toleration", "effect"): {"", "NoSchedule", "PreferNoSchedule", "NoExecute"},
    ("V1PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("V1PodSpec", "dnsPolicy"): {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"},
    ("V1PodSpec", "preemptionPolicy"): {"PreemptLowerPriority", "Never"},
    ("V1ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1SeccompProfile", "type"): {"RuntimeDefault", "Unconfined", "Localhost"},
    ("V1VolumeMount", "mountPropagation"): {"None", "HostToContainer", "Bidirectional"},
}

# Fields typed 'object' that are IntOrString in the API.
INT_OR_STRING = {
    ("V1RollingUpdateDaemonSet", "maxUnavailable"),
    ("V1RollingUpdateDaemonSet", "maxSurge"),
    ("V1RollingUpdateDeployment", "maxUnavailable"),
    ("V1RollingUpdateDeployment", "maxSurge"),
    ("V1HTTPGetAction", "port"),
    ("V1TCPSocketAction", "port"),
    ("V1ServicePort", "targetPort"),
}
# Anchored with \Z, the end of the text, as the API server's Go regexps anchor with $ (Python's $
# also matches before a final newline).
PERCENT = re.compile(r"^[0-9]+%\Z")
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?\Z")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+\Z")
SUFFIXES = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
            "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
            "Pi": 2**50, "Ei": 2**60}


def qualified_name_problem(key):
    """The API's rule for label and annotation keys: [prefix/]name."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return "prefix %r is not a DNS subdomain" % prefix
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        return "name %r is not a qualified name" % name
    return None


def quantity(text):
    """A quantity's value as a Decimal (None when it is not one)."""
    m = QUANTITY.match(str(text))
    if not m:
        return None
    number, suffix = m.group(1), m.group(3) or ""
    sign = -1 if str(text).startswith("-") else 1
    if suffix[:1] in ("e", "E"):
        return sign * Decimal(number) * Decimal(10) ** int(suffix[1:])
    return sign * Decimal(number) * SUFFIXES[suffix]


def tolerations_ok(path, tolerations, w):
    """The API server's rules for tolerations (ValidateTolerations)."""
    for i, t in enumerate(tolerations if isinstance(tolerations, list) else []):
        if not isinstance(t, dict):
            continue
        tpath = "%s.tolerations[%d]" % (path, i)
        key, op, value = t.get("key") or "", t.get("operator") or "Equal", t.get("value") or ""
        if key and qualified_name_problem(str(key)):
            w.bad(tpath + ".key", qualified_name_problem(str(key)))
        if not key and op != "Exists":
            w.bad(tpath + ".operator", "operator must be Exists when key is empty, got %r" % op)
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            w.bad(tpath + ".effect", "effect must be NoExecute when tolerationSeconds is set, got %r" % t.get("effect"))
        if op == "Exists" and value:
            w.bad(tpath + ".value", "value must be empty when operator is Exists, got %r" % value)
        if op == "Equal" and (len(str(value)) > 63 or not LABEL_VALUE.match(str(value))):
            w.bad(tpath + ".value", "%r is not a valid label value" % value)


def resources_ok(path, resources, w):
    """Each request at most its limit (ValidateResourceRequirements)."""
    if not isinstance(resources, dict):
        return
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return
    for name, request in requests.items():
        r, l = quantity(request), quantity(limits.get(name)) if name in limits else None
        if r is not None and l is not None and r > l:
            w.bad("%s.resources.requests.%s" % (path, name),
                  "%s must be less than or equal to the %s limit %s" % (request, name, limits[name]))


class Walker:
    def __init__(self):
        self.problems = []
        self.fields = 0

    def bad(self, path, message):
        self.problems.append((path or "(top)", message))

    def check(self, value, typ, path, owner=None, field=None):
        """value against an openapi type string; owner/field: the model and JSON field it is in."""
        self.fields += 1
        if value is None:
            # An explicit null: the API treats it as absent. Required ones are caught below.
            return
        if typ.startswith("list["):
            if not isinstance(value, list):
                return self.bad(path, "expected a list, got %s" % kind_of(value))
            for i, item in enumerate(value):
                self.check(item, typ[5:-1], "%s[%d]" % (path, i), owner, field)
            return
        if typ.startswith("dict("):
            if not isinstance(value, dict):
                return self.bad(path, "expected a map, got %s" % kind_of(value))
            inner = typ[5:-1].split(", ", 1)[1]
            quantities = owner == "V1ResourceRequirements"
            for key, item in value.items():
                sub = "%s.%s" % (path, key)
                if not isinstance(key, str):
                    self.bad(sub, "map key must be a string, got %s" % kind_of(key))
                if quantities:
                    if isinstance(item, bool) or not isinstance(item, (str, int, float)) or not QUANTITY.match(str(item)):
                        self.bad(sub, "not a quantity: %r" % (item,))
                    continue
                self.check(item, inner, sub, owner, field)
            return
        if typ == "str":
            if not isinstance(value, str):
                return self.bad(path, "expected a string, got %s %r" % (kind_of(value), value))
            allowed = ENUMS.get((owner, field))
            if allowed is not None and value not in allowed:
                self.bad(path, "%r is not one of %s" % (value, ", ".join(sorted(a for a in allowed if a))))
            return
        if typ == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                self.bad(path, "expected an integer, got %s %r" % (kind_of(value), value))
            return
        if typ == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.bad(path, "expected a number, got %s %r" % (kind_of(value), value))
            return
        if typ == "bool":
            if not isinstance(value, bool):
                self.bad(path, "expected true or false, got %s %r" % (kind_of(value), value))
            return
        if typ == "datetime" or typ == "date":
            if not isinstance(value, str):
                self.bad(path, "expected a timestamp string, got %s" % kind_of(value))
            return
        if typ == "object":
            if (owner, field) in INT_OR_STRING:
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    self.bad(path, "expected an integer or a string, got %s %r" % (kind_of(value), value))
                elif isinstance(value, str) and field in ("maxUnavailable", "maxSurge") and not PERCENT.match(value):
                    self.bad(path, "%r is neither an integer nor a percentage" % value)
            return
        cls = getattr(k8s, typ, None)
        if cls is None or not hasattr(cls, "openapi_types"):
            return self.bad(path, "validator: unknown type %s" % typ)
        self.model(value, cls, path)

    def model(self, value, cls, path):
        if not isinstance(value, dict):
            return self.bad(path, "expected an object (%s), got %s" % (cls.__name__, kind_of(value)))
        by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
        kwargs = {}
        for key, item in value.items():
            sub = "%s.%s" % (path, key) if path else str(key)
            attr = by_json.get(key)
            if attr is None:
                self.bad(sub, "unknown field")
                continue
            self.check(item, cls.openapi_types[attr], sub, cls.__name__, key)
            if item is not None:
                kwargs[attr] = item
        # Required fields: the model's constructor (client-side validation on) refuses None for
        # them. The values themselves were checked above; the constructor only sees presence.
        for attr in cls.openapi_types:
            trial = dict(kwargs)
            try:
                cls(**trial)
                break
            except ValueError as e:
                m = re.search(r"Invalid value for `(\w+)`, must not be `None`", str(e))
                if not m:
                    self.bad(path, "%s: %s" % (cls.__name__, e))
                    break
                missing = m.group(1)
                json_name = cls.attribute_map.get(missing, missing)
                self.bad("%s.%s" % (path, json_name) if path else json_name, "required field missing")
                kwargs[missing] = "(missing)"
            except TypeError as e:
                self.bad(path, "%s: %s" % (cls.__name__, e))
                break


def kind_of(value):
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "map"}.get(
        type(value), type(value).__name__)


def semantic(obj, kind, w):
    """Checks the API server makes beyond the schema, for the kinds irqwise ships."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        w.bad("metadata.name", "required field missing")
    else:
        rule = DNS_LABEL if kind in ("Namespace", "Service") else DNS_SUBDOMAIN
        if len(name) > (63 if rule is DNS_LABEL else 253) or not rule.match(name):
            w.bad("metadata.name", "%r is not a valid %s name" % (name, kind))
    namespace = meta.get("namespace")
    if kind in CLUSTER_SCOPED and namespace is not None:
        w.bad("metadata.namespace", "%s is cluster-scoped" % kind)
    if isinstance(namespace, str) and not DNS_LABEL.match(namespace):
        w.bad("metadata.namespace", "%r is not a valid namespace name" % namespace)
    labels_ok("metadata.labels", meta.get("labels"), w)
    for key in (meta.get("annotations") or {}) if isinstance(meta.get("annotations"), dict) else ():
        problem = qualified_name_problem(str(key))
        if problem:
            w.bad("metadata.annotations.%s" % key, problem)
    if kind == "ConfigMap":
        for key in (obj.get("data") or {}) if isinstance(obj.get("data"), dict) else ():
            if not CONFIGMAP_KEY.match(str(key)) or len(str(key)) > 253:
                w.bad("data.%s" % key, "not a valid ConfigMap key")
    if kind in ("DaemonSet", "Deployment"):
        spec = obj.get("spec") or {}
        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        labels_ok("spec.template.metadata.labels", tmeta.get("labels"), w)
        for key in tmeta.get("annotations") or {} if isinstance(tmeta.get("annotations"), dict) else ():
            problem = qualified_name_problem(str(key))
            if problem:
                w.bad("spec.template.metadata.annotations.%s" % key, problem)
        selector = ((spec.get("selector") or {}).get("matchLabels")) or {}
        pod_labels = tmeta.get("labels") or {}
        if isinstance(selector, dict) and isinstance(pod_labels, dict):
            for key, value in selector.items():
                if pod_labels.get(key) != value:
                    w.bad("spec.selector.matchLabels.%s" % key,
                          "selector does not match template labels (%r)" % (pod_labels.get(key),))
        pod = template.get("spec")
        if isinstance(pod, dict):
            pod_spec("spec.template.spec", pod, w, kind)
    if kind == "Pod" and isinstance(obj.get("spec"), dict):
        pod_spec("spec", obj["spec"], w, kind)


def labels_ok(path, labels, w):
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        problem = qualified_name_problem(str(key))
        if problem:
            w.bad("%s.%s" % (path, key), problem)
        if isinstance(value, str) and (len(value) > 63 or not LABEL_VALUE.match(value)):
            w.bad("%s.%s" % (path, key), "%r is not a valid label value" % value)


def pod_spec(path, pod, w, kind):
    if kind != "Pod" and pod.get("restartPolicy", "Always") != "Always":
        w.bad(path + ".restartPolicy", "a %s's pods must restart Always" % kind)
    tolerations_ok(path, pod.get("tolerations"), w)
    labels_ok(path + ".nodeSelector", pod.get("nodeSelector"), w)
    priority = pod.get("priorityClassName")
    if isinstance(priority, str) and priority and (len(priority) > 253 or not DNS_SUBDOMAIN.match(priority)):
        w.bad(path + ".priorityClassName", "%r is not a DNS subdomain" % priority)
    volumes = {}
    for i, volume in enumerate(pod.get("volumes") or []):
        if not isinstance(volume, dict):
            continue
        vname = volume.get("name")
        if vname in volumes:
            w.bad("%s.volumes[%d].name" % (path, i), "duplicate volume %r" % vname)
        volumes[vname] = volume
        sources = [k for k in volume if k != "name"]
        if len(sources) != 1:
            w.bad("%s.volumes[%d]" % (path, i), "a volume needs exactly one source, has %s" % (sources or "none"))
        host = volume.get("hostPath")
        if isinstance(host, dict) and not str(host.get("path", "")).startswith("/"):
            w.bad("%s.volumes[%d].hostPath.path" % (path, i), "must be absolute")
    names = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(pod.get(group) or []):
            if not isinstance(container, dict):
                continue
            cpath = "%s.%s[%d]" % (path, group, i)
            cname = container.get("name")
            if cname in names:
                w.bad(cpath + ".name", "duplicate container name %r" % cname)
            names.add(cname)
            if isinstance(cname, str) and not DNS_LABEL.match(cname):
                w.bad(cpath + ".name", "%r is not a DNS label" % cname)
            mounts = set()
            for j, mount in enumerate(container.get("volumeMounts") or []):
                if not isinstance(mount, dict):
                    continue
                if mount.get("name") not in volumes:
                    w.bad("%s.volumeMounts[%d].name" % (cpath, j), "no volume named %r" % mount.get("name"))
                mp = mount.get("mountPath")
                if mp in mounts:
                    w.bad("%s.volumeMounts[%d].mountPath" % (cpath, j), "duplicate mount path %r" % mp)
                mounts.add(mp)
            resources_ok(cpath, container.get("resources"), w)
            sc = container.get("securityContext") or {}
            if isinstance(sc, dict) and sc.get("privileged") is True and sc.get("allowPrivilegeEscalation") is False:
                w.bad(cpath + ".securityContext",
                      "cannot set allowPrivilegeEscalation to false and privileged to true")


def validate(obj, where):
    """(label, problems, fields) for one document."""
    if not isinstance(obj, dict):
        return where, [("(top)", "expected an object, got %s" % kind_of(obj))], 0
    api, kind = obj.get("apiVersion"), obj.get("kind")
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    label = "%s/%s" % (kind, name)
    if (api, kind) not in KINDS:
        return label, [("apiVersion", "unknown apiVersion/kind %s %s" % (api, kind))], 0
    cls = getattr(k8s, api.rpartition("/")[2].capitalize() + kind)
    w = Walker()
    w.model(obj, cls, "")
    semantic(obj, kind, w)
    return label, w.problems, w.fields


def main(paths):
    failed = False
    seen = {}
    for path in paths:
        try:
            text = sys.stdin.read() if path == "-" else open(path).read()
            docs = list(yaml.safe_load_all(text))
        except (OSError, yaml.YAMLError) as e:
            print("%s: cannot read: %s" % (path, e))
            return 2
        for n, doc in enumerate(docs):
            if doc is None:
                continue
            label, problems, fields = validate(doc, "%s#%d" % (path, n))
            ident = (label, (doc.get("metadata") or {}).get("namespace") if isinstance(doc, dict) else None)
            if ident in seen:
                problems = problems + [("metadata.name", "duplicate of document %s" % seen[ident])]
            seen[ident] = "%s#%d" % (path, n)
            if problems:
                failed = True
                print("FAIL %s (%s, document %d)" % (label, path, n))
                for where, message in problems:
                    print("  %s: %s: %s" % (label, where, message))
            else:
                print("ok   %s (%s, document %d): %d fields checked" % (label, path, n, fields))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
