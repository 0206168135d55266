//! Raw TOML values of one file → typed settings, collecting every error and warning in the file.
//!
//! Pure: works on a file's path (for messages) and text, never on the filesystem.

use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use crate::cpuset::CpuSet;

use super::duration::parse_fine_duration;
use super::error::{ConfigError, ConfigWarning, Location};
use super::file_ctx::FileCtx;
use super::glob::Glob;
use super::keys::{read_global, GlobalLayer};
use super::schema::{read, RawMatch, RawNapi, RawRule};
use super::{MachineShape, Match, NapiRange, Rule, RuleRef, Settings};
use crate::choices::{NapiProfile, StrategyName};
use crate::devices::napi::NapiSettings;
use crate::devices::{DeviceClass, QueuePattern};
use crate::topology::MAX_NUMNODES;

/// A validated rule plus where its `cpus` value was written, for the cross-file check of the
/// allowed set against the global `banned_cpus`.
#[derive(Debug)]
pub(super) struct ParsedRule {
    pub rule: Rule,
    pub cpus_at: Option<(Location, String)>,
    /// `cpus` and `exclude_cpus` as written, for the contradiction check against the global
    /// `banned_cpus` (a contradiction on every machine, not only this one).
    pub raw_cpus: Option<CpuSet>,
    pub raw_exclude: Option<CpuSet>,
}

/// What one file contributes.
#[derive(Debug, Default)]
pub(super) struct FileLayer {
    pub global: GlobalLayer,
    pub rules: Vec<ParsedRule>,
}

/// `gro_flush_timeout` and `irq_suspend_timeout`: the kernel takes nanoseconds; past ten
/// seconds an instance's IRQ would stay off longer than any watchdog waits for a packet.
const NAPI_TIMEOUT_MAX: Duration = Duration::from_secs(10);
const NAPI_TIMEOUT_EXPECTED: &str = "a duration from \"0ns\" to \"10s\" (a whole number followed by ns, us, ms or s)";

/// `defer_hard_irqs`: the kernel's policy stops at `S32_MAX`.
const DEFER_HARD_IRQS_MAX: i64 = i32::MAX as i64;

/// Parses and validates one file. Returns what it contributes (only the parts that validated),
/// its errors in file order and its warnings. Every key is checked: a syntax, type or
/// unknown-key error does not hide the errors after it.
pub(super) fn validate_file(
    path: &Path,
    text: &str,
    machine: &MachineShape,
) -> (FileLayer, Vec<ConfigError>, Vec<ConfigWarning>) {
    let (raw, schema_errors) = read(text);
    let mut ctx = FileCtx::new(path, text, machine);
    for e in schema_errors {
        ctx.schema_error(e.span.start, &e.message);
    }
    let mut global = raw.global.map(|g| read_global(&mut ctx, g)).unwrap_or_default();
    if let Some(n) = raw.napi {
        global.napi = ctx.napi(n.get_ref()).profile;
    }
    let rules = raw.device.into_iter().filter_map(|r| ctx.rule(r)).collect();
    let mut errors = ctx.errors;
    errors.sort_by(|a, b| a.location().cmp(&b.location()));
    (FileLayer { global, rules }, errors, ctx.warnings)
}

