//! Isolation: the CPUs device IRQs must avoid, each set with where it came from.
//!
//! Several owners keep CPUs free of interrupts, each in its own file: the kernel command line
//! (`isolcpus=`, `nohz_full=`, `irqaffinity=`), what the kernel made of it in sysfs
//! (`cpu/isolated`, `cpu/nohz_full`), cgroup v2 isolated partitions (the root cgroup's
//! `cpuset.cpus.isolated`, kernels 6.7 and later), and the banned list tuned and CRI-O maintain
//! for irqbalance (`IRQBALANCE_BANNED_CPULIST`, `IRQBALANCE_BANNED_CPUS`), the runtime claims
//! and, when configured, the kubelet's CPU manager checkpoint. [`Isolation`] keeps
//! one [`IsolationSource`] per file and setting, so every CPU kept free can be explained.
//!
//! Pure: the parsers take text, the readers live in `topology::discover::isolation`.
//! Invariant: a source's `cpus` lie within the possible CPUs it was parsed against.

use serde::Serialize;

use crate::cpuset::CpuSet;

/// Which owner a source speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationKind {
    /// `cpu/isolated`: the CPUs the kernel took out of scheduler domains (`isolcpus=`).
    Isolated,
    /// `cpu/nohz_full`: the CPUs running without the scheduler tick.
    NohzFull,
    /// The root cgroup's `cpuset.cpus.isolated`: CPUs of isolated cgroup v2 partitions.
    CgroupPartition,
    /// `isolcpus=` on the kernel command line (with any flags: `managed_irq`, `domain`, `nohz`).
    CmdlineIsolcpus,
    /// `nohz_full=` on the kernel command line.
    CmdlineNohzFull,
    /// `irqaffinity=` on the kernel command line: the CPUs it leaves out.
    CmdlineIrqaffinity,
    /// irqbalance's banned list, as tuned (`isolated_cores`) and CRI-O write it.
    IrqbalanceBanned,
    /// A runtime claim (`irqwise claim`, `/run/irqwise/claims/OWNER`) whose process runs.
    Claim,
    /// The CPUs the kubelet's static CPU manager policy assigned exclusively, from its
    /// checkpoint (`kubelet_cpu_manager_state`).
    KubeletExclusive,
}

impl IsolationKind {
    /// What the source does: isolation (which `respect_isolation` governs and a rule's own
    /// `cpus` with `allow_isolated` may override) or a ban (like `banned_cpus`).
    pub(crate) fn effect(self) -> Effect {
        match self {
            IsolationKind::IrqbalanceBanned => Effect::Banned,
            IsolationKind::Claim => Effect::Claimed,
            _ => Effect::Isolated,
        }
    }

    /// The word plan reasons use for its CPUs (`cgroup-isolated CPUs 6-7`).
    pub fn word(self) -> &'static str {
        match self {
            IsolationKind::Isolated => "isolated",
            IsolationKind::NohzFull => "nohz_full",
            IsolationKind::CgroupPartition => "cgroup-isolated",
            IsolationKind::CmdlineIsolcpus => "isolcpus",
            IsolationKind::CmdlineNohzFull => "nohz_full",
            IsolationKind::CmdlineIrqaffinity => "outside-irqaffinity",
            IsolationKind::IrqbalanceBanned => "irqbalance-banned",
            IsolationKind::Claim => "claimed",
            IsolationKind::KubeletExclusive => "kubelet-exclusive",
        }
    }

    /// When its CPUs are decided: `boot` (the kernel command line, and what the kernel made of
    /// it in sysfs: on 7.0 and later `cpu/isolated` shows only the boot's `isolcpus=`) or `live`
    /// (changed while the system runs: cgroup partitions, which 7.0 makes the kernel's own
    /// housekeeping follow at run time, irqbalance's banned list, claims, the kubelet's
    /// exclusive CPUs). Kernel-managed IRQs
    /// follow only boot isolation, and only `isolcpus=managed_irq`.
    pub fn since(self) -> &'static str {
        match self {
            IsolationKind::Isolated
            | IsolationKind::NohzFull
            | IsolationKind::CmdlineIsolcpus
            | IsolationKind::CmdlineNohzFull
            | IsolationKind::CmdlineIrqaffinity => "boot",
            IsolationKind::CgroupPartition
            | IsolationKind::IrqbalanceBanned
            | IsolationKind::Claim
            | IsolationKind::KubeletExclusive => "live",
        }
    }

    /// How `topology` names it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            IsolationKind::Isolated => "isolated (isolcpus)",
            IsolationKind::NohzFull => "nohz_full",
            IsolationKind::CgroupPartition => "cgroup v2 isolated partitions",
            IsolationKind::CmdlineIsolcpus => "kernel command line isolcpus=",
            IsolationKind::CmdlineNohzFull => "kernel command line nohz_full=",
            IsolationKind::CmdlineIrqaffinity => "kernel command line irqaffinity=: the CPUs outside it",
            IsolationKind::IrqbalanceBanned => "irqbalance banned list: tuned, CRI-O",
            IsolationKind::Claim => "runtime claim: irqwise claim",
            IsolationKind::KubeletExclusive => "kubelet CPU manager: CPUs its static policy assigned exclusively",
        }
    }
}

