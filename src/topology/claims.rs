//! Runtime CPU claims: a workload's owner (a container runtime, a job scheduler, an operator)
//! asks that device IRQs stay off some CPUs for as long as a process lives.
//!
//! A claim is one small file, `/run/irqwise/claims/OWNER`, in `key=value` lines (`#` starts a
//! comment; blank lines are ignored):
//!
//! ```text
//! cpus=4-5
//! pid=1234
//! pid_start=987654
//! ```
//!
//! - `cpus` (required): the CPUs, as a kernel CPU list (`4-7,12`);
//! - `pid` (optional): the claim ends when this process exits;
//! - `pid_start` (optional, with `pid`): the process's start time (`/proc/PID/stat` field 22),
//!   so a later process that reuses the pid does not keep the claim alive.
//!
//! The owner is the file's name: letters, digits and `._:@-`, at most 128, not starting with a
//! dot (names starting with a dot are temporary files, never read). Pure: parsing and rendering;
//! `topology::discover::claims` reads the directory and tells live claims from ended ones.

use crate::cpuset::CpuSet;

/// The longest owner name.
pub const OWNER_MAX: usize = 128;

/// The most claims that hold at once: each claimed process costs the daemon a descriptor (a
/// pidfd), and a node runs far fewer workloads that pin CPUs (Kubernetes' default is 110 pods).
pub const MAX_CLAIMS: usize = 1024;

/// One claim as its file says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The file's name.
    pub owner: String,
    /// Never empty.
    pub cpus: CpuSet,
    /// The process whose life the claim lasts, if any.
    pub pid: Option<u32>,
    /// That process's start time, in clock ticks since boot, when the writer knew it.
    pub pid_start: Option<u64>,
}

/// A claim file and what became of it when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRead {
    pub claim: Claim,
    /// The file, as an absolute path of the system (`/run/irqwise/claims/web`), whatever the root.
    pub path: String,
    /// Why the claim no longer holds (`pid 1234 exited`); `None` while it holds.
    pub ended: Option<String>,
    /// When its file was last written (its modification time), which orders the claims: the
    /// older holds first. `None` when the file system could not say.
    pub written: Option<std::time::SystemTime>,
}

/// Why `owner` cannot name a claim, if it cannot.
pub fn owner_problem(owner: &str) -> Option<String> {
    if owner.is_empty() {
        return Some("an owner name is empty".into());
    }
    if owner.len() > OWNER_MAX {
        return Some(format!("owner {:?} is longer than {OWNER_MAX} characters", crate::text::printable(owner)));
    }
    if owner.starts_with('.') {
        return Some(format!("owner {owner:?} starts with a dot (names starting with a dot are temporary files)"));
    }
    let bad = owner.chars().find(|c| !(c.is_ascii_alphanumeric() || "._:@-".contains(*c)));
    bad.map(|c| {
        format!("owner {:?} holds {c:?}; an owner is letters, digits and . _ : @ -", crate::text::printable(owner))
    })
}

/// Parses the file of `owner` against the `possible` CPUs. Guarantees a claim with `cpus` not
/// empty and within `possible`; every problem names the line and what was expected.
pub fn parse_claim(owner: &str, text: &str, possible: &CpuSet) -> Result<Claim, String> {
    if let Some(problem) = owner_problem(owner) {
        return Err(problem);
    }
    let (mut cpus, mut pid, mut pid_start) = (None, None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("line {}", n + 1);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("{}: {:?} is not key=value", at(), crate::text::printable(line)));
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "cpus" => cpus = Some(claim_cpus(value, possible).map_err(|e| format!("{}: cpus={value}: {e}", at()))?),
            "pid" => {
                let p = value.parse::<u32>().ok().filter(|p| *p > 0);
                pid = Some(p.ok_or_else(|| format!("{}: pid={value}: expected a process id", at()))?);
            }
            "pid_start" => {
                let s = value.parse::<u64>().ok();
                pid_start = Some(s.ok_or_else(|| format!("{}: pid_start={value}: expected clock ticks", at()))?);
            }
            other => {
                return Err(format!(
                    "{}: unknown key {:?}; expected cpus, pid or pid_start",
                    at(),
                    crate::text::printable(other)
                ))
            }
        }
    }
    let cpus = cpus.ok_or("no cpus= line; a claim names its CPUs")?;
    if pid_start.is_some() && pid.is_none() {
        return Err("pid_start= without pid=".into());
    }
    Ok(Claim { owner: owner.to_string(), cpus, pid, pid_start })
}

