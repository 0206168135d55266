//! `irqwise topology [--json]`: the CPUs, nodes and isolation sources as irqwise reads them, and
//! what the running kernel does, each fact with its source. The isolation is the command line's
//! as the running kernel applies it (a flag it lacks skipped, a setting it ignores left out).

use serde_json::json;

use super::{to_json_text, CliError};
use crate::config::{load_config, Config, ConfigPaths};
use crate::devices::discover::discover_devices;
use crate::devices::DeviceClass;
use crate::kernel::boot_isolation::{as_the_kernel_applies, present_at_parse};
use crate::plan::held_claims::hold_claims;
use crate::probe::discover::read_kernel_facts;
use crate::probe::view::{facts_json, facts_table};
use crate::sysfs::Root;
use crate::topology::discover::isolation::read_isolation_configured;
use crate::topology::discover::kubelet::KubeletMemory;
use crate::topology::discover::read_topology_with_warnings;
use crate::topology::view::{isolation_json, isolation_table, Applied};

/// `irqwise topology [--json]`: the topology, then every isolation source with where it came
/// from and whether the configuration at `paths` applies it (its defaults when it cannot be
/// loaded, with a warning saying so), then the kernel's facts (its BTF, its NIC drivers'
/// modules, its version) with their sources.
pub fn topology(root: &Root, paths: &ConfigPaths, json: bool) -> Result<String, CliError> {
    let (topo, warnings) = read_topology_with_warnings(root)?;
    let mut warnings: Vec<String> = warnings.iter().map(std::string::ToString::to_string).collect();
    let config = match load_config(root, paths) {
        Ok(config) => config,
        Err(e) => {
            warnings.push(format!("configuration not usable ({e}); isolation shown with the default settings"));
            Config::default()
        }
    };
    let kubelet = config.global.kubelet_cpu_manager_state.as_deref();
    let (isolation, isolation_warnings) =
        read_isolation_configured(root, &topo, kubelet, &mut KubeletMemory::default());
    warnings.extend(isolation_warnings.iter().map(std::string::ToString::to_string));
    // A claim that cannot hold is no source: it is named among the warnings.
    let (isolation, refused) = hold_claims(&isolation, &config, &topo);
    warnings.extend(refused.iter().map(|r| format!("{}: the claim is refused", r.reason)));
    // The NIC drivers present, whose modules say what they do to masks.
    let drivers = match discover_devices(root, &topo) {
        Ok(found) => {
            found.devices.iter().filter(|d| d.class == DeviceClass::Nic).filter_map(|d| d.driver.clone()).collect()
        }
        Err(e) => {
            warnings.push(format!("{e}; no NIC driver's module probed"));
            std::collections::BTreeSet::new()
        }
    };
    let (facts, probe_warnings) = read_kernel_facts(root, topo.kernel.as_deref(), &drivers);
    warnings.extend(probe_warnings);
    // The command line's isolation as this kernel applies it, and where that differs.
    let (isolation, kernel_isolation) =
        as_the_kernel_applies(&isolation, &facts, &present_at_parse(topo.arch.as_deref(), &topo.present));
    warnings.extend(kernel_isolation);
    let global = &config.global;
    let applied =
        Applied { respect_isolation: global.respect_isolation, import_banned: global.import_irqbalance_banned };
    if json {
        let mut doc = crate::topology::view::to_json(&topo);
        doc["isolation"] = isolation_json(&isolation, applied);
        doc["kernel_facts"] = facts_json(&facts);
        doc["warnings"] = json!(warnings);
        return Ok(to_json_text(&doc));
    }
    let mut text = crate::topology::view::to_table(&topo);
    text.push_str(&isolation_table(&isolation, applied));
    text.push_str(&facts_table(&facts));
    for w in &warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    Ok(text)
}
