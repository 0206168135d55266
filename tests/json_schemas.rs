//! Every `--json` document validates against its shipped schema (`schemas/`, installed under
//! /usr/share/irqwise/schemas): plan, apply, status, report, topology, spread numa and groups,
//! check-config (clean, with errors, with warnings), advise boot (plain and with isolcpus=),
//! claims (none and one), diff (same and different). A field a consumer reads that is renamed,
//! dropped or changes type fails here.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/schema_check.rs"]
mod schema_check;

use std::path::Path;
use std::process::Command;

use acceptance::*;
use schema_check::{schema, violations};

fn run(root: &Path, cfg: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = irqwise(root, cfg).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `args` and checks the document against schema `name`; `exit` is the expected code.
fn validates(root: &Path, cfg: &Path, name: &str, args: &[&str], exit: i32) {
    let (code, text) = run(root, cfg, args);
    assert_eq!(code, Some(exit), "{args:?}: {text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"));
    let v = violations(&schema(name), &doc);
    assert!(v.is_empty(), "{args:?} against schemas/{name}.schema.json:\n{}\n{text}", v.join("\n"));
}

#[test]
fn every_json_document_validates_against_its_schema() {
    let root = five_device_machine();
    let r = root.path();
    let cfg = empty_config();
    let c = cfg.path();
    validates(r, c, "plan", &["plan", "--json"], 0);
    validates(r, c, "topology", &["topology", "--json"], 0);
    validates(r, c, "spread-numa", &["spread", "numa", "--node", "1", "--json"], 0);
    validates(r, c, "spread-groups", &["spread", "groups", "--groups", "6", "--json"], 0);
    validates(r, c, "check-config", &["check-config", "--json"], 0);
    validates(r, c, "advise-boot", &["advise", "boot", "--json"], 0);
    validates(r, c, "report", &["report", "--interval", "10ms", "--json"], 0);
    validates(r, c, "claims", &["claims", "--json"], 0);
    validates(r, c, "diff", &["diff", "-", "-", "--json"], 0);
    validates(r, c, "apply", &["apply", "--json"], 0);
    assert_eq!(run(r, c, &["run", "--once"]).0, Some(0));
    // The process that wrote the state has exited: 3, "not running", with its state.
    validates(r, c, "status", &["status", "--json"], 3);

    // The richer variants: a claim, isolcpus= on the command line, a configuration with
    // warnings and one with errors, another machine with one CPU offline.
    assert_eq!(run(r, c, &["claim", "--cpus", "3", "--owner", "job", "--timeout", "0"]).0, Some(0));
    validates(r, c, "claims", &["claims", "--json"], 0);
    write_file(r, "proc/cmdline", "BOOT_IMAGE=/vmlinuz isolcpus=2-3 irqaffinity=0-5 quiet\n");
    let warn = config_with("[global]\nbanned_cpus = \"1,40\"\n[[device]]\nmatch = { driver = \"nope\" }\nnode = 1\n");
    validates(r, warn.path(), "check-config", &["check-config", "--json"], 0);
    validates(r, warn.path(), "advise-boot", &["advise", "boot", "--json"], 1);
    validates(r, warn.path(), "plan", &["plan", "--json"], 0);
    validates(r, warn.path(), "topology", &["topology", "--json"], 0);
    let bad = config_with("[global]\nbanned_cpus = \"x\"\nspill = 3\n");
    validates(r, bad.path(), "check-config", &["check-config", "--json"], 2);
    let other = tempfile::tempdir().unwrap();
    let b = other.path().join("b");
    assert!(Command::new("cp").arg("-a").arg(r).arg(&b).status().unwrap().success());
    write_file(&b, "sys/devices/system/cpu/online", "0-6,8-15\n");
    write_file(&b, "sys/devices/system/cpu/cpu7/online", "0\n");
    validates(r, c, "diff", &["diff", "-", b.to_str().unwrap(), "--json"], 1);
}

#[test]
fn the_check_fails_on_a_missing_field_a_wrong_type_and_an_unchecked_keyword() {
    let s = schema("claims");
    let good = serde_json::json!({"schema": 1, "daemon": null, "claims": [], "problems": []});
    assert!(violations(&s, &good).is_empty(), "{:?}", violations(&s, &good));
    let missing = serde_json::json!({"schema": 1, "daemon": null, "claims": []});
    assert_eq!(violations(&s, &missing), ["$: missing problems"]);
    let wrong = serde_json::json!({"schema": 1, "daemon": "x", "claims": [{"owner": 1}], "problems": []});
    let v = violations(&s, &wrong);
    assert!(v.iter().any(|m| m.starts_with("$.daemon: string")), "{v:?}");
    assert!(v.iter().any(|m| m.starts_with("$.claims[0].owner: integer")), "{v:?}");
    assert!(v.iter().any(|m| m == "$.claims[0]: missing cpus"), "{v:?}");
    let version = serde_json::json!({"schema": 2, "daemon": null, "claims": [], "problems": []});
    assert!(!violations(&s, &version).is_empty());
    let unknown = serde_json::json!({"type": "object", "minProperties": 1});
    assert!(!violations(&unknown, &good).is_empty(), "a keyword the check does not implement");
}

#[test]
fn every_schema_is_shipped_and_documented() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let cargo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let names: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.len() >= 11, "{names:?}");
    for n in names {
        assert!(readme.contains(&n), "README names {n}");
    }
    assert!(cargo.contains("schemas/*.schema.json"), "both packages install them");
}
