//! `irqwise diff A B [--json]`: A and B are roots (snapshots from `irqwise snapshot`, or `-` for
//! this host, i.e. `--root`); both are planned with the one configuration in force (`--config`
//! or the system's), so the plans differ by what the machines do. Exit 0 when nothing that
//! decides placement differs, 1 when something does, 2 on errors (like `diff`).

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::{require_root, to_json_text, CliError, Outcome};
use crate::config::{load_config, ConfigPaths};
use crate::diff::{diff, render, Difference, Side};
use crate::pass::plan_pass;
use crate::sample::reader::read_sample;
use crate::sysfs::Root;

#[derive(Serialize)]
struct DiffDoc<'a> {
    a: String,
    b: String,
    same: bool,
    differences: &'a [Difference],
}

/// `irqwise diff`.
pub fn diff_roots(root: &Root, paths: &ConfigPaths, a: &Path, b: &Path, json: bool) -> Result<Outcome, CliError> {
    let side_root = |p: &Path| if p == Path::new("-") { root.clone() } else { Root::new(p) };
    let (ra, rb) = (side_root(a), side_root(b));
    for r in [&ra, &rb] {
        require_root(r).map_err(|e| CliError::Usage(e.to_string()))?;
    }
    let config = load_config(root, paths)?;
    let read = |r: &Root| -> Result<_, CliError> {
        let sample = read_sample(r, Arc::new(config.clone()))?;
        let plan = plan_pass(r, &config, &std::collections::BTreeSet::default())?.plan;
        Ok((sample, plan))
    };
    let (sa, pa) = read(&ra)?;
    let (sb, pb) = read(&rb)?;
    let diffs = diff(Side { sample: &sa, plan: &pa }, Side { sample: &sb, plan: &pb });
    let exit = u8::from(!diffs.is_empty());
    let name = |p: &Path| {
        if p == Path::new("-") {
            format!("this host ({})", root.base().display())
        } else {
            p.display().to_string()
        }
    };
    let text = if json {
        to_json_text(&DiffDoc { a: name(a), b: name(b), same: diffs.is_empty(), differences: &diffs })
    } else {
        format!("A: {}\nB: {}\n{}", name(a), name(b), render(&diffs))
    };
    Ok(Outcome::with_exit(text, exit))
}
