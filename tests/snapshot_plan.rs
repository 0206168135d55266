//! Issue 3 acceptance: `irqwise snapshot OUT` of the machine the test runs on, then
//! `irqwise --root OUT plan --json` plans exactly what `irqwise plan --json` plans on `/`.

#[path = "common/acceptance.rs"]
mod acceptance;

use acceptance::*;
use serde_json::Value;

/// The parts of a plan that must survive the copy: per device its identity, node, strategy and
/// rules; per IRQ its identity, role, managed flag, current and desired sets and action.
fn essence(plan: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for d in plan["devices"].as_array().unwrap() {
        let bdf = d["bdf"].as_str().unwrap().to_string();
        for key in ["class", "driver", "name", "node", "strategy", "rules"] {
            out.push((format!("{bdf} {key}"), d[key].clone()));
        }
        for p in irqs(d) {
            let irq = &p["irq"];
            for key in ["name", "role", "queue", "managed", "current", "desired", "action", "mismatch"] {
                out.push((format!("{bdf} irq {irq} {key}"), p[key].clone()));
            }
        }
    }
    out
}

#[test]
fn plan_on_a_snapshot_of_this_machine_equals_the_live_plan() {
    let out = tempfile::tempdir().unwrap();
    let snap = out.path().join("snap");
    let config = empty_config();
    let text = run_ok(std::path::Path::new("/"), config.path(), &["snapshot", snap.to_str().unwrap()]);
    assert!(text.contains("use it with: irqwise --root"), "{text}");
    let copied = plan_json(&snap, config.path());
    let live = plan_json(std::path::Path::new("/"), config.path());
    assert_eq!(copied["kernel"], live["kernel"]);
    let (c, l) = (essence(&copied), essence(&live));
    // A live affinity may move between the two reads (irqbalance, a driver): then its current
    // set and so its action may differ, never the device, the desired set or anything else.
    let moved: Vec<&String> =
        c.iter().zip(&l).filter(|(a, b)| a.0.ends_with(" current") && a != b).map(|(a, _)| &a.0).collect();
    assert_eq!(c.len(), l.len(), "same devices and IRQs");
    for (a, b) in c.iter().zip(&l) {
        let irq_of = |k: &str| k.rsplit_once(' ').map(|(p, _)| format!("{p} current"));
        if a.0.ends_with(" action") && moved.contains(&&irq_of(&a.0).unwrap()) {
            continue;
        }
        if a.0.ends_with(" current") && moved.contains(&&a.0) {
            continue;
        }
        assert_eq!(a, b);
    }
    assert!(moved.len() * 2 <= c.len().max(1), "most IRQs did not move: {moved:?}");
    eprintln!("{} plan facts compared, {} devices", c.len(), live["devices"].as_array().unwrap().len());
}
