//! The event sources against the real kernel: a veth pair created with `ip` must show up as
//! uevents and rtnetlink link messages. Needs root (CI runs as root); skipped otherwise.

#[path = "common/skip.rs"]
mod skip;

use std::fs;
use std::process::Command;
use std::time::Duration;

use irqwise::events::{EventConfig, EventSources, Trigger, UeventAction};
use tokio::sync::mpsc::Receiver;
use tokio::time::timeout;

const PATIENCE: Duration = Duration::from_secs(10);

fn skip_unless_root(test: &str) -> bool {
    // Effective uid: the second number of the `Uid:` line.
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1));
    let root = euid == Some("0");
    if !root {
        skip::skip(test, "needs root to open kernel netlink sources and create veth links");
    }
    !root
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {args:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A veth pair named uniquely for this test and process; deleted on drop, even when the test
/// fails. Deleting one end deletes both.
struct VethPair {
    a: String,
    b: String,
}

impl VethPair {
    fn create(tag: &str) -> VethPair {
        let id = std::process::id();
        let pair = VethPair { a: format!("iw{tag}{id}a"), b: format!("iw{tag}{id}b") };
        let _ = ip(&["link", "del", &pair.a]); // leftover of a killed run
        ip(&["link", "add", &pair.a, "type", "veth", "peer", "name", &pair.b]).unwrap();
        pair
    }

    fn ifindex(&self) -> u32 {
        let path = format!("/sys/class/net/{}/ifindex", self.a);
        fs::read_to_string(&path).unwrap().trim().parse().unwrap()
    }

    fn delete(&self) {
        ip(&["link", "del", &self.a]).unwrap();
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.a]);
    }
}

fn sources(uevents: bool, rtnetlink: bool, recv_buffer_bytes: usize, capacity: usize) -> EventConfig {
    EventConfig {
        kernel_uevents: uevents,
        rtnetlink,
        signals: false,
        reconcile_interval: None,
        kernel_timer: false,
        recv_buffer_bytes,
        channel_capacity: capacity,
        watch_files: Vec::new(),
        watch_config: None,
    }
}

type Wanted<'a> = (String, Box<dyn Fn(&Trigger) -> bool + 'a>);

/// Receives until every wanted trigger has come, in any order, within [`PATIENCE`]; on timeout,
/// fails naming what is missing and listing what came instead.
async fn wait_for_all(rx: &mut Receiver<Trigger>, mut wanted: Vec<Wanted<'_>>) {
    let mut seen = Vec::new();
    let done = timeout(PATIENCE, async {
        while !wanted.is_empty() {
            let Some(trigger) = rx.recv().await else { return false };
            let before = wanted.len();
            wanted.retain(|(_, matches)| !matches(&trigger));
            if wanted.len() == before {
                seen.push(trigger);
            }
        }
        true
    })
    .await;
    if done != Ok(true) {
        let missing: Vec<_> = wanted.iter().map(|(what, _)| what).collect();
        panic!("within {PATIENCE:?} no {missing:?}; other triggers seen: {seen:#?}");
    }
}

fn want<'a>(what: &str, matches: impl Fn(&Trigger) -> bool + 'a) -> Wanted<'a> {
    (what.to_string(), Box::new(matches))
}

fn is_net_device(trigger: &Trigger, action: UeventAction, ifname: &str) -> bool {
    matches!(trigger, Trigger::Device { subsystem, action: a, name: Some(n), devpath }
        if subsystem == "net" && *a == action && n == ifname && devpath.ends_with(&format!("/net/{ifname}")))
}

