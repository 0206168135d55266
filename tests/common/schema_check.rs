//! A JSON Schema (2020-12) check of the keywords the shipped schemas use: `type` (one or a
//! list), `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`. Keywords
//! it does not know fail the check, so a schema cannot silently use more than is checked.
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
];

/// Every way `value` breaks `schema`, each naming the JSON path (`$.devices[0].irq`).
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, value, "$", &mut out);
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

fn check(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
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
                Some(sub) => check(sub, v, &at, out),
                None => {
                    if let Some(extra) = s.get("additionalProperties") {
                        check(extra, v, &at, out);
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(sub)) = (value, s.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check(sub, v, &format!("{path}[{i}]"), out);
        }
    }
}

/// The shipped schema of `name` (`schemas/<name>.schema.json`).
pub fn schema(name: &str) -> Value {
    let path = format!("{}/schemas/{name}.schema.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}
