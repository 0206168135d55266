//! Writes the tests' five-device fixture machine (2 nodes × 4 cores × 2 threads, an ice, an mlx5
//! and a virtio NIC, a managed NVMe and an NVMe of another driver) under DIR, for measuring a
//! daemon or a pass on it by hand: `cargo run --example fixture-root -- DIR`, then
//! `irqwise run --root DIR --config EMPTY_DIR`.

#[path = "../tests/common/acceptance.rs"]
mod acceptance;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: fixture-root DIR");
        std::process::exit(2);
    };
    let written = acceptance::five_device_machine();
    let status = std::process::Command::new("cp").arg("-a").arg(written.path()).arg(&dir).status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("cannot copy the fixture to {dir}");
        std::process::exit(1);
    }
}
