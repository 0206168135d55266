//! `irqwise plan [--json] [--changed] [--exit-code]`: what a pass would do now, writing nothing.

use std::collections::BTreeSet;

use super::{to_json_text, CliError, Outcome};
use crate::config::{load_config, ConfigPaths};
use crate::pass::plan_pass_refined;
use crate::sysfs::Root;

/// Exit code of `plan --exit-code` when applying the plan would write something.
pub(crate) const EXIT_CHANGES_PENDING: u8 = 4;

/// How `irqwise plan` shows the plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanView {
    pub json: bool,
    /// Only placements to write and managed IRQs that differ from the prediction.
    pub changed: bool,
    /// Exit [`EXIT_CHANGES_PENDING`] when some placement is to be written.
    pub exit_code: bool,
}

/// `irqwise plan [--json] [--changed] [--exit-code]`.
pub fn plan(root: &Root, paths: &ConfigPaths, view: PlanView) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    let pass = plan_pass_refined(root, &config, &BTreeSet::new(), &super::daemon_moves(root))?;
    let plan = &pass.plan;
    let text = match (view.json, view.changed) {
        (true, true) => to_json_text(&plan.only_changes()),
        (true, false) => to_json_text(plan),
        (false, true) => plan.to_changes_table(),
        (false, false) => plan.to_table(),
    };
    let exit = if view.exit_code && plan.has_pending_writes() { EXIT_CHANGES_PENDING } else { 0 };
    Ok(Outcome { text, exit, ..Outcome::default() })
}