impl FileCtx<'_> {
    /// A `[napi]` or `[device.napi]` table: its values checked, each bad one an error.
    fn napi(&mut self, n: &RawNapi) -> NapiRange {
        let queues = n.queues.as_ref().and_then(|v| {
            let set = self.cpu_list("napi.queues", v)?;
            Some(set.iter().collect())
        });
        let defer_hard_irqs = n.defer_hard_irqs.as_ref().and_then(|v| {
            let d = *v.get_ref();
            if (0..=DEFER_HARD_IRQS_MAX).contains(&d) {
                return u32::try_from(d).ok();
            }
            let at = self.loc(v.span().start);
            self.errors.push(ConfigError::OutOfRange {
                at,
                key: "napi.defer_hard_irqs",
                value: d.to_string(),
                expected: "an integer from 0 to 2147483647 (the kernel's limit)".to_owned(),
            });
            None
        });
        let timeout = |this: &mut Self, key: &'static str, v: &Option<Spanned<String>>| {
            let v = v.as_ref()?;
            match parse_fine_duration(v.get_ref()) {
                Some(d) if d <= NAPI_TIMEOUT_MAX => u64::try_from(d.as_nanos()).ok(),
                _ => {
                    let at = this.loc(v.span().start);
                    let (value, expected) = (v.get_ref().clone(), NAPI_TIMEOUT_EXPECTED.to_owned());
                    this.errors.push(ConfigError::Duration { at, key, value, expected });
                    None
                }
            }
        };
        let gro_flush_timeout = timeout(self, "napi.gro_flush_timeout", &n.gro_flush_timeout);
        let irq_suspend_timeout = timeout(self, "napi.irq_suspend_timeout", &n.irq_suspend_timeout);
        let settings = NapiSettings { defer_hard_irqs, gro_flush_timeout, irq_suspend_timeout };
        NapiRange { queues, profile: NapiProfile { settings, threaded: n.threaded.as_ref().map(|t| *t.get_ref()) } }
    }

    fn glob(&mut self, key: &str, v: &Spanned<String>) -> Option<Glob> {
        Glob::new(v.get_ref())
            .map_err(|source| {
                let pos = match source {
                    super::GlobError::UnclosedClass { pos } | super::GlobError::ReversedRange { pos, .. } => pos,
                };
                let inner = v.get_ref().char_indices().nth(pos).map_or(0, |(b, _)| b);
                let at = self.loc_inside(&v.span(), v.get_ref(), inner);
                self.errors.push(ConfigError::Glob { at, key: key.to_owned(), value: v.get_ref().clone(), source });
            })
            .ok()
    }

    fn matcher(&mut self, m: RawMatch) -> Match {
        let glob = |this: &mut Self, key: &str, v: &Option<Spanned<String>>| v.as_ref().and_then(|v| this.glob(key, v));
        Match {
            pci: glob(self, "pci", &m.pci),
            driver: glob(self, "driver", &m.driver),
            interface: glob(self, "interface", &m.interface),
            class: m.class,
            nvme_model: glob(self, "nvme_model", &m.nvme_model),
            nvme_serial: glob(self, "nvme_serial", &m.nvme_serial),
            property: m
                .property
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(k, v)| {
                    let g = glob(self, &format!("property.{k}"), &Some(v))?;
                    Some((k, g))
                })
                .collect(),
        }
    }

    /// Validates one `[[device]]` rule; `None` when any of its values is invalid.
    fn rule(&mut self, raw: Spanned<RawRule>) -> Option<ParsedRule> {
        let errors_before = self.errors.len();
        let rule_at = self.loc(raw.span().start);
        let mut r = raw.into_inner();
        // A key of this rule the TOML reader refused is already an error: no second one for the
        // match table it may have left empty.
        let refused_key = r.refused_key;

        let matcher = match r.matcher.take() {
            None => {
                if !refused_key {
                    self.errors.push(ConfigError::EmptyMatch { at: rule_at.clone(), what: "no" });
                }
                Match::default()
            }
            Some(m) => {
                let m_at = self.loc(m.span().start);
                let raw_match = m.into_inner();
                let matcher = self.matcher(raw_match);
                // A key whose pattern failed is already an error; do not also call it empty.
                if matcher.is_empty() && self.errors.len() == errors_before && !refused_key {
                    self.errors.push(ConfigError::EmptyMatch { at: m_at, what: "an empty" });
                }
                matcher
            }
        };

        let list = |this: &mut Self, key, v: &Option<Spanned<String>>| v.as_ref().and_then(|v| this.cpu_list(key, v));
        let cpus = list(self, "cpus", &r.cpus);
        let exclude_cpus = list(self, "exclude_cpus", &r.exclude_cpus);
        let admin_cpus = list(self, "admin_cpus", &r.admin_cpus);
        let (raw_cpus, raw_exclude) = (cpus.clone(), exclude_cpus.clone());

        if let Some(s) = &r.strategy {
            if *s.get_ref() == StrategyName::Pin && r.cpus.is_none() {
                self.errors.push(ConfigError::PinWithoutCpus { at: self.loc(s.span().start) });
            }
        }
        if let Some(n) = &r.node {
            if *n.get_ref() >= MAX_NUMNODES {
                let at = self.loc(n.span().start);
                self.errors.push(ConfigError::NodeBeyondKernel { at, node: *n.get_ref(), max: MAX_NUMNODES });
            }
        }
        if let Some(q) = &r.queues_per_cpu {
            if *q.get_ref() == 0 {
                self.errors.push(ConfigError::ZeroQueuesPerCpu { at: self.loc(q.span().start) });
            }
        }
        if let (Some(admin), Some(excl), Some(v)) = (&admin_cpus, &exclude_cpus, &r.admin_cpus) {
            let overlap = admin.intersection(excl);
            if !overlap.is_empty() {
                let at = self.loc(v.span().start);
                self.errors.push(ConfigError::AdminCpusExcluded { at, value: v.get_ref().clone(), overlap });
            }
        }

        let queue_pattern = r.queue_pattern.as_ref().and_then(|v| {
            QueuePattern::new(v.get_ref())
                .map_err(|source| {
                    let at = self.loc(v.span().start);
                    self.errors.push(ConfigError::QueuePattern { at, value: v.get_ref().clone(), source });
                })
                .ok()
        });

        let napi: Vec<NapiRange> = r.napi.iter().map(|t| self.napi(t.get_ref())).collect();
        if self.errors.len() != errors_before {
            return None;
        }
        // Checked as written above (a contradiction is one on every machine); now cut to this
        // machine, a list left without any CPU voiding its setting.
        let mut voided = Vec::new();
        let mut fit = |this: &mut Self,
                       key: &'static str,
                       set: Option<CpuSet>,
                       raw: &Option<Spanned<String>>,
                       if_none: &str| {
            let (Some(set), Some(v)) = (set, raw) else { return None };
            let within = this.fit(key, v, &set, if_none);
            if within.is_empty() && key != "exclude_cpus" {
                let possible = &this.machine.possible;
                voided.push((
                    key,
                    format!("{key} {:?} names no CPU of this machine (possible {possible}): {if_none}", v.get_ref()),
                ));
                return None;
            }
            Some(within)
        };
        let cpus = fit(self, "cpus", cpus, &r.cpus, "the setting is ignored and every usable CPU counts");
        let exclude_cpus = fit(self, "exclude_cpus", exclude_cpus, &r.exclude_cpus, "nothing is excluded");
        let admin_cpus =
            fit(self, "admin_cpus", admin_cpus, &r.admin_cpus, "the setting is ignored and the node's CPUs take them");
        if let Some((n, nodes)) = r.node.as_ref().zip(self.machine.nodes.as_ref()) {
            let lacks = if nodes.is_empty() { *n.get_ref() != 0 } else { !nodes.contains(n.get_ref()) };
            if lacks {
                let list = if nodes.is_empty() {
                    "none (no NUMA)".to_string()
                } else {
                    nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
                };
                self.warnings.push(ConfigWarning::NodeNotOnMachine {
                    at: self.loc(n.span().start),
                    node: *n.get_ref(),
                    nodes: list,
                });
            }
        }
        let settings = Settings {
            strategy: r.strategy.as_ref().map(|s| *s.get_ref()),
            cpus,
            exclude_cpus,
            admin_cpus,
            node: r.node.as_ref().map(|n| *n.get_ref()),
            order: r.order,
            queues_per_cpu: r.queues_per_cpu.as_ref().map(|q| *q.get_ref()),
            queue_pattern,
            xps: r.xps.as_ref().map(|v| *v.get_ref()),
            spill: r.spill,
            guard: r.guard,
            allow_isolated: r.allow_isolated,
            napi_threads: r.napi_threads,
            balance: r.balance,
            napi,
            voided,
        };
        self.rule_warnings(&rule_at, &settings, matcher.class, &r);
        let cpus_at = r.cpus.as_ref().map(|v| (self.loc(v.span().start), v.get_ref().clone()));
        let source = RuleRef { path: rule_at.path.clone(), line: rule_at.line };
        Some(ParsedRule { rule: Rule { source, matcher, settings }, cpus_at, raw_cpus, raw_exclude })
    }

    /// Legal settings that cannot do anything where they are.
    fn rule_warnings(&mut self, at: &Location, s: &Settings, class: Option<DeviceClass>, r: &RawRule) {
        if s.is_empty() {
            self.warnings.push(ConfigWarning::RuleSetsNothing { at: at.clone() });
            return;
        }
        let ignored = |key, why| ConfigWarning::SettingIgnored { at: at.clone(), key, why };
        if s.strategy == Some(StrategyName::Leave) {
            // The guard still acts on a left-alone device: `guard = false` is not one of them.
            let others = Settings { strategy: None, guard: None, ..s.clone() };
            if !others.is_empty() {
                let at = r.strategy.as_ref().map_or(at.clone(), |v| self.loc(v.span().start));
                self.warnings.push(ConfigWarning::SettingIgnored {
                    at,
                    key: "strategy",
                    why: "strategy = \"leave\" leaves the device alone, so the other settings of this rule do nothing",
                });
            }
        }
        if s.queues_per_cpu.is_some() && class.is_some_and(|c| c != DeviceClass::Nic) {
            let at = r.queues_per_cpu.as_ref().map_or(at.clone(), |v| self.loc(v.span().start));
            self.warnings.push(ConfigWarning::SettingIgnored {
                at,
                key: "queues_per_cpu",
                why: "it applies to NICs only and this rule matches another class",
            });
        }
        if !s.napi.is_empty() && class.is_some_and(|c| c != DeviceClass::Nic) {
            let at = r.napi.first().map_or(at.clone(), |v| self.loc(v.span().start));
            self.warnings.push(ConfigWarning::SettingIgnored {
                at,
                key: "napi",
                why: "NAPI instances belong to NICs only and this rule matches another class",
            });
        }
        if s.xps.is_some() && class.is_some_and(|c| c != DeviceClass::Nic) {
            let at = r.xps.as_ref().map_or(at.clone(), |v| self.loc(v.span().start));
            self.warnings.push(ConfigWarning::SettingIgnored {
                at,
                key: "xps",
                why: "transmit steering applies to NICs only and this rule matches another class",
            });
        }
        if s.order.is_some() && matches!(s.strategy, Some(StrategyName::Pin | StrategyName::ClusterGroup)) {
            self.warnings.push(ignored("order", "it applies to the numa-hop strategy only"));
        }
        if s.spill.is_some() && matches!(s.strategy, Some(StrategyName::Pin | StrategyName::ClusterGroup)) {
            self.warnings.push(ignored("spill", "it applies to the numa-hop strategy only"));
        }
    }
}
