//! What the running kernel makes of the command line's isolation, by its facts rather than by
//! what the words say. The kernel's rules (kernel/sched/isolation.c, `housekeeping_setup()` and
//! its two `__setup` callers, run in command-line order):
//!
//! - `housekeeping_isolcpus_setup()` skips a flag word it does not know (`isolcpus=io_queue`
//!   without `HK_TYPE_IO_QUEUE`), takes `domain` when no flag is left, and rejects the whole
//!   `isolcpus=` when a flag word holds a character other than a letter or `_`.
//! - A later setting that shares a housekeeping type with an earlier applied one must name the
//!   same CPUs, else it is ignored whole (every kernel irqwise knows, 6.1 on).
//! - From 6.19 (185bccc79797), a later setting taking domain or tick (`nohz_full`)
//!   housekeeping is ignored whole when, with the earlier domain housekeeping (or, with none,
//!   the earlier tick housekeeping), it leaves no present CPU for housekeeping. Before it both
//!   applied, and no CPU was left for both.
//!
//! "Present" is what the kernel has marked present when it parses the command line: every
//! present CPU on x86, only the boot CPU on arm64 (which marks the others present later, in
//! `smp_prepare_cpus()`); each list first loses the boot CPU when it names every such CPU
//! (`housekeeping_setup()`'s "using boot CPU"), so on arm64 no CPU list ever leaves no
//! housekeeping CPU, and the 6.19 check never ignores a setting there.
//!
//! Pure: an [`Isolation`] as read and the [`KernelFacts`] in; the isolation as the kernel
//! applies it and what differs, in words, out.

use super::facts::{Feature, KernelFacts};
use crate::cpuset::CpuSet;
use crate::topology::isolation::{Isolation, IsolationKind, IsolationSource};

/// The CPUs the kernel has marked present when it parses `isolcpus=` and `nohz_full=`: on
/// arm64 (`arch` `aarch64`) only the boot CPU (logical CPU 0, the first present), elsewhere
/// every present CPU.
pub fn present_at_parse(arch: Option<&str>, present: &CpuSet) -> CpuSet {
    match (arch, present.first()) {
        (Some("aarch64"), Some(boot)) => CpuSet::single(boot),
        _ => present.clone(),
    }
}

/// `cpus` as `housekeeping_setup()` keeps them isolated: without the boot CPU (the first of
/// `present`) when they name every CPU of `present` (the CPUs present at parse time).
fn as_kept(cpus: &CpuSet, present: &CpuSet) -> CpuSet {
    let mut kept = cpus.clone();
    if let Some(boot) = present.first().filter(|_| present.is_subset(cpus)) {
        kept.remove(boot);
    }
    kept
}

/// The housekeeping types a command line setting takes CPUs from (`enum hk_type`, as far as
/// irqwise needs them; the tick stands for `nohz_full`'s kernel noise types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Housekeeping {
    Domain,
    ManagedIrq,
    Tick,
    IoQueue,
}

impl Housekeeping {
    /// Its name on the command line.
    fn name(self) -> &'static str {
        match self {
            Housekeeping::Domain => "domain",
            Housekeeping::ManagedIrq => "managed_irq",
            Housekeeping::Tick => "nohz",
            Housekeeping::IoQueue => "io_queue",
        }
    }
}

/// The type an `isolcpus=` flag word sets on this kernel (`io_queue` only where `io_queue`).
fn flag_type(word: &str, io_queue: bool) -> Option<Housekeeping> {
    match word {
        "nohz" => Some(Housekeeping::Tick),
        "domain" => Some(Housekeeping::Domain),
        "managed_irq" => Some(Housekeeping::ManagedIrq),
        "io_queue" if io_queue => Some(Housekeeping::IoQueue),
        _ => None,
    }
}

/// The flags of an `isolcpus=` word (`isolcpus=managed_irq,domain,2-7`): its leading words that
/// start with a letter, as the kernel reads them.
fn isolcpus_flags(setting: &str) -> Vec<&str> {
    let value = setting.strip_prefix("isolcpus=").unwrap_or(setting);
    value.split(',').take_while(|w| w.starts_with(|c: char| c.is_ascii_alphabetic())).collect()
}

