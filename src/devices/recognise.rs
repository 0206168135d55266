//! Reading a queue role and index out of IRQ names, per device, with the driver table
//! ([`super::name_table`]) or a config rule's `queue_pattern` ([`QueuePattern`]).
//!
//! Pure. A whole device is read at once because some drivers' numbers only make sense against
//! the device's other vectors: bnxt numbers split tx rings after the rx rings, gve's notify
//! blocks serve tx then rx, and a name the driver cut short is numbered by its position.

use std::fmt;

use serde::{Serialize, Serializer};

use super::name_table::{entry_for, DriverNames, NameKind, QueueIndex};
use super::{DeviceClass, QueueRole, Recognition};

/// A vector's role and queue as read from its names, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognised {
    pub role: QueueRole,
    /// Set only with `Io`, `Rx`, `Tx`, `RxTx`.
    pub queue: Option<u32>,
    pub by: Recognition,
}

impl Recognised {
    fn unrecognised(by: Recognition) -> Recognised {
        Recognised { role: QueueRole::Misc, queue: None, by }
    }
}

/// What of a device its vector names are read against.
#[derive(Debug, Clone, Copy)]
pub struct NameContext<'a> {
    pub driver: Option<&'a str>,
    pub class: DeviceClass,
    /// The device's network interfaces: `{if}` matches one of them (any interface-like word
    /// when empty).
    pub interfaces: &'a [String],
}

/// Reads every vector of one device; `actions[i]` are vector i's action names, vectors in IRQ
/// order. Guarantees: one result per vector, in order; a queue index only with a queue role;
/// names matching no pattern of the driver are `Misc` with [`Recognition::NotRecognised`], and
/// every vector of a driver without a table entry is `Misc` with [`Recognition::UnknownDriver`].
pub fn recognise_device(ctx: &NameContext, actions: &[Vec<String>]) -> Vec<Recognised> {
    let Some(entry) = entry_for(ctx.driver, ctx.class == DeviceClass::Nvme) else {
        let by = Recognition::UnknownDriver { driver: ctx.driver.map(String::from) };
        return actions.iter().map(|_| Recognised::unrecognised(by.clone())).collect();
    };
    // Split once per device, not once per name and pattern.
    let templates: Vec<Vec<Seg>> = entry.patterns.iter().map(|p| segments(p.template)).collect();
    let hits: Vec<Option<(usize, Hit)>> =
        actions.iter().map(|names| best_hit(entry, &templates, names, ctx.interfaces)).collect();
    let counts = PatternCounts::of(entry, &hits);
    let mut position = 0u32;
    hits.iter()
        .map(|hit| {
            let Some((p, hit)) = hit else {
                let driver = entry.drivers[0].to_string();
                return Recognised::unrecognised(Recognition::NotRecognised { driver });
            };
            let number = match hit {
                Hit::Number(n) => *n,
                Hit::Cut => position,
            };
            position += 1;
            let pattern = &entry.patterns[*p];
            let by = Recognition::Table { driver: entry.drivers[0], pattern: pattern.template };
            match pattern.kind {
                NameKind::Sideband(_) => Recognised { role: QueueRole::Misc, queue: None, by },
                NameKind::Admin => Recognised { role: QueueRole::Admin, queue: None, by },
                NameKind::Queue(role, index) => match queue_of(role, index, number, *p, &counts) {
                    Some((role, queue)) => Recognised { role, queue: Some(queue), by },
                    None => {
                        Recognised::unrecognised(Recognition::NotRecognised { driver: entry.drivers[0].to_string() })
                    }
                },
            }
        })
        .collect()
}

/// How many vectors of a device each pattern matched, and how many were rx queues.
struct PatternCounts {
    per_pattern: Vec<u32>,
    rx: u32,
}

impl PatternCounts {
    fn of(entry: &DriverNames, hits: &[Option<(usize, Hit)>]) -> PatternCounts {
        let mut per_pattern = vec![0; entry.patterns.len()];
        let mut rx = 0;
        for (p, _) in hits.iter().flatten() {
            per_pattern[*p] += 1;
            rx += u32::from(matches!(entry.patterns[*p].kind, NameKind::Queue(QueueRole::Rx, _)));
        }
        PatternCounts { per_pattern, rx }
    }
}

