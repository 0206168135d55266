//! What the running kernel makes of the command line's isolation, by its facts rather than by
//! what the words say: a flag it does not know (`isolcpus=io_queue` without `HK_TYPE_IO_QUEUE`)
//! is skipped, and from 6.19 (185bccc79797) a second of `isolcpus=domain` and `nohz_full=` that
//! with the first would leave no present CPU for housekeeping is ignored whole.
//!
//! Pure: an [`Isolation`] as read and the [`KernelFacts`] in; the isolation as the kernel
//! applies it and what differs, in words, out.

use super::facts::{Feature, KernelFacts};
use crate::cpuset::CpuSet;
use crate::topology::isolation::{Isolation, IsolationKind, IsolationSource};

/// The `isolcpus=` flags every kernel irqwise knows has (kernel/sched/isolation.c).
const ALWAYS_KNOWN: [&str; 3] = ["nohz", "domain", "managed_irq"];

/// The housekeeping a command line source takes CPUs from: the scheduler domains, the tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Housekeeping {
    Domain,
    Tick,
}

/// The flags of an `isolcpus=` word (`isolcpus=managed_irq,domain,2-7`): its leading words that
/// start with a letter, as the kernel reads them.
fn isolcpus_flags(setting: &str) -> Vec<&str> {
    let value = setting.strip_prefix("isolcpus=").unwrap_or(setting);
    value.split(',').take_while(|w| w.starts_with(|c: char| c.is_ascii_alphabetic())).collect()
}

/// The flags of `setting` this kernel applies (`io_queue` only where `io_queue` is true), and
/// `domain` when none is: what `housekeeping_isolcpus_setup()` does with flags it skips.
fn applied_flags(setting: &str, io_queue: bool) -> Vec<&str> {
    let flags: Vec<&str> = isolcpus_flags(setting)
        .into_iter()
        .filter(|f| ALWAYS_KNOWN.contains(f) || (io_queue && *f == "io_queue"))
        .collect();
    if flags.is_empty() {
        vec!["domain"]
    } else {
        flags
    }
}

/// The housekeeping a command line source takes CPUs from (none for other kinds).
fn housekeeping_of(s: &IsolationSource, io_queue: bool) -> Vec<Housekeeping> {
    match s.kind {
        IsolationKind::CmdlineNohzFull => vec![Housekeeping::Tick],
        IsolationKind::CmdlineIsolcpus => {
            let flags = applied_flags(&s.setting, io_queue);
            let mut out = Vec::new();
            if flags.contains(&"domain") {
                out.push(Housekeeping::Domain);
            }
            if flags.contains(&"nohz") {
                out.push(Housekeeping::Tick);
            }
            out
        }
        _ => Vec::new(),
    }
}

/// `isolation` as the kernel described by `facts` applies it, with `present` the present CPUs,
/// and one sentence per difference from what the command line says. Guarantees: a source is
/// dropped only when `nohz-full-yields-to-domain` is known true and it is the later of an
/// `isolcpus=` with `domain` and a `nohz_full=` (or `isolcpus=nohz`) whose CPUs together cover
/// every present CPU; an `isolcpus=` naming `io_queue` on a kernel known to lack it is kept (the
/// kernel still isolates its CPUs, by the flags it knows) and said.
pub fn as_the_kernel_applies(isolation: &Isolation, facts: &KernelFacts, present: &CpuSet) -> (Isolation, Vec<String>) {
    let io_fact = facts.feature(Feature::IoQueueIsolation);
    let io_queue = io_fact.value() != Some(false);
    let mut notes = Vec::new();
    for s in isolation.sources.iter().filter(|s| s.kind == IsolationKind::CmdlineIsolcpus) {
        if !io_queue && isolcpus_flags(&s.setting).contains(&"io_queue") {
            notes.push(format!(
                "{}: this kernel has no isolcpus=io_queue (no HK_TYPE_IO_QUEUE, by its {}) and skips the flag: CPUs {} get {} isolation only",
                s.setting,
                io_fact.source().as_str(),
                s.cpus,
                applied_flags(&s.setting, false).join(",")
            ));
        }
    }
    let yields = facts.feature(Feature::NohzFullYieldsToDomain);
    let mut out = isolation.clone();
    if yields.value() == Some(true) {
        let mut taken: Vec<(Housekeeping, CpuSet, String)> = Vec::new();
        out.sources.retain(|s| {
            let own = housekeeping_of(s, io_queue);
            let clash = taken.iter().find(|(h, cpus, _)| !own.contains(h) && present.is_subset(&cpus.union(&s.cpus)));
            if let Some((_, _, first)) = clash {
                notes.push(format!(
                    "{}: ignored by the kernel (by its {}): with {first} it would leave no present CPU for housekeeping (185bccc79797); its CPUs are not kept free for it",
                    s.setting,
                    yields.source().as_str()
                ));
                return false;
            }
            for h in own {
                if !taken.iter().any(|(t, _, _)| *t == h) {
                    taken.push((h, s.cpus.clone(), s.setting.clone()));
                }
            }
            true
        });
    }
    (out, notes)
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
}
