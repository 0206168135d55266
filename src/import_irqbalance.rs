//! irqbalance's environment file (`/etc/default/irqbalance`, `/etc/sysconfig/irqbalance`)
//! translated into an irqwise drop-in, for `irqwise import-irqbalance`.
//!
//! Pure: the caller reads the file and says which device owns an IRQ number on this machine.
//! Guarantees: the drop-in is valid irqwise configuration (TOML, only known keys); every setting
//! of the file that changes irqbalance's behaviour appears in it, translated or, when irqwise
//! has no equivalent, in a comment saying why; the number of those is in
//! [`Translation::untranslated`].

use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::topology::isolation::{env_assignments, parse_banned_mask, parse_kernel_cpulist, shell_word};

/// The device an IRQ number belongs to on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqOwner {
    /// PCI address.
    pub pci: String,
    pub driver: Option<String>,
    pub name: Option<String>,
}

/// The drop-in and how much of the file it could not express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// TOML text, comments included.
    pub dropin: String,
    /// Settings only commented on: irqwise has no equivalent (policy scripts, load tuning, IRQ
    /// numbers no device owns here) or their value could not be read.
    pub untranslated: usize,
}

/// One `[[device]]` rule of the drop-in, with the comment lines above it.
struct RuleText {
    why: Vec<String>,
    key: String,
    value: String,
}

/// What the file says, in order of reading.
#[derive(Default)]
struct Reading {
    banned: CpuSet,
    banned_from: Vec<String>,
    rules: Vec<RuleText>,
    notes: Vec<String>,
    untranslated: usize,
}

/// irqbalance's options that take a value (as `--name=value`, `--name value`, `-x value`),
/// long name first.
const WITH_VALUE: [(&str, char); 9] = [
    ("banirq", 'i'),
    ("banmod", 'm'),
    ("policyscript", 'l'),
    ("hintpolicy", 'h'),
    ("powerthresh", 'p'),
    ("deepestcache", 'c'),
    ("interval", 't'),
    ("migrateval", 'e'),
    ("pid", 's'),
];

/// Translates `text` (the contents of `source`). `owner` says which device holds an IRQ number
/// on this machine (for `--banirq`).
pub fn translate(text: &str, source: &str, owner: &dyn Fn(u32) -> Option<IrqOwner>) -> Translation {
    let mut r = Reading::default();
    for (name, raw) in env_assignments(text) {
        let setting = format!("{name}={raw}");
        let value = match shell_word(&raw) {
            Ok(v) => v,
            Err(e) => {
                r.note(format!("{setting}: not read ({e}); translate it by hand"));
                continue;
            }
        };
        match name.as_str() {
            "IRQBALANCE_BANNED_CPULIST" => r.ban(&setting, parse_kernel_cpulist(&value, MAX_CPUS - 1)),
            "IRQBALANCE_BANNED_CPUS" => r.ban(&setting, parse_banned_mask(&value)),
            "IRQBALANCE_ARGS" | "OPTIONS" => r.arguments(&setting, &value, owner),
            "IRQBALANCE_ONESHOT" if !value.is_empty() => r.note(format!(
                "{setting}: irqbalance placed once and exited; irqwise keeps placing. For one pass only, run `irqwise apply` instead of the service"
            )),
            _ => {}
        }
    }
    Translation { dropin: r.render(source), untranslated: r.untranslated }
}

/// The words of an argument string, split at blanks as the shell splits `$IRQBALANCE_ARGS`.
fn words(value: &str) -> Vec<String> {
    value.split_whitespace().map(String::from).collect()
}

