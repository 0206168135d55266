//! The layering the design promises, checked on the source text: the pure core (CPU sets, the
//! topology and device models, the kernel's algorithms, device strategies, policy and plan) does
//! no I/O and imports nothing from the shell; the daemon never imports the command line.
//!
//! Comments are skipped (a doc comment may name the reader of a model); code is not.

use std::fs;
use std::path::{Path, PathBuf};

/// Files and directories (every `.rs` below) of the pure core.
const PURE_CORE: [&str; 19] = [
    "src/cpuset.rs",
    "src/topology/model.rs",
    "src/topology/isolation.rs",
    "src/topology/home.rs",
    "src/topology/locality.rs",
    "src/topology/report.rs",
    "src/topology/synthetic.rs",
    "src/devices/model.rs",
    "src/devices/irq_names.rs",
    "src/devices/name_table.rs",
    "src/devices/recognise.rs",
    "src/kernel",
    "src/strategy",
    "src/plan",
    "src/policy.rs",
    "src/migrate.rs",
    "src/landing/counts.rs",
    "src/landing/build.rs",
    "src/landing/render.rs",
];

/// What the pure core must not mention: the shell's modules and the standard library's I/O.
const SHELL: [&str; 13] = [
    "crate::sysfs",
    "crate::apply",
    "crate::events",
    "crate::daemon",
    "crate::cli",
    "crate::engine",
    "crate::snapshot",
    "crate::topology::discover",
    "crate::devices::discover",
    "std::fs",
    "std::net",
    "std::process",
    "tokio",
];

fn src_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every `.rs` file at or below `rel`.
fn rust_files(rel: &str) -> Vec<PathBuf> {
    let path = src_root().join(rel);
    assert!(path.exists(), "{rel} is listed in the architecture check but does not exist");
    if path.is_file() {
        return vec![path];
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(&path).unwrap().flatten() {
        let p = entry.path();
        let r = p.strip_prefix(src_root()).unwrap().to_string_lossy().into_owned();
        if p.is_dir() || p.extension().is_some_and(|e| e == "rs") {
            out.extend(rust_files(&r));
        }
    }
    out.sort();
    out
}

/// The lines of `text` that mention any of `forbidden` outside comments, as `line: text`.
fn violations(text: &str, forbidden: &[&str]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            forbidden.iter().any(|f| code.contains(f)).then(|| format!("{}: {}", i + 1, line.trim()))
        })
        .collect()
}

#[test]
fn the_pure_core_imports_nothing_from_the_shell() {
    let mut found = Vec::new();
    let mut files = 0;
    for rel in PURE_CORE {
        for file in rust_files(rel) {
            files += 1;
            let text = fs::read_to_string(&file).unwrap();
            for v in violations(&text, &SHELL) {
                found.push(format!("{}:{v}", file.display()));
            }
        }
    }
    assert!(files >= 20, "only {files} pure-core files found");
    assert!(found.is_empty(), "the pure core reaches into the shell:\n{}", found.join("\n"));
}

#[test]
fn the_daemon_does_not_import_the_command_line() {
    let mut found = Vec::new();
    for file in rust_files("src/daemon") {
        let text = fs::read_to_string(&file).unwrap();
        for v in violations(&text, &["crate::cli"]) {
            found.push(format!("{}:{v}", file.display()));
        }
    }
    assert!(found.is_empty(), "src/daemon imports the CLI:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_an_import_and_ignores_comments() {
    let text = "//! Read by [`crate::sysfs::Root`].\nuse crate::cpuset::CpuSet;\nuse crate::sysfs::Root; // here\n";
    assert_eq!(violations(text, &SHELL), vec!["3: use crate::sysfs::Root; // here"]);
    assert!(violations("let f = std::fs::read(p);", &SHELL).len() == 1);
}
