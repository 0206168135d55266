//! `irqwise claims [--json]`: every claim file, what it claims, whether its process still runs
//! and whether the running daemon holds it.

use serde::Serialize;

use super::claim::running_daemon;
use super::{to_json_text, CliError, Outcome};
use crate::sysfs::Root;
use crate::topology::discover::claims::read_claims;
use crate::topology::discover::read_possible_cpus;

/// One claim as `claims --json` shows it.
#[derive(Debug, Serialize)]
struct ClaimRow {
    owner: String,
    cpus: String,
    pid: Option<u32>,
    path: String,
    /// Why it no longer holds (its process exited); the daemon removes it at its next pass.
    ended: Option<String>,
    /// The running daemon's last pass held it; `false` without a running daemon.
    held: bool,
    /// Why the running daemon's last pass refused it (with it no CPU would be left).
    refused: Option<String>,
}

#[derive(Debug, Serialize)]
struct ClaimsDoc {
    /// The running daemon's pid, if one runs.
    daemon: Option<u32>,
    claims: Vec<ClaimRow>,
    /// Claim files that claim nothing, and why.
    problems: Vec<String>,
}

/// `irqwise claims`: exit 0; 1 when a claim file cannot be read or parsed.
pub fn claims(root: &Root, json: bool) -> Result<Outcome, CliError> {
    let possible = read_possible_cpus(root)?;
    let (read, warnings) = read_claims(root, &possible);
    let daemon = running_daemon(root);
    let rows: Vec<ClaimRow> = read
        .into_iter()
        .map(|c| {
            let cpus = c.claim.cpus.to_list_string();
            let held = daemon.as_ref().is_some_and(|d| {
                d.claims.iter().any(|h| h.owner == c.claim.owner && h.cpus == cpus && h.pid == c.claim.pid)
            });
            let refused = daemon
                .as_ref()
                .and_then(|d| d.refused_claims.iter().find(|r| r.owner == c.claim.owner))
                .map(|r| r.reason.clone());
            ClaimRow { owner: c.claim.owner, cpus, pid: c.claim.pid, path: c.path, ended: c.ended, held, refused }
        })
        .collect();
    let doc = ClaimsDoc {
        daemon: daemon.as_ref().map(|d| d.pid),
        claims: rows,
        problems: warnings.iter().map(ToString::to_string).collect(),
    };
    let exit = u8::from(!doc.problems.is_empty());
    if json {
        return Ok(Outcome::with_exit(to_json_text(&doc), exit));
    }
    Ok(Outcome { text: render(&doc), stderr: doc.problems.iter().fold(String::new(), |acc, p| acc + p + "\n"), exit })
}

fn render(doc: &ClaimsDoc) -> String {
    if doc.claims.is_empty() {
        return "no claims\n".into();
    }
    let mut out = format!("{:<24} {:<12} {:<8} state\n", "owner", "cpus", "pid");
    for c in &doc.claims {
        let pid = c.pid.map_or_else(|| "-".to_string(), |p| p.to_string());
        let state = match (&c.ended, doc.daemon, c.held) {
            (Some(why), _, _) => format!("ended: {why} (released at the daemon's next pass)"),
            (None, Some(d), false) if c.refused.is_some() => {
                format!("refused by irqwise (pid {d}): {}", c.refused.as_deref().unwrap_or_default())
            }
            (None, None, _) => "no daemon runs: taken at its start".to_string(),
            (None, Some(d), true) => format!("held by irqwise (pid {d})"),
            (None, Some(d), false) => format!("not yet taken by irqwise (pid {d})"),
        };
        out.push_str(&format!("{:<24} {:<12} {pid:<8} {state}\n", crate::text::printable(&c.owner), c.cpus));
    }
    out
}