/// A claim's CPU list: not empty, within `possible`.
pub fn claim_cpus(text: &str, possible: &CpuSet) -> Result<CpuSet, String> {
    let cpus = CpuSet::parse_list(text).map_err(|e| e.to_string())?;
    if cpus.is_empty() {
        return Err("no CPU; a claim names at least one".into());
    }
    let beyond = cpus.difference(possible);
    if !beyond.is_empty() {
        return Err(format!("CPUs {beyond} do not exist here (possible CPUs: {possible})"));
    }
    Ok(cpus)
}

/// The file text of `claim`, which [`parse_claim`] reads back as the same claim.
pub fn render_claim(claim: &Claim) -> String {
    let mut out = format!("# irqwise claim of {}: see `irqwise claims`\ncpus={}\n", claim.owner, claim.cpus);
    if let Some(pid) = claim.pid {
        out.push_str(&format!("pid={pid}\n"));
    }
    if let Some(start) = claim.pid_start {
        out.push_str(&format!("pid_start={start}\n"));
    }
    out
}

/// A claim that does not hold: with it, no online CPU would be left for device IRQs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RefusedClaim {
    pub owner: String,
    /// A kernel CPU list.
    pub cpus: String,
    /// Why, naming what already keeps the other CPUs free.
    pub reason: String,
}