/// `word` as (option, inline value): `--banirq=5` → ("banirq", Some("5")), `-i5` → ("banirq",
/// Some("5")), `-i` → ("banirq", None), `--oneshot` → ("oneshot", None).
fn option(word: &str) -> Option<(String, Option<String>)> {
    if let Some(long) = word.strip_prefix("--") {
        return Some(match long.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (long.to_string(), None),
        });
    }
    let short = word.strip_prefix('-')?;
    let mut chars = short.chars();
    let letter = chars.next()?;
    let rest: String = chars.collect();
    let long = WITH_VALUE.iter().find(|(_, s)| *s == letter).map(|(l, _)| l.to_string());
    Some(match long {
        Some(l) => (l, (!rest.is_empty()).then_some(rest)),
        None => (short.to_string(), None),
    })
}

impl Reading {
    fn note(&mut self, text: String) {
        self.notes.push(text);
        self.untranslated += 1;
    }

    fn ban(&mut self, setting: &str, parsed: Result<CpuSet, String>) {
        match parsed {
            Ok(set) => {
                self.banned = self.banned.union(&set);
                self.banned_from.push(setting.to_string());
            }
            Err(e) => self.note(format!("{setting}: not a CPU list or mask ({e}); no CPU banned from it")),
        }
    }

    fn rule(&mut self, why: Vec<String>, key: &str, value: &str) {
        let same = self.rules.iter_mut().find(|r| r.key == key && r.value == value);
        match same {
            Some(r) => r.why.extend(why),
            None => self.rules.push(RuleText { why, key: key.into(), value: value.into() }),
        }
    }

    /// `IRQBALANCE_ARGS` / `OPTIONS`: each option translated or noted.
    fn arguments(&mut self, setting: &str, value: &str, owner: &dyn Fn(u32) -> Option<IrqOwner>) {
        let words = words(value);
        let mut i = 0;
        while i < words.len() {
            let word = &words[i];
            i += 1;
            let Some((name, inline)) = option(word) else {
                self.note(format!("{setting}: {word:?} is not an option irqbalance takes"));
                continue;
            };
            let takes_value = WITH_VALUE.iter().any(|(l, _)| *l == name);
            let value = match (takes_value, inline) {
                (true, Some(v)) => Some(v),
                (true, None) if i < words.len() => {
                    i += 1;
                    Some(words[i - 1].clone())
                }
                (_, v) => v,
            };
            self.argument(&name, value.as_deref().unwrap_or(""), owner);
        }
    }

    fn argument(&mut self, name: &str, value: &str, owner: &dyn Fn(u32) -> Option<IrqOwner>) {
        let shown = if value.is_empty() { format!("--{name}") } else { format!("--{name}={value}") };
        match name {
            "banirq" => match value.parse::<u32>().ok().map(|irq| (irq, owner(irq))) {
                Some((irq, Some(o))) => {
                    let who = match (&o.name, &o.driver) {
                        (Some(n), Some(d)) => format!("{n}, {d}"),
                        (None, Some(d)) => d.clone(),
                        (Some(n), None) => n.clone(),
                        (None, None) => "no driver".into(),
                    };
                    self.rule(
                        vec![format!(
                            "{shown}: IRQ {irq} belongs to {} ({who}) on this machine; IRQ numbers change between boots, PCI addresses do not. irqwise leaves every IRQ of the device alone",
                            o.pci
                        )],
                        "pci",
                        &o.pci,
                    );
                }
                Some((irq, None)) => self.note(format!(
                    "{shown}: IRQ {irq} belongs to no PCI device here; a rule names a device (pci, driver, interface) with strategy = \"leave\""
                )),
                None => self.note(format!("{shown}: not an IRQ number")),
            },
            "banmod" if !value.is_empty() => self.rule(
                vec![format!("{shown}: irqbalance left the IRQs of this module's devices alone")],
                "driver",
                value,
            ),
            "policyscript" => self.note(format!(
                "{shown}: a policy script decides per IRQ at run time; write what it decides as [[device]] rules (ban=true: strategy = \"leave\"; numa_node=N: node = N)"
            )),
            "hintpolicy" => self.note(format!(
                "{shown}: irqwise places by topology and does not follow affinity_hint (irqwise plan marks the hints it overrides)"
            )),
            "powerthresh" | "deepestcache" | "interval" | "migrateval" => self.note(format!(
                "{shown}: load-based balancing; irqwise places by topology and moves IRQs only when CPUs or devices change"
            )),
            "oneshot" | "o" => self.note(format!(
                "{shown}: irqbalance placed once and exited; irqwise keeps placing. For one pass only, run `irqwise apply` instead of the service"
            )),
            "debug" | "d" | "foreground" | "f" | "journal" | "j" | "pid" => {}
            _ => self.note(format!("{shown}: not an irqbalance option irqwise knows")),
        }
    }

