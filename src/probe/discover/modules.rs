//! The modules of the NIC drivers present, below a root: found through `modules.dep` (or, without
//! it, by a bounded walk of `kernel/drivers/net` and a few more) in `lib/modules/RELEASE` or
//! `usr/lib/modules/RELEASE`, or named built in by `modules.builtin`; each read (`.ko`, `.ko.xz`,
//! `.ko.zst`, capped before and after decompression) for the symbols of [`IMPORTS`] it imports.

use std::collections::{BTreeMap, BTreeSet};

use crate::kernel::facts::{DriverFacts, ModuleFacts, ModuleState, IMPORTS};
use crate::probe::decompress::{decompress, Compression};
use crate::probe::elf::Elf;
use crate::sysfs::Root;

/// Where module trees are, relative to a root, in the order looked at.
const MODULE_TREES: [&str; 2] = ["lib/modules", "usr/lib/modules"];

/// The largest `modules.dep` or `modules.builtin` read (a distribution's are below 1 MB).
const INDEX_LIMIT: u64 = 16 << 20;
/// The largest module file read, and the largest it may decompress to (the biggest NIC drivers
/// are a few MB stripped; a debug build's with DWARF can be tens).
const MODULE_LIMIT: u64 = 128 << 20;
const UNPACKED_LIMIT: usize = 256 << 20;
/// Directories listed at most by the walk that stands in for a missing `modules.dep`.
const WALK_LIMIT: usize = 4096;

/// Modules beside the one a PCI driver is: the network driver of a virtio NIC (its PCI function
/// is bound to `virtio-pci`), mlx4's Ethernet half.
const COMPANIONS: [(&str, &str); 2] = [("virtio-pci", "virtio_net"), ("mlx4_core", "mlx4_en")];

/// Where the module tree is (relative to the root, or why none) and each driver's modules, for
/// the NIC `drivers` present; what could not be read is added to `warnings`.
pub(super) fn read_drivers(
    root: &Root,
    release: Option<&str>,
    drivers: &BTreeSet<String>,
    warnings: &mut Vec<String>,
) -> (Result<String, String>, BTreeMap<String, DriverFacts>) {
    let names: BTreeMap<&String, Vec<String>> = drivers.iter().map(|d| (d, modules_of(root, d))).collect();
    let dir = module_tree(root, release);
    let wanted: BTreeSet<&str> = names.values().flatten().map(String::as_str).collect();
    let found = match &dir {
        Ok(dir) => find_modules(root, dir, &wanted, warnings),
        Err(_) => {
            wanted.iter().map(|m| (m.to_string(), ModuleState::Missing { why: "no module tree".into() })).collect()
        }
    };
    let facts = names
        .into_iter()
        .map(|(driver, modules)| {
            let modules = modules
                .into_iter()
                .map(|name| {
                    let state =
                        found.get(&name).cloned().unwrap_or(ModuleState::Missing { why: "not looked for".into() });
                    ModuleFacts { name, state }
                })
                .collect();
            (driver.clone(), DriverFacts { modules })
        })
        .collect();
    (dir, facts)
}

/// The modules of PCI driver `driver`: the module its driver directory links to (else its name
/// with `-` as `_`), and its companions.
fn modules_of(root: &Root, driver: &str) -> Vec<String> {
    let own = root
        .link_name(format!("sys/bus/pci/drivers/{driver}/module"))
        .filter(|m| plain_name(m))
        .unwrap_or_else(|| driver.replace('-', "_"));
    let mut out = vec![own];
    for (_, companion) in COMPANIONS.iter().filter(|(d, _)| *d == driver) {
        out.push((*companion).to_string());
    }
    out
}

/// Whether `name` is one path component (no `/`, not `.` or `..`, not empty).
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// The module tree of `release` below the root (`lib/modules/RELEASE`, else
/// `usr/lib/modules/RELEASE`), or why there is none.
fn module_tree(root: &Root, release: Option<&str>) -> Result<String, String> {
    let release = release.map(str::trim).ok_or("no kernel release (proc/sys/kernel/osrelease)")?;
    if !plain_name(release) {
        return Err(format!("kernel release {release:?} is not a directory name"));
    }
    MODULE_TREES
        .iter()
        .map(|tree| format!("{tree}/{release}"))
        .find(|dir| root.is_dir(dir))
        .ok_or_else(|| format!("no {}/{release} or {}/{release} below the root", MODULE_TREES[0], MODULE_TREES[1]))
}