/// The role and queue index of number `n` under `index`; `None` where the number cannot be one
/// the driver writes (a 0 counted from 1, an odd step of two, a tx number below the rx count).
fn queue_of(
    role: QueueRole,
    index: QueueIndex,
    n: u32,
    pattern: usize,
    counts: &PatternCounts,
) -> Option<(QueueRole, u32)> {
    match index {
        QueueIndex::Same => Some((role, n)),
        QueueIndex::OneBased => n.checked_sub(1).map(|q| (role, q)),
        QueueIndex::Halved => n.is_multiple_of(2).then_some((role, n / 2)),
        QueueIndex::AfterRx => n.checked_sub(counts.rx).map(|q| (role, q)),
        QueueIndex::TxThenRx => {
            let half = counts.per_pattern[pattern] / 2;
            Some(if n < half { (QueueRole::Tx, n) } else { (QueueRole::Rx, n - half) })
        }
        QueueIndex::FromOneButZero => Some((role, n.saturating_sub(1))),
    }
}

/// What matching one name against one template found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hit {
    /// The whole name matched; the `{q}` number (0 for a template without one).
    Number(u32),
    /// The name is a cut-short form of the template: its number is lost or may be.
    Cut,
}

/// The pattern one vector matches, trying its action names in order: the first name matching a
/// queue pattern, else the first matching a sideband pattern.
fn best_hit(entry: &DriverNames, templates: &[Vec<Seg>], names: &[String], ifs: &[String]) -> Option<(usize, Hit)> {
    let hits: Vec<(usize, Hit)> = names.iter().filter_map(|n| match_name(entry, templates, n.trim(), ifs)).collect();
    let is_queue = |(p, _): &&(usize, Hit)| matches!(entry.patterns[*p].kind, NameKind::Queue(..));
    hits.iter().find(is_queue).or_else(|| hits.first()).copied()
}

/// The first pattern of `entry` matching `name` (`templates[i]` is pattern i split). A name as
/// long as the driver's limit is first tried whole (a trailing number then counts as possibly
/// cut), then as a cut-short prefix. Guarantees: `Hit::Cut` only for a name of exactly the
/// entry's limit.
fn match_name(entry: &DriverNames, templates: &[Vec<Seg>], name: &str, ifs: &[String]) -> Option<(usize, Hit)> {
    let at_limit = entry.limit == Some(name.chars().count());
    let try_all = |accept_cut: bool| {
        templates.iter().enumerate().find_map(|(i, segs)| {
            let hit = walk(segs, name, ifs, at_limit, None)?;
            (accept_cut || hit != Hit::Cut).then_some((i, hit))
        })
    };
    try_all(false).or_else(|| if at_limit { try_all(true) } else { None })
}

/// One piece of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seg<'t> {
    Lit(&'t str),
    Interface,
    Bdf,
    Number,
    Queue,
    Word,
}

/// A template split into literal text and placeholders. An unknown `{...}` stays literal.
fn segments(template: &str) -> Vec<Seg<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        let seg = match &rest[open + 1..close] {
            "if" => Seg::Interface,
            "bdf" => Seg::Bdf,
            "n" => Seg::Number,
            "q" => Seg::Queue,
            "*" => Seg::Word,
            _ => {
                out.push(Seg::Lit(&rest[..=close]));
                rest = &rest[close + 1..];
                continue;
            }
        };
        if open > 0 {
            out.push(Seg::Lit(&rest[..open]));
        }
        out.push(seg);
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Seg::Lit(rest));
    }
    out
}

