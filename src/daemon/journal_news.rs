//! The journal lines of what a pass's collaborators found and of its whole queues: claims taken
//! and released, fights begun and ended, IRQs left to other owners, NAPI drift
//! ([`Adjusted`]), the NAPI settings written and the NAPI threads moved. Like `journal.rs` (the
//! changes, the drift and the pass's own news), it renders values the record hands it and
//! decides nothing; the two files are the journal of a pass.

use super::adjust::Adjusted;
use super::catalog;
use super::claims::ClaimNews;
use super::fights::{FightNews, FIGHT_WINDOW_SECS};
use super::journal::list;
use super::napi_news::ThreadNews;
use super::napi_profiles::{NapiDrift, NapiWriteNews};
use super::peers::what_it_writes;
use super::respect::RespectNews;
use crate::apply::threads::{ThreadChange, ThreadOutcome};
use crate::choices::NapiProfile;
use crate::plan::napi_profile::describe;
use crate::text::printable;

/// Says what a pass's collaborators found ([`Adjusted`]), before its writes: claims held,
/// changed, refused and removed, fights begun and
/// ended, IRQs newly left to other owners and given back, NAPI instances another writer changed.
pub(crate) fn say_adjusted(a: &Adjusted) {
    for n in &a.claim_news {
        say_claim(n);
    }
    for n in a.fights.iter().flat_map(|(news, _)| news) {
        say_fight(n);
    }
    for n in a.respect.iter().flat_map(|(news, _)| news) {
        say_respect(n);
    }
    for d in &a.napi.drift {
        say_napi_drift(d);
    }
}

/// An IRQ newly fought over (no longer restored), or given back to irqwise.
fn say_fight(news: &FightNews) {
    match news {
        FightNews::Stopped(f) => {
            let who = f.writer.as_ref().map_or_else(
                || "no known IRQ tuner runs (a script, another daemon?)".to_string(),
                |(pid, name)| format!("{name} (pid {pid}) runs and writes {}", what_it_writes(name)),
            );
            tracing::warn!(
                message_id = catalog::FIGHT_DETECTED,
                irq = f.irq,
                irq_name = f.name.as_deref().unwrap_or(""),
                device = f.device.as_str(),
                cpus_placed = f.placed.to_list_string().as_str(),
                cpus_found = f.mask.to_list_string().as_str(),
                writer = f.writer.as_ref().map_or("", |(_, name)| name.as_str()),
                "irq {} ({}) of {}: someone else keeps writing it ({} -> {} after {} restores in {} minutes; {who}); no longer restored, left as they set it until SIGHUP",
                f.irq,
                printable(f.name.as_deref().unwrap_or("")),
                f.device,
                f.placed,
                f.mask,
                f.restores,
                FIGHT_WINDOW_SECS / 60.0
            );
        }
        FightNews::Resumed(f, why) => tracing::info!(
            irq = f.irq,
            device = f.device.as_str(),
            "irq {} of {}: {why}; irqwise places it again",
            f.irq,
            f.device
        ),
    }
}

/// An IRQ newly left to another owner (`on_drift = "respect"`), or given back to irqwise.
fn say_respect(news: &RespectNews) {
    match news {
        RespectNews::Respected(o) => tracing::warn!(
            irq = o.irq,
            device = o.device.as_str(),
            writer = o.owner.as_deref().unwrap_or(""),
            "irq {} ({}) of {}: moved from {} to {} by {}; left as it is (on_drift = respect) until the device goes away or the configuration is reloaded",
            o.irq,
            printable(o.name.as_deref().unwrap_or("")),
            o.device,
            o.placed,
            o.mask,
            o.owner_words()
        ),
        RespectNews::Released(o) => tracing::info!(
            irq = o.irq,
            device = o.device.as_str(),
            "irq {} of {}: the CPUs another owner gave it ({}) are all offline; irqwise places it again",
            o.irq,
            o.device,
            o.mask
        ),
    }
}

/// A NAPI instance another writer changed: left to it, or written back.
fn say_napi_drift(d: &NapiDrift) {
    let name = d.interface.as_str();
    if d.left.is_some() {
        tracing::warn!(
            napi_id = d.id,
            interface = name,
            "napi instance {} of {}: {} changed by another writer; left as it is (on_drift = respect) until the configuration is reloaded",
            d.id,
            printable(name),
            d.changed.join(", ")
        );
    } else {
        tracing::info!(
            napi_id = d.id,
            interface = name,
            "napi instance {} of {}: {} changed by another writer; written back",
            d.id,
            printable(name),
            d.changed.join(", ")
        );
    }
}