/// Each of `wanted` in module tree `dir`: read, built in, or missing.
fn find_modules(
    root: &Root,
    dir: &str,
    wanted: &BTreeSet<&str>,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, ModuleState> {
    let mut index = read_index(root, &format!("{dir}/modules.dep"), warnings).map_or_else(
        || walk_net_drivers(root, dir, wanted),
        |text| files_in_dep(&text, wanted).into_iter().map(|(m, f)| (m, format!("{dir}/{f}"))).collect(),
    );
    let builtin = read_index(root, &format!("{dir}/modules.builtin"), warnings)
        .map(|text| builtins(&text, wanted))
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for &name in wanted {
        let state = if let Some(path) = index.remove(name) {
            read_module(root, &path, warnings)
        } else if builtin.contains(name) {
            ModuleState::Builtin
        } else {
            ModuleState::Missing { why: format!("neither a module file in {dir} nor built in") }
        };
        out.insert(name.to_string(), state);
    }
    out
}

/// A module index's text; `None` when absent (or unreadable: then a warning).
fn read_index(root: &Root, rel: &str, warnings: &mut Vec<String>) -> Option<String> {
    match root.read_bytes_limited_optional(rel, INDEX_LIMIT) {
        Ok(bytes) => bytes.map(|b| String::from_utf8_lossy(&b).into_owned()),
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    }
}

/// The file (relative to the module tree) of each of `wanted` in `modules.dep` text: its lines
/// are `kernel/drivers/net/ethernet/intel/ice/ice.ko.xz: dep dep...`.
fn files_in_dep(text: &str, wanted: &BTreeSet<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((file, _)) = line.split_once(':') else { continue };
        let base = file.rsplit('/').next().unwrap_or(file);
        if let Some((name, _)) = Compression::of_module_file(base) {
            if wanted.contains(name.as_str()) && !file.split('/').any(|c| c == "..") {
                out.entry(name).or_insert_with(|| file.to_string());
            }
        }
    }
    out
}

/// Which of `wanted` `modules.builtin` names (`kernel/drivers/net/virtio_net.ko` lines).
fn builtins(text: &str, wanted: &BTreeSet<&str>) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| Compression::of_module_file(l.trim().rsplit('/').next().unwrap_or("")))
        .map(|(name, _)| name)
        .filter(|name| wanted.contains(name.as_str()))
        .collect()
}

/// Where the walk that stands in for `modules.dep` looks, in the module tree: the network and
/// virtio drivers, and out-of-tree modules.
const WALKED: [&str; 4] = ["kernel/drivers/net", "kernel/drivers/virtio", "updates", "extra"];

/// Without `modules.dep`: `wanted` modules' files under the [`WALKED`] directories of `dir`, found
/// by a walk of at most [`WALK_LIMIT`] directories.
fn walk_net_drivers(root: &Root, dir: &str, wanted: &BTreeSet<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut queue: Vec<String> = WALKED.iter().rev().map(|w| format!("{dir}/{w}")).collect();
    let mut listed = 0;
    while let Some(d) = queue.pop() {
        listed += 1;
        if listed > WALK_LIMIT {
            break;
        }
        for name in root.list_dir_optional(&d).unwrap_or_default() {
            match Compression::of_module_file(&name) {
                Some((module, _)) if wanted.contains(module.as_str()) => {
                    out.entry(module).or_insert_with(|| format!("{d}/{name}"));
                }
                Some(_) => {}
                None if root.is_dir(format!("{d}/{name}")) => queue.push(format!("{d}/{name}")),
                None => {}
            }
        }
    }
    out
}

/// Module file `rel` read, decompressed and searched for the imports irqwise looks for; a file
/// that cannot be is [`ModuleState::Unreadable`] with a warning naming it.
fn read_module(root: &Root, rel: &str, warnings: &mut Vec<String>) -> ModuleState {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    let how = Compression::of_module_file(base).map_or(Compression::None, |(_, how)| how);
    let read = root
        .read_bytes_limited_optional(rel, MODULE_LIMIT)
        .map_err(|e| e.to_string())
        .and_then(|b| b.ok_or_else(|| format!("{}: listed in modules.dep but absent", root.path(rel).display())))
        .and_then(|bytes| {
            let unpacked = decompress(&bytes, how, UNPACKED_LIMIT).map_err(|e| at(root, rel, &e))?;
            let elf = Elf::parse(&unpacked).map_err(|e| at(root, rel, &e.to_string()))?;
            let undefined: BTreeSet<&str> =
                elf.undefined_symbols().map_err(|e| at(root, rel, &e.to_string()))?.into_iter().collect();
            Ok(IMPORTS.into_iter().filter(|i| i.symbols().iter().any(|s| undefined.contains(s))).collect())
        });
    match read {
        Ok(imports) => ModuleState::Read { path: rel.to_string(), imports },
        Err(error) => {
            warnings.push(format!("{error}; its driver's imports unknown"));
            ModuleState::Unreadable { path: rel.to_string(), error }
        }
    }
}