#[tokio::test]
async fn kernel_uevents_report_veth_add_and_remove() {
    if skip_unless_root("kernel_uevents_report_veth_add_and_remove") {
        return;
    }
    let (_sources, mut rx) = EventSources::start(&sources(true, false, 16 << 20, 4096)).unwrap();
    let pair = VethPair::create("ue");
    let expect = |action: UeventAction| -> Vec<Wanted<'_>> {
        [&pair.a, &pair.b]
            .into_iter()
            .map(|name| {
                let action = action.clone();
                want(&format!("net {action:?} of {name}"), move |t| is_net_device(t, action.clone(), name))
            })
            .collect()
    };
    wait_for_all(&mut rx, expect(UeventAction::Add)).await;
    pair.delete();
    wait_for_all(&mut rx, expect(UeventAction::Remove)).await;
}

#[tokio::test]
async fn rtnetlink_reports_link_up_and_deletion() {
    if skip_unless_root("rtnetlink_reports_link_up_and_deletion") {
        return;
    }
    let (_sources, mut rx) = EventSources::start(&sources(false, true, 16 << 20, 4096)).unwrap();
    let pair = VethPair::create("rt");
    let ifindex = pair.ifindex();
    let link = |what: &str, up: bool| {
        let name = Some(pair.a.clone());
        vec![want(what, move |t| *t == Trigger::Link { ifindex, name: name.clone(), up })]
    };
    wait_for_all(&mut rx, link("link message of the new veth, down", false)).await;
    ip(&["link", "set", &pair.a, "up"]).unwrap();
    wait_for_all(&mut rx, link("link message with IFF_UP", true)).await;
    pair.delete();
    let deleted = move |t: &Trigger| matches!(t, Trigger::Link { ifindex: i, up: false, .. } if *i == ifindex);
    wait_for_all(&mut rx, vec![want("link deletion", deleted)]).await;
}

/// With a minimal socket buffer and a consumer that does not read, a flood of uevents must
/// overflow the socket, the overflow must reach the consumer as `Trigger::Overflow`, and the
/// source must keep delivering events afterwards.
#[tokio::test]
async fn uevent_overflow_becomes_an_overflow_trigger() {
    if skip_unless_root("uevent_overflow_becomes_an_overflow_trigger") {
        return;
    }
    let (_sources, mut rx) = EventSources::start(&sources(true, false, 1, 1)).unwrap();
    let pair = VethPair::create("of");
    let uevent = format!("/sys/class/net/{}/uevent", pair.a);
    for _ in 0..500 {
        fs::write(&uevent, "change").unwrap();
    }
    wait_for_all(&mut rx, vec![want("overflow", |t| *t == Trigger::Overflow)]).await;
    // The source carries on after an overflow: a later event still arrives.
    while rx.try_recv().is_ok() {}
    fs::write(&uevent, "change").unwrap();
    let name = pair.a.clone();
    let later_change = move |t: &Trigger| is_net_device(t, UeventAction::Change, &name);
    wait_for_all(&mut rx, vec![want("change after the overflow", later_change)]).await;
}

/// The same for rtnetlink: link flaps while nobody reads.
#[tokio::test]
async fn rtnetlink_overflow_becomes_an_overflow_trigger() {
    if skip_unless_root("rtnetlink_overflow_becomes_an_overflow_trigger") {
        return;
    }
    let (_sources, mut rx) = EventSources::start(&sources(false, true, 1, 1)).unwrap();
    let pair = VethPair::create("ro");
    for i in 0..200 {
        ip(&["link", "set", &pair.a, if i % 2 == 0 { "up" } else { "down" }]).unwrap();
    }
    wait_for_all(&mut rx, vec![want("overflow", |t| *t == Trigger::Overflow)]).await;
    // The source carries on after an overflow: the next change still arrives.
    while rx.try_recv().is_ok() {}
    ip(&["link", "set", &pair.a, "up"]).unwrap();
    let (ifindex, name) = (pair.ifindex(), Some(pair.a.clone()));
    let up = move |t: &Trigger| *t == Trigger::Link { ifindex, name: name.clone(), up: true };
    wait_for_all(&mut rx, vec![want("link up after the overflow", up)]).await;
}
