//! Real 7.x kernels, as `tests/vm` captured them (`tests/data/kernels/`): every kernel-managed
//! NVMe queue of each snapshot is predicted exactly with the rules of the kernel it came from,
//! and still when the snapshot is relabelled as a kernel before 7.0 or 6.9 (issue #63): the
//! managed masks show the cluster-aware rule where they tell the rules apart, and the plan says
//! it was observed. A regression in the version rule, the observation or the offline-CPU case
//! fails here, without a VM.
//!
//! And what real kernels state of themselves (issue #63): Debian's NIC modules, fetched with apt
//! at test time, say what their drivers import whatever `osrelease` says; the host's BTF in a
//! root relabelled as 6.1 answers from BTF first.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/skip.rs"]
mod skip;

use std::path::Path;

use acceptance::*;

/// The snapshot `name` unpacked into a temporary directory.
fn unpacked(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernels").join(name);
    let ok = std::process::Command::new("tar").arg("-xzf").arg(&tar).arg("-C").arg(dir.path()).status().unwrap();
    assert!(ok.success(), "tar -xzf {}", tar.display());
    dir
}

/// (managed NVMe I/O queues, of which mismatched) in `plan --json` of `root`.
fn managed_queues(root: &Path) -> (usize, usize) {
    let cfg = empty_config();
    let plan = plan_json(root, cfg.path());
    let mut total = 0;
    let mut wrong = 0;
    for dev in plan["devices"].as_array().unwrap().iter().filter(|d| d["class"] == "nvme") {
        for irq in irqs(dev).iter().filter(|i| i["action"] == "managed" && i["role"] == "io") {
            total += 1;
            wrong += usize::from(irq["mismatch"] == true);
        }
    }
    (total, wrong)
}

#[test]
fn each_72_snapshot_is_predicted_exactly_with_its_kernels_rules() {
    for (name, queues) in SNAPSHOTS {
        let root = unpacked(name);
        assert_eq!(managed_queues(root.path()), (queues, 0), "{name}");
    }
}

/// The snapshots and their managed NVMe I/O queues.
const SNAPSHOTS: [(&str, usize); 3] =
    [("7.2-arm64-c3x4-1n.tar.gz", 32), ("7.2-amd64-nosmt.tar.gz", 24), ("7.2-amd64-maxcpus.tar.gz", 24)];

/// Each snapshot relabelled (only `osrelease` changed) to a kernel on the other side of each
/// grouping rule: 6.18 (before 7.0's cluster-aware grouping) and 6.1 (before 6.9's and 6.11's
/// heapsorts too). The managed masks show which rule the kernel applies, so every queue is still
/// predicted exactly (issue #63: on main the arm64 snapshot as 6.1 mispredicted every queue whose
/// cluster grouping differs).
#[test]
fn each_snapshot_relabelled_across_each_rule_is_still_predicted_exactly() {
    for (name, queues) in SNAPSHOTS {
        let root = unpacked(name);
        let arch = if name.contains("arm64") { "arm64" } else { "amd64" };
        for release in [format!("6.1.0-57-{arch}"), format!("6.18.15+deb13-{arch}")] {
            write_file(root.path(), "proc/sys/kernel/osrelease", &format!("{release}\n"));
            assert_eq!(managed_queues(root.path()), (queues, 0), "{name} as {release}");
            let plan = plan_json(root.path(), empty_config().path());
            let grouping = &plan["grouping"];
            assert!(grouping.get("finding").is_none(), "{name} as {release}: {grouping:#}");
            // nosmt spread with every second CPU offline, where both rules group alike: its masks
            // cannot tell, the version does. The others' clusters tell.
            let (rule, told) =
                if name.contains("nosmt") { ("mainline", "version") } else { ("cluster-aware", "observed") };
            assert_eq!((&grouping["rule"], &grouping["source"]), (&rule.into(), &told.into()), "{name} as {release}");
        }
    }
}

