//! How `irqwise topology` shows the kernel's facts: a JSON object and a few table lines, each
//! fact with its value, source and what was seen.
//!
//! Pure: both functions only look at the [`KernelFacts`] they are given.

use serde_json::{json, Value};

use crate::kernel::facts::{BtfState, DriverFacts, Fact, KernelFacts, ModuleState, IMPORTS};

/// The JSON object: `version`, `btf` (`state` and its details), `modules` (`dir` or `why`),
/// `features` (per feature: `name`, `what`, `value`, `source`, `evidence`) and `drivers` (per
/// driver: `driver`, `modules` as found, `imports` per symbol with `value`, `source`, `evidence`).
pub fn facts_json(facts: &KernelFacts) -> Value {
    let features: Vec<Value> = facts
        .features()
        .map(|(row, fact)| {
            let mut v = fact_json(fact);
            v["name"] = json!(row.name);
            v["what"] = json!(row.what);
            v
        })
        .collect();
    let drivers: Vec<Value> = facts
        .drivers
        .iter()
        .map(|(driver, d)| {
            let imports: Vec<Value> = IMPORTS
                .iter()
                .map(|&i| {
                    let mut v = fact_json(&d.imports(i));
                    v["symbol"] = json!(i.symbol());
                    v["name"] = json!(i);
                    v
                })
                .collect();
            json!({"driver": driver, "modules": d.modules, "imports": imports})
        })
        .collect();
    let (dir, why) = match &facts.modules_dir {
        Ok(dir) => (Some(dir.as_str()), None),
        Err(why) => (None, Some(why.as_str())),
    };
    json!({
        "version": facts.version,
        "btf": facts.btf,
        "modules": {"dir": dir, "why": why},
        "features": features,
        "drivers": drivers,
    })
}

/// One fact as JSON: `value` (`null` when unknown), `source`, `evidence`.
fn fact_json(fact: &Fact<bool>) -> Value {
    json!({"value": fact.value(), "source": fact.source(), "evidence": fact.evidence()})
}

/// The table: a header line saying where the facts came from, one line per feature (name, value,
/// source, evidence), one per NIC driver (what its modules import, or why unknown).
pub fn facts_table(facts: &KernelFacts) -> String {
    let btf = match &facts.btf {
        BtfState::Read { path, types } => format!("BTF {path} ({types} types)"),
        BtfState::Absent { path } => format!("no BTF at {path}"),
        BtfState::Unreadable { path, .. } => format!("BTF {path} unreadable"),
        BtfState::NotProbed => "BTF not probed".into(),
    };
    let modules = match &facts.modules_dir {
        Ok(dir) => format!("modules in {dir}"),
        Err(why) => format!("no modules: {why}"),
    };
    let version = facts.version.as_deref().unwrap_or("?");
    let mut out = format!("kernel facts (version {version}; {btf}; {modules}):\n");
    for (row, fact) in facts.features() {
        out.push_str(&format!(
            "  {:<27} {:<3} {:<8} {}\n",
            row.name,
            word(fact.value()),
            fact.source().as_str(),
            fact.evidence()
        ));
    }
    for (driver, d) in &facts.drivers {
        out.push_str(&format!("  driver {driver}: {}\n", driver_line(d)));
    }
    out
}