/// How a source keeps IRQs off its CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Effect {
    /// Like `isolcpus`: applies with `respect_isolation`; a rule naming the CPUs in its own `cpus`
    /// with `allow_isolated = true` still gets them.
    Isolated,
    /// Like `banned_cpus`: never used (with `import_irqbalance_banned`).
    Banned,
    /// A runtime claim: never used, whatever the configuration (unless every online CPU is
    /// claimed or banned: then the claims are void, and a warning says so).
    Claimed,
}

/// One owner's word on which CPUs to keep free.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IsolationSource {
    pub kind: IsolationKind,
    /// The file, as an absolute path of the system (`/proc/cmdline`), whatever the root.
    pub path: String,
    /// The setting as written there (`isolcpus=managed_irq,2-7`, `IRQBALANCE_BANNED_CPUS=fc`).
    pub setting: String,
    /// The CPUs device IRQs must avoid because of it.
    pub cpus: CpuSet,
}

impl IsolationSource {
    pub(crate) fn effect(&self) -> Effect {
        self.kind.effect()
    }

    /// The owner of a claim (its file's name); `None` for other kinds.
    pub fn claim_owner(&self) -> Option<&str> {
        (self.kind == IsolationKind::Claim).then(|| self.path.rsplit('/').next().unwrap_or(&self.path))
    }
}

/// Every source found, in reading order. The set of CPUs device IRQs must avoid, with
/// provenance: [`Isolation::avoid`], and each source names its CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Isolation {
    pub sources: Vec<IsolationSource>,
    /// Every claim file read, live or ended (the live ones are also `sources`).
    #[serde(skip)]
    pub claims: Vec<crate::topology::claims::ClaimRead>,
}

impl Isolation {
    /// The CPUs of every source with `effect`.
    pub(crate) fn cpus_with(&self, effect: Effect) -> CpuSet {
        self.sources.iter().filter(|s| s.effect() == effect).fold(CpuSet::new(), |acc, s| acc.union(&s.cpus))
    }

    /// CPUs isolated by any source (what `respect_isolation` keeps free).
    pub fn isolated(&self) -> CpuSet {
        self.cpus_with(Effect::Isolated)
    }

    /// CPUs banned by irqbalance's list (what `import_irqbalance_banned` keeps free).
    pub fn banned(&self) -> CpuSet {
        self.cpus_with(Effect::Banned)
    }

    /// The CPUs device IRQs must avoid: the claimed ones, the isolated ones when
    /// `respect_isolation`, the banned ones when `import_banned`.
    pub fn avoid(&self, respect_isolation: bool, import_banned: bool) -> CpuSet {
        let mut out = self.cpus_with(Effect::Claimed);
        if respect_isolation {
            out.extend_with(&self.isolated());
        }
        if import_banned {
            out.extend_with(&self.banned());
        }
        out
    }

    /// The sources that keep `cpu` free, in reading order.
    #[cfg(test)]
    pub(crate) fn sources_of(&self, cpu: u32) -> impl Iterator<Item = &IsolationSource> {
        self.sources.iter().filter(move |s| s.cpus.contains(cpu))
    }
}

