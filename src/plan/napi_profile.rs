//! Per-instance interrupt mitigation (`[napi]`, `[device.napi]`): for each NAPI instance of a
//! placed NIC, what the config asks, what the kernel has, and which keys a pass writes with
//! `napi-set`. A key the running kernel cannot take (its `napi-get` leaves it out: before 6.13
//! for the timeouts and `defer_hard_irqs`, before 6.17 for `threaded`; `busy-poll` before 6.19)
//! is never written and said once per device, or once for the machine when the kernel is older
//! than the whole feature.
//!
//! Pure: runs on a plan whose NAPI instances are described ([`super::nic_kernel`]).

use serde::Serialize;

use super::{Action, DevicePlan, NapiView, Plan};
use crate::choices::{NapiMode, NapiProfile, StrategyName};
use crate::devices::napi::{NapiSettings, NetdevView};
use crate::kernel::KernelVersion;
use crate::policy::Policy;
use crate::sample::Sample;

/// One instance's part of the config: what it should have, what a pass writes (only the keys
/// that differ and the kernel takes), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NapiProfilePlan {
    /// Every key the config sets for this instance.
    pub desired: NapiProfile,
    /// The keys to write (`action` is `set` exactly when this is not empty).
    #[serde(skip_serializing_if = "NapiProfile::is_empty")]
    pub write: NapiProfile,
    /// The keys of `write` the config no longer sets that irqwise wrote: given back to what they
    /// were before irqwise (the daemon's record of originals; never in `irqwise plan`'s).
    #[serde(skip_serializing_if = "NapiProfile::is_empty")]
    pub restore: NapiProfile,
    /// `set`, `keep` (every key it takes is as configured) or `skip` (it takes none of them).
    pub action: Action,
    /// The keys this kernel cannot take, with the release that brought each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsupported: Vec<Unsupported>,
}

impl NapiProfilePlan {
    /// Leaves the instance as it is (another writer's, `on_drift = "respect"`): nothing written
    /// or given back, `skip`.
    pub fn leave(&mut self) {
        self.action = Action::Skip;
        self.write = NapiProfile::default();
        self.restore = NapiProfile::default();
    }
}

/// A configured key the running kernel does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Unsupported {
    pub key: &'static str,
    /// The release that brought it (`6.13`, `6.17`, `6.19`).
    pub needs: &'static str,
}

/// The release that brought per-instance mitigation over `napi-set`.
const SETTINGS_SINCE: &str = "6.13";

/// Fills `profile` of every NAPI instance of each NIC of `plan` (`plan.devices[i]` is
/// `sample.devices[i]`, decided by `policies[i]`) and adds the warnings for keys this kernel
/// cannot take. Guarantees: nothing is planned for an instance the config sets nothing for, for
/// a device left alone (`strategy = "leave"`), or a key the kernel does not report; when the
/// config asks something of a placed NIC that no instance can take because the kernel is older
/// than the feature or cannot be asked, one line for the machine says why, whether or not its
/// instances are reported (a snapshot of a 6.1 machine keeps no answers; 6.3 to 6.7 have no
/// `napi-get`; a NIC whose link is down has no instance).
pub fn plan_napi_settings(plan: &mut Plan, sample: &Sample, policies: &[Policy]) {
    let version = sample.topology.kernel.as_deref().and_then(|k| KernelVersion::parse(k).ok());
    let too_old = version.is_some_and(|v| v < KernelVersion { major: 6, minor: 13 });
    let (mut configured, mut taken) = (false, false);
    let mut warnings = Vec::new();
    for (dp, policy) in plan.devices.iter_mut().zip(policies) {
        if policy.napi.is_empty() || dp.strategy == StrategyName::Leave || dp.class != crate::devices::DeviceClass::Nic
        {
            continue;
        }
        configured = true;
        let mut unsupported: Vec<Unsupported> = Vec::new();
        for view in &mut dp.napi {
            let desired = policy.napi_profile(view.queue);
            if desired.is_empty() {
                continue;
            }
            let planned = plan_instance(view, desired, version);
            taken |= planned.action != Action::Skip;
            for u in &planned.unsupported {
                if !unsupported.contains(u) {
                    unsupported.push(*u);
                }
            }
            view.profile = Some(planned);
        }
        if !unsupported.is_empty() {
            warnings.push(unsupported_warning(dp, &unsupported));
        }
    }
    // Nothing taken anywhere for a reason of the machine: its one line instead of the devices'
    // (it names no device, so it stays the same line, said once, while NICs come, go and lose
    // their links).
    if let Some(line) = (configured && !taken).then(|| machine_line(sample, too_old)).flatten() {
        warnings = vec![line];
    }
    plan.warnings.extend(warnings);
}