    fn render(&self, source: &str) -> String {
        let mut out = format!(
            "# Translated from {source} by `irqwise import-irqbalance`.\n# Install as /etc/irqwise/conf.d/90-from-irqbalance.toml, then: irqwise check-config && systemctl reload irqwise\n"
        );
        if !self.banned_from.is_empty() {
            out.push_str("\n[global]\n");
            for from in &self.banned_from {
                out.push_str(&format!("# was {from}\n"));
            }
            if self.banned_from.len() > 1 {
                out.push_str("# (both lists together: irqwise bans every CPU either names)\n");
            }
            out.push_str(&format!("banned_cpus = \"{}\"\n", self.banned.to_list_string()));
            out.push_str(
                "# irqbalance stops excluding isolated and nohz_full CPUs once a banned list is set; irqwise\n# keeps excluding them (respect_isolation = true): set it to false for irqbalance's behaviour.\n",
            );
        }
        for r in &self.rules {
            out.push('\n');
            for why in &r.why {
                out.push_str(&format!("# was {why}\n"));
            }
            // irqbalance does not touch a banned IRQ at all: neither placement nor bans.
            out.push_str(&format!(
                "[[device]]\nmatch = {{ {} = {} }}\nstrategy = \"leave\"\nguard = false\n",
                r.key,
                toml_string(&r.value)
            ));
        }
        if !self.notes.is_empty() {
            out.push_str("\n# Not translated:\n");
            for n in &self.notes {
                out.push_str(&format!("# - {n}\n"));
            }
        }
        if self.banned_from.is_empty() && self.rules.is_empty() && self.notes.is_empty() {
            out.push_str("# Nothing to translate: irqbalance ran with its defaults, which irqwise's defaults cover.\n");
        }
        out
    }
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: u32) -> Option<IrqOwner> {
        None
    }

    #[test]
    fn options_in_every_spelling() {
        assert_eq!(option("--banirq=5"), Some(("banirq".into(), Some("5".into()))));
        assert_eq!(option("-i5"), Some(("banirq".into(), Some("5".into()))));
        assert_eq!(option("-i"), Some(("banirq".into(), None)));
        assert_eq!(option("--oneshot"), Some(("oneshot".into(), None)));
        assert_eq!(option("banirq"), None);
    }

    #[test]
    fn both_lists_are_united_and_each_is_named() {
        let t = translate("IRQBALANCE_BANNED_CPUS=0000000f\nIRQBALANCE_BANNED_CPULIST=8-9\n", "f", &none);
        assert!(t.dropin.contains("banned_cpus = \"0-3,8-9\""), "{}", t.dropin);
        assert!(t.dropin.contains("# was IRQBALANCE_BANNED_CPUS=0000000f"), "{}", t.dropin);
        assert_eq!(t.untranslated, 0);
    }

    #[test]
    fn a_value_with_an_expansion_is_noted_not_guessed() {
        let t = translate("IRQBALANCE_BANNED_CPULIST=$CPUS\n", "f", &none);
        assert!(!t.dropin.contains("banned_cpus"), "{}", t.dropin);
        assert_eq!(t.untranslated, 1);
    }

    #[test]
    fn toml_strings_escape_quotes_and_controls() {
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    }
}
