//! Golden outputs: `plan --json` and the `plan` table of every catalog machine
//! (`tests/common/catalog.rs`) equal the files recorded in `tests/data/golden/`. A change of
//! placement shows up here as a diff to review; `IRQWISE_BLESS=1 cargo test --test golden_plans`
//! records the new outputs (commit them with the reason).

#[path = "common/bin.rs"]
mod bin;
mod common {
    #[path = "../common/catalog.rs"]
    pub mod catalog;
    #[path = "../common/fixture.rs"]
    pub mod fixture;
}

use std::fs;
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

/// Runs `irqwise --root R --config C ARGS`; the output with the temporary paths replaced.
fn run(entry: &common::catalog::Entry, args: &[&str]) -> String {
    let out = bin::irqwise_with(entry.root.path(), entry.config.path()).args(args).output().unwrap();
    let text = format!(
        "exit {}\n{}{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let root = entry.root.path().display().to_string();
    let config = entry.config.path().display().to_string();
    text.replace(&root, "ROOT").replace(&config, "CONFIG")
}

#[test]
fn every_catalog_machine_plans_as_recorded() {
    let bless = std::env::var_os("IRQWISE_BLESS").is_some();
    let dir = golden_dir();
    fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut seen = 0;
    for entry in common::catalog::entries() {
        for (suffix, args) in [("json", &["plan", "--json"][..]), ("txt", &["plan"][..])] {
            let got = run(&entry, args);
            let path = dir.join(format!("{}.{suffix}", entry.name));
            if bless {
                fs::write(&path, &got).unwrap();
                continue;
            }
            let want = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if got != want {
                let line = got.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
                failures.push(format!(
                    "{}: differs from line {}:\n  got:  {}\n  want: {}",
                    path.display(),
                    line + 1,
                    got.lines().nth(line).unwrap_or(""),
                    want.lines().nth(line).unwrap_or("")
                ));
            }
        }
        seen += 1;
    }
    assert!(seen >= 30, "the catalog has {seen} machines");
    assert!(failures.is_empty(), "{} golden output(s) differ:\n{}", failures.len(), failures.join("\n"));
}
