//! `irqwise advise boot`: the kernel command line that makes the machine right before irqwise
//! starts, and for what irqwise cannot move. Before irqwise runs the kernel spreads new IRQs by
//! `irqaffinity=`; kernel-managed IRQs (NVMe queues, some NICs) never move at run time, and only
//! `isolcpus=managed_irq,…` keeps them off CPUs. Also: what the running command line says that
//! contradicts the configuration.
//!
//! Pure: a plan, the CPUs to keep free and the command line's words in; advice out.

use serde::Serialize;

use crate::cpuset::CpuSet;
use crate::plan::guard::Forbidden;
use crate::plan::Plan;

/// One parameter to put on the kernel command line, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootParameter {
    /// `irqaffinity=0-1,4-5`.
    pub parameter: String,
    pub why: String,
}

/// The advice for one machine and configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootAdvice {
    /// The CPUs kept free of device IRQs (banned, isolated, nohz_full), with their sources.
    pub kept_free: String,
    /// The CPUs runtime claims keep free now, with their owners: not advised for the boot (a
    /// claim lasts as long as its workload); `none` without claims.
    pub claimed_now: String,
    pub parameters: Vec<BootParameter>,
    /// What the running command line says against the configuration.
    pub contradictions: Vec<String>,
    /// How to put the parameters on the command line on this distribution.
    pub how: String,
    /// Where the running kernel applies the command line otherwise than it reads: a flag it
    /// lacks (`isolcpus=io_queue`), a setting it ignores (`crate::kernel::boot_isolation`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernel_applies: Vec<String>,
}

/// The parameters for `plan` on a machine whose `online` CPUs hold `forbidden` ones, and the
/// contradictions of `cmdline` (the running kernel's words). Guarantees: no parameter when no
/// CPU is forbidden; `irqaffinity=` names only online CPUs that are not forbidden;
/// `isolcpus=managed_irq,` only when the machine has kernel-managed IRQs.
pub fn advise_boot(
    plan: &Plan,
    online: &CpuSet,
    forbidden: &Forbidden,
    cmdline: &[String],
    respect_isolation: bool,
    os_id: Option<&str>,
    kernel_applies: &[String],
) -> BootAdvice {
    // A runtime claim (or a pod's kubelet-exclusive CPUs) is no boot advice: only the CPUs kept
    // free whatever runs count.
    let (claimed, lasting): (Vec<_>, Vec<_>) = forbidden
        .sources
        .iter()
        .cloned()
        .partition(|(word, _)| crate::plan::from_sample::is_workload_source_word(word));
    let claimed = Forbidden { sources: claimed };
    let forbidden = &Forbidden { sources: lasting };
    let claimed_cpus = claimed.cpus().intersection(online);
    let free = forbidden.cpus().intersection(online);
    let allowed = online.difference(&free);
    // Devices' managed IRQs: an IRQ of no device with a read-only mask (the timer on 6.12) is
    // not one `managed_irq` moves.
    let mut managed: Vec<(u32, CpuSet)> = plan
        .devices
        .iter()
        .filter(|d| d.bdf != crate::devices::NO_DEVICE)
        .flat_map(|d| &d.irqs)
        .filter(|p| p.managed)
        .map(|p| (p.irq, p.current.clone().unwrap_or_default()))
        .collect();
    managed.sort_by_key(|(irq, _)| *irq);
    let on_free: Vec<u32> = managed.iter().filter(|(_, c)| c.intersects(&free)).map(|(irq, _)| *irq).collect();
    let mut parameters = Vec::new();
    if !free.is_empty() && !allowed.is_empty() {
        parameters.push(BootParameter {
            parameter: format!("irqaffinity={allowed}"),
            why: format!(
                "IRQs set up before irqwise starts go to the CPUs it allows, not {}",
                forbidden.describe(&free)
            ),
        });
        if !managed.is_empty() {
            let today = if on_free.is_empty() {
                "none sits on them now".to_string()
            } else {
                format!("IRQ(s) {} sit on them now", list_of(&on_free))
            };
            parameters.push(BootParameter {
                parameter: format!("isolcpus=managed_irq,{free}"),
                why: format!(
                    "keeps the {} kernel-managed IRQ(s) (irqwise cannot move them) off CPUs {free}; {today}",
                    managed.len()
                ),
            });
        }
    }
    BootAdvice {
        kept_free: if free.is_empty() { "none".into() } else { forbidden.describe(&free) },
        claimed_now: if claimed_cpus.is_empty() { "none".into() } else { claimed.describe(&claimed_cpus) },
        contradictions: contradictions(cmdline, &free, &on_free, respect_isolation, online),
        how: how_to_apply(os_id, &parameters),
        parameters,
        kernel_applies: kernel_applies.to_vec(),
    }
}

