//! A JSON Schema (2020-12) check of the keywords the shipped schemas use: `type` (one or a
//! list), `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`, `minimum`,
//! `maximum`, `pattern` (regex-lite's syntax, which the shipped patterns keep to), `oneOf`,
//! `$ref` (JSON pointers into the same document, `#/$defs/...`) and `default` (which must itself
//! validate against the schema it stands in). Keywords it does not know fail the check, so a
//! schema cannot silently use more than is checked.
#![allow(dead_code)]

use serde_json::Value;

const KNOWN: &[&str] = &[
    "$schema",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "pattern",
    "oneOf",
    "$ref",
    "$defs",
    "default",
];

/// Every way `value` breaks `schema`, each naming the JSON path (`$.devices[0].irq`).
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, value, "$", &mut out);
    out
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(root: &Value, schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            out.push(format!("{path}: not allowed here"));
        }
        return;
    };
    for k in s.keys() {
        if !KNOWN.contains(&k.as_str()) {
            out.push(format!("schema at {path}: keyword {k} is not checked"));
        }
    }
    if let Some(r) = s.get("$ref") {
        match r.as_str().and_then(|r| r.strip_prefix('#')).and_then(|p| root.pointer(p)) {
            Some(target) => check(root, target, value, path, out),
            None => out.push(format!("schema at {path}: $ref {r} resolves to nothing")),
        }
    }
    if let Some(d) = s.get("default") {
        let mut without = s.clone();
        without.remove("default");
        let mut wrong = Vec::new();
        check(root, &Value::Object(without), d, path, &mut wrong);
        if !wrong.is_empty() {
            out.push(format!("schema at {path}: its default {d} does not validate: {}", wrong.join("; ")));
        }
    }
    if let Some(Value::Array(alternatives)) = s.get("oneOf") {
        let mut why = Vec::new();
        let mut matching = 0;
        for (i, alt) in alternatives.iter().enumerate() {
            let mut wrong = Vec::new();
            check(root, alt, value, path, &mut wrong);
            if wrong.is_empty() {
                matching += 1;
            } else {
                why.push(format!("[{i}] {}", wrong.join("; ")));
            }
        }
        if matching != 1 {
            out.push(format!("{path}: matches {matching} of the oneOf alternatives, not one ({})", why.join(" | ")));
        }
    }
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let actual = type_name(value);
        let ok = allowed.contains(&actual) || (actual == "integer" && allowed.contains(&"number"));
        if !ok {
            out.push(format!("{path}: {actual} ({value}), expected {allowed:?}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            out.push(format!("{path}: {value}, expected {c}"));
        }
    }
    if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), value.as_f64()) {
        if n < min {
            out.push(format!("{path}: {value}, expected at least {min}"));
        }
    }
    if let (Some(max), Some(n)) = (s.get("maximum").and_then(Value::as_f64), value.as_f64()) {
        if n > max {
            out.push(format!("{path}: {value}, expected at most {max}"));
        }
    }
    if let (Some(p), Some(text)) = (s.get("pattern").and_then(Value::as_str), value.as_str()) {
        match regex_lite::Regex::new(p) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => out.push(format!("{path}: {value} does not match the pattern {p}")),
            Err(e) => out.push(format!("schema at {path}: pattern {p} is not a regex: {e}")),
        }
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.contains(value) {
            out.push(format!("{path}: {value}, expected one of {e:?}"));
        }
    }
    if let Value::Object(obj) = value {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                out.push(format!("{path}: missing {r}"));
            }
        }
        for (k, v) in obj {
            let at = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(sub) => check(root, sub, v, &at, out),
                None => {
                    if let Some(extra) = s.get("additionalProperties") {
                        check(root, extra, v, &at, out);
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(sub)) = (value, s.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check(root, sub, v, &format!("{path}[{i}]"), out);
        }
    }
}

/// The shipped schema of `name` (`schemas/<name>.schema.json`).
pub fn schema(name: &str) -> Value {
    let path = format!("{}/schemas/{name}.schema.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}
