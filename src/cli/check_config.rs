//! `irqwise check-config [PATHS] [--strict] [--json]`: the configuration validated against this
//! machine, every error and warning with its `file:line:column`.

use std::path::PathBuf;

use super::{to_json_text, CliError, Outcome};
use crate::config::{self, machine_shape, ConfigPaths};
use crate::sysfs::Root;

/// `irqwise check-config [PATHS] [--strict] [--json]`: every error and warning of every file in
/// file order on stderr (or all of it as JSON on stdout), a one-line verdict on stdout. Exit 0
/// when usable (warnings allowed, unless `strict`), 2 otherwise.
pub fn check_config(
    root: &Root,
    paths: &ConfigPaths,
    files: &[PathBuf],
    strict: bool,
    json: bool,
) -> Result<Outcome, CliError> {
    let machine = machine_shape(root)?;
    let report = if files.is_empty() { config::check(paths, &machine) } else { config::check_files(files, &machine) };
    let ok = report.is_ok() && (!strict || report.warnings.is_empty());
    let exit = if ok { 0 } else { 2 };
    if json {
        let located = |at: Option<&config::Location>, message: String| {
            serde_json::json!({
                "file": at.map(|a| a.path.display().to_string()),
                "line": at.map(|a| a.line),
                "column": at.map(|a| a.column),
                "message": message,
            })
        };
        let doc = serde_json::json!({
            "ok": ok,
            "errors": report.errors.iter().map(|e| located(e.location(), e.to_string())).collect::<Vec<_>>(),
            "warnings": report.warnings.iter().map(|w| located(Some(w.location()), w.to_string())).collect::<Vec<_>>(),
            "sources": report.sources,
            "masked": report.masked.iter().map(|m| serde_json::json!({"path": m.path, "by": m.by})).collect::<Vec<_>>(),
        });
        return Ok(Outcome::with_exit(to_json_text(&doc), exit));
    }
    let mut stderr = String::new();
    for e in &report.errors {
        stderr.push_str(&format!("error: {e}\n"));
    }
    for w in &report.warnings {
        stderr.push_str(&format!("{w}\n"));
    }
    for m in &report.masked {
        stderr.push_str(&format!("note: {} is masked by {}\n", m.path.display(), m.by.display()));
    }
    let sources: Vec<String> = report.sources.iter().map(|p| p.display().to_string()).collect();
    let verdict = match (report.is_ok(), report.warnings.len()) {
        (false, _) => format!("invalid ({} error(s))", report.errors.len()),
        (true, 0) => "ok".to_string(),
        (true, n) if strict => format!("invalid with --strict ({n} warning(s))"),
        (true, n) => format!("ok with {n} warning(s)"),
    };
    let text = format!(
        "{verdict}: {} file(s){}{}\n",
        sources.len(),
        if sources.is_empty() { "" } else { ": " },
        sources.join(", ")
    );
    Ok(Outcome { text, stderr, exit })
}