/// The housekeeping types of an `isolcpus=` setting on this kernel: its known flags, `domain`
/// when none is; `Err` with the first unknown flag word holding a character other than a letter
/// or `_`, for which the kernel rejects the whole setting.
fn isolcpus_types(setting: &str, io_queue: bool) -> Result<Vec<Housekeeping>, &str> {
    let mut types = Vec::new();
    for word in isolcpus_flags(setting) {
        match flag_type(word, io_queue) {
            Some(t) if !types.contains(&t) => types.push(t),
            Some(_) => {}
            None if word.chars().all(|c| c.is_ascii_alphabetic() || c == '_') => {}
            None => return Err(word),
        }
    }
    if types.is_empty() {
        types.push(Housekeeping::Domain);
    }
    Ok(types)
}

/// The housekeeping types of a command line source (`None` for other kinds, which the kernel's
/// housekeeping setup never sees), or the flag word that voids it.
fn types_of(s: &IsolationSource, io_queue: bool) -> Option<Result<Vec<Housekeeping>, &str>> {
    match s.kind {
        IsolationKind::CmdlineNohzFull => Some(Ok(vec![Housekeeping::Tick])),
        IsolationKind::CmdlineIsolcpus => Some(isolcpus_types(&s.setting, io_queue)),
        _ => None,
    }
}

/// One housekeeping type an applied setting set: its isolated CPUs and the setting.
struct Taken {
    kind: Housekeeping,
    cpus: CpuSet,
    setting: String,
}

/// What `housekeeping_setup()` finds against a later setting of `types` and `cpus`, given the
/// types `taken` by earlier applied settings: why it ignores it, or `None` when it applies it.
/// `checks_coverage`: the kernel has 185bccc79797 (known true).
fn why_ignored(
    types: &[Housekeeping],
    cpus: &CpuSet,
    taken: &[Taken],
    present: &CpuSet,
    checks_coverage: Option<&str>,
) -> Option<String> {
    if let Some(t) = taken.iter().find(|t| types.contains(&t.kind) && t.cpus != *cpus) {
        return Some(format!(
            ": it sets {} housekeeping, as {} before it does, with other CPUs (the kernel logs \"Housekeeping: nohz_full= must match isolcpus=\")",
            t.kind.name(),
            t.setting
        ));
    }
    let source = checks_coverage?;
    let earlier =
        [Housekeeping::Domain, Housekeeping::Tick].iter().find_map(|h| taken.iter().find(|t| t.kind == *h))?;
    let relevant = types.iter().any(|t| matches!(t, Housekeeping::Domain | Housekeeping::Tick));
    (relevant && present.is_subset(&cpus.union(&earlier.cpus))).then(|| {
        format!(
            " (by its {source}): with {} before it, it would leave no present CPU for housekeeping (185bccc79797; the kernel logs \"must include one present CPU neither in nohz_full= nor in isolcpus=domain\")",
            earlier.setting
        )
    })
}

/// The sentence for an `isolcpus=` naming `io_queue` on a kernel known to lack it.
fn io_queue_note(s: &IsolationSource, source: &str) -> Option<String> {
    if !isolcpus_flags(&s.setting).contains(&"io_queue") {
        return None;
    }
    let applied = isolcpus_types(&s.setting, false).ok()?;
    let names: Vec<&str> = applied.iter().map(|t| t.name()).collect();
    Some(format!(
        "{}: this kernel has no isolcpus=io_queue (no HK_TYPE_IO_QUEUE, by its {source}) and skips the flag: CPUs {} get {} isolation only",
        s.setting,
        s.cpus,
        names.join(",")
    ))
}

