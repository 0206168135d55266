//! `irqwise import-irqbalance [FILE]`: irqbalance's settings as an irqwise drop-in on stdout.

use std::path::Path;

use super::{CliError, Outcome};
use crate::devices::discover::discover_devices;
use crate::import_irqbalance::{translate, IrqOwner};
use crate::sysfs::Root;
use crate::topology::discover::isolation::IRQBALANCE_FILES;
use crate::topology::discover::read_topology;

/// The most bytes of an irqbalance environment file read (a real one is a few kilobytes).
const IRQBALANCE_FILE_LIMIT: u64 = 1 << 20;

/// Translates `file` (default: the first of [`IRQBALANCE_FILES`] under `root`; stderr names any
/// other that exists too). IRQ numbers of `--banirq` are looked up among this machine's devices
/// (read only then, once); when they cannot be read, each is left untranslated and stderr says
/// why. Exit 0, or 3 when some setting could not be
/// translated (the drop-in then lists it in comments).
pub fn import_irqbalance(root: &Root, file: Option<&Path>) -> Result<Outcome, CliError> {
    let mut stderr = String::new();
    let (path, text) = if let Some(f) = file {
        // Capped and never blocking, like every file irqwise reads: a FIFO or /dev/zero named
        // by mistake is an error at once.
        let bytes = crate::sysfs::read_regular_file(f, IRQBALANCE_FILE_LIMIT)
            .map_err(|e| CliError::Failed(format!("{}: {e}; expected irqbalance's environment file", f.display())))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        (f.to_path_buf(), text)
    } else {
        let found = IRQBALANCE_FILES.iter().find(|f| root.exists(f)).ok_or_else(|| {
            CliError::Usage(format!(
                "no irqbalance settings: neither {} nor {} exists; name the file: irqwise import-irqbalance FILE",
                root.path(IRQBALANCE_FILES[0]).display(),
                root.path(IRQBALANCE_FILES[1]).display()
            ))
        })?;
        let text = root.read_string(found).map_err(|e| CliError::Failed(e.to_string()))?;
        for other in IRQBALANCE_FILES.iter().filter(|f| *f != found && root.exists(f)) {
            stderr.push_str(&format!(
                "warning: {} exists too and is not translated: run irqwise import-irqbalance {0}\n",
                root.path(other).display()
            ));
        }
        (root.path(found), text)
    };
    // Devices are read only when a --banirq needs its owner, and once.
    let owners = std::cell::OnceCell::new();
    let owner = |irq: u32| {
        let found: &Result<Vec<(u32, IrqOwner)>, String> = owners.get_or_init(|| irq_owners(root));
        found.as_ref().ok()?.iter().find(|(i, _)| *i == irq).map(|(_, o)| o.clone())
    };
    let t = translate(&text, &path.display().to_string(), &owner);
    if let Some(Err(e)) = owners.get() {
        stderr.push_str(&format!("warning: devices not readable ({e}): --banirq left untranslated\n"));
    }
    if t.untranslated > 0 {
        stderr.push_str(&format!(
            "{} setting(s) not translated: see the comments at the end of the drop-in\n",
            t.untranslated
        ));
    }
    Ok(Outcome { text: t.dropin, stderr, exit: if t.untranslated > 0 { 3 } else { 0 } })
}

/// Every IRQ of this machine's devices with the device that owns it.
fn irq_owners(root: &Root) -> Result<Vec<(u32, IrqOwner)>, String> {
    let topo = read_topology(root).map_err(|e| e.to_string())?;
    let discovery = discover_devices(root, &topo).map_err(|e| e.to_string())?;
    Ok(discovery
        .devices
        .iter()
        .flat_map(|d| {
            let owner = IrqOwner { pci: d.bdf.clone(), driver: d.driver.clone(), name: d.name.clone() };
            d.vectors.iter().map(move |v| (v.irq, owner.clone()))
        })
        .collect())
}
