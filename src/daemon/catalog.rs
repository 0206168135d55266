//! The journal `MESSAGE_ID` of each kind of entry the daemon writes. Each is a random 128-bit id
//! fixed forever: `journalctl MESSAGE_ID=<id>` finds every entry of that kind, and the catalog
//! `systemd/irqwise.catalog` (installed to `/usr/lib/systemd/catalog/`) explains it under
//! `journalctl -x`. An id is never reused for another meaning.

/// An IRQ's affinity was written (INFO).
pub const MAPPING_APPLIED: &str = "8ecce3473d944b3c8c6fde38160ae753";
/// A write failed for a reason other than "kernel-managed" or "gone" (WARNING).
pub const WRITE_FAILED: &str = "e5cb5fa2c27345efbed92da95ac4c142";
/// The kernel refused a write as kernel-managed; the IRQ is left alone from then on (INFO).
pub(crate) const IRQ_MANAGED: &str = "58e53d020b4a4dcfba284b4e6b758ee0";
/// The IRQ disappeared between plan and write (INFO).
pub(crate) const IRQ_GONE: &str = "7399c1516a4e4a1e989ce440301dc516";
/// Someone else changed an IRQ irqwise had placed; irqwise puts it back (WARNING).
pub const DRIFT_RESTORED: &str = "f6d1c94a82194d3cbcae7a95d98a9391";
/// A device's kernel-managed IRQs are not where the kernel's spreading predicts (WARNING).
pub const MANAGED_MISMATCH: &str = "ed6d261046f2451bb6d7706b39875186";
/// A device's kernel-managed IRQs are where the kernel's spreading predicts (INFO).
pub(crate) const MANAGED_VERIFIED: &str = "1c97bcd929b646b09a53080432f16add";
/// A device's kernel-managed IRQs agree with the prediction where it can be checked, but it
/// depends on the node of CPUs irqwise cannot know (INFO).
pub(crate) const MANAGED_UNCERTAIN: &str = "cb8ab93743174148b8e8e52c8d33cf03";
/// A reload found an invalid configuration and kept the previous one (ERROR).
pub const CONFIG_REJECTED: &str = "74298039b65c402ab4985e9bb8ba4a7f";
/// A pass that changed something: what it wrote and what stands now (INFO).
pub const PASS_SUMMARY: &str = "38d2d8a12497491da6b35bbb1cdbb5ff";
/// A pass failed; the placement stays as it was (ERROR).
pub(crate) const PASS_FAILED: &str = "804a021433134da7b406a3c3325a8e9d";
/// A transmit queue's `xps_cpus` written to follow its IRQ.
pub const XPS_APPLIED: &str = "ff26480e154d4be8896f1ef76de0b628";

/// A queue IRQ's name says another queue than the kernel's netdev netlink family; the kernel's
/// is used (WARNING).
pub const QUEUE_IDENTITY_DISAGREES: &str = "3a8f2c5e7d1b4e69a0c4b2f6d8e19a73";
/// A NAPI thread moved to the CPUs of its queue's IRQ (INFO).
pub const NAPI_THREAD_APPLIED: &str = "b6e4d19f2a7c4c38915e0d7a4f2b6c81";
/// A NAPI instance's interrupt mitigation written with `napi-set` and read back (INFO).
pub const NAPI_PROFILE_APPLIED: &str = "5f3a9c1e7b2d4a86b0e4c6d8f1a3b5c7";

/// Not one IRQ could be written, all for one cause of the machine or the sandbox (a read-only
/// `/proc/irq`, no permission): said once, instead of one warning per IRQ (WARNING).
pub const WRITES_BLOCKED: &str = "4d1be03b516e4be1bab6bb969edf47b5";

/// An IRQ someone else keeps rewriting was restored too often: irqwise stops restoring it
/// (WARNING).
pub const FIGHT_DETECTED: &str = "9c0e5a7f3b2d4d1e8f6a0b3c5d7e9f12";

/// A queue IRQ moved off a hot CPU, or back home, by load refinement (INFO).
pub const LOAD_MOVED: &str = "c02e9727d8b544f295ddf6123025047e";

/// Every id with its name, in catalog order.
pub const ALL: [(&str, &str); 18] = [
    ("MAPPING_APPLIED", MAPPING_APPLIED),
    ("WRITE_FAILED", WRITE_FAILED),
    ("IRQ_MANAGED", IRQ_MANAGED),
    ("IRQ_GONE", IRQ_GONE),
    ("DRIFT_RESTORED", DRIFT_RESTORED),
    ("MANAGED_MISMATCH", MANAGED_MISMATCH),
    ("MANAGED_VERIFIED", MANAGED_VERIFIED),
    ("MANAGED_UNCERTAIN", MANAGED_UNCERTAIN),
    ("CONFIG_REJECTED", CONFIG_REJECTED),
    ("PASS_SUMMARY", PASS_SUMMARY),
    ("PASS_FAILED", PASS_FAILED),
    ("XPS_APPLIED", XPS_APPLIED),
    ("QUEUE_IDENTITY_DISAGREES", QUEUE_IDENTITY_DISAGREES),
    ("NAPI_THREAD_APPLIED", NAPI_THREAD_APPLIED),
    ("NAPI_PROFILE_APPLIED", NAPI_PROFILE_APPLIED),
    ("WRITES_BLOCKED", WRITES_BLOCKED),
    ("FIGHT_DETECTED", FIGHT_DETECTED),
    ("LOAD_MOVED", LOAD_MOVED),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped catalog, as `(id, subject)` per entry in file order.
    fn catalog_entries() -> Vec<(String, String)> {
        let text = include_str!("../../systemd/irqwise.catalog");
        let mut out = Vec::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if let Some(id) = line.strip_prefix("-- ") {
                let subject = lines.next().and_then(|l| l.strip_prefix("Subject: ")).unwrap_or("").to_string();
                out.push((id.to_string(), subject));
            }
        }
        out
    }

    #[test]
    fn ids_are_distinct_128_bit_hex_and_the_catalog_explains_exactly_them() {
        let ids: Vec<&str> = ALL.iter().map(|(_, id)| *id).collect();
        for id in &ids {
            assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
        }
        let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        let entries = catalog_entries();
        let listed: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(listed, ids, "systemd/irqwise.catalog lists the ids of ALL, in order");
        assert!(entries.iter().all(|(_, s)| !s.is_empty()), "every entry has a Subject: {entries:?}");
    }
}