/// `yes`, `no` or `?`.
fn word(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

/// What a driver's modules import, by source: `imports a, b; not c (module: path)`, and what is
/// unknown with why.
fn driver_line(d: &DriverFacts) -> String {
    let (mut yes, mut no, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
    for i in IMPORTS {
        match d.imports(i).value() {
            Some(true) => yes.push(i.symbol()),
            Some(false) => no.push(i.symbol()),
            None => unknown.push(i.symbol()),
        }
    }
    let mut parts = Vec::new();
    if !yes.is_empty() {
        parts.push(format!("imports {}", yes.join(", ")));
    }
    if !no.is_empty() {
        parts.push(format!("not {}", no.join(", ")));
    }
    if !unknown.is_empty() {
        parts.push(format!("unknown {}", unknown.join(", ")));
    }
    let found: Vec<String> = d
        .modules
        .iter()
        .map(|m| match &m.state {
            ModuleState::Read { path, .. } => format!("module {path}"),
            ModuleState::Builtin => format!("{} built in", m.name),
            ModuleState::Missing { why } => format!("{}: {why}", m.name),
            ModuleState::Unreadable { path, .. } => format!("{path} unreadable"),
        })
        .collect();
    format!("{} ({})", parts.join("; "), found.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::facts::{Import, ModuleFacts};
    use crate::kernel::KernelVersion;
    use std::collections::BTreeMap;

    fn facts() -> KernelFacts {
        let ice = DriverFacts {
            modules: vec![ModuleFacts {
                name: "ice".into(),
                state: ModuleState::Read {
                    path: "lib/modules/7.2/ice.ko.xz".into(),
                    imports: vec![Import::AffinityAuto],
                },
            }],
        };
        let virtio =
            DriverFacts { modules: vec![ModuleFacts { name: "virtio_net".into(), state: ModuleState::Builtin }] };
        KernelFacts::decide(
            Some(KernelVersion { major: 7, minor: 2 }),
            BtfState::Absent { path: "/r/sys/kernel/btf/vmlinux".into() },
            |_| Fact::unknown("no BTF"),
            Ok("lib/modules/7.2".into()),
            BTreeMap::from([("ice".to_string(), ice), ("virtio-pci".to_string(), virtio)]),
        )
    }

    #[test]
    fn json_lists_every_feature_and_each_drivers_imports_with_their_sources() {
        let v = facts_json(&facts());
        assert_eq!(v["version"], "7.2");
        assert_eq!(v["btf"], json!({"state": "absent", "path": "/r/sys/kernel/btf/vmlinux"}));
        assert_eq!(v["modules"], json!({"dir": "lib/modules/7.2", "why": null}));
        let cluster = &v["features"][0];
        assert_eq!(
            (&cluster["name"], &cluster["value"], &cluster["source"]),
            (&json!("cluster-grouping"), &json!(true), &json!("version"))
        );
        let ice = &v["drivers"][0];
        assert_eq!(ice["driver"], "ice");
        assert_eq!(
            ice["modules"][0],
            json!({"name": "ice", "state": "read", "path": "lib/modules/7.2/ice.ko.xz", "imports": ["affinity-auto"]})
        );
        assert_eq!(ice["imports"][0]["symbol"], "netif_set_affinity_auto");
        assert_eq!((&ice["imports"][0]["value"], &ice["imports"][0]["source"]), (&json!(true), &json!("module")));
        assert_eq!((&ice["imports"][2]["value"], &ice["imports"][2]["source"]), (&json!(false), &json!("module")));
        let virtio = &v["drivers"][1];
        assert_eq!(
            (&virtio["imports"][0]["value"], &virtio["imports"][0]["source"]),
            (&Value::Null, &json!("unknown"))
        );
    }

    #[test]
    fn the_table_says_each_source() {
        let t = facts_table(&facts());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "kernel facts (version 7.2; no BTF at /r/sys/kernel/btf/vmlinux; modules in lib/modules/7.2):"
        );
        assert!(lines[1].starts_with("  cluster-grouping            yes version  kernel 7.2 >= 7.0"), "{t}");
        assert!(t.contains("  driver ice: imports netif_set_affinity_auto; not __irq_apply_affinity_hint, netif_set_xps_queue, irq_set_affinity_notifier (module lib/modules/7.2/ice.ko.xz)\n"), "{t}");
        assert!(t.contains("  driver virtio-pci: unknown netif_set_affinity_auto, __irq_apply_affinity_hint, netif_set_xps_queue, irq_set_affinity_notifier (virtio_net built in)\n"), "{t}");
    }
}
