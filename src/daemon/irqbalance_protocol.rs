//! irqbalance's control-socket protocol (1.9.x, as `irqbalance-ui` and intel-lpmd speak it),
//! for `irqbalance_socket = true`: one command per connection, no terminator (where one ends:
//! [`command_end`]), a reply only to `stats` and `setup`, one line of space-separated tokens
//! without a newline.
//!
//! Pure: bytes in, a [`Command`]; the machine in, a reply. `daemon::irqbalance_socket` does the
//! socket.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::devices::DeviceClass;
use crate::plan::{Action, Plan};
use crate::topology::Topology;

/// The longest command (irqbalance 1.9.5 reads 16 KiB); a longer one is refused whole.
pub(crate) const COMMAND_MAX: usize = 16 * 1024;

/// Where a command read so far stands ([`command_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandEnd {
    /// The connection closed without a word (intel-lpmd's probe): nothing asked.
    Nothing,
    /// The bytes read are the whole command.
    Whole,
    /// Longer than [`COMMAND_MAX`]: refused whole, never applied in part.
    TooLong,
}

/// Whether `bytes` (what a client sent so far) is a whole command, and `None` while more may
/// come. There is no terminator: a command ends when the client's side has `ended` (closed or
/// shut down, as irqbalance-ui after a setting and Firedancer do, or paused: intel-lpmd writes
/// its setting in one write and waits for the close with its side open), except `stats` and
/// `setup`, whose first five bytes decide them as irqbalance matches them (by prefix), so that
/// irqbalance-ui, which waits for the reply with its side open, is answered at once. A command
/// delivered in parts is never taken from its first part; one longer than [`COMMAND_MAX`] is
/// refused whole, however it ends.
pub(crate) fn command_end(bytes: &[u8], ended: bool) -> Option<CommandEnd> {
    if bytes.len() > COMMAND_MAX {
        return Some(CommandEnd::TooLong);
    }
    if ended {
        return Some(if bytes.is_empty() { CommandEnd::Nothing } else { CommandEnd::Whole });
    }
    let start = bytes.iter().position(|b| !(b.is_ascii_whitespace() || *b == 0)).unwrap_or(bytes.len());
    let asked = &bytes[start..];
    (asked.starts_with(b"stats") || asked.starts_with(b"setup")).then_some(CommandEnd::Whole)
}

/// One client's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Stats,
    Setup,
    /// `settings sleep N` (N >= 1); irqwise has no sleep: accepted, no effect.
    Sleep(u32),
    /// `settings cpus LIST`: the CPUs to keep free of device IRQs; `None` (`NULL`, or an empty
    /// list, as intel-lpmd sends it) gives them back.
    Cpus(Option<CpuSet>),
    /// `settings ban irqs LIST`: these IRQs are left alone; empty (`NONE`) bans none.
    BanIrqs(Vec<u32>),
    /// Nothing to do, and why (for the log): an unknown command, an invalid value.
    Ignored(String),
}

/// What `bytes` asks. Keywords are matched as irqbalance matches them (by prefix), values after
/// trimming whitespace (irqbalance-ui sends `settings sleep  5` with two spaces, and `NONE`
/// after two spaces too, which irqbalance itself misreads as IRQ 0).
pub(crate) fn parse(bytes: &[u8]) -> Command {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(COMMAND_MAX)]);
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if text.starts_with("stats") {
        return Command::Stats;
    }
    if text.starts_with("setup") {
        return Command::Setup;
    }
    let Some(setting) = text.strip_prefix("settings ") else {
        return Command::Ignored(format!("unknown command {:?}", printable_prefix(text)));
    };
    let setting = setting.trim_start();
    if let Some(n) = setting.strip_prefix("sleep") {
        return match n.trim().parse::<u32>() {
            Ok(n) if n >= 1 => Command::Sleep(n),
            _ => Command::Ignored(format!(
                "settings sleep {:?}: expected a whole number of seconds, at least 1",
                printable_prefix(n.trim())
            )),
        };
    }
    if let Some(list) = setting.strip_prefix("cpus") {
        // Only the first space-separated word counts, as in irqbalance.
        let word = list.split_whitespace().next().unwrap_or("");
        if word.is_empty() || word.starts_with("NULL") {
            return Command::Cpus(None);
        }
        return match CpuSet::parse_list(word.trim_end_matches(',')) {
            Ok(set) if set.is_empty() => Command::Cpus(None),
            Ok(set) => Command::Cpus(Some(set)),
            Err(e) => Command::Ignored(format!("settings cpus {:?}: {e}", printable_prefix(word))),
        };
    }
    if let Some(list) = setting.strip_prefix("ban irqs") {
        let list = list.trim();
        if list.is_empty() || list.starts_with("NONE") {
            return Command::BanIrqs(Vec::new());
        }
        let irqs: Result<Vec<u32>, _> = list.split_whitespace().map(str::parse::<u32>).collect();
        return match irqs {
            Ok(mut irqs) => {
                irqs.sort_unstable();
                irqs.dedup();
                Command::BanIrqs(irqs)
            }
            Err(_) => Command::Ignored(format!(
                "settings ban irqs {:?}: expected IRQ numbers or NONE",
                printable_prefix(list)
            )),
        };
    }
    Command::Ignored(format!("unknown setting {:?}", printable_prefix(setting)))
}

