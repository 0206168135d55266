//! Property tests of every parser that reads system or user text: the CPU list and mask forms,
//! `/proc/interrupts`, IRQ names (the driver table and rule patterns) and the configuration.
//! Each must return a value or an error for any input, never panic, and keep its stated
//! guarantees. The case count comes from `PROPTEST_CASES` (256 by default; `make fuzz` runs
//! 10,000 of each).

use std::path::PathBuf;

use irqwise::config::{parse_files, MachineShape, SourceFile};
use irqwise::cpuset::{CpuSet, MAX_CPUS};
use irqwise::devices::name_table::DRIVERS;
use irqwise::devices::{parse_proc_interrupts, recognise_device, DeviceClass, NameContext, QueuePattern, QueueRole};
use proptest::prelude::*;

/// Text made mostly of the characters the parser cares about, with anything else mixed in.
fn texty(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        6 => proptest::sample::select(alphabet.chars().collect::<Vec<_>>()).prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
        1 => Just("4294967295".to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just("\0".to_string()),
    ];
    proptest::collection::vec(pieces, 0..max).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn cpu_lists_parse_or_fail_and_round_trip(text in texty("0123456789-,: \n", 40)) {
        if let Ok(set) = CpuSet::parse_list(&text) {
            prop_assert!(set.iter().all(|c| c < MAX_CPUS));
            prop_assert_eq!(CpuSet::parse_list(&set.to_list_string()).unwrap(), set);
        }
    }

    #[test]
    fn cpu_masks_parse_or_fail_and_round_trip(text in texty("0123456789abcdefABCDEF,x\n", 40)) {
        if let Ok(set) = CpuSet::parse_mask(&text) {
            prop_assert!(set.iter().all(|c| c < MAX_CPUS));
            prop_assert_eq!(CpuSet::parse_mask(&set.to_mask_string()).unwrap(), set);
        }
    }

    #[test]
    fn proc_interrupts_parses_any_text_and_names_only_listed_irqs(
        header in texty("CPU0123 ", 20),
        lines in proptest::collection::vec(texty("0123456789: -,PCIMSIedgeTxRxnvmeq\t", 60), 0..12),
    ) {
        let text = format!("{header}\n{}\n", lines.join("\n"));
        let (names, bad) = parse_proc_interrupts(&text);
        for irq in names.keys() {
            let labelled = |l: &str| l.split_once(':').is_some_and(|(label, _)| label.trim().parse::<u32>().ok() == Some(*irq));
            prop_assert!(text.lines().any(labelled), "{irq} not in the text");
        }
        prop_assert!(bad.iter().all(|b| b.line_no >= 1 && b.line_no <= text.lines().count()));
    }

    #[test]
    fn irq_names_of_every_driver_read_without_panic_and_indexes_fit_u32(
        driver in proptest::sample::select(DRIVERS.iter().map(|d| d.drivers[0]).collect::<Vec<_>>()),
        names in proptest::collection::vec(texty("abcdeimnoqrstvxTRX-_@.:0123456789", 30), 1..8),
    ) {
        let interfaces = vec!["eth0".to_string()];
        let ctx = NameContext { driver: Some(driver), class: DeviceClass::Nic, interfaces: &interfaces };
        let actions: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone()]).collect();
        let read = recognise_device(&ctx, &actions);
        prop_assert_eq!(read.len(), actions.len());
        for r in &read {
            // A queue index comes only with a queue role, never with misc or admin.
            let queue_role = matches!(r.role, QueueRole::Io | QueueRole::Rx | QueueRole::Tx | QueueRole::RxTx);
            prop_assert!(r.queue.is_none() || queue_role, "{:?}", r);
        }
    }

    #[test]
    fn rule_patterns_compile_or_fail_and_never_panic_on_names(
        pattern in texty("()?<>P.*+\\dqueuerole-[]", 24),
        name in texty("abcq-0123456789", 20),
    ) {
        if let Ok(p) = QueuePattern::new(&pattern) {
            let _ = p.recognise(&name);
        }
    }

    #[test]
    fn config_text_validates_or_reports_located_errors(
        text in texty("[]{}=\"'.,# \nglobaldevicematchpcidrivernodecpus_0123456789strategyleavepinbanned", 200),
    ) {
        let file = SourceFile { path: PathBuf::from("fuzz.toml"), text };
        let report = parse_files(&[file], &MachineShape::with_cpus(CpuSet::first_n(16)));
        for e in &report.errors {
            prop_assert!(e.location().is_some(), "an error without a location: {e}");
        }
        prop_assert_eq!(report.config.is_some(), report.errors.is_empty());
    }

    #[test]
    fn structured_configs_validate_or_report_located_errors(
        rules in proptest::collection::vec(
            (
                proptest::sample::select(vec!["pci", "driver", "interface", "class", "nvme_model", "property.ID_X"]),
                texty("*?[]!a-z0-9:.", 12),
                proptest::sample::select(vec!["cpus", "exclude_cpus", "admin_cpus", "node", "queues_per_cpu", "order", "strategy", "queue_pattern"]),
                texty("0123456789-,\"kernelpinleave", 12),
            ),
            0..10,
        ),
        banned in texty("0123456789-,", 10),
        interval in texty("0123456789mshd", 6),
    ) {
        let mut text = format!("[global]\nbanned_cpus = \"{banned}\"\nreconcile_interval = \"{interval}\"\n");
        for (key, glob, setting, value) in &rules {
            let quoted = value.replace('"', "");
            text.push_str(&format!("[[device]]\nmatch.{key} = \"{}\"\n{setting} = \"{quoted}\"\n", glob.replace('"', "")));
        }
        let file = SourceFile { path: PathBuf::from("fuzz.toml"), text };
        let report = parse_files(&[file], &MachineShape::with_cpus(CpuSet::first_n(16)));
        for e in &report.errors {
            prop_assert!(e.location().is_some(), "an error without a location: {e}");
        }
    }
}