/// `problem` of module file `rel`, naming it.
fn at(root: &Root, rel: &str, problem: &str) -> String {
    format!("{}: {problem}", root.path(rel).display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::facts::{FactSource, Import};
    use crate::probe::elf::tests::tiny_elf;

    fn write(root: &std::path::Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn drivers(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn crafted_modules_are_found_through_modules_dep_and_builtin() {
        let d = tempfile::tempdir().unwrap();
        let tree = "usr/lib/modules/7.2.13-amd64";
        let ice = tiny_elf(false, &["ice_probe"], &["netif_set_affinity_auto", "netif_set_xps_queue"], (".x", b""));
        write(d.path(), &format!("{tree}/kernel/drivers/net/ethernet/intel/ice/ice.ko"), &ice);
        let ena = tiny_elf(true, &[], &["__irq_apply_affinity_hint"], (".x", b""));
        write(d.path(), &format!("{tree}/kernel/drivers/net/ethernet/amazon/ena/ena.ko"), &ena);
        write(d.path(), &format!("{tree}/kernel/drivers/net/ethernet/broken/gve.ko"), b"\x7fELF but cut");
        write(
            d.path(),
            &format!("{tree}/modules.dep"),
            b"kernel/drivers/net/ethernet/intel/ice/ice.ko: kernel/lib/x.ko\n\
              kernel/drivers/net/ethernet/amazon/ena/ena.ko:\n\
              kernel/drivers/net/ethernet/broken/gve.ko:\n",
        );
        write(d.path(), &format!("{tree}/modules.builtin"), b"kernel/drivers/net/virtio_net.ko\n");
        let root = Root::new(d.path());
        let mut warnings = Vec::new();
        let (dir, facts) = read_drivers(
            &root,
            Some("7.2.13-amd64"),
            &drivers(&["ice", "ena", "gve", "virtio-pci", "r8169"]),
            &mut warnings,
        );
        assert_eq!(dir.as_deref(), Ok(tree));
        let ice = &facts["ice"];
        assert_eq!(ice.imports(Import::AffinityAuto).value(), Some(true));
        assert_eq!(ice.imports(Import::XpsQueue).value(), Some(true));
        let no_hint = ice.imports(Import::AffinityHint);
        assert_eq!((no_hint.value(), no_hint.source()), (Some(false), FactSource::Module));
        assert_eq!(facts["ena"].imports(Import::AffinityHint).value(), Some(true), "a big-endian module");
        assert_eq!(facts["ena"].imports(Import::AffinityAuto).value(), Some(false));
        // virtio-pci: its own module (virtio_pci) is nowhere, virtio_net is built in.
        let virtio = &facts["virtio-pci"];
        assert_eq!(virtio.modules.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["virtio_pci", "virtio_net"]);
        assert_eq!(virtio.modules[1].state, ModuleState::Builtin);
        assert_eq!(virtio.imports(Import::XpsQueue).source(), FactSource::Unknown);
        assert!(matches!(facts["r8169"].modules[0].state, ModuleState::Missing { .. }));
        // The cut module: unknown, and one warning naming it.
        assert!(matches!(facts["gve"].modules[0].state, ModuleState::Unreadable { .. }));
        assert_eq!(facts["gve"].imports(Import::AffinityHint).value(), None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("gve.ko: not an ELF file"), "{}", warnings[0]);
    }

    #[test]
    fn without_modules_dep_the_net_drivers_are_walked_and_without_a_tree_nothing_is_read() {
        let d = tempfile::tempdir().unwrap();
        let tree = "lib/modules/6.12.9";
        let ice = tiny_elf(false, &[], &["netif_set_affinity_auto"], (".x", b""));
        write(d.path(), &format!("{tree}/kernel/drivers/net/ethernet/intel/ice/ice.ko"), &ice);
        let root = Root::new(d.path());
        let mut warnings = Vec::new();
        let (_, facts) = read_drivers(&root, Some("6.12.9"), &drivers(&["ice"]), &mut warnings);
        assert_eq!(
            facts["ice"].imports(Import::AffinityAuto).value(),
            Some(true),
            "a 6.12 backport: the import decides"
        );
        for release in [None, Some("6.1.0"), Some("../../etc"), Some("..")] {
            let (dir, facts) = read_drivers(&root, release, &drivers(&["ice"]), &mut warnings);
            assert!(dir.is_err(), "{release:?}");
            assert!(matches!(facts["ice"].modules[0].state, ModuleState::Missing { .. }), "{release:?}");
        }
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn modules_dep_lines_name_module_files_by_their_normalised_names() {
        let wanted: BTreeSet<&str> = ["mlx5_core", "ice"].into();
        let text = "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5-core.ko.zst: a.ko\n\
                    garbage line\n../../../etc/ice.ko:\nupdates/dkms/ice.ko.xz:\nkernel/ice.ko:\n";
        let files = files_in_dep(text, &wanted);
        assert_eq!(files["mlx5_core"], "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5-core.ko.zst");
        assert_eq!(files["ice"], "updates/dkms/ice.ko.xz", "the first line that names it, never one going up");
    }
}