/// The rule the masks show is the one the predictions that follow use: the arm64 snapshot as
/// 6.1 with one controller's masks not read (a drive whose masks are not known yet) predicts
/// that controller's queues as the kernel spread them, from the other controllers' masks.
#[test]
fn a_controller_without_masks_is_predicted_with_the_rule_the_others_show() {
    let root = unpacked("7.2-arm64-c3x4-1n.tar.gz");
    write_file(root.path(), "proc/sys/kernel/osrelease", "6.1.0-57-arm64\n");
    let plan = plan_json(root.path(), empty_config().path());
    let shown: Vec<(u64, serde_json::Value)> = plan["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["class"] == "nvme")
        .max_by_key(|d| queue_irqs(d, Some("io")).len())
        .map(|d| queue_irqs(d, Some("io")).iter().map(|p| (p["irq"].as_u64().unwrap(), p["current"].clone())).collect())
        .unwrap();
    assert!(shown.len() >= 7, "{shown:?}");
    for (irq, _) in &shown {
        for file in ["smp_affinity", "smp_affinity_list"] {
            let _ = std::fs::remove_file(root.path().join(format!("proc/irq/{irq}/{file}")));
        }
    }
    let plan = plan_json(root.path(), empty_config().path());
    assert_eq!(plan["grouping"]["source"], "observed", "{:#}", plan["grouping"]);
    for (irq, current) in shown {
        let p = plan["devices"].as_array().unwrap().iter().flat_map(irqs).find(|p| p["irq"] == irq).unwrap();
        assert_eq!(p["current"], serde_json::Value::Null, "irq {irq}: its mask is not read");
        assert_eq!(p["desired"], current, "irq {irq}: predicted as the kernel spread it");
    }
}

/// The apt options of a private state for Debian unstable below the test's target directory (its
/// own sources.list naming the archive the host's apt sources name, its own lists and cache), so
/// the host's apt stays as it is, with its lists fetched when missing; `None` (said) when the host
/// names no archive or the lists cannot be fetched.
fn unstable_apt(test: &str) -> Option<Vec<String>> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("apt-unstable");
    std::fs::create_dir_all(dir.join("lists/partial")).unwrap();
    std::fs::create_dir_all(dir.join("cache/archives/partial")).unwrap();
    let Some(archive) = host_archive() else {
        skip::skip(test, "the host's apt sources name no Debian archive");
        return None;
    };
    let sources = dir.join("sources.list");
    let line = format!("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {archive} sid main\n");
    std::fs::write(&sources, line).unwrap();
    let d = dir.display();
    let apt: Vec<String> = [
        format!("Dir::Etc::sourcelist={}", sources.display()),
        "Dir::Etc::sourceparts=-".into(),
        format!("Dir::State::Lists={d}/lists"),
        format!("Dir::Cache={d}/cache"),
        "APT::Sandbox::User=root".into(),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_string(), o])
    .collect();
    let listed = std::fs::read_dir(dir.join("lists"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("_Packages"));
    if !listed {
        let ok = std::process::Command::new("apt-get").args(&apt).args(["update", "-qq"]).status();
        if !ok.as_ref().is_ok_and(std::process::ExitStatus::success) {
            skip::skip(test, &format!("apt-get update of {archive} sid failed ({ok:?})"));
            return None;
        }
    }
    Some(apt)
}

/// The Debian archive the host's apt sources name (not its security archive).
fn host_archive() -> Option<String> {
    let mut files = vec![Path::new("/etc/apt/sources.list").to_path_buf()];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(dir.flatten().map(|e| e.path()));
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|w| w.starts_with("http") && w.trim_end_matches('/').ends_with("/debian"))
}