/// The one line saying why no NAPI setting is written on this machine: its netdev family
/// cannot be asked, or (`too_old`) its kernel is older than the feature; `None` otherwise.
fn machine_line(sample: &Sample, too_old: bool) -> Option<String> {
    if let NetdevView::Unavailable(why) = &sample.netdev {
        return Some(format!(
            "[napi] needs {SETTINGS_SINCE} and the kernel's netdev netlink family, which cannot be asked here ({why}): no NAPI setting is written"
        ));
    }
    let running = sample.topology.kernel.as_deref().unwrap_or("an older kernel");
    too_old.then(|| format!("[napi] needs {SETTINGS_SINCE} (this kernel is {running}): no NAPI setting is written"))
}

/// What one instance gets: the keys that differ and the kernel takes.
fn plan_instance(view: &NapiView, desired: NapiProfile, version: Option<KernelVersion>) -> NapiProfilePlan {
    let mut unsupported = Vec::new();
    let mut write = NapiProfile::default();
    let (want, have) = (&desired.settings, &view.settings);
    let mut key = |name: &'static str, wanted: Option<u64>, current: Option<u64>| -> Option<u64> {
        let wanted = wanted?;
        match current {
            None => {
                unsupported.push(Unsupported { key: name, needs: SETTINGS_SINCE });
                None
            }
            Some(c) if c == wanted => None,
            Some(_) => Some(wanted),
        }
    };
    write.settings = NapiSettings {
        defer_hard_irqs: key(
            "defer_hard_irqs",
            want.defer_hard_irqs.map(u64::from),
            have.defer_hard_irqs.map(u64::from),
        )
        .and_then(|v| u32::try_from(v).ok()),
        gro_flush_timeout: key("gro_flush_timeout", want.gro_flush_timeout, have.gro_flush_timeout),
        irq_suspend_timeout: key("irq_suspend_timeout", want.irq_suspend_timeout, have.irq_suspend_timeout),
    };
    if let Some(mode) = desired.threaded {
        let busy_poll_too_new =
            mode == NapiMode::BusyPoll && version.is_some_and(|v| v < KernelVersion { major: 6, minor: 19 });
        match view.threaded {
            None => unsupported.push(Unsupported { key: "threaded", needs: "6.17" }),
            Some(_) if busy_poll_too_new => unsupported.push(Unsupported { key: "threaded", needs: "6.19" }),
            Some(now) if now == mode.kernel() => {}
            Some(_) => write.threaded = Some(mode),
        }
    }
    let takes_some = unsupported.len() < configured_keys(&desired);
    let action = if !write.is_empty() {
        Action::Set
    } else if takes_some {
        Action::Keep
    } else {
        Action::Skip
    };
    NapiProfilePlan { desired, write, restore: NapiProfile::default(), action, unsupported }
}

/// How many keys `p` sets.
fn configured_keys(p: &NapiProfile) -> usize {
    let s = &p.settings;
    [s.defer_hard_irqs.is_some(), s.gro_flush_timeout.is_some(), s.irq_suspend_timeout.is_some(), p.threaded.is_some()]
        .iter()
        .filter(|&&k| k)
        .count()
}

/// `0000:00:03.0 (eth0)`.
fn device_name(dp: &DevicePlan) -> String {
    match &dp.name {
        Some(name) => format!("{} ({name})", dp.bdf),
        None => dp.bdf.clone(),
    }
}

/// One device's keys this kernel does not take, grouped by the release that brought them.
fn unsupported_warning(dp: &DevicePlan, unsupported: &[Unsupported]) -> String {
    let mut releases: Vec<&str> = unsupported.iter().map(|u| u.needs).collect();
    releases.dedup();
    let parts: Vec<String> = releases
        .iter()
        .map(|r| {
            let keys: Vec<&str> = unsupported.iter().filter(|u| u.needs == *r).map(|u| u.key).collect();
            format!("{} needs {r}", keys.join(", "))
        })
        .collect();
    format!(
        "{}: [napi] {} (this kernel's napi-get does not report it or cannot take it): not written, the rest applies",
        device_name(dp),
        parts.join("; ")
    )
}

