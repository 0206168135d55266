//! Every `--json` document validates against its shipped schema (`schemas/`, installed under
//! /usr/share/irqwise/schemas): plan, apply, status, report, topology, spread numa and groups,
//! check-config (clean, with errors, with warnings), advise boot (plain and with isolcpus=),
//! claims (none and one), diff (same and different). A field a consumer reads that is renamed,
//! dropped or changes type fails here.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/schema_check.rs"]
mod schema_check;

use std::path::Path;
use std::process::Command;

use acceptance::*;
use child_daemon::Daemon;
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

/// The state files of earlier versions (tests/data/state/, which src/daemon/state.rs reads
/// back): the schema still describes them.
#[test]
fn the_state_files_of_earlier_versions_validate_against_the_status_schema() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/state");
    let files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!files.is_empty(), "{dir}");
    for f in files {
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let v = violations(&schema("status"), &doc);
        assert!(v.is_empty(), "{} against schemas/status.schema.json:\n{}", f.display(), v.join("\n"));
    }
}

#[test]
fn the_check_fails_on_a_missing_field_a_wrong_type_and_an_unchecked_keyword() {
    let s = schema("claims");
    let good = serde_json::json!({"schema": 2, "daemon": null, "claims": [], "problems": []});
    assert!(violations(&s, &good).is_empty(), "{:?}", violations(&s, &good));
    let missing = serde_json::json!({"schema": 2, "daemon": null, "claims": []});
    assert_eq!(violations(&s, &missing), ["$: missing problems"]);
    let wrong = serde_json::json!({"schema": 2, "daemon": "x", "claims": [{"owner": 1}], "problems": []});
    let v = violations(&s, &wrong);
    assert!(v.iter().any(|m| m.starts_with("$.daemon: string")), "{v:?}");
    assert!(v.iter().any(|m| m.starts_with("$.claims[0].owner: integer")), "{v:?}");
    assert!(v.iter().any(|m| m == "$.claims[0]: missing cpus"), "{v:?}");
    let version = serde_json::json!({"schema": 1, "daemon": null, "claims": [], "problems": []});
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

/// `/proc/interrupts` with every count of every IRQ line raised by `n`: a machine whose IRQs fired.
fn fired(text: &str, n: u64) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once(':').filter(|(h, _)| h.trim().parse::<u32>().is_ok()) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        out.push_str(head);
        out.push(':');
        let mut counting = true;
        for word in rest.split_whitespace() {
            let raised = word.parse::<u64>().ok().filter(|_| counting).map(|c| (c + n).to_string());
            counting &= raised.is_some();
            out.push(' ');
            out.push_str(raised.as_deref().unwrap_or(word));
        }
        out.push('\n');
    }
    out
}

#[test]
fn every_json_document_validates_on_a_busy_machine() {
    let root = five_device_machine();
    let r = root.path();
    let cfg = empty_config();
    let c = cfg.path();
    // IRQs that fired between the report's two reads.
    let now = std::fs::read_to_string(r.join("proc/interrupts")).unwrap();
    let later = r.join("interrupts.later");
    std::fs::write(&later, fired(&now, 1234)).unwrap();
    let between = format!("cp {} {}", later.display(), r.join("proc/interrupts").display());
    let (code, text) = run(r, c, &["report", "--interval", "1s", "--between-samples", &between, "--json"]);
    assert_eq!(code, Some(0), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        doc["devices"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["irqs"].as_array().unwrap())
            .any(|i| i["interrupts"].as_u64() > Some(0)),
        "IRQs fired: {text}"
    );
    let v = violations(&schema("report"), &doc);
    assert!(v.is_empty(), "report on a busy machine:\n{}\n{text}", v.join("\n"));
    // The writes a dry run would make, as apply's document.
    validates(r, c, "apply", &["apply", "--dry-run", "--json"], 0);
    let (_, text) = run(r, c, &["apply", "--dry-run", "--json"]);
    let dry: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dry["dry_run"], true, "{text}");
    assert!(
        dry["changes"].as_array().is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["result"] == "would_write")),
        "{text}"
    );

    // A running daemon with one claim held and one refused.
    let daemon = Daemon::start(r, c, r.join("daemon.log"));
    assert_eq!(run(r, c, &["claim", "--cpus", "3", "--owner", "held"]).0, Some(0));
    let before = daemon.passes();
    std::fs::write(r.join("run/irqwise/claims/refused"), "cpus=0-15\n").unwrap();
    daemon.wait(before, "the refused claim seen", || true);
    validates(r, c, "status", &["status", "--json"], 0);
    validates(r, c, "claims", &["claims", "--json"], 0);
    let (_, text) = run(r, c, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["refused_claims"][0]["owner"], "refused", "{text}");
    validates(r, c, "topology", &["topology", "--json"], 0);
    validates(r, c, "plan", &["plan", "--json"], 0);
    drop(daemon);
}