/// The first 60 characters, for a log line.
fn printable_prefix(text: &str) -> String {
    crate::text::printable(&text.chars().take(60).collect::<String>()).into_owned()
}

/// `setup`'s reply: `SLEEP n `, a group per IRQ banned through the socket, `BANNED <mask>`
/// (the CPUs kept free of device IRQs, as the kernel prints a cpumask). No trailing space.
pub(crate) fn setup_reply(sleep: u32, banned_irqs: &[u32], banned_cpus: &CpuSet) -> String {
    let mut out = format!("SLEEP {sleep} ");
    for irq in banned_irqs {
        out.push_str(&format!("IRQ {irq} LOAD 0 DIFF 0 CLASS 0 "));
    }
    out.push_str("BANNED ");
    out.push_str(&hex_mask(banned_cpus));
    out
}

/// A CPU set as the kernel prints a cpumask: 32-bit groups of eight lowercase hex digits, most
/// significant first, separated by commas, leading empty groups left out (`00000000` when empty).
pub(crate) fn hex_mask(set: &CpuSet) -> String {
    let groups = set.last().map_or(1, |last| last as usize / 32 + 1);
    let mut words = vec![0u32; groups];
    for cpu in set {
        words[cpu as usize / 32] |= 1 << (cpu % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// irqbalance's class of a device's IRQs (`CLASS`): 4 ethernet, 2 storage, 0 other.
fn class_of(class: DeviceClass) -> u8 {
    match class {
        DeviceClass::Nic => 4,
        DeviceClass::Nvme | DeviceClass::Storage => 2,
        DeviceClass::Other => 0,
    }
}

/// One object of irqbalance's tree.
#[derive(Debug, Default)]
struct Object {
    cpus: CpuSet,
    irqs: Vec<(u32, u8)>,
    children: BTreeMap<u32, Object>,
}

/// `stats`' reply: irqbalance's tree (NUMA node, package, cache domain, CPU), pre-order, each
/// object `TYPE t NUMBER n LOAD 0 SAVE_MODE 0 ` followed by the IRQs it holds as `IRQ i LOAD 0
/// DIFF 0 CLASS c `. Node -1 comes first (holding everything without NUMA information, empty
/// otherwise); CPUs kept free (`banned_cpus`) and offline are left out, as irqbalance leaves out
/// its banned CPUs; an IRQ sits on the smallest object holding its CPUs; IRQs banned through
/// the socket are left out. Loads are 0: irqwise does not balance by load here.
pub(crate) fn stats_reply(topology: &Topology, plan: &Plan, banned_cpus: &CpuSet, banned_irqs: &[u32]) -> String {
    let usable = topology.online.difference(banned_cpus);
    // node -> package (by its lowest CPU) -> cache domain (by its lowest CPU) -> CPU.
    let mut nodes: BTreeMap<i64, Object> = BTreeMap::new();
    let numa = !topology.nodes.is_empty();
    for cpu in &usable {
        let c = topology.cpus.get(&cpu);
        let node = if numa { c.and_then(|c| c.node).map_or(-1, i64::from) } else { -1 };
        let package = c.and_then(|c| c.package.clone()).unwrap_or_else(|| CpuSet::single(cpu));
        let cache = c.and_then(|c| c.llc.clone().or_else(|| c.cluster.clone())).unwrap_or_else(|| CpuSet::single(cpu));
        let n = nodes.entry(node).or_default();
        n.cpus.insert(cpu);
        let p = n.children.entry(package.first().unwrap_or(cpu)).or_default();
        p.cpus.insert(cpu);
        let k = p.children.entry(cache.first().unwrap_or(cpu)).or_default();
        k.cpus.insert(cpu);
        k.children.entry(cpu).or_default().cpus.insert(cpu);
    }
    nodes.entry(-1).or_default();
    for d in &plan.devices {
        for p in &d.irqs {
            if banned_irqs.contains(&p.irq) {
                continue;
            }
            let mask = match p.action {
                Action::Set | Action::Keep | Action::Managed => p.desired.as_ref().or(p.current.as_ref()),
                Action::Skip => p.current.as_ref(),
            };
            let Some(mask) = mask.map(|m| m.intersection(&usable)).filter(|m| !m.is_empty()) else { continue };
            place(&mut nodes, &mask, (p.irq, class_of(d.class)));
        }
    }
    let mut out = String::new();
    let mut cache_number = 0u32;
    for (id, node) in &nodes {
        out.push_str(&format!("TYPE 3 NUMBER {id} LOAD 0 SAVE_MODE 0 "));
        irqs(&mut out, node);
        for (package_number, package) in node.children.values().enumerate() {
            out.push_str(&format!("TYPE 2 NUMBER {package_number} LOAD 0 SAVE_MODE 0 "));
            irqs(&mut out, package);
            for cache in package.children.values() {
                out.push_str(&format!("TYPE 1 NUMBER {cache_number} LOAD 0 SAVE_MODE 0 "));
                cache_number += 1;
                irqs(&mut out, cache);
                for (cpu, leaf) in &cache.children {
                    out.push_str(&format!("TYPE 0 NUMBER {cpu} LOAD 0 SAVE_MODE 0 "));
                    irqs(&mut out, leaf);
                }
            }
        }
    }
    out
}

/// Puts `irq` on the smallest object of the tree that holds every CPU of `mask`.
fn place(nodes: &mut BTreeMap<i64, Object>, mask: &CpuSet, irq: (u32, u8)) {
    // The node holding all of it, else node -1 (irqbalance's "no node" object).
    let Some(node) = nodes.values_mut().find(|n| !n.cpus.is_empty() && mask.is_subset(&n.cpus)) else {
        if let Some(none) = nodes.get_mut(&-1) {
            none.irqs.push(irq);
        }
        return;
    };
    let Some(package) = node.children.values_mut().find(|p| mask.is_subset(&p.cpus)) else {
        node.irqs.push(irq);
        return;
    };
    let Some(cache) = package.children.values_mut().find(|c| mask.is_subset(&c.cpus)) else {
        package.irqs.push(irq);
        return;
    };
    match cache.children.values_mut().find(|c| mask.is_subset(&c.cpus)) {
        Some(cpu) => cpu.irqs.push(irq),
        None => cache.irqs.push(irq),
    }
}

fn irqs(out: &mut String, o: &Object) {
    for (irq, class) in &o.irqs {
        out.push_str(&format!("IRQ {irq} LOAD 0 DIFF 0 CLASS {class} "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::synthetic::SyntheticMachine;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn commands_read_as_irqbalance_and_its_clients_send_them() {
        assert_eq!(parse(b"stats"), Command::Stats);
        assert_eq!(parse(b"setup"), Command::Setup);
        assert_eq!(parse(b"setup\n"), Command::Setup, "a trailing newline (echo | socat)");
        assert_eq!(parse(b"settings sleep  5"), Command::Sleep(5), "the UI's two spaces");
        assert!(matches!(parse(b"settings sleep 0"), Command::Ignored(_)));
        assert_eq!(parse(b"settings cpus 0,3,"), Command::Cpus(Some(set("0,3"))), "the UI's trailing comma");
        assert_eq!(parse(b"settings cpus 0,1,2,3,8,9"), Command::Cpus(Some(set("0-3,8-9"))), "intel-lpmd");
        assert_eq!(parse(b"settings cpus 4-7"), Command::Cpus(Some(set("4-7"))));
        assert_eq!(parse(b"settings cpus NULL"), Command::Cpus(None));
        assert_eq!(parse(b"settings cpus "), Command::Cpus(None), "intel-lpmd's empty list (irqbalance 1.9.2 crashes)");
        assert!(matches!(parse(b"settings cpus 3-1"), Command::Ignored(why) if why.contains("3-1")));
        assert_eq!(parse(b"settings ban irqs  24 36"), Command::BanIrqs(vec![24, 36]));
        assert_eq!(parse(b"settings ban irqs  NONE"), Command::BanIrqs(vec![]), "not IRQ 0, as irqbalance reads it");
        assert!(matches!(parse(b"settings ban irqs x"), Command::Ignored(_)));
        assert!(matches!(parse(b"bogus"), Command::Ignored(why) if why.contains("bogus")));
        assert!(matches!(parse(b""), Command::Ignored(_)));
        assert!(matches!(parse(&[0xff; 70_000]), Command::Ignored(_)), "bounded, never a panic");
    }

    #[test]
    fn a_command_ends_with_the_clients_side_or_the_first_word_of_a_question() {
        assert_eq!(command_end(b"", true), Some(CommandEnd::Nothing), "intel-lpmd's probe");
        assert_eq!(command_end(b"", false), None);
        assert_eq!(command_end(b"stats", false), Some(CommandEnd::Whole), "irqbalance-ui keeps its side open");
        assert_eq!(command_end(b"\nsetup", false), Some(CommandEnd::Whole));
        assert_eq!(command_end(b"sta", false), None, "a question in parts");
        assert_eq!(command_end(b"settings cpus 1", false), None, "a setting may go on: 1 or 12");
        assert_eq!(command_end(b"settings cpus 12", true), Some(CommandEnd::Whole));
        assert_eq!(command_end(&[b'1'; COMMAND_MAX], true), Some(CommandEnd::Whole), "the cap itself");
        assert_eq!(command_end(&[b'1'; COMMAND_MAX + 1], false), Some(CommandEnd::TooLong));
        assert_eq!(command_end(&[b's'; COMMAND_MAX + 1], true), Some(CommandEnd::TooLong), "never its first part");
    }

    #[test]
    fn setup_ends_with_the_kernels_cpumask() {
        assert_eq!(setup_reply(10, &[], &CpuSet::new()), "SLEEP 10 BANNED 00000000");
        assert_eq!(
            setup_reply(3, &[36, 38], &set("0-1")),
            "SLEEP 3 IRQ 36 LOAD 0 DIFF 0 CLASS 0 IRQ 38 LOAD 0 DIFF 0 CLASS 0 BANNED 00000003"
        );
        assert_eq!(hex_mask(&set("40")), "00000100,00000000");
        assert_eq!(hex_mask(&set("7")), "00000080");
    }

    #[test]
    fn stats_is_irqbalances_tree_without_the_banned_cpus() {
        // Two nodes of four CPUs (x86 numbering: node 0 is CPUs 0,1,4,5).
        let topology = SyntheticMachine::new(2, 2, 2).build();
        let mut dp = crate::plan::test_plans::nic("0000:81:00.0", Vec::new());
        let irq = |irq: u32, cpus: &str| crate::plan::Placement {
            irq,
            name: None,
            role: crate::devices::QueueRole::RxTx,
            queue: Some(0),
            recognised: crate::devices::Recognition::NotRecognised { driver: "x".into() },
            queue_source: None,
            managed: false,
            current: Some(set(cpus)),
            current_locality: None,
            desired: Some(set(cpus)),
            hint: None,
            action: Action::Keep,
            reason: String::new(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        };
        dp.irqs = vec![irq(40, "2"), irq(41, "3"), irq(42, "0-7"), irq(43, "6")];
        let plan = crate::plan::test_plans::plan_of(vec![dp]);
        let text = stats_reply(&topology, &plan, &set("7"), &[43]);
        assert!(
            text.starts_with("TYPE 3 NUMBER -1 LOAD 0 SAVE_MODE 0 IRQ 42 LOAD 0 DIFF 0 CLASS 4 TYPE 3 NUMBER 0 "),
            "{text}"
        );
        assert!(text.ends_with(' ') && !text.contains('\n'));
        assert!(text.contains("TYPE 0 NUMBER 2 LOAD 0 SAVE_MODE 0 IRQ 40 LOAD 0 DIFF 0 CLASS 4 "), "{text}");
        assert!(!text.contains("TYPE 0 NUMBER 7 "), "a banned CPU is left out: {text}");
        assert!(!text.contains("IRQ 43 "), "a banned IRQ is left out");
        // Every object is a complete TYPE group, every IRQ a complete IRQ group.
        let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
        let mut i = 0;
        while i < words.len() {
            let keys = if words[i] == "TYPE" {
                ["TYPE", "NUMBER", "LOAD", "SAVE_MODE"]
            } else {
                ["IRQ", "LOAD", "DIFF", "CLASS"]
            };
            for (k, key) in keys.iter().enumerate() {
                assert_eq!(words[i + 2 * k], *key, "at word {i}: {text}");
                assert!(words[i + 2 * k + 1].parse::<i64>().is_ok());
            }
            i += 8;
        }
        let cpus = words.windows(4).filter(|w| w[0] == "TYPE" && w[1] == "0").count();
        assert_eq!(cpus, 7);
    }
}
