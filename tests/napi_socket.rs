//! `napi-set` and `napi-get` of one instance against this machine's kernel: a veth pair with
//! GRO on has a real NAPI instance per receive queue (6.13 and later give its mitigation), so
//! the socket the applier uses is proven on the real family, not a stand-in. Needs root, `ip`
//! and `ethtool` (CI has them); skipped otherwise.

#[path = "common/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;

use irqwise::apply::napi_socket::NapiSocket;
use irqwise::devices::discover::netdev_netlink::capture_netdev;
use irqwise::devices::napi::{NapiInstance, NapiSettings, NapiSlot, NapiThreaded};

fn run(tool: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(tool).args(args).output().map_err(|e| format!("cannot run {tool} {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{tool} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A veth pair with GRO on (its NAPI instances), deleted on drop.
struct Veth {
    a: String,
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = run("ip", &["link", "del", &self.a]);
    }
}

/// The pair and the ifindex of its first end, or why this machine cannot make one.
fn veth_with_napi(tag: &str) -> Result<(Veth, u32), String> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1));
    if euid != Some("0") {
        return Err("needs root to create veth links and write NAPI settings".into());
    }
    let id = std::process::id();
    let (a, b) = (format!("iw{tag}{id}a"), format!("iw{tag}{id}b"));
    let _ = run("ip", &["link", "del", &a]);
    run("ip", &["link", "add", &a, "numrxqueues", "2", "type", "veth", "peer", "name", &b, "numrxqueues", "2"])?;
    let veth = Veth { a: a.clone() };
    run("ip", &["link", "set", &a, "up"])?;
    run("ip", &["link", "set", &b, "up"])?;
    run("ethtool", &["-K", &a, "gro", "on"])?;
    let ifindex = fs::read_to_string(format!("/sys/class/net/{a}/ifindex"))
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("ifindex of {a}: {e}"))?;
    Ok((veth, ifindex))
}

/// The instances of `ifindex` as a dump of the family reports them.
fn instances(ifindex: u32) -> Vec<NapiInstance> {
    let report = capture_netdev().expect("the netdev family answers").report().expect("its answer reads");
    report.napis.into_iter().filter(|n| n.ifindex == ifindex).collect()
}

#[test]
fn napi_set_writes_what_napi_get_reads_back_and_refusals_are_typed() {
    let test = "napi_set_writes_what_napi_get_reads_back_and_refusals_are_typed";
    let (veth, ifindex) = match veth_with_napi("ns") {
        Ok(v) => v,
        Err(why) => return skip::skip(test, &why),
    };
    let found = instances(ifindex);
    let Some(first) = found.first() else {
        return skip::skip(test, "this kernel gives a veth with GRO on no NAPI instance");
    };
    if first.settings.defer_hard_irqs.is_none() {
        return skip::skip(test, "this kernel's napi-get has no defer-hard-irqs (it came with 6.13)");
    }
    let mut socket = NapiSocket::open().expect("the netdev family opens");
    let want = NapiSettings {
        defer_hard_irqs: Some(7),
        gro_flush_timeout: Some(50_000),
        irq_suspend_timeout: Some(2_000_000),
    };
    for n in &found {
        socket.set(n.id, &want, None).unwrap_or_else(|e| panic!("napi-set of {}: {e}", n.id));
        let back = socket.get(n.id).unwrap_or_else(|e| panic!("napi-get of {}: {e}", n.id));
        assert_eq!(back.settings, want, "instance {} of {}", n.id, veth.a);
        assert_eq!(back.ifindex, ifindex);
    }
    // The dump says the same as the one-instance answers.
    assert!(instances(ifindex).iter().all(|n| n.settings == want), "{:?}", instances(ifindex));
    // One key at a time leaves the others.
    socket.set(first.id, &NapiSettings { defer_hard_irqs: Some(0), ..NapiSettings::default() }, None).unwrap();
    let back = socket.get(first.id).unwrap();
    assert_eq!(back.settings, NapiSettings { defer_hard_irqs: Some(0), ..want });
    // Threaded per instance, where the kernel says it (6.17 and later).
    if back.threaded.is_some() {
        socket.set(first.id, &NapiSettings::default(), Some(NapiThreaded::Enabled)).unwrap();
        let back = socket.get(first.id).unwrap();
        assert_eq!(back.threaded, Some(NapiThreaded::Enabled));
        assert!(back.pid.is_some(), "a threaded instance has a thread: {back:?}");
        socket.set(first.id, &NapiSettings::default(), Some(NapiThreaded::Disabled)).unwrap();
    }
    // A value the kernel's policy refuses (defer-hard-irqs stops at S32_MAX): typed, not gone.
    let too_big = NapiSettings { defer_hard_irqs: Some(u32::MAX), ..NapiSettings::default() };
    let refused = socket.set(first.id, &too_big, None).expect_err("the kernel refuses u32::MAX");
    assert!(!refused.is_gone() && refused.to_string().contains("napi-set"), "{refused}");
    // The instance gone: ENOENT, said as gone.
    let ids: Vec<u32> = found.iter().map(|n| n.id).collect();
    drop(veth);
    let gone = socket.get(ids[0]).expect_err("the veth is deleted");
    assert!(gone.is_gone(), "{gone}");
    assert!(socket.set(ids[0], &want, None).expect_err("gone").is_gone());
}

#[test]
fn a_link_flap_renumbers_the_instances_and_each_keeps_its_slot() {
    let test = "a_link_flap_renumbers_the_instances_and_each_keeps_its_slot";
    let (veth, ifindex) = match veth_with_napi("rs") {
        Ok(v) => v,
        Err(why) => return skip::skip(test, &why),
    };
    let slots = || -> BTreeMap<NapiSlot, u32> {
        let report = capture_netdev().expect("the netdev family answers").report().expect("its answer reads");
        report.by_slot().into_iter().filter(|((i, _), _)| *i == ifindex).map(|((_, slot), id)| (slot, id)).collect()
    };
    let before = slots();
    if before.is_empty() {
        return skip::skip(test, "this kernel gives a veth with GRO on no NAPI instance");
    }
    run("ip", &["link", "set", &veth.a, "down"]).unwrap();
    run("ip", &["link", "set", &veth.a, "up"]).unwrap();
    let after = slots();
    // The daemon keeps the settings it gives back by slot: the same slots after the reset, each
    // served by a new instance (6.18's veth renumbers on every flap).
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{before:?} -> {after:?}");
    assert!(before.values().all(|id| !after.values().any(|a| a == id)), "renumbered: {before:?} -> {after:?}");
}