/// A Debian kernel package's network and virtio modules and its `modules.builtin`, fetched with
/// apt (`apt` its options: none for the host's own state) as what `meta` depends on (from 6.17
/// Debian splits the image: its `linux-modules-` and `linux-base-` packages too), and unpacked
/// once into the test's target directory: `(release, directory holding lib/modules/RELEASE)`.
/// `None` (said, or a failure under IRQWISE_TEST_NO_SKIP=1) when apt cannot get it.
fn debian_modules(test: &str, meta: &str, apt: &[String]) -> Option<(String, std::path::PathBuf)> {
    use std::process::Command;
    let depends_on = |pkg: &str, prefix: &str| -> Vec<String> {
        let out = Command::new("apt-cache").args(apt).args(["depends", pkg]).output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        let words: Vec<&str> = text.split_whitespace().collect();
        let named = words.windows(2).filter(|w| w[0] == "Depends:").map(|w| w[1]);
        named.filter(|n| n.starts_with(prefix)).map(str::to_string).collect()
    };
    // Which release `meta` named when it was unpacked: apt-cache takes seconds on a private state.
    let caches = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-modules");
    let named = caches.join(format!("{meta}{}.release", if apt.is_empty() { "" } else { "-unstable" }));
    if let Some(release) = std::fs::read_to_string(&named).ok().map(|r| r.trim().to_string()) {
        if let Some(found) = unpacked_tree(&caches.join(&release), &release) {
            return Some((release, found));
        }
    }
    let Some(pkg) = depends_on(meta, "linux-image-").into_iter().next() else {
        skip::skip(test, &format!("apt-cache knows no {meta}"));
        return None;
    };
    let release = pkg.trim_start_matches("linux-image-").to_string();
    let cache = caches.join(&release);
    if let Some(found) = unpacked_tree(&cache, &release) {
        std::fs::write(&named, &release).unwrap();
        return Some((release, found));
    }
    let mut pkgs = vec![pkg.clone()];
    for part in ["linux-modules-", "linux-base-"] {
        pkgs.extend(depends_on(&pkg, part).into_iter().filter(|p| p.ends_with(&release)));
    }
    let work = tempfile::tempdir().unwrap();
    let fetched = Command::new("apt-get").args(apt).arg("download").args(&pkgs).current_dir(work.path()).status();
    let debs: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    if debs.len() < pkgs.len() {
        skip::skip(test, &format!("apt-get download {} failed ({fetched:?})", pkgs.join(" ")));
        return None;
    }
    // Only what the probes read: a few MB instead of the packages' hundred. A package without
    // some of these (the split image's parts) leaves tar's complaint unheeded.
    let unpack = work.path().join("root");
    std::fs::create_dir_all(&unpack).unwrap();
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards '*/kernel/drivers/net/*' '*/kernel/drivers/virtio/*' '*/modules.builtin' 2>/dev/null; true";
    for deb in &debs {
        Command::new("sh").args(["-c", script, "sh"]).arg(deb).arg(&unpack).status().unwrap();
    }
    assert!(unpacked_tree(&unpack, &release).is_some(), "{} unpacked without modules.builtin", pkgs.join(" "));
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    // Another test may have unpacked it meanwhile: then its copy is used.
    let _ = std::fs::rename(&unpack, &cache);
    std::fs::write(&named, &release).unwrap();
    unpacked_tree(&cache, &release).map(|found| (release, found))
}

/// The module tree of `release` in an unpacked package (`lib/modules` or `usr/lib/modules`), when
/// it has its `modules.builtin`.
fn unpacked_tree(dir: &Path, release: &str) -> Option<std::path::PathBuf> {
    ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|t| dir.join(t).join(release))
        .find(|t| t.join("modules.builtin").exists())
}

/// The files a root of [`nic_root`] needs of a module tree: its NICs' modules and the list of
/// built-in ones (a package's other network drivers are tens of MB).
fn wanted(name: &str) -> bool {
    name == "modules.builtin"
        || ["ice", "ena", "gve", "virtio_net", "virtio_pci"].iter().any(|m| name.starts_with(&format!("{m}.ko")))
}

/// Copies directory `from` into `to` (both existing or created): the [`wanted`] files and the
/// directories holding them.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else if entry.file_type().unwrap().is_file() && wanted(&entry.file_name().to_string_lossy()) {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A root with an ice, an ena, a gve and a virtio NIC, `osrelease` = `release` and the module tree
/// `modules` (a Debian kernel's) below `lib/modules/release`.
fn nic_root(release: &str, modules: &Path) -> tempfile::TempDir {
    use acceptance::fixture::{FixtureRoot, NamingScheme};
    let dir = cpu_root(1, 4, 2, release);
    FixtureRoot::at(dir.path())
        .nic("0000:00:04.0", "ice", "ens4", Some(0), 4, NamingScheme::IceTxRx)
        .nic("0000:00:05.0", "ena", "ens5", Some(0), 4, NamingScheme::Ena)
        .nic("0000:00:06.0", "gve", "ens6", Some(0), 4, NamingScheme::TxRx)
        .virtio_nic("0000:00:03.0", 0, "eth1", None, 2);
    copy_tree(modules, &dir.path().join(format!("lib/modules/{release}")));
    dir
}

