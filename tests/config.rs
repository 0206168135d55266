//! Configuration: file lookup, masking and order, per-key merging, the shipped files, and policy
//! resolution. Every validation error: `tests/config_errors.rs`.

#[path = "common/config_text.rs"]
mod config_text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use config_text::*;
use irqwise::choices::SpreadOrder as OrderName;
use irqwise::choices::StrategyName;
use irqwise::config::{check, check_files, load, ConfigPaths, Global, LogFormat};
use irqwise::devices::DeviceClass as DeviceClassName;
use irqwise::policy::{matches, resolve, unmatched_rules, DeviceFacts};

// ---------------------------------------------------------------- lookup, masking, order

#[test]
fn no_files_at_all_gives_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let config = load(&ConfigPaths::under(dir.path()), &possible()).unwrap();
    assert_eq!(config.global, Global::default());
    assert_eq!(config.global.reconcile_interval, Duration::from_secs(60));
    assert_eq!(config.global.debounce, Duration::from_millis(100));
    assert!(config.global.respect_isolation);
    assert!(!config.global.restore_on_exit);
    assert_eq!(config.global.log_format, LogFormat::Auto);
    assert!(config.rules.is_empty() && config.sources.is_empty());
}

#[test]
fn under_uses_the_system_layout() {
    let p = ConfigPaths::under("/x");
    assert_eq!(p.main, Path::new("/x/etc/irqwise/irqwise.toml"));
    let want: Vec<PathBuf> = [USR, RUN, ETC].iter().map(|d| Path::new("/x").join(d)).collect();
    assert_eq!(p.dropin_dirs, want);
    let s = ConfigPaths::system();
    assert_eq!(s.main, Path::new("/etc/irqwise/irqwise.toml"));
    assert_eq!(s.dropin_dirs[0], Path::new("/usr/lib/irqwise/conf.d"));
    assert_eq!(s.dropin_dirs[1], Path::new("/run/irqwise/conf.d"));
    assert_eq!(s.dropin_dirs[2], Path::new("/etc/irqwise/conf.d"));
}

#[test]
fn etc_masks_run_masks_usr_lib_and_names_apply_in_lexical_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let main = put(root, MAIN, "[global]\nbanned_cpus = \"9\"\nrestore_on_exit = true\ndebounce = \"5s\"\n");
    let base = put(root, &format!("{USR}/10-base.toml"), "[global]\ndebounce = \"1s\"\nbanned_cpus = \"1\"\n");
    let usr_mid = put(root, &format!("{USR}/20-mid.toml"), "[global]\nbanned_cpus = \"4\"\n");
    let run_mid = put(root, &format!("{RUN}/20-mid.toml"), "[global]\nbanned_cpus = \"2\"\n");
    let etc_mid = put(root, &format!("{ETC}/20-mid.toml"), "[global]\nbanned_cpus = \"3\"\n");
    let usr_pkg = put(root, &format!("{USR}/30-pkg.toml"), "[global]\nreconcile_interval = \"5s\"\n");
    let run_pkg = put(root, &format!("{RUN}/30-pkg.toml"), "[global]\nreconcile_interval = \"2m\"\n");

    let report = check(&ConfigPaths::under(root), &possible());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // Main file first, then one file per name, the highest directory's, in name order.
    assert_eq!(report.sources, vec![main, base, etc_mid.clone(), run_pkg.clone()]);
    let masked: Vec<(PathBuf, PathBuf)> = report.masked.iter().map(|m| (m.path.clone(), m.by.clone())).collect();
    assert!(masked.contains(&(usr_mid, run_mid.clone())), "{masked:?}");
    assert!(masked.contains(&(run_mid, etc_mid)), "{masked:?}");
    assert!(masked.contains(&(usr_pkg, run_pkg)), "{masked:?}");

    let g = report.config.unwrap().global;
    assert_eq!(g.banned_cpus, cpus("3"), "/etc's 20-mid masks the others and applies after 10-base");
    assert_eq!(g.debounce, Duration::from_secs(1), "10-base applies after the main file");
    assert_eq!(g.reconcile_interval, Duration::from_secs(120), "/run masks /usr/lib");
    assert!(g.restore_on_exit, "a key only the main file sets survives");
    assert!(g.respect_isolation, "a key nobody sets keeps its default");
}

