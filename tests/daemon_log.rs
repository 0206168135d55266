//! What the daemon logs, captured in-process: a pass with nothing to do logs nothing, drift is
//! logged with the old and new masks. Alone in its own test binary: tracing caches each
//! callsite's interest process-wide, and a daemon test on another thread hitting the same
//! callsites while this one's thread-local subscriber is being installed made the drift warning
//! vanish now and then (it did in `tests/daemon.rs`).

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use daemon_fixture::{affinity, nic_root, set_affinity, Running};
use irqwise::cpuset::CpuSet;
use irqwise::events::Trigger;
use tracing_subscriber::layer::SubscriberExt;

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// A log sink the test can read.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_pass_with_nothing_to_do_logs_nothing_and_drift_is_logged_with_old_and_new() {
    let log = Captured::default();
    let sink = log.clone();
    let subscriber = tracing_subscriber::registry()
        .with(irqwise::daemon::logging::default_filter())
        .with(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || sink.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let after_start = log.text();
    assert_eq!(after_start.matches("cpus_new=").count(), 9, "one entry per change:\n{after_start}");
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(log.text(), after_start, "a pass with nothing to do logged something");
    let placed = affinity(root.path(), irqs[1]);
    set_affinity(root.path(), irqs[1], &set("0-15"));
    d.trigger(Trigger::Reconcile).await;
    let news = log.text()[after_start.len()..].to_string();
    let want = format!("irq {} drifted from {} to 0-15, restoring", irqs[1], placed.to_list_string());
    assert!(news.contains(&want) && news.contains("WARN"), "{news}");
    // The kernel's CPU-offline fallback whose CPU event this pass did not get (a storm): every
    // other online CPU. Placed again, said at INFO, not a drift warning.
    let before = log.text().len();
    let placed2 = affinity(root.path(), irqs[2]);
    set_affinity(root.path(), irqs[2], &set("0-15").difference(&placed2));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[2]), placed2);
    let news = log.text()[before..].to_string();
    assert!(news.contains("by the kernel (CPU-offline fallback) or its driver; placed again"), "{news}");
    assert!(!news.contains("WARN"), "{news}");
    d.stop().await;
}
