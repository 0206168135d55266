//! `irqwise snapshot OUT`: the sysfs and procfs files irqwise reads, copied into a tree that
//! `--root` plans on another machine.

use std::path::Path;

use super::CliError;
use crate::sysfs::Root;

/// `irqwise snapshot OUT`.
pub fn snapshot(root: &Root, out: &Path) -> Result<String, CliError> {
    let report = crate::snapshot::snapshot(root, out).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut text = format!(
        "snapshot of {} written to {}: {} files, {} links, {} directories, {} skipped\n",
        root.base().display(),
        out.display(),
        report.files_copied,
        report.links_created,
        report.dirs_created,
        report.skipped.len()
    );
    for s in &report.skipped {
        text.push_str(&format!("skipped {}: {}\n", s.path.display(), s.reason));
    }
    if let Some(why) = &report.netdev_not_kept {
        text.push_str(&format!(
            "note: the kernel's netdev netlink answers are not in it ({why}): a plan of it reads queues by name\n"
        ));
    }
    text.push_str(&format!("use it with: irqwise --root {} plan\n", out.display()));
    Ok(text)
}
