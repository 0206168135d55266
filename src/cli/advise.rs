//! `irqwise advise boot [--json]`: the kernel command line for this machine and configuration,
//! and what the running one says against it (exit 1 then, for a fleet's image checks).

use std::collections::BTreeSet;

use super::{to_json_text, CliError, Outcome};
use crate::advise::{advise_boot, render_boot_advice};
use crate::config::{load_config, ConfigPaths};
use crate::pass::plan_pass;
use crate::sysfs::Root;
use crate::topology::isolation::cmdline_words;

/// `/etc/os-release`'s `ID` under `root` (then `/usr/lib/os-release`'s).
fn os_id(root: &Root) -> Option<String> {
    ["etc/os-release", "usr/lib/os-release"].iter().find_map(|rel| {
        let text = root.read_small_optional(*rel).ok().flatten()?;
        text.lines().find_map(|l| Some(l.strip_prefix("ID=")?.trim_matches('"').to_string()))
    })
}

/// `irqwise advise boot [--json]`: exit 0, or 1 when the running command line contradicts the
/// configuration.
pub fn advise(root: &Root, paths: &ConfigPaths, json: bool) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    let pass = plan_pass(root, &config, &BTreeSet::new())?;
    let cmdline = root.read_small_optional("proc/cmdline").ok().flatten().unwrap_or_default();
    let words = cmdline_words(&cmdline);
    let advice = advise_boot(
        &pass.plan,
        &pass.topology.online,
        &pass.forbidden,
        &words,
        config.global.respect_isolation,
        os_id(root).as_deref(),
        &pass.kernel_isolation,
    );
    let exit = u8::from(!advice.contradictions.is_empty());
    let text = if json { to_json_text(&advice) } else { render_boot_advice(&advice) };
    Ok(Outcome::with_exit(text, exit))
}