/// `40, 41, 42`.
fn list_of(irqs: &[u32]) -> String {
    irqs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// The value of the last `name=` word of `cmdline` (the one the kernel keeps, for parameters
/// each occurrence of which replaces the last: `irqaffinity=`; not `nohz_full=` or `isolcpus=`,
/// where a later word that differs is ignored, `crate::kernel::boot_isolation`).
fn value_of<'a>(cmdline: &'a [String], name: &str) -> Option<&'a str> {
    values_of(cmdline, name).pop()
}

/// The values of every `name=` word of `cmdline`, in order.
fn values_of<'a>(cmdline: &'a [String], name: &str) -> Vec<&'a str> {
    cmdline.iter().filter_map(|w| w.strip_prefix(name)?.strip_prefix('=')).collect()
}

/// What `cmdline` says against keeping `free` CPUs free.
fn contradictions(
    cmdline: &[String],
    free: &CpuSet,
    managed_on_free: &[u32],
    respect_isolation: bool,
    online: &CpuSet,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(value) = value_of(cmdline, "irqaffinity") {
        match CpuSet::parse_list(value) {
            Ok(set) if set.intersects(free) => out.push(format!(
                "irqaffinity={value} sends IRQs set up before irqwise starts to CPUs {} it keeps free",
                set.intersection(free)
            )),
            Ok(_) => {}
            Err(e) => out.push(format!("irqaffinity={value} is not a CPU list the kernel takes ({e})")),
        }
    }
    let isolcpus = values_of(cmdline, "isolcpus");
    if !managed_on_free.is_empty() {
        let covered = crate::kernel::boot_isolation::managed_irq_cpus(cmdline).is_some_and(|set| free.is_subset(&set));
        if !covered {
            let says: Vec<String> = isolcpus.iter().map(|v| format!("isolcpus={v}")).collect();
            out.push(format!(
                "kernel-managed IRQ(s) {} sit on CPUs kept free ({free}) and only isolcpus=managed_irq,{free} on the command line keeps them off{}",
                list_of(managed_on_free),
                if says.is_empty() { String::new() } else { format!(" (it says {})", says.join(" ")) }
            ));
        }
    }
    if !respect_isolation {
        for name in ["isolcpus", "nohz_full"] {
            if let Some(v) = values_of(cmdline, name).first() {
                out.push(format!(
                    "{name}={v} isolates CPUs, but respect_isolation = false lets irqwise place device IRQs on them"
                ));
            }
        }
    }
    if !free.is_empty() && online.is_subset(free) {
        out.push(format!("every online CPU ({online}) is kept free: there is no CPU left for IRQs"));
    }
    out
}

/// How to add `parameters` on the distribution `os_id` (`/etc/os-release`'s `ID`).
fn how_to_apply(os_id: Option<&str>, parameters: &[BootParameter]) -> String {
    if parameters.is_empty() {
        return "nothing to add: no CPU is kept free of device IRQs".into();
    }
    let words: Vec<&str> = parameters.iter().map(|p| p.parameter.as_str()).collect();
    let words = words.join(" ");
    match os_id {
        Some("debian" | "ubuntu" | "linuxmint" | "raspbian") => format!(
            "add \"{words}\" to GRUB_CMDLINE_LINUX in /etc/default/grub (replacing any irqaffinity= or isolcpus= there), run update-grub, reboot"
        ),
        Some("pop") => format!("kernelstub -a \"{words}\" (remove an older irqaffinity=/isolcpus= with kernelstub -d), reboot"),
        Some("fedora" | "rhel" | "centos" | "rocky" | "almalinux" | "ol" | "amzn") => format!(
            "grubby --update-kernel=ALL --args=\"{words}\" (tuned's bootloader plugin, if in use, owns the command line: put them in its profile), reboot"
        ),
        Some("sles" | "opensuse-leap" | "opensuse-tumbleweed") => format!(
            "add \"{words}\" to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, run grub2-mkconfig -o /boot/grub2/grub.cfg, reboot"
        ),
        _ => format!("add \"{words}\" to the kernel command line of the boot loader, then reboot"),
    }
}