/// A setting that could not be taken as written: what is wrong, and what was done instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SettingProblem {
    pub problem: String,
    pub instead: String,
}

/// Parses a CPU list as the kernel's `bitmap_parselist()` (lib/bitmap-str.c) takes it on the
/// command line: `0-3,8`, groups `0-15:2/4` (the first 2 of every 4), `N` for the last CPU and
/// `all`. `last` is the highest possible CPU. Guarantees the result within `0..=last`.
pub(crate) fn parse_kernel_cpulist(text: &str, last: u32) -> Result<CpuSet, String> {
    let text = text.trim();
    if text == "all" {
        return Ok(CpuSet::first_n(last + 1));
    }
    let cpu = |s: &str| -> Result<u32, String> {
        match s.trim() {
            "N" => Ok(last),
            t if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                t.parse::<u32>().map_err(|_| format!("CPU {t:?} is too large"))
            }
            t => Err(format!("{t:?} is not a CPU number")),
        }
    };
    let mut set = CpuSet::new();
    for region in text.split(',').filter(|r| !r.trim().is_empty()) {
        let (range, group) = match region.split_once(':') {
            Some((r, g)) => (r, Some(g)),
            None => (region, None),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (cpu(a)?, cpu(b)?),
            None => (cpu(range)?, cpu(range)?),
        };
        if lo > hi {
            return Err(format!("range {region:?} runs backwards"));
        }
        let (used, size) = match group {
            None => (1, 1),
            Some(g) => {
                let (u, s) = g.split_once('/').ok_or_else(|| format!("group {g:?} is not USED/SIZE"))?;
                let (u, s) = (cpu(u)?, cpu(s)?);
                if u == 0 || s == 0 || u > s {
                    return Err(format!("group {g:?} needs 0 < USED <= SIZE"));
                }
                (u, s)
            }
        };
        for c in (lo..=hi.min(last)).filter(|c| (c - lo) % size < used) {
            set.insert(c);
        }
    }
    Ok(set)
}

/// The words of a kernel command line as the kernel's `next_arg()` (lib/cmdline.c) splits it:
/// at blanks outside double quotes, the quotes removed; everything after `--` goes to init and
/// is left out.
pub(crate) fn cmdline_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    match words.iter().position(|w| w == "--") {
        Some(end) => words[..end].to_vec(),
        None => words,
    }
}

/// The isolation the kernel command line asks for: `isolcpus=` (its flags skipped as
/// `housekeeping_isolcpus_setup()` in kernel/sched/isolation.c skips them), `nohz_full=` and
/// `irqaffinity=` (the possible CPUs outside it). A parameter given several times counts with
/// every value. `possible` bounds every list; `path` names the file in the sources.
///
/// As `housekeeping_setup()` takes `isolcpus=` and `nohz_full=`: a list naming a CPU beyond the
/// last possible one is rejected whole (`cpulist_parse()` fails with ERANGE: "incorrect CPU
/// range"), and a list that leaves no `present` CPU for housekeeping keeps the boot CPU (taken
/// to be the first present one) out of it. Each is a problem saying what the kernel did.
pub(crate) fn parse_cmdline(
    text: &str,
    possible: &CpuSet,
    present: &CpuSet,
    path: &str,
) -> (Vec<IsolationSource>, Vec<SettingProblem>) {
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    let Some(last) = possible.last() else { return (sources, problems) };
    for word in cmdline_words(text) {
        let Some((key, value)) = word.split_once('=') else { continue };
        let kind = match key {
            "isolcpus" => IsolationKind::CmdlineIsolcpus,
            "nohz_full" => IsolationKind::CmdlineNohzFull,
            "irqaffinity" => IsolationKind::CmdlineIrqaffinity,
            _ => continue,
        };
        let list = if kind == IsolationKind::CmdlineIsolcpus { skip_isolcpus_flags(value) } else { value };
        let housekeeping = kind != IsolationKind::CmdlineIrqaffinity;
        if let Some(cpu) = cpu_beyond(list, last).filter(|_| housekeeping) {
            problems.push(SettingProblem {
                problem: format!("{word:?}: CPU {cpu} is beyond the last possible CPU {last}"),
                instead: format!(
                    "{key}= is not taken into account: the kernel rejects the whole list (\"incorrect CPU range\")"
                ),
            });
            continue;
        }
        let parsed = parse_kernel_cpulist(list, last).map(|s| s.intersection(possible));
        let cpus = match (kind, parsed) {
            (_, Err(e)) => {
                problems.push(SettingProblem {
                    problem: format!("{word:?}: {e}"),
                    instead: format!("{key}= is not taken into account"),
                });
                continue;
            }
            (IsolationKind::CmdlineIrqaffinity, Ok(set)) if set.is_empty() => {
                problems.push(SettingProblem {
                    problem: format!("{word:?} names no possible CPU (possible {possible})"),
                    instead: "irqaffinity= is not taken into account, as the kernel ignores it".into(),
                });
                continue;
            }
            (IsolationKind::CmdlineIrqaffinity, Ok(set)) => possible.difference(&set),
            (_, Ok(set)) => match present.first() {
                Some(boot) if present.is_subset(&set) => {
                    problems.push(SettingProblem {
                        problem: format!("{word:?} leaves no present CPU for housekeeping (present {present})"),
                        instead: format!(
                            "the kernel keeps its boot CPU: CPU {boot} is not taken as isolated by {key}="
                        ),
                    });
                    let mut set = set;
                    set.remove(boot);
                    set
                }
                _ => set,
            },
        };
        if !cpus.is_empty() {
            sources.push(IsolationSource { kind, path: path.to_string(), setting: word.clone(), cpus });
        }
    }
    (sources, problems)
}