#[test]
fn file_name_order_beats_directory_order() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), &format!("{ETC}/10-admin.toml"), "[global]\nbanned_cpus = \"5\"\n");
    put(dir.path(), &format!("{USR}/90-vendor.toml"), "[global]\nbanned_cpus = \"6\"\n");
    let config = load(&ConfigPaths::under(dir.path()), &possible()).unwrap();
    assert_eq!(config.global.banned_cpus, cpus("6"));
}

#[test]
fn empty_dropin_masks_and_other_names_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), &format!("{USR}/50-x.toml"), "[global]\nbanned_cpus = \"5\"\n");
    put(dir.path(), &format!("{ETC}/50-x.toml"), "");
    for name in ["README", "60-y.toml.example", "60-y.conf", "60-y.toml~"] {
        put(dir.path(), &format!("{ETC}/{name}"), "this is not toml [[[");
    }
    std::fs::create_dir_all(dir.path().join(ETC).join("70-dir.toml")).unwrap();
    let config = load(&ConfigPaths::under(dir.path()), &possible()).unwrap();
    assert!(config.global.banned_cpus.is_empty());
    assert_eq!(config.sources, vec![dir.path().join(ETC).join("50-x.toml")]);
}

#[test]
fn global_keys_merge_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), MAIN, "[global]\nlog_format = \"json\"\nrespect_isolation = false\n");
    put(dir.path(), &format!("{ETC}/10.toml"), "[global]\nlog_format = \"text\"\n");
    let g = load(&ConfigPaths::under(dir.path()), &possible()).unwrap().global;
    assert_eq!(g.log_format, LogFormat::Text);
    assert!(!g.respect_isolation);
}

// ---------------------------------------------------------------- rules and resolve()

fn nic(bdf: &str, driver: &str, ifaces: &[&str]) -> DeviceFacts {
    let mut f = DeviceFacts::new(bdf, DeviceClassName::Nic);
    f.driver = Some(driver.into());
    f.interfaces = ifaces.iter().map(std::string::ToString::to_string).collect();
    f
}

fn nvme(bdf: &str, model: &str, serial: &str) -> DeviceFacts {
    let mut f = DeviceFacts::new(bdf, DeviceClassName::Nvme);
    f.driver = Some("nvme".into());
    f.nvme_model = Some(model.into());
    f.nvme_serial = Some(serial.into());
    f
}

#[test]
fn several_rules_override_key_by_key_main_file_first() {
    let dir = tempfile::tempdir().unwrap();
    let main = put(
        dir.path(),
        MAIN,
        "[global]\nbanned_cpus = \"63\"\n\n\
         [[device]]\nmatch = { class = \"nic\" }\nstrategy = \"numa-hop\"\ncpus = \"0-15\"\norder = \"kernel\"\nexclude_cpus = \"0\"\n",
    );
    let d10 = put(
        dir.path(),
        &format!("{ETC}/10-mlx.toml"),
        "# mlx5 cards on node 1\n[[device]]\nmatch = { driver = \"mlx5_*\" }\ncpus = \"16-31\"\nnode = 1\n",
    );
    let d20 = put(
        dir.path(),
        &format!("{USR}/20-ens9.toml"),
        "[[device]]\nmatch = { interface = \"ens9*\" }\nqueues_per_cpu = 2\n\n[[device]]\nmatch = { pci = \"0000:00:*\" }\nstrategy = \"leave\"\n",
    );
    let config = load(&ConfigPaths::under(dir.path()), &possible()).unwrap();
    assert_eq!(config.rules.len(), 4);
    let refs: Vec<String> = config.rules.iter().map(|r| r.source.to_string()).collect();
    let want = [
        format!("{}:4", main.display()),
        format!("{}:2", d10.display()),
        format!("{}:1", d20.display()),
        format!("{}:5", d20.display()),
    ];
    assert_eq!(refs, want);

    let all_three = resolve(&config, &nic("0000:81:00.0", "mlx5_core", &["ens9f0np0"]));
    assert_eq!(all_three.strategy, Some(StrategyName::NumaHop), "only the main file's rule sets it");
    assert_eq!(all_three.cpus, Some(cpus("16-31")), "the later mlx5 rule overrides cpus");
    assert_eq!(all_three.order, Some(OrderName::Kernel), "kept from the first rule");
    assert_eq!(all_three.node, Some(1));
    assert_eq!(all_three.queues_per_cpu, Some(2));
    assert_eq!(all_three.exclude_cpus, cpus("0,63"), "rule exclusion plus global ban");
    assert_eq!(all_three.admin_cpus, None);
    let matched: Vec<String> = all_three.matched_rules.iter().map(std::string::ToString::to_string).collect();
    assert_eq!(matched, want[..3].to_vec());
    assert_eq!(all_three.allowed_cpus(&possible().possible), cpus("16-31"));

    let plain = resolve(&config, &nic("0000:41:00.0", "ice", &["ens1"]));
    assert_eq!(plain.cpus, Some(cpus("0-15")));
    assert_eq!(plain.node, None);
    assert_eq!(plain.queues_per_cpu, None);
    assert_eq!(plain.allowed_cpus(&possible().possible), cpus("1-15"));
    assert_eq!(plain.matched_rules.len(), 1);

    let onboard = resolve(&config, &nvme("0000:00:1d.0", "X", "Y"));
    assert_eq!(onboard.strategy, Some(StrategyName::Leave));
    assert_eq!(onboard.cpus, None, "the NIC rule does not match an NVMe drive");
    assert_eq!(onboard.exclude_cpus, cpus("63"), "global ban applies to every device");

    let unmatched: Vec<String> = unmatched_rules(&config, &[nic("0000:41:00.0", "ice", &["ens1"])])
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    assert_eq!(unmatched, want[1..].to_vec());
}