/// Matches `s` against `segs`. With `cut`, `s` may end anywhere inside the template (then
/// [`Hit::Cut`]), and a number running to the end of `s` may have lost digits (also `Cut`).
fn walk(segs: &[Seg], s: &str, ifs: &[String], cut: bool, queue: Option<u32>) -> Option<Hit> {
    let Some((seg, rest)) = segs.split_first() else {
        return s.is_empty().then_some(Hit::Number(queue.unwrap_or(0)));
    };
    if cut && s.is_empty() {
        return Some(Hit::Cut);
    }
    match *seg {
        Seg::Lit(lit) => match s.strip_prefix(lit) {
            Some(after) => walk(rest, after, ifs, cut, queue),
            None => (cut && lit.starts_with(s)).then_some(Hit::Cut),
        },
        Seg::Interface if !ifs.is_empty() => ifs.iter().find_map(|i| match s.strip_prefix(i.as_str()) {
            Some(after) => walk(rest, after, ifs, cut, queue),
            None => (cut && i.starts_with(s)).then_some(Hit::Cut),
        }),
        Seg::Interface => {
            let word = s.find(|c: char| c.is_whitespace() || c == '/' || c == ':').unwrap_or(s.len());
            (1..=word).rev().filter(|&e| s.is_char_boundary(e)).find_map(|e| walk(rest, &s[e..], ifs, cut, queue))
        }
        Seg::Word => {
            let word = s.find(char::is_whitespace).unwrap_or(s.len());
            (1..=word).rev().filter(|&e| s.is_char_boundary(e)).find_map(|e| walk(rest, &s[e..], ifs, cut, queue))
        }
        Seg::Bdf => pci_address_len(s).and_then(|n| walk(rest, &s[n..], ifs, cut, queue)),
        Seg::Number | Seg::Queue => {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            if cut && digits == s.len() {
                return Some(Hit::Cut);
            }
            let n: u32 = s[..digits].parse().ok()?;
            let queue = if *seg == Seg::Queue { Some(n) } else { queue };
            walk(rest, &s[digits..], ifs, cut, queue)
        }
    }
}

/// The length of the PCI address (`DDDD:BB:SS.F`, domain of 4 or more hex digits) at the start
/// of `s`, if there is one.
fn pci_address_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let domain = b.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    let hex2 = |at: usize| b.get(at..at + 2).is_some_and(|p| p.iter().all(u8::is_ascii_hexdigit));
    let ok = domain >= 4
        && b.get(domain) == Some(&b':')
        && hex2(domain + 1)
        && b.get(domain + 3) == Some(&b':')
        && hex2(domain + 4)
        && b.get(domain + 6) == Some(&b'.')
        && b.get(domain + 7).is_some_and(|c| (b'0'..=b'7').contains(c));
    ok.then_some(domain + 8)
}

/// A name produced from `template`: `{if}` → `ifname`, `{bdf}` → `bdf`, `{q}` → `queue`, `{n}`
/// → `n`, `{*}` → `word`. The inverse of matching, for tests and documentation.
#[cfg(test)]
pub(crate) fn render_template(template: &str, ifname: &str, bdf: &str, queue: u32, n: u32, word: &str) -> String {
    segments(template)
        .into_iter()
        .map(|s| match s {
            Seg::Lit(l) => l.to_string(),
            Seg::Interface => ifname.to_string(),
            Seg::Bdf => bdf.to_string(),
            Seg::Number => n.to_string(),
            Seg::Queue => queue.to_string(),
            Seg::Word => word.to_string(),
        })
        .collect()
}

/// A `queue_pattern` from a config rule: a regular expression over a whole IRQ name with a
/// named group `queue` (the 0-based queue index) and optionally `role` (`rx`, `tx`, `rxtx`,
/// `txrx`, `combined`, `io`, any case). Compares and serializes as its source text.
#[derive(Debug, Clone)]
pub struct QueuePattern {
    source: String,
    regex: regex_lite::Regex,
}

/// Why a `queue_pattern` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueuePatternError {
    #[error("not a valid regular expression: {0}")]
    Syntax(String),
    #[error("has no named group `queue`; expected one like (?P<queue>\\d+) around the queue number")]
    NoQueueGroup,
    #[error("has a named group `{0}`; expected only `queue` and `role`")]
    OtherGroup(String),
}

impl QueuePattern {
    /// Compiles `source`, anchored at both ends of the name.
    pub fn new(source: &str) -> Result<QueuePattern, QueuePatternError> {
        let regex = regex_lite::Regex::new(&format!("^(?:{source})$"))
            .map_err(|e| QueuePatternError::Syntax(e.to_string().lines().collect::<Vec<_>>().join(" ")))?;
        if let Some(other) = regex.capture_names().flatten().find(|n| !matches!(*n, "queue" | "role")) {
            return Err(QueuePatternError::OtherGroup(other.to_string()));
        }
        if !regex.capture_names().flatten().any(|n| n == "queue") {
            return Err(QueuePatternError::NoQueueGroup);
        }
        Ok(QueuePattern { source: source.to_string(), regex })
    }