/// The table's line of one instance with a profile: `napi 8193 (irq 41, queue 0, thread 700):
/// defer_hard_irqs 0 -> 3, gro_flush_timeout 0ns -> 50us`; `as configured` when nothing
/// differs.
pub(super) fn render_instance(view: &NapiView) -> Option<String> {
    let p = view.profile.as_ref()?;
    let mut whose = Vec::new();
    if let Some(irq) = view.irq {
        whose.push(format!("irq {irq}"));
    }
    if let Some(q) = view.queue {
        whose.push(format!("queue {q}"));
    }
    if let Some(pid) = view.pid {
        whose.push(format!("thread {pid}"));
    }
    let whose = if whose.is_empty() { String::new() } else { format!(" ({})", whose.join(", ")) };
    let mut parts = Vec::new();
    let (w, now, want) = (&p.write.settings, &view.settings, &p.desired.settings);
    let pair = |name: &str, current: Option<u64>, wanted: Option<u64>, writing: bool, time: bool| {
        let show = |v: Option<u64>| match v {
            None => "?".to_string(),
            Some(v) if time => nanos(v),
            Some(v) => v.to_string(),
        };
        wanted.map(|w| {
            if writing {
                format!("{name} {} -> {}", show(current), show(Some(w)))
            } else {
                format!("{name} {}", show(Some(w)))
            }
        })
    };
    parts.extend(pair(
        "defer_hard_irqs",
        now.defer_hard_irqs.map(u64::from),
        want.defer_hard_irqs.map(u64::from),
        w.defer_hard_irqs.is_some(),
        false,
    ));
    parts.extend(pair(
        "gro_flush_timeout",
        now.gro_flush_timeout,
        want.gro_flush_timeout,
        w.gro_flush_timeout.is_some(),
        true,
    ));
    parts.extend(pair(
        "irq_suspend_timeout",
        now.irq_suspend_timeout,
        want.irq_suspend_timeout,
        w.irq_suspend_timeout.is_some(),
        true,
    ));
    if let Some(mode) = p.desired.threaded {
        parts.push(match (p.write.threaded, view.threaded) {
            (Some(_), Some(now)) => format!("threaded {} -> {}", now.as_str(), mode.kernel().as_str()),
            _ => format!("threaded {}", mode.kernel().as_str()),
        });
    }
    if !p.restore.is_empty() {
        let back = describe(&p.restore.keys_of(&view.settings, view.threaded), &p.restore);
        parts.push(format!("given back to what they were before irqwise: {back}"));
    }
    let state = match p.action {
        Action::Set => "set",
        Action::Skip => "not taken by this kernel",
        _ => "as configured",
    };
    Some(format!("  napi {}{whose}: {state}: {}\n", view.id, parts.join(", ")))
}

/// Nanoseconds in the largest unit that keeps them whole (`50us`, `20ms`, `0ns`).
pub fn nanos(v: u64) -> String {
    for (unit, size) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if v >= size && v.is_multiple_of(size) {
            return format!("{}{unit}", v / size);
        }
    }
    format!("{v}ns")
}

/// `defer_hard_irqs 0 -> 3, gro_flush_timeout 0ns -> 50us` (or without the old values when
/// `old` has none).
pub fn describe(old: &NapiProfile, new: &NapiProfile) -> String {
    let mut out = Vec::new();
    let mut key = |name: &str, old: Option<u64>, new: Option<u64>, time: bool| {
        let show = |v: u64| if time { nanos(v) } else { v.to_string() };
        if let Some(n) = new {
            out.push(match old {
                Some(o) => format!("{name} {} -> {}", show(o), show(n)),
                None => format!("{name} {}", show(n)),
            });
        }
    };
    let (o, n) = (&old.settings, &new.settings);
    key("defer_hard_irqs", o.defer_hard_irqs.map(u64::from), n.defer_hard_irqs.map(u64::from), false);
    key("gro_flush_timeout", o.gro_flush_timeout, n.gro_flush_timeout, true);
    key("irq_suspend_timeout", o.irq_suspend_timeout, n.irq_suspend_timeout, true);
    if let Some(t) = new.threaded {
        out.push(match old.threaded {
            Some(o) => format!("threaded {} -> {}", o.as_str(), t.as_str()),
            None => format!("threaded {}", t.as_str()),
        });
    }
    out.join(", ")
}