#[test]
fn no_matching_rule_leaves_everything_to_the_class_default() {
    let config = irqwise::config::Config::default();
    let p = resolve(&config, &nic("0000:01:00.0", "ixgbe", &["eth0"]));
    assert_eq!(p, irqwise::policy::Policy::default());
    assert_eq!(p.allowed_cpus(&cpus("0-7")), cpus("0-7"));
}

#[test]
fn each_match_key_selects_devices() {
    let mut with_props = nic("0000:81:00.1", "mlx5_core", &["ens1f0", "ens1f1"]);
    with_props.properties = BTreeMap::from([("ID_PATH".into(), "pci-0000:81:00.1".into())]);
    let drive = nvme("0000:c1:00.0", "SAMSUNG MZQL23T8HCLS-00A07             ", "S64HNE0T");
    let cases: [(&str, &DeviceFacts, bool); 18] = [
        ("pci = \"0000:81:*\"", &with_props, true),
        ("pci = \"0000:81:00.0\"", &with_props, false),
        ("pci = \"0000:[c-f]?:*\"", &drive, true),
        ("driver = \"mlx5_core\"", &with_props, true),
        ("driver = \"mlx5_core\"", &drive, false),
        ("interface = \"ens1f1\"", &with_props, true),
        ("interface = \"eth*\"", &with_props, false),
        ("interface = \"*\"", &drive, false),
        ("class = \"nvme\"", &drive, true),
        ("class = \"nic\"", &drive, false),
        ("class = \"other\"", &with_props, false),
        ("nvme_model = \"SAMSUNG MZQL23T8HCLS-00A07\"", &drive, true),
        ("nvme_model = \"SAMSUNG*\"", &with_props, false),
        ("nvme_serial = \"S64H*\"", &drive, true),
        ("nvme_serial = \"S64HNE0\"", &drive, false),
        ("property.ID_PATH = \"pci-0000:81:*\"", &with_props, true),
        ("property.ID_PATH = \"pci-0000:81:*\"", &drive, false),
        ("class = \"nic\", driver = \"mlx5_core\", interface = \"ens1f?\"", &with_props, true),
    ];
    for (keys, facts, want) in cases {
        let config = parse_ok(&format!("[[device]]\nmatch = {{ {keys} }}\nnode = 0\n"));
        assert_eq!(matches(&config.rules[0].matcher, facts), want, "{keys} vs {}", facts.bdf);
        assert_eq!(resolve(&config, facts).node.is_some(), want);
    }
    // All keys must match: one failing key rejects the device.
    let config = parse_ok("[[device]]\nmatch = { class = \"nic\", driver = \"ice\" }\nnode = 0\n");
    assert!(!matches(&config.rules[0].matcher, &with_props));
}