    /// The role and queue of `name`, when the whole name matches, the `queue` group is a
    /// decimal number and the `role` group (if it took part) names a role. Without a `role`
    /// group the vector is a combined rx/tx queue.
    pub fn recognise(&self, name: &str) -> Option<(QueueRole, u32)> {
        let caps = self.regex.captures(name.trim())?;
        let queue = caps.name("queue")?.as_str().parse().ok()?;
        let role = match caps.name("role") {
            None => QueueRole::RxTx,
            Some(r) => match r.as_str().to_ascii_lowercase().as_str() {
                "rx" | "input" => QueueRole::Rx,
                "tx" | "output" => QueueRole::Tx,
                "rxtx" | "txrx" | "tx-rx" | "combined" | "fp" => QueueRole::RxTx,
                "io" => QueueRole::Io,
                _ => return None,
            },
        };
        Some((role, queue))
    }
}

impl PartialEq for QueuePattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for QueuePattern {}

impl fmt::Display for QueuePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Serialize for QueuePattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::name_table::{NamePattern, DRIVERS};

    fn names(list: &[&str]) -> Vec<Vec<String>> {
        list.iter().map(|n| vec![n.to_string()]).collect()
    }

    fn read(driver: &str, ifs: &[&str], list: &[&str]) -> Vec<(QueueRole, Option<u32>)> {
        let ifs: Vec<String> = ifs.iter().map(std::string::ToString::to_string).collect();
        let ctx = NameContext { driver: Some(driver), class: DeviceClass::Nic, interfaces: &ifs };
        recognise_device(&ctx, &names(list)).into_iter().map(|r| (r.role, r.queue)).collect()
    }

    #[test]
    fn templates_split_into_literals_and_placeholders() {
        assert_eq!(segments("i40e-{if}-TxRx-{q}"), [Seg::Lit("i40e-"), Seg::Interface, Seg::Lit("-TxRx-"), Seg::Queue]);
        assert_eq!(segments("{x}-{n}"), [Seg::Lit("{x}"), Seg::Lit("-"), Seg::Number]);
        // No empty literal before a leading placeholder or after a trailing one.
        assert_eq!(segments("{q}"), [Seg::Queue]);
        assert_eq!(segments("{if}{q}"), [Seg::Interface, Seg::Queue]);
    }

    #[test]
    fn a_known_interface_is_matched_whole_and_cut_only_at_the_limit() {
        let segs = segments("{if}-TxRx-{q}");
        let ifs = ["eth0".to_string(), "eth10".to_string()];
        assert_eq!(walk(&segs, "eth10-TxRx-2", &ifs, false, None), Some(Hit::Number(2)));
        assert_eq!(walk(&segs, "wlan0-TxRx-2", &ifs, false, None), None, "not one of the device's interfaces");
        // A name cut inside the interface name is a cut form only where names are cut.
        assert_eq!(walk(&segs, "eth1", &ifs, true, None), Some(Hit::Cut));
        assert_eq!(walk(&segs, "eth1", &ifs, false, None), None);
        assert_eq!(walk(&segs, "wlan", &ifs, true, None), None, "cut, but not from an interface of the device");
    }

    #[test]
    fn only_a_number_running_to_the_end_of_a_cut_name_may_have_lost_digits() {
        let ifs = ["eth0".to_string()];
        let tail = segments("{if}-TxRx-{q}");
        assert_eq!(walk(&tail, "eth0-TxRx-1", &ifs, true, None), Some(Hit::Cut));
        assert_eq!(walk(&tail, "eth0-TxRx-1", &ifs, false, None), Some(Hit::Number(1)));
        // A number followed by more of the template was not cut.
        let inner = segments("{if}-{q}-rx");
        assert_eq!(walk(&inner, "eth0-12-rx", &ifs, true, None), Some(Hit::Number(12)));
        assert_eq!(walk(&inner, "eth0-12-r", &ifs, true, None), Some(Hit::Cut));
    }

    #[test]
    fn an_unknown_interface_is_one_word_as_the_kernel_allows_it() {
        // dev_valid_name(): no whitespace, '/' or ':' in an interface name. With no interface
        // known, `{if}` takes any such word and nothing longer.
        let segs = segments("{if}-TxRx-{q}");
        assert_eq!(walk(&segs, "eth0-TxRx-3", &[], false, None), Some(Hit::Number(3)));
        for name in ["my nic-TxRx-3", "my\tnic-TxRx-3", "a/b-TxRx-3", "a:b-TxRx-3"] {
            assert_eq!(walk(&segs, name, &[], false, None), None, "{name:?}");
        }
    }

    #[test]
    fn pci_addresses_are_recognised_by_shape() {
        assert_eq!(pci_address_len("0000:81:00.0:misc"), Some(12));
        assert_eq!(pci_address_len("10000:00:1f.7"), Some(13));
        assert_eq!(pci_address_len("000:81:00.0"), None);
        assert_eq!(pci_address_len("0000:81:00.8"), None);
        // Each two-digit field must be hex: bus, then slot.
        assert_eq!(pci_address_len("0000:8g:00.0"), None);
        assert_eq!(pci_address_len("0000:81:0g.0"), None);
        assert_eq!(pci_address_len("0000:81-00.0"), None);
        assert_eq!(pci_address_len("0000:81:00:0"), None);
    }

    #[test]
    fn bnxt_names_cut_at_17_characters_are_numbered_by_position() {
        // 6.1 keeps 17 characters: "enp175s0f0np0-rx-0" loses its number entirely.
        let mut list = vec!["enp175s0f0np0-rx-"; 3];
        list.extend(["enp175s0f0np0-tx-"; 3]);
        let got = read("bnxt_en", &["enp175s0f0np0"], &list);
        use QueueRole::{Rx, Tx};
        assert_eq!(got, [(Rx, Some(0)), (Rx, Some(1)), (Rx, Some(2)), (Tx, Some(0)), (Tx, Some(1)), (Tx, Some(2))]);
    }

    #[test]
    fn an_unknown_driver_recognises_nothing() {
        let ctx = NameContext { driver: Some("foo"), class: DeviceClass::Nic, interfaces: &[] };
        let got = recognise_device(&ctx, &names(&["foo-q0"]));
        assert_eq!(got[0].by, Recognition::UnknownDriver { driver: Some("foo".into()) });
        assert_eq!(got[0].role, QueueRole::Misc);
    }

    #[test]
    fn queue_pattern_reads_queue_and_role() {
        let p = QueuePattern::new(r"foo-(?P<role>rx|tx)-(?P<queue>\d+)").unwrap();
        assert_eq!(p.recognise("foo-rx-3"), Some((QueueRole::Rx, 3)));
        assert_eq!(p.recognise("foo-tx-0"), Some((QueueRole::Tx, 0)));
        assert_eq!(p.recognise("xfoo-tx-0"), None, "anchored at the start");
        assert_eq!(p.recognise("foo-tx-0x"), None, "anchored at the end");
        let plain = QueuePattern::new(r"foo-q(?P<queue>\d+)").unwrap();
        assert_eq!(plain.recognise("foo-q12"), Some((QueueRole::RxTx, 12)));
        assert_eq!(QueuePattern::new("foo-q\\d+"), Err(QueuePatternError::NoQueueGroup));
        assert!(matches!(QueuePattern::new("foo-(?P<queue>\\d+"), Err(QueuePatternError::Syntax(_))));
        assert_eq!(QueuePattern::new(r"(?P<dev>\w+)-(?P<queue>\d+)"), Err(QueuePatternError::OtherGroup("dev".into())));
    }

    #[test]
    fn queue_pattern_roles_are_the_words_drivers_use() {
        let p = QueuePattern::new(r"foo-(?P<role>[a-zA-Z-]+)-(?P<queue>\d+)").unwrap();
        let read = |name: &str| p.recognise(name).map(|(role, _)| role);
        for (words, role) in [
            (&["rx", "RX", "input"][..], QueueRole::Rx),
            (&["tx", "Tx", "output"], QueueRole::Tx),
            (&["rxtx", "TxRx", "tx-rx", "combined", "fp"], QueueRole::RxTx),
            (&["io", "IO"], QueueRole::Io),
        ] {
            for w in words {
                assert_eq!(read(&format!("foo-{w}-1")), Some(role), "{w}");
            }
        }
        assert_eq!(read("foo-async-1"), None, "a role group naming no role");
    }

    #[test]
    fn queue_patterns_compare_by_their_source() {
        let a = QueuePattern::new(r"foo-(?P<queue>\d+)").unwrap();
        assert_eq!(a, QueuePattern::new(r"foo-(?P<queue>\d+)").unwrap());
        assert_ne!(a, QueuePattern::new(r"bar-(?P<queue>\d+)").unwrap());
        assert_eq!(a.to_string(), r"foo-(?P<queue>\d+)");
    }

    #[test]
    fn the_table_is_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for e in DRIVERS {
            for d in e.drivers {
                assert!(seen.insert(*d), "driver {d} has two entries");
            }
            for p in e.patterns {
                let queues = segments(p.template).iter().filter(|s| **s == Seg::Queue).count();
                let want = usize::from(matches!(p.kind, NameKind::Queue(..)));
                assert_eq!(queues, want, "{}: {:?} needs {want} {{q}}", e.drivers[0], p.template);
            }
        }
    }

    /// Names generated from queue pattern `p` of entry `e` for queues `0..queues`, each with the
    /// role and queue it must read back as. bnxt's tx-after-rx pattern gets the rx vectors it
    /// counts from in front; gve's blocks read back tx then rx.
    fn generated(e: &DriverNames, p: &NamePattern, queues: u32, n: u32) -> Vec<(String, (QueueRole, Option<u32>))> {
        let NameKind::Queue(role, index) = p.kind else { return Vec::new() };
        let render = |t: &str, k: u32| render_template(t, "eth0", "0000:81:00.0", k, n, "x");
        let mut out = Vec::new();
        if index == QueueIndex::AfterRx {
            let rx = e.patterns.iter().find(|r| matches!(r.kind, NameKind::Queue(QueueRole::Rx, _))).unwrap();
            out.extend((0..queues).map(|q| (render(rx.template, q), (QueueRole::Rx, Some(q)))));
        }
        for q in 0..queues {
            let (number, want) = match index {
                QueueIndex::Same => (q, (role, q)),
                QueueIndex::OneBased | QueueIndex::FromOneButZero => (q + 1, (role, q)),
                QueueIndex::Halved => (2 * q, (role, q)),
                QueueIndex::AfterRx => (queues + q, (role, q)),
                QueueIndex::TxThenRx if q < queues / 2 => (q, (QueueRole::Tx, q)),
                QueueIndex::TxThenRx => (q, (QueueRole::Rx, q - queues / 2)),
            };
            out.push((render(p.template, number), (want.0, Some(want.1))));
        }
        out
    }

    proptest::proptest! {
        /// For every queue pattern of every entry, the names of a device with a random number
        /// of queues read back as the queues they were generated for, and every sideband name
        /// reads back as misc.
        #[test]
        fn generated_names_round_trip(queues in 1u32..40, n in 0u32..4) {
            for e in DRIVERS {
                for p in e.patterns {
                    let device = generated(e, p, queues, n);
                    let list: Vec<&str> = device.iter().map(|(name, _)| name.as_str()).collect();
                    let got = read(e.drivers[0], &["eth0"], &list);
                    for ((name, want), got) in device.iter().zip(got) {
                        proptest::prop_assert_eq!(got, *want, "{} {:?}", e.drivers[0], name);
                    }
                    if let NameKind::Sideband(_) = p.kind {
                        let name = render_template(p.template, "eth0", "0000:81:00.0", 0, n, "x");
                        let got = read(e.drivers[0], &["eth0"], &[name.as_str()]);
                        proptest::prop_assert_eq!(got[0], (QueueRole::Misc, None), "{} {:?}", e.drivers[0], name);
                    }
                }
            }
        }
    }
}
