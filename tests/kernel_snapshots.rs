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

/// A Debian kernel package's network and virtio modules and its `modules.builtin`, fetched with
/// the host's apt (`apt-get download` of what `meta` depends on) and unpacked once into the
/// test's target directory: `(release, directory holding lib/modules/RELEASE)`. `None` (said, or a
/// failure under IRQWISE_TEST_NO_SKIP=1) when apt cannot get it.
fn debian_modules(test: &str, meta: &str) -> Option<(String, std::path::PathBuf)> {
    use std::process::Command;
    let depends = Command::new("apt-cache").args(["depends", meta]).output().ok()?;
    let text = String::from_utf8_lossy(&depends.stdout);
    let Some(pkg) = text.split_whitespace().skip_while(|w| *w != "Depends:").nth(1).map(str::to_string) else {
        skip::skip(test, &format!("apt-cache knows no {meta}"));
        return None;
    };
    let release = pkg.trim_start_matches("linux-image-").to_string();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-modules").join(&release);
    if cache.join(format!("lib/modules/{release}/modules.builtin")).exists() {
        return Some((release, cache));
    }
    let work = tempfile::tempdir().unwrap();
    let fetched = Command::new("apt-get").arg("download").arg(&pkg).current_dir(work.path()).status();
    let Some(deb) = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
    else {
        skip::skip(test, &format!("apt-get download {pkg} failed ({fetched:?})"));
        return None;
    };
    // Only what the probes read: a few MB instead of the package's hundred.
    let unpack = work.path().join("root");
    std::fs::create_dir_all(&unpack).unwrap();
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards '*/kernel/drivers/net/*' '*/kernel/drivers/virtio/*' '*/modules.builtin'";
    let ok = Command::new("sh").args(["-c", script, "sh"]).arg(&deb).arg(&unpack).status().unwrap();
    assert!(ok.success(), "unpacking {}", deb.display());
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    // Another test may have unpacked it meanwhile: then its copy is used.
    let _ = std::fs::rename(&unpack, &cache);
    Some((release, cache))
}

/// Copies directory `from` into `to` (both existing or created), files and directories only.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else if entry.file_type().unwrap().is_file() {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A root with an ena, a gve and a virtio NIC, `osrelease` = `release` and the modules of
/// Debian's `modules_release` below `lib/modules/release`.
fn nic_root(release: &str, modules: &Path, modules_release: &str) -> tempfile::TempDir {
    use acceptance::fixture::{FixtureRoot, NamingScheme};
    let dir = cpu_root(1, 4, 2, release);
    FixtureRoot::at(dir.path())
        .nic("0000:00:05.0", "ena", "ens5", Some(0), 4, NamingScheme::Ena)
        .nic("0000:00:06.0", "gve", "ens6", Some(0), 4, NamingScheme::TxRx)
        .virtio_nic("0000:00:03.0", 0, "eth1", None, 2);
    copy_tree(
        &modules.join(format!("lib/modules/{modules_release}")),
        &dir.path().join(format!("lib/modules/{release}")),
    );
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
        let Some((release, modules)) = debian_modules(test, meta) else { return };
        for label in [release.as_str(), "7.2.0"] {
            let root = nic_root(label, &modules, &release);
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