#[test]
fn each_setting_reaches_the_policy() {
    let config = parse_ok(
        "[[device]]\nmatch = { class = \"nvme\" }\nstrategy = \"pin\"\ncpus = \"4-7\"\nexclude_cpus = \"5\"\n\
         admin_cpus = \"0\"\nnode = 3\norder = \"cores-first\"\n\
         [[device]]\nmatch = { class = \"nic\" }\nstrategy = \"cluster-group\"\nqueues_per_cpu = 4\n",
    );
    let p = resolve(&config, &nvme("0000:01:00.0", "m", "s"));
    assert_eq!(p.strategy, Some(StrategyName::Pin));
    assert_eq!(p.cpus, Some(cpus("4-7")));
    assert_eq!(p.exclude_cpus, cpus("5"));
    assert_eq!(p.admin_cpus, Some(cpus("0")));
    assert_eq!(p.node, Some(3));
    assert_eq!(p.order, Some(OrderName::CoresFirst));
    assert_eq!(p.allowed_cpus(&possible().possible), cpus("4,6-7"));
    let q = resolve(&config, &nic("0000:02:00.0", "ice", &[]));
    assert_eq!(q.strategy, Some(StrategyName::ClusterGroup));
    assert_eq!(q.queues_per_cpu, Some(4));
}

// ---------------------------------------------------------------- shipped files

fn shipped(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config").join(rel)
}

#[test]
fn shipped_main_file_validates_to_the_defaults() {
    let report = check_files(&[shipped("irqwise.toml")], &possible());
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    assert!(report.warnings.is_empty(), "{:#?}", report.warnings);
    let config = report.config.unwrap();
    assert_eq!(config.global, Global::default());
    assert!(config.rules.is_empty());
}

/// The commented-out `[global]` block, uncommented, must state exactly the built-in defaults.
#[test]
fn shipped_main_file_documents_the_real_defaults() {
    let text = std::fs::read_to_string(shipped("irqwise.toml")).unwrap();
    let keys = [
        "banned_cpus",
        "respect_isolation",
        "reconcile_interval",
        "debounce",
        "restore_on_exit",
        "log_format",
        "xps",
        "napi_threads",
        "import_irqbalance_banned",
        "on_drift",
    ];
    let mut uncommented = String::from("[global]\n");
    for key in keys {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("# {key} = ")))
            .unwrap_or_else(|| panic!("{key} undocumented"));
        uncommented.push_str(&line[2..]);
        uncommented.push('\n');
    }
    let config = parse_ok(&uncommented);
    assert_eq!(config.global, Global::default());
    for key in [
        "pci",
        "driver",
        "interface",
        "class",
        "nvme_model",
        "nvme_serial",
        "property.",
        "strategy",
        "cpus",
        "exclude_cpus",
        "admin_cpus",
        "node",
        "order",
        "queues_per_cpu",
        "xps",
        "napi_threads",
    ] {
        assert!(text.contains(&format!("#   {key}")), "{key} undocumented");
    }
}

fn example(name: &str) -> irqwise::config::Config {
    let path = shipped(&format!("conf.d/{name}.toml.example"));
    let report = check_files(&[path], &possible());
    assert!(report.errors.is_empty(), "{name}: {:#?}", report.errors);
    assert!(report.warnings.is_empty(), "{name}: {:#?}", report.warnings);
    report.config.unwrap()
}

#[test]
fn example_storage_node_keeps_mlx5_on_node_1() {
    let config = example("50-storage-mlx5");
    let p = resolve(&config, &nic("0000:81:00.0", "mlx5_core", &["ens1f0np0"]));
    assert_eq!(p.node, Some(1));
    assert_eq!(p.strategy, Some(StrategyName::NumaHop));
    let other = resolve(&config, &nic("0000:01:00.0", "ice", &["eno1"]));
    assert_eq!(other, irqwise::policy::Policy::default());
    let drive = resolve(&config, &nvme("0000:c1:00.0", "m", "s"));
    assert_eq!(drive.strategy, Some(StrategyName::ClusterGroup));
}

#[test]
fn example_latency_host_keeps_cpus_2_to_7_free() {
    let config = example("50-latency");
    for facts in [nic("0000:81:00.0", "mlx5_core", &["ens1"]), nvme("0000:c1:00.0", "m", "s")] {
        let p = resolve(&config, &facts);
        assert!(cpus("2-7").is_subset(&p.exclude_cpus), "{}", facts.bdf);
        assert!(!p.allowed_cpus(&possible().possible).intersects(&cpus("2-7")));
    }
}