/// Which claims hold, taken in the order given (oldest first): the first [`MAX_CLAIMS`] that
/// hold, each when, beside
/// `kept_free` (the CPUs banned or isolated whatever the claims) and the claims that hold before
/// it, it leaves some online CPU for device IRQs; otherwise it is refused, and says why. So a
/// claim that holds is never dropped for a newer one, and the claims that hold always leave a
/// CPU. `kept_free` is described in `why_free` (`banned_cpus 0-3`).
pub fn admit_claims<'c>(
    claims: impl IntoIterator<Item = &'c Claim>,
    online: &CpuSet,
    kept_free: &CpuSet,
    why_free: &str,
) -> (Vec<&'c Claim>, Vec<RefusedClaim>) {
    let (mut held, mut refused) = (Vec::new(), Vec::new());
    let mut taken = kept_free.clone();
    for claim in claims {
        if held.len() >= MAX_CLAIMS {
            refused.push(RefusedClaim {
                owner: claim.owner.clone(),
                cpus: claim.cpus.to_list_string(),
                reason: format!("{MAX_CLAIMS} older claims hold, the most irqwise holds at once"),
            });
            continue;
        }
        let with = taken.union(&claim.cpus);
        if online.is_empty() || !online.is_subset(&with) {
            taken = with;
            held.push(claim);
            continue;
        }
        let mut already: Vec<String> = Vec::new();
        if !kept_free.is_empty() {
            already.push(why_free.to_string());
        }
        already.extend(held.iter().map(|c: &&Claim| format!("claim {} (CPUs {})", c.owner, c.cpus)));
        let besides = if already.is_empty() { String::new() } else { format!(" beside {}", already.join(", ")) };
        refused.push(RefusedClaim {
            owner: claim.owner.clone(),
            cpus: claim.cpus.to_list_string(),
            reason: format!(
                "claiming CPUs {} for {} would leave no online CPU ({online}) for device IRQs{besides}",
                claim.cpus, claim.owner
            ),
        });
    }
    (held, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn a_rendered_claim_reads_back_the_same() {
        let possible = set("0-7");
        for claim in [
            Claim { owner: "web".into(), cpus: set("4-5"), pid: Some(123), pid_start: Some(9876) },
            Claim { owner: "k8s:pod@a_b-1.x".into(), cpus: set("0,7"), pid: None, pid_start: None },
        ] {
            assert_eq!(parse_claim(&claim.owner, &render_claim(&claim), &possible), Ok(claim));
        }
    }

    #[test]
    fn a_hook_written_file_with_comments_and_spaces_parses() {
        let claim = parse_claim("job", "# by a hook\n\n cpus = 2-3 \npid=77\n", &set("0-7")).unwrap();
        assert_eq!((claim.cpus, claim.pid, claim.pid_start), (set("2-3"), Some(77), None));
    }

    #[test]
    fn every_bad_file_is_an_error_naming_the_line() {
        let possible = set("0-7");
        let cases = [
            ("pid=5\n", "no cpus= line"),
            ("cpus=4-9\n", "line 1: cpus=4-9: CPUs 8-9 do not exist here"),
            ("cpus=\n", "line 1: cpus=: no CPU"),
            ("cpus=x\n", "line 1: cpus=x:"),
            ("cpus=1\npid=0\n", "line 2: pid=0: expected a process id"),
            ("cpus=1\npid=-3\n", "line 2: pid=-3: expected a process id"),
            ("cpus=1\ncpu=2\n", "line 2: unknown key \"cpu\""),
            ("cpus=1\nnonsense\n", "line 2: \"nonsense\" is not key=value"),
            ("cpus=1\npid_start=4\n", "pid_start= without pid="),
            ("cpus=1\npid=4\npid_start=soon\n", "line 3: pid_start=soon: expected clock ticks"),
        ];
        for (text, want) in cases {
            let got = parse_claim("o", text, &possible).unwrap_err();
            assert!(got.starts_with(want), "{text:?}: {got}");
        }
    }

    fn claim(owner: &str, cpus: &str) -> Claim {
        Claim { owner: owner.into(), cpus: set(cpus), pid: None, pid_start: None }
    }

    #[test]
    fn the_oldest_claims_hold_and_a_newer_one_that_would_leave_no_cpu_is_refused() {
        let (a, b, c) = (claim("a", "4-11"), claim("b", "12-15"), claim("c", "12-14"));
        let (held, refused) = admit_claims([&a, &b, &c], &set("0-15"), &set("0-3"), "banned_cpus 0-3");
        assert_eq!(held.iter().map(|c| c.owner.as_str()).collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].owner, "b");
        assert_eq!(
            refused[0].reason,
            "claiming CPUs 12-15 for b would leave no online CPU (0-15) for device IRQs beside banned_cpus 0-3, claim a (CPUs 4-11)"
        );
        // Alone, a claim of every online CPU is refused; offline CPUs count for nothing.
        let all = claim("all", "0-3");
        let (held, refused) = admit_claims([&all], &set("0-3"), &CpuSet::new(), "");
        assert!(held.is_empty());
        assert_eq!(refused[0].reason, "claiming CPUs 0-3 for all would leave no online CPU (0-3) for device IRQs");
        let (held, _) = admit_claims([&all], &set("0-4"), &set("5-7"), "x");
        assert_eq!(held.len(), 1);
    }

    #[test]
    fn claims_past_the_most_held_at_once_are_refused_whatever_their_cpus() {
        let many: Vec<Claim> = (0..=MAX_CLAIMS).map(|i| claim(&format!("c{i}"), "1")).collect();
        let (held, refused) = admit_claims(&many, &set("0-3"), &CpuSet::new(), "");
        assert_eq!(held.len(), MAX_CLAIMS);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].owner, format!("c{MAX_CLAIMS}"));
        assert!(refused[0].reason.contains("the most irqwise holds at once"), "{refused:?}");
    }

    #[test]
    fn owner_names_are_plain_words() {
        for good in ["web", "container-0123abcd", "k8s:ns@pod", "a.b_c"] {
            assert_eq!(owner_problem(good), None, "{good}");
        }
        for bad in ["", ".tmp", "a/b", "a b", "ä", &"x".repeat(OWNER_MAX + 1)] {
            assert!(owner_problem(bad).is_some(), "{bad:?}");
        }
        assert!(parse_claim("a/b", "cpus=1\n", &set("0-3")).is_err());
    }
}