/// The advice as text.
pub fn render_boot_advice(a: &BootAdvice) -> String {
    let mut out = format!("CPUs kept free of device IRQs: {}\n", a.kept_free);
    if a.claimed_now != "none" {
        out.push_str(&format!("claimed now, not advised for the boot: {}\n", a.claimed_now));
    }
    if !a.parameters.is_empty() {
        out.push_str("kernel command line:\n");
        let width = a.parameters.iter().map(|p| p.parameter.len()).max().unwrap_or(0);
        for p in &a.parameters {
            out.push_str(&format!("  {:width$}  {}\n", p.parameter, p.why));
        }
    }
    if !a.contradictions.is_empty() {
        out.push_str("the running kernel's command line contradicts the configuration:\n");
        for c in &a.contradictions {
            out.push_str(&format!("  - {c}\n"));
        }
    }
    if !a.kernel_applies.is_empty() {
        out.push_str("the running kernel applies its command line otherwise than it reads:\n");
        for k in &a.kernel_applies {
            out.push_str(&format!("  - {k}\n"));
        }
    }
    out.push_str(&format!("{}\n", a.how));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{QueueRole, Recognition};
    use crate::plan::{Action, Placement};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// An NVMe drive with kernel-managed IRQs 40 (on 0-1) and 41 (on 2-3).
    fn plan() -> Plan {
        let p = |irq: u32, current: &str| Placement {
            irq,
            name: None,
            role: QueueRole::Io,
            queue: Some(irq - 40),
            recognised: Recognition::UnknownDriver { driver: None },
            queue_source: None,
            managed: true,
            current: Some(set(current)),
            current_locality: None,
            desired: Some(set(current)),
            hint: None,
            action: Action::Managed,
            reason: String::new(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        };
        let dev = crate::plan::test_plans::nvme("0000:41:00.0", vec![p(40, "0-1"), p(41, "2-3")]);
        crate::plan::test_plans::plan_of(vec![dev])
    }

    fn banned(cpus: &str) -> Forbidden {
        Forbidden { sources: vec![("banned".into(), set(cpus))] }
    }

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn banned_cpus_give_irqaffinity_and_isolcpus_managed_irq() {
        let a = advise_boot(&plan(), &set("0-7"), &banned("2-3"), &words("root=/dev/sda1"), true, Some("debian"), &[]);
        let params: Vec<&str> = a.parameters.iter().map(|p| p.parameter.as_str()).collect();
        assert_eq!(params, ["irqaffinity=0-1,4-7", "isolcpus=managed_irq,2-3"]);
        assert!(a.parameters[1].why.contains("IRQ(s) 41 sit on them now"), "{:?}", a.parameters[1]);
        assert_eq!(a.contradictions.len(), 1, "IRQ 41 sits there and nothing moves it: {:?}", a.contradictions);
        assert!(a.how.contains("GRUB_CMDLINE_LINUX") && a.how.contains("irqaffinity=0-1,4-7 isolcpus=managed_irq,2-3"));
        let text = render_boot_advice(&a);
        assert!(text.contains("CPUs kept free of device IRQs: banned CPUs 2-3\n"), "{text}");
    }

    #[test]
    fn a_command_line_that_already_says_it_contradicts_nothing() {
        let cmdline = words("isolcpus=managed_irq,domain,2-3 irqaffinity=0-1,4-7");
        let a = advise_boot(&plan(), &set("0-7"), &banned("2-3"), &cmdline, true, Some("fedora"), &[]);
        assert!(a.contradictions.is_empty(), "{:?}", a.contradictions);
        assert!(a.how.starts_with("grubby --update-kernel=ALL"));
    }

    #[test]
    fn contradictions_are_named() {
        let cmdline = words("isolcpus=2-3 irqaffinity=0-3 nohz_full=2-3");
        let a = advise_boot(&plan(), &set("0-7"), &banned("2-3"), &cmdline, false, None, &[]);
        assert_eq!(a.contradictions.len(), 4, "{:#?}", a.contradictions);
        assert!(
            a.contradictions[0].starts_with("irqaffinity=0-3 sends IRQs") && a.contradictions[0].contains("CPUs 2-3")
        );
        assert!(a.contradictions[1].contains("(it says isolcpus=2-3)"), "no managed_irq flag: {}", a.contradictions[1]);
        assert!(a.contradictions[2].starts_with("isolcpus=2-3 isolates CPUs, but respect_isolation = false"));
        // A second nohz_full= with other CPUs is one the kernel ignores: the first is named.
        let twice = words("nohz_full=2-3 nohz_full=4-5");
        let a = advise_boot(&plan(), &set("0-7"), &banned("2-3"), &twice, false, None, &[]);
        assert!(
            a.contradictions.iter().any(|c| c.starts_with("nohz_full=2-3 isolates CPUs")),
            "{:?}",
            a.contradictions
        );
        let bad = advise_boot(&plan(), &set("0-7"), &banned("2-3"), &words("irqaffinity=x"), true, None, &[]);
        assert!(bad.contradictions[0].contains("is not a CPU list"), "{:?}", bad.contradictions);
    }

    #[test]
    fn nothing_kept_free_is_nothing_to_add() {
        let a = advise_boot(&plan(), &set("0-7"), &Forbidden::default(), &[], true, Some("debian"), &[]);
        assert!(a.parameters.is_empty() && a.contradictions.is_empty());
        assert_eq!(a.kept_free, "none");
        assert!(a.how.starts_with("nothing to add"));
    }

    #[test]
    fn a_runtime_claim_is_no_boot_advice() {
        let forbidden =
            Forbidden { sources: vec![("banned".into(), set("4")), ("job-42's claimed".into(), set("2-3"))] };
        let a = advise_boot(&plan(), &set("0-7"), &forbidden, &[], true, Some("debian"), &[]);
        let params: Vec<&str> = a.parameters.iter().map(|p| p.parameter.as_str()).collect();
        assert_eq!(params, ["irqaffinity=0-3,5-7", "isolcpus=managed_irq,4"]);
        assert_eq!(a.claimed_now, "job-42's claimed CPUs 2-3");
        assert!(a.contradictions.is_empty(), "IRQ 41 on the claimed CPUs is no boot matter: {:?}", a.contradictions);
        let only = Forbidden { sources: vec![("job-42's claimed".into(), set("2-3"))] };
        let a = advise_boot(&plan(), &set("0-7"), &only, &[], true, None, &[]);
        assert!(a.parameters.is_empty() && a.contradictions.is_empty(), "{a:?}");
    }

    #[test]
    fn a_pods_kubelet_exclusive_cpus_are_no_boot_advice() {
        let forbidden =
            Forbidden { sources: vec![("banned".into(), set("4")), ("kubelet-exclusive".into(), set("2-3"))] };
        let a = advise_boot(&plan(), &set("0-7"), &forbidden, &[], true, Some("debian"), &[]);
        let params: Vec<&str> = a.parameters.iter().map(|p| p.parameter.as_str()).collect();
        assert_eq!(params, ["irqaffinity=0-3,5-7", "isolcpus=managed_irq,4"]);
        assert_eq!(a.claimed_now, "kubelet-exclusive CPUs 2-3");
    }

    #[test]
    fn every_isolcpus_word_counts_as_the_kernel_reads_them() {
        let covered = |cmdline: &str| {
            advise_boot(&plan(), &set("0-7"), &banned("2-3"), &words(cmdline), true, None, &[])
                .contradictions
                .is_empty()
        };
        assert!(covered("isolcpus=managed_irq,2-3 isolcpus=domain,2-3"), "the flag of the first word stays");
        assert!(covered("isolcpus=2-3 isolcpus=managed_irq,2-3"), "a second word adds its flag");
        assert!(
            !covered("isolcpus=managed_irq,4-5 isolcpus=managed_irq,2-3"),
            "a later list for the same flag is dropped"
        );
        assert!(!covered("isolcpus=2-3 isolcpus=domain,managed_irq,4-5,2-3"), "dropped whole: domain's list differs");
        assert!(
            !covered("nohz_full=2-7 isolcpus=nohz,managed_irq,2-3"),
            "dropped whole: nohz_full= set the tick's list before"
        );
        assert!(!covered("isolcpus=io-queue,managed_irq,2-3"), "dropped whole: an invalid flag");
        assert!(covered("isolcpus=io_queue,managed_irq,2-3"), "an unknown flag is skipped");
    }
}