/// The first CPU number of the kernel CPU list `text` above `last` (`N` is `last`; group sizes
/// after `:` are not CPUs).
fn cpu_beyond(text: &str, last: u32) -> Option<u64> {
    text.split(',')
        .filter_map(|region| region.split(':').next())
        .flat_map(|range| range.split('-'))
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .map(|t| t.parse::<u64>().unwrap_or(u64::MAX))
        .find(|&n| n > u64::from(last))
}

/// `isolcpus=`'s value without its leading flags: every leading `word,` whose first character is
/// a letter (`nohz,`, `domain,`, `managed_irq,`, or one the kernel does not know).
fn skip_isolcpus_flags(value: &str) -> &str {
    let mut rest = value;
    while rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
        match rest.split_once(',') {
            Some((_, after)) => rest = after,
            None => break,
        }
    }
    rest
}

/// irqbalance's two variables: a CPU list (irqbalance 1.8 and later) and a hex mask.
const BANNED_CPULIST: &str = "IRQBALANCE_BANNED_CPULIST";
const BANNED_CPUS: &str = "IRQBALANCE_BANNED_CPUS";

/// The banned CPUs an irqbalance environment file (`/etc/sysconfig/irqbalance`,
/// `/etc/default/irqbalance`) sets, one source per variable: `IRQBALANCE_BANNED_CPULIST` (a CPU
/// list; `-` bans none) and `IRQBALANCE_BANNED_CPUS` (a hex mask, 32-bit groups separated by
/// commas, `0x` allowed). Read as systemd's `EnvironmentFile=` and a shell read it: comments,
/// `export`, single and double quotes, backslashes; the last assignment of a variable wins. A
/// value that cannot be read (a shell expansion, a malformed list) is a problem and bans
/// nothing. Both variables count (their union): irqbalance itself prefers the list, but a file
/// with both is usually one tool's list and another's mask. `possible` bounds the result.
pub(crate) fn parse_irqbalance(
    text: &str,
    possible: &CpuSet,
    path: &str,
) -> (Vec<IsolationSource>, Vec<SettingProblem>) {
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    let mut found: Vec<(&'static str, Result<String, String>, String)> = Vec::new();
    for (name, value) in env_assignments(text) {
        let var = match name.as_str() {
            BANNED_CPULIST => BANNED_CPULIST,
            BANNED_CPUS => BANNED_CPUS,
            _ => continue,
        };
        found.retain(|(v, _, _)| *v != var);
        found.push((var, shell_word(&value), format!("{name}={value}")));
    }
    let last = possible.last().unwrap_or(0);
    for (var, value, setting) in found {
        let parsed = value.and_then(|v| match var {
            BANNED_CPULIST if v.trim() == "-" => Ok(CpuSet::new()),
            BANNED_CPULIST => parse_kernel_cpulist(&v, last),
            _ => parse_banned_mask(&v),
        });
        match parsed {
            Ok(set) => {
                let cpus = set.intersection(possible);
                if !cpus.is_empty() {
                    sources.push(IsolationSource {
                        kind: IsolationKind::IrqbalanceBanned,
                        path: path.into(),
                        setting,
                        cpus,
                    });
                }
            }
            Err(e) => problems
                .push(SettingProblem { problem: format!("{setting:?}: {e}"), instead: format!("{var} bans no CPU") }),
        }
    }
    (sources, problems)
}

/// Every `NAME=value` assignment of an environment file, `export` allowed, comments and other
/// lines skipped; the value as written (quotes still on).
pub(crate) fn env_assignments(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else { continue };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        out.push((name.to_string(), value.trim_end().to_string()));
    }
    out
}