/// `isolation` as the kernel described by `facts` applies it, with `present` the CPUs present
/// when it parses the command line ([`present_at_parse`]),
/// and one sentence per difference from what the command line says. Guarantees: only
/// command line `isolcpus=` and `nohz_full=` sources are ever dropped, each for one of the
/// kernel's rules (module doc) against the settings before it that the kernel applied; the
/// coverage rule only where `nohz-full-yields-to-domain` is known true; an `isolcpus=` naming
/// `io_queue` on a kernel known to lack it is kept (the kernel still isolates its CPUs, by the
/// flags it knows) and said.
pub fn as_the_kernel_applies(isolation: &Isolation, facts: &KernelFacts, present: &CpuSet) -> (Isolation, Vec<String>) {
    let io_fact = facts.feature(Feature::IoQueueIsolation);
    let io_queue = io_fact.value() != Some(false);
    let yields = facts.feature(Feature::NohzFullYieldsToDomain);
    let checks_coverage = (yields.value() == Some(true)).then(|| yields.source().as_str());
    let mut notes = Vec::new();
    let mut taken: Vec<Taken> = Vec::new();
    let mut out = isolation.clone();
    out.sources.retain(|s| {
        let Some(types) = types_of(s, io_queue) else { return true };
        if !io_queue && s.kind == IsolationKind::CmdlineIsolcpus {
            notes.extend(io_queue_note(s, io_fact.source().as_str()));
        }
        let why = match &types {
            Err(word) => Some(format!(": its flag {word:?} holds a character other than a letter or '_' (the kernel logs \"isolcpus: Invalid flag\")")),
            Ok(types) => why_ignored(types, &as_kept(&s.cpus, present), &taken, present, checks_coverage),
        };
        if let Some(why) = why {
            notes.push(format!("{}: ignored by the kernel{why}; its CPUs are not kept free for it", s.setting));
            return false;
        }
        for kind in types.unwrap_or_default() {
            if !taken.iter().any(|t| t.kind == kind) {
                taken.push(Taken { kind, cpus: as_kept(&s.cpus, present), setting: s.setting.clone() });
            }
        }
        true
    });
    (out, notes)
}

/// The CPU list of an `isolcpus=` or `nohz_full=` value: after the leading flag words.
fn list_of(value: &str) -> String {
    value.split(',').skip_while(|w| w.starts_with(|c: char| c.is_ascii_alphabetic())).collect::<Vec<_>>().join(",")
}