/// `irqwise topology --json`'s `kernel_facts`.
fn kernel_facts(root: &Path) -> serde_json::Value {
    let cfg = empty_config();
    let text = run_ok(root, cfg.path(), &["topology", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["kernel_facts"].clone()
}

/// What `driver`'s import `name` is in `facts`: (value, source).
fn import(facts: &serde_json::Value, driver: &str, name: &str) -> (serde_json::Value, String) {
    let d = facts["drivers"].as_array().and_then(|ds| ds.iter().find(|d| d["driver"] == driver));
    let d = d.unwrap_or_else(|| panic!("no driver {driver} in {facts:#}"));
    let i = d["imports"].as_array().unwrap().iter().find(|i| i["name"] == name).unwrap();
    (i["value"].clone(), i["source"].as_str().unwrap().to_string())
}

/// Debian's 6.1 (`.ko`) and 6.12 (`.ko.xz`) cloud kernels: ena applies affinity hints and its
/// masks are not the core's; gve writes its own XPS; virtio_net writes XPS and virtio's PCI half
/// (a module on 6.1, built in on 6.12: unknown there) applies hints, all read from the modules
/// themselves, and the same when `osrelease` names another kernel (7.2.0, a relabelled tree).
#[test]
fn topology_lists_what_debians_nic_modules_import_whatever_osrelease_says() {
    use serde_json::json;
    let test = "topology_lists_what_debians_nic_modules_import_whatever_osrelease_says";
    for meta in ["linux-image-cloud-amd64", "linux-image-6.12-cloud-amd64"] {
        let Some((release, modules)) = debian_modules(test, meta, &[]) else { return };
        for label in [release.as_str(), "7.2.0"] {
            let root = nic_root(label, &modules);
            let facts = kernel_facts(root.path());
            let what = format!("{meta} as {label}");
            assert_eq!(facts["modules"]["dir"], format!("lib/modules/{label}"), "{what}: {facts:#}");
            assert_eq!(import(&facts, "ena", "affinity-hint"), (json!(true), "module".into()), "{what}");
            assert_eq!(import(&facts, "ena", "affinity-auto"), (json!(false), "module".into()), "{what}");
            assert_eq!(import(&facts, "gve", "xps-queue"), (json!(true), "module".into()), "{what}");
            assert_eq!(import(&facts, "virtio-pci", "xps-queue"), (json!(true), "module".into()), "{what}");
            // 6.1 ships virtio_pci as a module, 6.12 builds it in: what it imports is unknown there.
            let virtio_pci_builtin = !release.starts_with("6.1.");
            let auto = import(&facts, "virtio-pci", "affinity-auto");
            if virtio_pci_builtin {
                assert_eq!(auto, (json!(null), "unknown".into()), "{what}");
            } else {
                assert_eq!(auto, (json!(false), "module".into()), "{what}");
                assert_eq!(import(&facts, "virtio-pci", "affinity-hint"), (json!(true), "module".into()), "{what}");
            }
            let ena = facts["drivers"].as_array().unwrap().iter().find(|d| d["driver"] == "ena").unwrap();
            let path = ena["modules"][0]["path"].as_str().unwrap();
            let packed = if release.starts_with("6.1.") { "/ena.ko" } else { "/ena.ko.xz" };
            assert!(path.ends_with(packed), "{what}: {path}");
        }
    }
}

/// The host's own BTF in a root relabelled as 6.1: what BTF shows is said from BTF (a 6.1 by
/// its number would have no persistent NAPI config), what it cannot show from the version.
#[test]
fn a_root_with_btf_takes_its_facts_from_btf_before_the_version() {
    let test = "a_root_with_btf_takes_its_facts_from_btf_before_the_version";
    let Ok(btf) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        skip::skip(test, "this machine has no /sys/kernel/btf/vmlinux");
        return;
    };
    let root = cpu_root(1, 2, 1, "6.1.0-57-amd64");
    std::fs::create_dir_all(root.path().join("sys/kernel/btf")).unwrap();
    std::fs::write(root.path().join("sys/kernel/btf/vmlinux"), &btf).unwrap();
    let facts = kernel_facts(root.path());
    assert_eq!(facts["btf"]["state"], "read", "{facts:#}");
    let feature =
        |name: &str| facts["features"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap().clone();
    // Every kernel with BTF since 5.17 has enum hk_type: IO_QUEUE is answered from BTF.
    assert_eq!(feature("isolcpus-io-queue")["source"], "btf", "{facts:#}");
    let napi = feature("napi-config");
    if napi["source"] == "btf" && napi["value"] == true {
        // This machine's kernel has persistent NAPI config: BTF says so, though the root says 6.1.
        assert_eq!(napi["evidence"], "BTF has struct napi_config");
    }
    assert_eq!(feature("hotplug-notifies-driver")["source"], "version");
    // Garbage where the BTF should be: one warning naming the file, the version decides.
    std::fs::write(root.path().join("sys/kernel/btf/vmlinux"), b"not BTF").unwrap();
    let cfg = empty_config();
    let doc: serde_json::Value =
        serde_json::from_str(&run_ok(root.path(), cfg.path(), &["topology", "--json"])).unwrap();
    assert_eq!(doc["kernel_facts"]["btf"]["state"], "unreadable");
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(
        warnings.iter().filter(|w| w.as_str().unwrap().contains("sys/kernel/btf/vmlinux")).count(),
        1,
        "{warnings:?}"
    );
    assert!(doc["kernel_facts"]["features"].as_array().unwrap().iter().all(|f| f["source"] != "btf"));
}

/// `plan --json`'s `resets` of each device of `root`, by the driver it is bound to.
fn resets(root: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    let cfg = empty_config();
    let plan = plan_json(root, cfg.path());
    let devices = plan["devices"].as_array().unwrap();
    devices.iter().map(|d| (d["driver"].as_str().unwrap().to_string(), d["resets"].clone())).collect()
}

/// Debian unstable's 7.2 modules: ice imports netif_set_affinity_auto, so the core keeps its
/// masks; ena applies its own hint as the mask on every IRQ request; virtio_net spreads its own:
/// the same whatever `osrelease` says (a 6.12 or a 6.1 with these modules is a backport).
#[test]
fn debians_72_modules_decide_the_reset_rules_whatever_osrelease_says() {
    let test = "debians_72_modules_decide_the_reset_rules_whatever_osrelease_says";
    let Some(apt) = unstable_apt(test) else { return };
    let Some((release, modules)) = debian_modules(test, "linux-image-amd64", &apt) else { return };
    assert!(release.starts_with('7'), "Debian unstable's kernel is {release}");
    let labels = [release.as_str(), "6.12.0", "6.1.0"];
    let planned: Vec<_> = labels.iter().map(|label| resets(nic_root(label, &modules).path())).collect();
    for (label, r) in labels.iter().zip(&planned) {
        for (driver, mask) in [("ice", "core-keeps"), ("ena", "driver-spreads"), ("virtio-pci", "driver-spreads")] {
            assert_eq!(r[driver]["mask"], mask, "{driver} as {label}: {:#}", r[driver]);
        }
    }
    for (label, r) in labels.iter().zip(&planned) {
        for driver in ["ice", "ena"] {
            assert_eq!(r[driver]["source"], "module", "{driver} as {label}: {:#}", r[driver]);
        }
        let gve = &r["gve"];
        assert_eq!(gve["mask"], "driver-spreads", "gve as {label}: {gve:#}");
        assert_eq!((&gve["xps_rewritten"], &gve["xps_source"]), (&true.into(), &"module".into()), "gve as {label}");
        let virtio = &r["virtio-pci"];
        assert_eq!(virtio["xps_rewritten"], true, "virtio_net imports __netif_set_xps_queue ({label}): {virtio:#}");
    }
}

/// Debian 12's 6.1 ice, which imports no netif_set_affinity_auto, under a kernel numbered 7.2: the
/// core does not keep its masks, whatever the number says.
#[test]
fn an_ice_module_without_netif_set_affinity_auto_is_not_core_kept_on_a_7x_kernel() {
    let test = "an_ice_module_without_netif_set_affinity_auto_is_not_core_kept_on_a_7x_kernel";
    let Some((release, modules)) = debian_modules(test, "linux-image-amd64", &[]) else { return };
    assert!(release.starts_with("6.1."), "Debian 12's kernel is {release}");
    let root = nic_root("7.2.0", &modules);
    let ice = &resets(root.path())["ice"];
    assert_ne!(ice["mask"], "core-keeps", "{ice:#}");
    assert_eq!(ice["source"], "module", "{ice:#}");
}