/// A hex mask as irqbalance's `cpumask_parse_user()` reads it, and a little more: groups of up to
/// eight hex digits separated by commas, `0x` allowed; a longer run of digits without commas
/// is read as the number it spells.
pub(crate) fn parse_banned_mask(text: &str) -> Result<CpuSet, String> {
    let t = text.trim();
    let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    if t.is_empty() {
        return Ok(CpuSet::new());
    }
    let regrouped;
    let t = if !t.contains(',') && t.len() > 8 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        let digits: Vec<char> = t.chars().collect();
        let mut groups: Vec<String> = digits.rchunks(8).map(|c| c.iter().collect()).collect();
        groups.reverse();
        regrouped = groups.join(",");
        regrouped.as_str()
    } else {
        t
    };
    CpuSet::parse_mask(t).map_err(|e| e.to_string())
}

/// The value of one `NAME=value` line as a shell would see it: quotes removed, backslashes
/// resolved, an unquoted `#` after a blank starting a comment, the first unquoted blank ending
/// the value. A `$` or a backquote (an expansion no file reader can do) is an error.
pub(crate) fn shell_word(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.chars().peekable();
    let expansion = || Err("uses a shell expansion ($ or `), which irqwise cannot evaluate".to_string());
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(c) => out.push(c),
                    None => return Err("a single quote is not closed".into()),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c @ ('"' | '\\' | '$' | '`')) => out.push(c),
                        Some('\n') => {}
                        Some(c) => {
                            out.push('\\');
                            out.push(c);
                        }
                        None => return Err("a double quote is not closed".into()),
                    },
                    Some('$' | '`') => return expansion(),
                    Some(c) => out.push(c),
                    None => return Err("a double quote is not closed".into()),
                }
            },
            '\\' => {
                if let Some(c) = chars.next() {
                    out.push(c);
                }
            }
            '$' | '`' => return expansion(),
            c if c.is_whitespace() => break,
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn kernel_cpulists_take_groups_n_and_all() {
        assert_eq!(parse_kernel_cpulist("2-7", 23), Ok(set("2-7")));
        assert_eq!(parse_kernel_cpulist("0-15:2/4", 23), Ok(set("0-1,4-5,8-9,12-13")));
        assert_eq!(parse_kernel_cpulist("20-N", 23), Ok(set("20-23")));
        assert_eq!(parse_kernel_cpulist("all", 3), Ok(set("0-3")));
        assert!(parse_kernel_cpulist("7-2", 23).is_err());
        assert!(parse_kernel_cpulist("a-b", 23).is_err());
        assert!(parse_kernel_cpulist("0-7:3/2", 23).is_err());
    }

    #[test]
    fn kernel_cpulist_groups_count_from_the_range_start_and_may_use_every_cpu() {
        // The kernel's bitmap_parselist: CPU c is in when (c - start) % size < used.
        assert_eq!(parse_kernel_cpulist("1-8:1/3", 23), Ok(set("1,4,7")));
        assert_eq!(parse_kernel_cpulist("0-7:2/2", 23), Ok(set("0-7")));
        assert_eq!(parse_kernel_cpulist("a-b", 23), Err("\"a\" is not a CPU number".to_string()));
        assert_eq!(parse_kernel_cpulist("4-", 23), Err("\"\" is not a CPU number".to_string()));
    }

    #[test]
    fn a_claim_names_its_owner_by_its_file_and_each_kind_says_what_it_is() {
        let source =
            |kind, path: &str| IsolationSource { kind, path: path.into(), setting: String::new(), cpus: CpuSet::new() };
        assert_eq!(source(IsolationKind::Claim, "/run/irqwise/claims/kubelet").claim_owner(), Some("kubelet"));
        assert_eq!(source(IsolationKind::Isolated, "/sys/devices/system/cpu/isolated").claim_owner(), None);
        assert_eq!(IsolationKind::Isolated.describe(), "isolated (isolcpus)");
        assert_eq!(IsolationKind::NohzFull.describe(), "nohz_full");
    }

    #[test]
    fn cmdline_words_follow_quotes_and_stop_at_double_dash() {
        let words = cmdline_words("BOOT_IMAGE=/v root=/dev/vda1 \"isolcpus=2-3\" a=\"b c\" -- isolcpus=9\n");
        assert_eq!(words, ["BOOT_IMAGE=/v", "root=/dev/vda1", "isolcpus=2-3", "a=b c"]);
    }

    #[test]
    fn cmdline_isolcpus_flags_nohz_full_and_irqaffinity() {
        let possible = set("0-23");
        let text = "ro isolcpus=managed_irq,domain,6-7 nohz_full=20-N irqaffinity=0-15 quiet";
        let (sources, problems) = parse_cmdline(text, &possible, &possible, "/proc/cmdline");
        assert!(problems.is_empty(), "{problems:?}");
        let got: Vec<(IsolationKind, String)> = sources.iter().map(|s| (s.kind, s.cpus.to_list_string())).collect();
        assert_eq!(
            got,
            [
                (IsolationKind::CmdlineIsolcpus, "6-7".to_string()),
                (IsolationKind::CmdlineNohzFull, "20-23".to_string()),
                (IsolationKind::CmdlineIrqaffinity, "16-23".to_string()),
            ]
        );
        assert_eq!(sources[0].setting, "isolcpus=managed_irq,domain,6-7");
    }

    #[test]
    fn a_bad_cmdline_list_is_a_problem_and_isolates_nothing() {
        let (sources, problems) =
            parse_cmdline("isolcpus=nohz,x-y irqaffinity=40-47", &set("0-7"), &set("0-7"), "/proc/cmdline");
        assert!(sources.is_empty(), "{sources:?}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].problem.contains("isolcpus=nohz,x-y"), "{problems:?}");
        assert!(problems[1].instead.contains("irqaffinity="), "{problems:?}");
    }

    #[test]
    fn what_the_kernel_rejects_or_overrides_is_said_and_followed() {
        let (possible, present) = (set("0-15"), set("0-7"));
        // A CPU beyond the last possible one: the kernel ignores the whole list.
        let (sources, problems) = parse_cmdline("isolcpus=2-3,1000 nohz_full=4-16", &possible, &present, "c");
        assert!(sources.is_empty(), "{sources:?}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].problem.contains("CPU 1000 is beyond the last possible CPU 15"), "{problems:?}");
        assert!(problems[1].instead.contains("incorrect CPU range"), "{problems:?}");
        // Group sizes are not CPUs; N is the last CPU.
        let (sources, problems) = parse_cmdline("isolcpus=0-15:2/64 nohz_full=8-N", &possible, &present, "c");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(sources.len(), 2);
        // Every present CPU isolated: the kernel keeps the boot CPU for housekeeping.
        for text in ["isolcpus=0-7", "isolcpus=all", "nohz_full=0-15"] {
            let (sources, problems) = parse_cmdline(text, &possible, &present, "c");
            assert_eq!(problems.len(), 1, "{text}: {problems:?}");
            assert!(problems[0].instead.contains("CPU 0 is not taken as isolated"), "{problems:?}");
            assert!(!sources[0].cpus.contains(0) && sources[0].cpus.contains(1), "{text}: {sources:?}");
        }
    }

    #[test]
    fn irqbalance_files_in_every_form_tuned_and_crio_write() {
        let possible = set("0-23");
        let cases = [
            ("IRQBALANCE_BANNED_CPULIST=2-7\n", "2-7"),
            ("IRQBALANCE_BANNED_CPULIST=\"2-7\"\n", "2-7"),
            ("export IRQBALANCE_BANNED_CPULIST='2-3,6'\n", "2-3,6"),
            ("IRQBALANCE_BANNED_CPUS=000000fc\n", "2-7"),
            ("IRQBALANCE_BANNED_CPUS=\"00000000,000000c0\"\n", "6-7"),
            ("IRQBALANCE_BANNED_CPUS=0xc  # the isolated pair\n", "2-3"),
            ("IRQBALANCE_BANNED_CPUS=FFF000\n", "12-23"),
            ("IRQBALANCE_BANNED_CPUS=0000000000f0\n", "4-7"),
            ("# IRQBALANCE_BANNED_CPUS=ff\nIRQBALANCE_BANNED_CPUS=\n", ""),
            ("IRQBALANCE_BANNED_CPULIST=-\nIRQBALANCE_BANNED_CPUS=0\n", ""),
            ("IRQBALANCE_BANNED_CPULIST=1\nIRQBALANCE_BANNED_CPULIST=4-5\n", "4-5"),
            ("IRQBALANCE_BANNED_CPULIST=2-3\nIRQBALANCE_BANNED_CPUS=00000030\n", "2-5"),
            ("IRQBALANCE_ARGS=\"--banirq=45\"\nIRQBALANCE_BANNED_CPULIST=40-47\n", ""),
        ];
        for (text, want) in cases {
            let (sources, problems) = parse_irqbalance(text, &possible, "/etc/sysconfig/irqbalance");
            assert!(problems.is_empty(), "{text:?}: {problems:?}");
            let got = sources.iter().fold(CpuSet::new(), |acc, s| acc.union(&s.cpus));
            assert_eq!(got.to_list_string(), want, "{text:?}");
            assert!(sources.iter().all(|s| s.kind == IsolationKind::IrqbalanceBanned && !s.cpus.is_empty()));
        }
    }

    #[test]
    fn a_malformed_banned_value_is_a_problem_that_bans_nothing() {
        let possible = set("0-23");
        for text in [
            "IRQBALANCE_BANNED_CPUS=zz\n",
            "IRQBALANCE_BANNED_CPULIST=\"2-3\n",
            "IRQBALANCE_BANNED_CPULIST=$ISOLATED\n",
            "IRQBALANCE_BANNED_CPULIST=7-2\n",
        ] {
            let (sources, problems) = parse_irqbalance(text, &possible, "/etc/default/irqbalance");
            assert!(sources.is_empty(), "{text:?}");
            assert_eq!(problems.len(), 1, "{text:?}");
            assert!(problems[0].problem.contains("IRQBALANCE_BANNED_"), "{problems:?}");
        }
    }

    #[test]
    fn avoid_joins_the_sources_each_flag_allows_and_names_them() {
        let source =
            |kind, cpus: &str| IsolationSource { kind, path: "/x".into(), setting: String::new(), cpus: set(cpus) };
        let iso = Isolation {
            sources: vec![
                source(IsolationKind::CgroupPartition, "10-11"),
                source(IsolationKind::IrqbalanceBanned, "2-3"),
                source(IsolationKind::CmdlineIsolcpus, "11"),
                source(IsolationKind::Claim, "6"),
            ],
            claims: Vec::new(),
        };
        assert_eq!(iso.avoid(true, true), set("2-3,6,10-11"));
        assert_eq!(iso.avoid(false, true), set("2-3,6"));
        assert_eq!(iso.avoid(false, false), set("6"), "a claim holds whatever the configuration");
        assert_eq!(iso.avoid(true, false), set("6,10-11"));
        let why: Vec<IsolationKind> = iso.sources_of(11).map(|s| s.kind).collect();
        assert_eq!(why, [IsolationKind::CgroupPartition, IsolationKind::CmdlineIsolcpus]);
    }
}