/// A runtime claim newly held, changed, refused, removed, or released when its process ended.
fn say_claim(news: &ClaimNews) {
    match news {
        ClaimNews::Refused { refused: r, held_until_now } => {
            let was = if *held_until_now { " (it held until now)" } else { "" };
            tracing::warn!(claim = r.owner.as_str(), cpus = r.cpus.as_str(), "{}: the claim is refused{was}", r.reason);
        }
        ClaimNews::Held(claim) => tracing::info!(
            claim = claim.owner.as_str(),
            cpus = claim.cpus.as_str(),
            "claim {}: {} kept free of device IRQs",
            claim.owner,
            claim.describe()
        ),
        ClaimNews::Changed { now, was } => tracing::info!(
            claim = now.owner.as_str(),
            cpus = now.cpus.as_str(),
            "claim {} changed: {} kept free of device IRQs (was {})",
            now.owner,
            now.describe(),
            was.describe()
        ),
        ClaimNews::Removed(was) => tracing::info!(
            claim = was.owner.as_str(),
            "claim {} released (its file was removed): CPUs {} are free again",
            was.owner,
            was.cpus
        ),
        ClaimNews::Released { owner, why, cpus } => {
            tracing::info!(claim = owner.as_str(), "claim {owner} released ({why}): CPUs {cpus} are free again");
        }
        ClaimNews::Unremovable { owner, why, path, error } => {
            tracing::warn!("claim {owner} ended ({why}) but {} cannot be removed: {error}", path.display());
        }
    }
}

/// What a pass's NAPI writes did, as [`super::napi_profiles::NapiProfiles::record`] found it
/// worth saying.
pub(crate) fn say_napi_writes(news: &[NapiWriteNews<'_>]) {
    let name = |c: &crate::apply::napi_write::NapiChange| c.interface.clone().unwrap_or_else(|| c.device.clone());
    for n in news {
        match n {
            NapiWriteNews::WritableAgain => tracing::info!("NAPI settings can be written again: [napi] is applied"),
            NapiWriteNews::Written(c) => {
                let (name, what) = (name(c), describe(&c.old, &c.new));
                tracing::info!(
                    message_id = catalog::NAPI_PROFILE_APPLIED,
                    device = c.device.as_str(),
                    interface = name.as_str(),
                    napi_id = c.napi_id,
                    irq = c.irq,
                    queue = c.queue,
                    settings = what.as_str(),
                    "napi profile of {} ({}): instance {}{}: {what}",
                    printable(&name),
                    c.device,
                    c.napi_id,
                    c.queue.map_or(String::new(), |q| format!(" (queue {q})"))
                );
            }
            NapiWriteNews::Gone(id) => tracing::debug!(napi_id = id, "napi instance {id}: gone before it was written"),
            NapiWriteNews::Unverified(c, said) => tracing::warn!(
                napi_id = c.napi_id,
                device = c.device.as_str(),
                "napi instance {} of {}: wrote {}, but the kernel {said}",
                c.napi_id,
                printable(&name(c)),
                describe(&NapiProfile::default(), &c.new)
            ),
            NapiWriteNews::Refused(error) => tracing::warn!(
                "NAPI settings cannot be written: {error} (a sandbox that refuses AF_NETLINK or CAP_NET_ADMIN; [napi] is not applied until it can)"
            ),
            NapiWriteNews::Failed(c, error) => tracing::warn!(
                napi_id = c.napi_id,
                device = c.device.as_str(),
                "napi instance {} of {}: not written: {error}",
                c.napi_id,
                printable(&name(c))
            ),
        }
    }
}

/// What a pass's whole queues brought, as [`super::napi_news::NapiNews::record`] found it worth
/// saying.
pub(crate) fn say_thread_news(news: &[ThreadNews<'_>]) {
    for n in news {
        match n {
            ThreadNews::Notice(n) => tracing::info!("{}", printable(n)),
            ThreadNews::Disagrees(d) => tracing::warn!(
                message_id = catalog::QUEUE_IDENTITY_DISAGREES,
                irq = d.irq,
                device = d.bdf.as_str(),
                irq_name = d.name.as_deref().unwrap_or(""),
                kernel_queue = d.kernel_queue,
                name_queue = d.name_queue,
                "irq {} ({}) of {}: its name says queue {}, the kernel says queue {}; the kernel's is used",
                d.irq,
                printable(d.name.as_deref().unwrap_or("?")),
                d.bdf,
                d.name_queue,
                d.kernel_queue
            ),
            ThreadNews::Moved(t) => say_thread_moved(t),
            ThreadNews::Gone(t) => {
                tracing::debug!(pid = t.pid, "thread {} (pid {}): gone before it was moved", printable(&t.name), t.pid);
            }
            ThreadNews::Failed(t) => {
                let ThreadOutcome::Failed { class, error } = &t.result else { continue };
                tracing::warn!(
                    message_id = catalog::WRITE_FAILED,
                    device = t.device.as_str(),
                    pid = t.pid,
                    thread = t.name.as_str(),
                    class = ?class,
                    "thread {} (pid {}) of {}: not moved ({class:?}): {}",
                    printable(&t.name),
                    t.pid,
                    t.device,
                    printable(error)
                );
            }
        }
    }
}

/// A NAPI thread moved to its queue IRQ's CPUs.
fn say_thread_moved(t: &ThreadChange) {
    let ThreadOutcome::Written { new } = &t.result else { return };
    let old = list(t.old.as_ref());
    let new = new.to_list_string();
    tracing::info!(
        message_id = catalog::NAPI_THREAD_APPLIED,
        device = t.device.as_str(),
        pid = t.pid,
        thread = t.name.as_str(),
        irq = t.irq,
        cpus_old = old.as_str(),
        cpus_new = new.as_str(),
        "thread {} (pid {}) of {}: {old} -> {new}, with irq {}",
        printable(&t.name),
        t.pid,
        t.device,
        t.irq.map_or("?".to_string(), |i| i.to_string())
    );
}
