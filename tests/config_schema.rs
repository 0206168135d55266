//! `schemas/config.schema.json` (the configuration file's JSON Schema, which TOML editors use
//! through the `#:schema` line of `config/irqwise.toml`) kept in step with the reader:
//!
//! - each table of the schema has exactly the keys the reader accepts
//!   ([`irqwise::config::known_keys`]), rejects others and describes every key;
//! - every `default` is what [`Global::default`] holds (each parsed alone by the real reader);
//! - every `enum` lists exactly the spellings the reader accepts (each spelling parsed, and the
//!   list the reader's own error names for a wrong one compared);
//! - each key's type, `minimum`/`maximum` and `pattern` agree with the reader on sample values
//!   (the schema never refuses what the reader takes);
//! - the shipped `config/irqwise.toml` (its commented keys uncommented) and every
//!   `config/conf.d/*.example` validate against the schema (`tests/common/schema_check.rs`).
//!
//! The checks are functions from a schema to the problems found, so the negative tests at the
//! end feed them a schema broken on purpose.

#[path = "common/config_text.rs"]
mod config_text;
#[path = "common/schema_check.rs"]
mod schema_check;

use std::collections::BTreeSet;
use std::path::Path;

use irqwise::config::{global_schema, known_keys, parse_files, Global, SourceFile};
use serde_json::Value;

use config_text::possible;
use schema_check::violations;

/// Global keys whose default has no spelling in the file: `metrics_file` unset means "the
/// node_exporter directory when it exists" (`MetricsFile::Auto`), which no value states.
const NO_DEFAULT: &[&str] = &["metrics_file"];

fn shipped_schema() -> Value {
    schema_check::schema("config")
}

/// `s` with its `$ref` followed (within `root`).
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(root, root.pointer(r.trim_start_matches('#')).unwrap_or(&Value::Null)),
        None => s,
    }
}

/// The schema of table `name` of [`known_keys`] (`device.napi`: its one-table alternative).
fn table<'a>(root: &'a Value, name: &str) -> &'a Value {
    let prop = |s: &'a Value, k: &str| resolve(root, &s["properties"][k]);
    match name {
        "" => root,
        "global" | "napi" => prop(root, name),
        "device" => resolve(root, &root["properties"]["device"]["items"]),
        "device.match" => prop(table(root, "device"), "match"),
        "device.napi" => {
            let alts = table(root, "device")["properties"]["napi"]["oneOf"].as_array();
            let object = alts.and_then(|a| a.iter().map(|a| resolve(root, a)).find(|a| a["type"] == "object"));
            object.unwrap_or(&Value::Null)
        }
        _ => &Value::Null,
    }
}

fn properties<'a>(root: &'a Value, name: &str) -> Vec<(&'a str, &'a Value)> {
    let t = table(root, name);
    t["properties"]
        .as_object()
        .map(|p| p.iter().map(|(k, v)| (k.as_str(), resolve(root, v))).collect())
        .unwrap_or_default()
}

/// (a): each table's keys are the reader's, unknown keys are refused, every key is described.
fn key_problems(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, keys) in known_keys() {
        let t = table(root, name);
        if !t.is_object() {
            out.push(format!("table {name:?}: not in the schema"));
            continue;
        }
        let want: BTreeSet<&str> = keys.iter().copied().collect();
        let have: BTreeSet<&str> = properties(root, name).iter().map(|(k, _)| *k).collect();
        for k in want.difference(&have) {
            out.push(format!("table {name:?}: the reader accepts `{k}`, the schema lacks it"));
        }
        for k in have.difference(&want) {
            out.push(format!("table {name:?}: the schema has `{k}`, the reader refuses it"));
        }
        if t.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(format!("table {name:?}: additionalProperties is not false (the reader refuses unknown keys)"));
        }
        for (k, p) in properties(root, name) {
            let described = p.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty());
            if !described {
                out.push(format!("table {name:?}: `{k}` has no description"));
            }
        }
    }
    let property = &table(root, "device.match")["properties"]["property"];
    if property.get("type") != Some(&Value::String("object".into()))
        || property["additionalProperties"].get("type") != Some(&Value::String("string".into()))
    {
        out.push("match.property: not a table of strings".into());
    }
    let napi = &table(root, "device")["properties"]["napi"];
    let alts: Vec<Value> = napi["oneOf"].as_array().cloned().unwrap_or_default();
    let array_of_tables = alts.iter().any(|a| {
        let a = resolve(root, a);
        a["type"] == "array" && resolve(root, &a["items"]) == table(root, "device.napi")
    });
    if alts.len() != 2 || !array_of_tables {
        out.push("device.napi: not one table or an array of the same tables".into());
    }
    out
}