#[test]
fn example_nvme_admin_queue_pinned() {
    let config = example("50-nvme-admin-pin");
    let p = resolve(&config, &nvme("0000:c1:00.0", "INTEL SSDPE2KX040T8", "PHLJ"));
    assert_eq!(p.admin_cpus, Some(cpus("0")));
    assert_eq!(p.strategy, None, "I/O queues keep the class default");
    let samsung = resolve(&config, &nvme("0000:c2:00.0", "SAMSUNG MZQL23T8HCLS-00A07   ", "S6"));
    assert_eq!(samsung.admin_cpus, Some(cpus("1")), "the later, narrower rule wins");
    assert_eq!(samsung.matched_rules.len(), 2);
    assert_eq!(resolve(&config, &nic("0000:81:00.0", "ice", &[])).admin_cpus, None);
}

#[test]
fn all_shipped_files_together_validate_as_dropins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("etc/irqwise/conf.d")).unwrap();
    std::fs::copy(shipped("irqwise.toml"), dir.path().join(MAIN)).unwrap();
    for name in ["50-storage-mlx5", "50-latency", "50-nvme-admin-pin"] {
        let from = shipped(&format!("conf.d/{name}.toml.example"));
        std::fs::copy(from, dir.path().join(ETC).join(format!("{name}.toml"))).unwrap();
    }
    let config = load(&ConfigPaths::under(dir.path()), &possible()).unwrap();
    assert_eq!(config.sources.len(), 4);
    assert_eq!(config.rules.len(), 5);
}

/// Regression (found by the VM suite): TOML dotted keys (`match.driver = ...`) build the match
/// table implicitly; toml 0.8 could not give such a table a span and rejected the file.
#[test]
fn dotted_match_keys_are_accepted() {
    let config = parse_ok("[[device]]\nmatch.driver = \"vmxnet3\"\nmatch.interface = \"eth*\"\nnode = 0\n");
    let policy = resolve(&config, &nic("0000:92:00.0", "vmxnet3", &["eth1"]));
    assert_eq!(policy.node, Some(0));
    assert_eq!(policy.matched_rules.len(), 1);
    let other = resolve(&config, &nic("0000:93:00.0", "ice", &["eth2"]));
    assert!(other.matched_rules.is_empty());
}

#[test]
fn xps_import_and_on_drift_parse_and_wrong_values_are_located_errors() {
    let config = parse_ok(
        "[global]\nxps = false\nimport_irqbalance_banned = false\non_drift = \"respect\"\n\n[[device]]\nmatch = { driver = \"ice\" }\nxps = true\n",
    );
    assert!(!config.global.xps && !config.global.import_irqbalance_banned);
    assert_eq!(config.global.on_drift, irqwise::config::OnDrift::Respect);
    assert_eq!(config.rules[0].settings.xps, Some(true));
    let p = resolve(&config, &nic("0000:81:00.0", "ice", &["eth0"]));
    assert_eq!(p.xps, Some(true), "the rule's xps reaches the device's policy");
    assert_one_error("[global]\non_drift = \"ignore\"\n", 2, 12, &["ignore", "restore", "respect"]);
    assert_one_error("[[device]]\nmatch = { class = \"nic\" }\nxps = \"yes\"\n", 3, 7, &["invalid type", "bool"]);
    assert_one_error("[global]\nimport_irqbalance_banned = 1\n", 2, 28, &["invalid type"]);
}

#[test]
fn napi_threads_parses_globally_and_per_device_and_a_wrong_value_is_a_located_error() {
    use irqwise::choices::NapiThreads;
    let config = parse_ok(
        "[global]\nnapi_threads = \"leave\"\n\n[[device]]\nmatch = { driver = \"ice\" }\nnapi_threads = \"follow\"\n",
    );
    assert_eq!(config.global.napi_threads, NapiThreads::Leave);
    assert_eq!(resolve(&config, &nic("0000:81:00.0", "ice", &["eth0"])).napi_threads, NapiThreads::Follow);
    assert_eq!(resolve(&config, &nic("0000:82:00.0", "mlx5_core", &["eth1"])).napi_threads, NapiThreads::Leave);
    assert_eq!(irqwise::config::Config::default().global.napi_threads, NapiThreads::Follow);
    assert_one_error("[global]\nnapi_threads = \"pin\"\n", 2, 16, &["pin", "follow", "leave"]);
    assert_one_error("[[device]]\nmatch = { class = \"nic\" }\nnapi_threads = true\n", 3, 16, &["wanted string"]);
}