/// The CPUs the kernel keeps kernel-managed IRQs off (`isolcpus=managed_irq`), by the command
/// line `words` alone, in order: the rules of the module doc but the coverage one of 6.19 (it
/// needs the present CPUs), `io_queue` counted as a flag the kernel knows. `None` when no
/// applied `isolcpus=` sets `managed_irq`; a list that does not parse is skipped, as the kernel
/// skips it.
pub fn managed_irq_cpus(words: &[String]) -> Option<CpuSet> {
    let mut taken: Vec<Taken> = Vec::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else { continue };
        let types = match key {
            "isolcpus" => isolcpus_types(word, true),
            "nohz_full" => Ok(vec![Housekeeping::Tick]),
            _ => continue,
        };
        let (Ok(types), Ok(cpus)) = (types, CpuSet::parse_list(&list_of(value))) else { continue };
        if why_ignored(&types, &cpus, &taken, &CpuSet::new(), None).is_some() {
            continue;
        }
        for kind in types {
            if !taken.iter().any(|t| t.kind == kind) {
                taken.push(Taken { kind, cpus: cpus.clone(), setting: word.clone() });
            }
        }
    }
    taken.into_iter().find(|t| t.kind == Housekeeping::ManagedIrq).map(|t| t.cpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelVersion;
    use crate::topology::isolation::parse_cmdline;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn read(cmdline: &str) -> Isolation {
        let (sources, problems) = parse_cmdline(cmdline, &set("0-7"), &set("0-7"), "/proc/cmdline");
        assert!(problems.is_empty(), "{problems:?}");
        Isolation { sources, claims: Vec::new() }
    }

    fn facts(kernel: &str) -> KernelFacts {
        KernelFacts::from_version(KernelVersion::parse(kernel).ok())
    }

    fn settings(i: &Isolation) -> Vec<&str> {
        i.sources.iter().map(|s| s.setting.as_str()).collect()
    }

    #[test]
    fn io_queue_on_a_kernel_without_it_is_domain_isolation_only() {
        let isolation = read("isolcpus=io_queue,2-7");
        let (out, notes) = as_the_kernel_applies(&isolation, &facts("7.2"), &set("0-7"));
        assert_eq!(out, isolation, "its CPUs are still isolated");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("skips the flag") && notes[0].contains("domain isolation only"), "{}", notes[0]);
        assert!(notes[0].contains("by its version") && notes[0].contains("2-7"), "{}", notes[0]);
        // With a flag it knows, that flag alone.
        let (_, notes) = as_the_kernel_applies(&read("isolcpus=io_queue,managed_irq,2-7"), &facts("6.12"), &set("0-7"));
        assert!(notes[0].contains("managed_irq isolation only"), "{}", notes[0]);
        // A kernel that cannot tell (newer than the last known): nothing said.
        assert!(as_the_kernel_applies(&isolation, &facts("7.4"), &set("0-7")).1.is_empty());
        assert!(as_the_kernel_applies(&read("isolcpus=2-7"), &facts("7.2"), &set("0-7")).1.is_empty());
    }

    #[test]
    fn from_6_19_nohz_full_that_would_leave_no_housekeeping_cpu_with_domain_is_ignored() {
        let isolation = read("isolcpus=domain,0-3 nohz_full=4-7");
        let (out, notes) = as_the_kernel_applies(&isolation, &facts("6.19"), &set("0-7"));
        assert_eq!(settings(&out), ["isolcpus=domain,0-3"], "{notes:?}");
        assert!(
            notes[0].starts_with("nohz_full=4-7: ignored by the kernel") && notes[0].contains("isolcpus=domain,0-3")
        );
        // The second is the one ignored, whichever it is; no flags is domain.
        let (out, _) = as_the_kernel_applies(&read("nohz_full=4-7 isolcpus=0-3"), &facts("7.2"), &set("0-7"));
        assert_eq!(settings(&out), ["nohz_full=4-7"]);
        // Before 6.19 both apply; a housekeeping CPU left: both apply; managed_irq alone is no domain.
        for (cmdline, kernel) in [
            ("isolcpus=domain,0-3 nohz_full=4-7", "6.18"),
            ("isolcpus=domain,1-3 nohz_full=4-7", "7.2"),
            ("isolcpus=managed_irq,0-3 nohz_full=4-7", "7.2"),
        ] {
            let isolation = read(cmdline);
            let (out, notes) = as_the_kernel_applies(&isolation, &facts(kernel), &set("0-7"));
            assert_eq!((out, notes), (isolation, Vec::new()), "{cmdline} on {kernel}");
        }
    }

    fn source(kind: IsolationKind, setting: &str, cpus: &str) -> IsolationSource {
        IsolationSource { kind, path: "/etc/default/irqbalance".into(), setting: setting.into(), cpus: set(cpus) }
    }

    /// `housekeeping_setup()` (185bccc79797, 6.19; 7.x alike) checks a later setting against an
    /// earlier one only when the later takes domain or tick housekeeping: `managed_irq` alone
    /// passes, whatever it covers.
    #[test]
    fn a_later_managed_irq_only_isolcpus_is_never_ignored_for_domain_and_tick() {
        let isolation = read("isolcpus=domain,0-3 isolcpus=managed_irq,4-7");
        let (out, notes) = as_the_kernel_applies(&isolation, &facts("7.2"), &set("0-7"));
        assert_eq!((out, notes), (isolation, Vec::new()));
    }

    /// Only the command line's `isolcpus=` and `nohz_full=` pass through `housekeeping_setup()`:
    /// the other sources are never ignored for it.
    #[test]
    fn sources_other_than_the_command_line_are_never_ignored() {
        let mut isolation = read("isolcpus=domain,0-3");
        isolation.sources.push(source(IsolationKind::IrqbalanceBanned, "IRQBALANCE_BANNED_CPULIST=4-7", "4-7"));
        isolation.sources.push(source(IsolationKind::NohzFull, "4-7", "4-7"));
        let (out, notes) = as_the_kernel_applies(&isolation, &facts("7.2"), &set("0-7"));
        assert_eq!((out, notes), (isolation, Vec::new()));
    }

    /// `housekeeping_setup()`, every version irqwise knows (6.1 through 7.x): a later setting that
    /// shares a housekeeping type with an earlier applied one must name the same CPUs, else the
    /// kernel ignores it whole ("nohz_full= must match isolcpus=").
    #[test]
    fn a_later_setting_sharing_a_housekeeping_type_must_name_the_same_cpus() {
        for kernel in ["6.1", "6.12", "7.2"] {
            for (cmdline, kept) in [
                ("isolcpus=nohz,2-5 nohz_full=2-7", "isolcpus=nohz,2-5"),
                ("nohz_full=2-7 isolcpus=nohz,domain,2-5", "nohz_full=2-7"),
                ("isolcpus=managed_irq,2-3 isolcpus=managed_irq,domain,2-7", "isolcpus=managed_irq,2-3"),
                ("isolcpus=2-3 isolcpus=domain,2-7", "isolcpus=2-3"),
            ] {
                let (out, notes) = as_the_kernel_applies(&read(cmdline), &facts(kernel), &set("0-7"));
                assert_eq!(settings(&out), [kept], "{cmdline} on {kernel}: {notes:?}");
                assert_eq!(notes.len(), 1, "{notes:?}");
                assert!(notes[0].contains("ignored by the kernel") && notes[0].contains(kept), "{}", notes[0]);
            }
            // The same CPUs, or no type shared: both apply.
            for cmdline in ["isolcpus=nohz,domain,2-7 nohz_full=2-7", "isolcpus=domain,2-3 isolcpus=managed_irq,2-7"] {
                let isolation = read(cmdline);
                let (out, notes) = as_the_kernel_applies(&isolation, &facts(kernel), &set("0-7"));
                assert_eq!((out, notes), (isolation, Vec::new()), "{cmdline} on {kernel}");
            }
        }
    }

    /// `housekeeping_isolcpus_setup()`: a flag word with a character other than a letter or `_`
    /// makes the kernel reject the whole `isolcpus=` ("isolcpus: Invalid flag"); an unknown word
    /// of letters is skipped.
    #[test]
    fn an_isolcpus_flag_with_an_invalid_character_voids_the_whole_setting() {
        let (out, notes) =
            as_the_kernel_applies(&read("isolcpus=io-queue,2-7 nohz_full=4-7"), &facts("6.12"), &set("0-7"));
        assert_eq!(settings(&out), ["nohz_full=4-7"], "{notes:?}");
        assert!(notes[0].starts_with("isolcpus=io-queue,2-7: ignored by the kernel") && notes[0].contains("io-queue"));
    }

    /// The check of 185bccc79797 compares a setting with what was applied before it: one the
    /// kernel ignored takes no part, and the first of domain and tick housekeeping set decides.
    #[test]
    fn an_ignored_setting_takes_no_part_in_later_checks() {
        let (out, _) =
            as_the_kernel_applies(&read("isolcpus=domain,0-3 nohz_full=4-7 nohz_full=2-5"), &facts("7.2"), &set("0-7"));
        assert_eq!(settings(&out), ["isolcpus=domain,0-3", "nohz_full=2-5"]);
        let (out, _) = as_the_kernel_applies(
            &read("isolcpus=managed_irq,0-3 nohz_full=4-7 isolcpus=domain,0-3"),
            &facts("6.19"),
            &set("0-7"),
        );
        assert_eq!(settings(&out), ["isolcpus=managed_irq,0-3", "nohz_full=4-7"]);
    }

    /// On arm64 the kernel parses the command line with only the boot CPU present
    /// (`smp_prepare_cpus()` marks the others later): `housekeeping_setup()` drops the boot CPU
    /// from any list naming it, so the 6.19 check never ignores a setting, and lists that differ
    /// only in the boot CPU match.
    #[test]
    fn on_arm64_only_the_boot_cpu_is_present_when_the_kernel_checks() {
        let arm = present_at_parse(Some("aarch64"), &set("0-7"));
        assert_eq!(arm, set("0"));
        assert_eq!(present_at_parse(Some("x86_64"), &set("0-7")), set("0-7"));
        for cmdline in ["isolcpus=domain,0-3 nohz_full=4-7", "isolcpus=nohz,0-3 nohz_full=1-3"] {
            let isolation = read(cmdline);
            let (out, notes) = as_the_kernel_applies(&isolation, &facts("7.2"), &arm);
            assert_eq!((out, notes), (isolation, Vec::new()), "{cmdline}");
        }
        // x86: every present CPU counts.
        let (out, _) = as_the_kernel_applies(&read("isolcpus=domain,0-3 nohz_full=4-7"), &facts("7.2"), &set("0-7"));
        assert_eq!(settings(&out), ["isolcpus=domain,0-3"]);
    }
}