/// A TOML value's text for a JSON value.
fn toml_text(v: &Value) -> String {
    toml::Value::try_from(v).map_or_else(|e| panic!("{v}: {e}"), |t| t.to_string())
}

fn errors_of(text: &str) -> Vec<String> {
    let r = parse_files(&[SourceFile { path: "t.toml".into(), text: text.into() }], &possible());
    r.errors.iter().map(ToString::to_string).collect()
}

/// (b): every default is the reader's (each key alone), only `[global]` has defaults, and only
/// the keys of [`NO_DEFAULT`] lack one.
fn default_problems(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut doc = serde_json::Map::new();
    for (name, _) in known_keys() {
        for (k, p) in properties(root, name) {
            let Some(d) = p.get("default") else {
                if name == "global" && !NO_DEFAULT.contains(&k) {
                    out.push(format!("global `{k}` has no default"));
                }
                continue;
            };
            if name != "global" {
                out.push(format!("table {name:?}: `{k}` has a default, but only [global] keys default to a value"));
                continue;
            }
            doc.insert(k.to_string(), d.clone());
            let text = format!("[global]\n{k} = {}\n", toml_text(d));
            let r = parse_files(&[SourceFile { path: "t.toml".into(), text: text.clone() }], &possible());
            match r.config {
                Some(c) if c.global == Global::default() => {}
                Some(c) => {
                    out.push(format!("global `{k}`: the schema's default {d} is not the reader's: {:?}", c.global));
                }
                None => out.push(format!("global `{k}`: the default {d} is refused: {:?}", r.errors)),
            }
        }
    }
    for v in violations(root, &serde_json::json!({ "global": doc })) {
        out.push(format!("the defaults do not validate: {v}"));
    }
    out
}

/// The TOML text that sets `key = value` in table `name`, in a rule valid otherwise.
fn snippet(name: &str, key: &str, value: &str) -> String {
    match name {
        "" => format!("{key} = {value}\n"),
        "global" | "napi" => format!("[{name}]\n{key} = {value}\n"),
        "device" => {
            let cpus = if key == "cpus" { "" } else { "cpus = \"0\"\n" };
            let matcher = if key == "match" { "" } else { "match = { driver = \"x\" }\n" };
            format!("[[device]]\n{cpus}{key} = {value}\n{matcher}")
        }
        "device.match" => format!("[[device]]\nnode = 0\nmatch = {{ {key} = {value} }}\n"),
        "device.napi" => format!("[[device]]\nmatch = {{ driver = \"x\" }}\n[device.napi]\n{key} = {value}\n"),
        _ => unreachable!("{name}"),
    }
}

/// The spellings an "unknown variant" error says the reader expects.
fn expected_spellings(message: &str) -> Option<BTreeSet<String>> {
    let tail = message.split_once("unknown variant")?.1.split_once("expected")?.1;
    Some(tail.split('`').skip(1).step_by(2).map(String::from).collect())
}

/// (c): every enum's spellings parse, and are exactly those the reader names for a wrong one.
fn enum_problems(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, _) in known_keys() {
        for (k, p) in properties(root, name) {
            let Some(spellings) = p.get("enum").and_then(Value::as_array) else { continue };
            let listed: BTreeSet<String> = spellings.iter().filter_map(Value::as_str).map(String::from).collect();
            for s in &listed {
                let errors = errors_of(&snippet(name, k, &toml_text(&Value::String(s.clone()))));
                if !errors.is_empty() {
                    out.push(format!("table {name:?}: `{k} = {s:?}` is refused: {errors:?}"));
                }
            }
            let errors = errors_of(&snippet(name, k, "\"no-such-spelling\""));
            match errors.iter().find_map(|e| expected_spellings(e)) {
                Some(accepted) if accepted == listed => {}
                Some(accepted) => {
                    out.push(format!("table {name:?}: `{k}` lists {listed:?}, the reader accepts {accepted:?}"));
                }
                None => out.push(format!("table {name:?}: `{k}` took a wrong spelling: {errors:?}")),
            }
        }
    }
    out
}

