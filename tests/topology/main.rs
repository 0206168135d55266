//! Topology discovery, one test binary (one link step) for four subjects: `roundtrip` (hand-built
//! machines written as sysfs and read back equal), `hwloc` (hwloc's sysfs dumps read as hwloc
//! does), `groups` (each group's masks read once and shared) and `errors` (malformed sysfs
//! degrades with a warning). Run one with `cargo nextest run --test topology errors::`.

#[path = "../common/sysfs_tree.rs"]
mod sysfs_tree;

mod errors;
mod groups;
mod hwloc;
mod roundtrip;