/// Values the reader takes or refuses, for the `pattern` check.
const SAMPLES: &[&str] = &[
    "",
    "0",
    "7",
    "0-3,8,10-11",
    " 1 , 2-3 ",
    "4, 5, 6, 7",
    "0-3\n",
    "0-",
    "3-1",
    ",",
    "a",
    "0x3",
    "1s",
    "100ms",
    "2m",
    "1h",
    "0ms",
    "24h",
    "25h",
    "5 s",
    "1.5s",
    "5S",
    "-5s",
    "200us",
    "0ns",
    "10s",
    "20ms",
    "/var/lib/prometheus/node-exporter/irqwise.prom",
    "/x.prom",
    "/.prom",
    "/a/../b.prom",
    "rel.prom",
    "/a/b.txt",
    "/a/b.prom/",
    "/var/lib/kubelet/cpu_manager_state",
    "/",
    "/a/./b",
    "var/lib/kubelet/cpu_manager_state",
    "0000:81:*",
    "mlx5_core",
];

/// (d'): the schema's types, bounds and patterns never refuse what the reader takes, and a
/// value of a wrong type is refused by the reader.
fn type_problems(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, _) in known_keys() {
        for (k, p) in properties(root, name) {
            let Some(ty) = p.get("type").and_then(Value::as_str) else { continue };
            let (good, bad) = match ty {
                "string" => {
                    let sample = p.get("default").filter(|d| d.is_string()).or(p["enum"].get(0));
                    (sample.map_or("\"0\"".to_string(), toml_text), "1")
                }
                "integer" => (p.get("minimum").filter(|m| m.is_i64()).map_or("0".into(), toml_text), "\"1\""),
                "boolean" => ("true".to_string(), "\"true\""),
                _ => continue,
            };
            let type_errors: Vec<String> =
                errors_of(&snippet(name, k, &good)).into_iter().filter(|e| e.contains("invalid type")).collect();
            if !type_errors.is_empty() {
                out.push(format!("table {name:?}: `{k} = {good}` ({ty} in the schema) is refused: {type_errors:?}"));
            }
            if errors_of(&snippet(name, k, bad)).is_empty() {
                out.push(format!("table {name:?}: `{k} = {bad}` is not a {ty}, yet the reader takes it"));
            }
            for bound in ["minimum", "maximum"] {
                let Some(n) = p.get(bound).and_then(Value::as_i64) else { continue };
                let beyond = if bound == "minimum" { n - 1 } else { n + 1 };
                if !errors_of(&snippet(name, k, &n.to_string())).is_empty() {
                    out.push(format!("table {name:?}: `{k} = {n}` (its {bound}) is refused"));
                }
                if errors_of(&snippet(name, k, &beyond.to_string())).is_empty() {
                    out.push(format!("table {name:?}: `{k} = {beyond}` (beyond its {bound}) is taken"));
                }
            }
            if let Some(pattern) = p.get("pattern").and_then(Value::as_str) {
                let re = regex_lite::Regex::new(pattern).unwrap();
                for sample in SAMPLES {
                    let taken = errors_of(&snippet(name, k, &toml_text(&Value::String((*sample).into())))).is_empty();
                    if taken && !re.is_match(sample) {
                        out.push(format!(
                            "table {name:?}: the reader takes `{k} = {sample:?}`, the pattern refuses it"
                        ));
                    }
                }
            }
        }
    }
    out
}

fn repo(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A shipped file's text with every commented-out key and table header uncommented (`# key = `
/// and `# [table]` lines; prose and the indented reference lines stay comments).
fn uncommented(text: &str) -> String {
    let key = regex_lite::Regex::new(r"^# ([a-z_][a-z0-9_.]* = .*|\[\[?[a-z_.]+\]\]?\s*(#.*)?)$").unwrap();
    text.lines().map(|l| if key.is_match(l) { &l[2..] } else { l }).collect::<Vec<_>>().join("\n")
}

fn toml_as_json(text: &str) -> Value {
    let t: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    serde_json::to_value(t).unwrap()
}

/// (e): the `[global]` table is the one the code's key table gives ([`global_schema`]: each
/// key's type, spellings, range, pattern, default and description), key by key.
fn global_table_problems(root: &Value) -> Vec<String> {
    let shipped = &root["properties"]["global"];
    let derived = global_schema();
    let mut out = Vec::new();
    for part in ["type", "description", "additionalProperties"] {
        if shipped.get(part) != derived.get(part) {
            out.push(format!(
                "[global] {part}: the schema has {:?}, the key table {:?}",
                shipped.get(part),
                derived.get(part)
            ));
        }
    }
    let keys = |v: &Value| -> BTreeSet<String> {
        v["properties"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    let all: BTreeSet<String> = keys(shipped).union(&keys(&derived)).cloned().collect();
    for k in all {
        let (have, want) = (&shipped["properties"][&k], &derived["properties"][&k]);
        if have != want {
            out.push(format!("[global] `{k}`: the schema has {have}, the key table (src/config/keys.rs) gives {want}"));
        }
    }
    out
}

#[test]
fn the_global_table_is_the_key_tables() {
    let p = global_table_problems(&shipped_schema());
    assert!(p.is_empty(), "schemas/config.schema.json against src/config/keys.rs:\n{}", p.join("\n"));
}

#[test]
fn each_table_has_exactly_the_readers_keys() {
    let p = key_problems(&shipped_schema());
    assert!(p.is_empty(), "schemas/config.schema.json against the reader:\n{}", p.join("\n"));
}

#[test]
fn every_default_is_the_readers_default() {
    let p = default_problems(&shipped_schema());
    assert!(p.is_empty(), "schemas/config.schema.json defaults:\n{}", p.join("\n"));
}

#[test]
fn every_enum_lists_exactly_the_spellings_the_reader_accepts() {
    let s = shipped_schema();
    let enums =
        known_keys().iter().flat_map(|(n, _)| properties(&s, n)).filter(|(_, p)| p.get("enum").is_some()).count();
    assert_eq!(enums, 14, "the enum keys: 6 global, 5 of a rule, match.class and threaded in both [napi] tables");
    let p = enum_problems(&s);
    assert!(p.is_empty(), "schemas/config.schema.json enums:\n{}", p.join("\n"));
}

#[test]
fn types_bounds_and_patterns_agree_with_the_reader() {
    let p = type_problems(&shipped_schema());
    assert!(p.is_empty(), "schemas/config.schema.json types:\n{}", p.join("\n"));
}

#[test]
fn shipped_files_validate_against_the_schema() {
    let schema = shipped_schema();
    let main = std::fs::read_to_string(repo("config/irqwise.toml")).unwrap();
    // The installed file (/etc/irqwise/irqwise.toml) points at the installed schema, which the
    // packages put where the line says.
    assert_eq!(
        main.lines().next(),
        Some("#:schema /usr/share/irqwise/schemas/config.schema.json"),
        "taplo's header directive"
    );
    let cargo = std::fs::read_to_string(repo("Cargo.toml")).unwrap();
    assert!(cargo.contains("usr/share/irqwise/schemas/"), "the packages install schemas/ there");
    assert!(repo("schemas/config.schema.json").is_file());
    let mut checked = vec![("config/irqwise.toml".to_string(), main.clone())];
    let open = uncommented(&main);
    checked.push(("config/irqwise.toml, uncommented".into(), open.clone()));
    // Every key of [global] and [napi] is shown, uncommentable, and the result is a real config.
    let doc = toml_as_json(&open);
    for (name, keys) in known_keys().into_iter().filter(|(n, _)| ["global", "napi"].contains(n)) {
        for k in keys {
            assert!(doc[name].get(k).is_some(), "config/irqwise.toml shows no `# {k} = ` line in [{name}]");
        }
    }
    assert!(doc["device"].as_array().is_some_and(|d| d.len() >= 2), "the two example rules: {doc}");
    assert_eq!(errors_of(&open), Vec::<String>::new(), "the uncommented file is refused");
    let mut examples: Vec<_> = std::fs::read_dir(repo("config/conf.d"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".example"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 3, "{examples:?}");
    for path in examples {
        checked.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
    }
    for (name, text) in checked {
        let v = violations(&schema, &toml_as_json(&text));
        assert!(v.is_empty(), "{name} against schemas/config.schema.json:\n{}", v.join("\n"));
    }
}

// ---------------------------------------------------------------- the checks can fail

fn broken(edit: impl FnOnce(&mut Value)) -> Value {
    let mut s = shipped_schema();
    edit(&mut s);
    s
}

#[test]
fn an_undocumented_or_invented_key_fails_the_key_check() {
    let s = broken(|s| {
        let g = s["properties"]["global"]["properties"].as_object_mut().unwrap();
        g.remove("debounce");
        g.insert("invented".into(), serde_json::json!({"type": "boolean", "description": "x"}));
    });
    let p = key_problems(&s).join("\n");
    assert!(p.contains("the reader accepts `debounce`, the schema lacks it"), "{p}");
    assert!(p.contains("the schema has `invented`, the reader refuses it"), "{p}");
    let s = broken(|s| s["$defs"]["device_napi"]["additionalProperties"] = Value::Bool(true));
    assert!(key_problems(&s).join("\n").contains("\"device.napi\": additionalProperties"));
}

#[test]
fn a_wrong_default_fails_the_default_check() {
    let s = broken(|s| s["properties"]["global"]["properties"]["debounce"]["default"] = "200ms".into());
    let p = default_problems(&s).join("\n");
    assert!(p.contains("global `debounce`: the schema's default \"200ms\" is not the reader's"), "{p}");
    let s = broken(|s| {
        s["properties"]["global"]["properties"]["xps"].as_object_mut().unwrap().remove("default");
    });
    assert!(default_problems(&s).join("\n").contains("global `xps` has no default"));
}

#[test]
fn a_missing_or_extra_spelling_fails_the_enum_check() {
    let s = broken(|s| s["properties"]["global"]["properties"]["on_drift"]["enum"] = serde_json::json!(["restore"]));
    let p = enum_problems(&s).join("\n");
    assert!(p.contains("`on_drift` lists {\"restore\"}, the reader accepts {\"respect\", \"restore\"}"), "{p}");
    let s = broken(|s| {
        s["$defs"]["rule"]["properties"]["strategy"]["enum"].as_array_mut().unwrap().push("spread".into());
    });
    assert!(enum_problems(&s).join("\n").contains("`strategy = \"spread\"` is refused"));
}

#[test]
fn a_global_key_unlike_the_key_table_fails_the_global_check() {
    let s = broken(|s| s["properties"]["global"]["properties"]["debounce"]["default"] = "200ms".into());
    let p = global_table_problems(&s).join("\n");
    assert!(p.contains("[global] `debounce`: the schema has {"), "{p}");
    assert!(p.contains("\"default\":\"100ms\""), "{p}");
}

#[test]
fn a_wrong_type_bound_or_pattern_fails_the_type_check() {
    let s = broken(|s| {
        let g = &mut s["properties"]["global"]["properties"];
        g["xps"]["type"] = "string".into();
        g["balance_moves_per_minute"]["maximum"] = 60.into();
        g["reconcile_interval"]["pattern"] = "^[0-9]+s$".into();
    });
    let p = type_problems(&s).join("\n");
    assert!(p.contains("`xps = \"0\"` (string in the schema) is refused"), "{p}");
    assert!(p.contains("`balance_moves_per_minute = 61` (beyond its maximum) is taken"), "{p}");
    assert!(p.contains("the reader takes `reconcile_interval = \"2m\"`, the pattern refuses it"), "{p}");
}

#[test]
fn the_schema_check_refuses_what_the_reader_refuses() {
    let s = shipped_schema();
    for bad in [
        "[global]\nbanned_cpu = \"1\"\n",
        "[global]\nbalance_moves_per_minute = 601\n",
        "[global]\nspill = \"far\"\n",
        "[napi]\nqueues = \"0\"\n",
        "[[device]]\nmatch = { class = \"gpu\" }\n",
        "[[device]]\nmatch = { property = { ID_PATH = 1 } }\n",
        "[[device]]\nmatch = { driver = \"x\" }\nnapi = 3\n",
        "[[device]]\nmatch = { driver = \"x\" }\n[[device.napi]]\nthreaded = \"maybe\"\n",
        "[global]\nmetrics_file = \"relative.prom\"\n",
    ] {
        assert!(!violations(&s, &toml_as_json(bad)).is_empty(), "the schema takes {bad:?}");
        assert!(!errors_of(bad).is_empty(), "the reader takes {bad:?}");
    }
    let good =
        "[[device]]\nmatch = { driver = \"x\", property.ID_PATH = \"pci-*\" }\n[[device.napi]]\nqueues = \"0-3\"\n\
                threaded = \"busy-poll\"\n[[device.napi]]\nqueues = \"4\"\ndefer_hard_irqs = 2\n";
    assert_eq!(violations(&s, &toml_as_json(good)), Vec::<String>::new());
    assert_eq!(errors_of(good), Vec::<String>::new());
}
