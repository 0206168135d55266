//! Coalescing bursts of triggers into one [`Batch`] per daemon pass.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::{timeout_at, Instant};

use super::Trigger;

/// The last reported state of a link within a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub name: Option<String>,
    pub up: bool,
}

/// Everything a burst of triggers asked for. Invariant: absorbing triggers only ever sets flags
/// and updates links, so a batch never forgets what an earlier trigger in it asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    pub cpus_changed: bool,
    /// The CPUs the CPU events named.
    pub cpus: crate::cpuset::CpuSet,
    pub devices_changed: bool,
    /// The device paths (`DEVPATH`) the device events named.
    pub devpaths: std::collections::BTreeSet<String>,
    /// Per interface index, the state of its latest link message in the burst.
    pub links: BTreeMap<u32, LinkState>,
    pub reload: bool,
    pub stop: bool,
    pub overflow: bool,
    pub reconcile: bool,
    /// A file that isolates or bans CPUs changed.
    pub isolation: bool,
    /// How many triggers were absorbed.
    pub triggers: usize,
}

impl Batch {
    /// Adds one trigger to the batch.
    pub(crate) fn absorb(&mut self, trigger: Trigger) {
        self.triggers += 1;
        match trigger {
            Trigger::Cpu { cpu, .. } => {
                self.cpus_changed = true;
                self.cpus.insert(cpu);
            }
            Trigger::Device { devpath, .. } => {
                self.devices_changed = true;
                self.devpaths.insert(devpath);
            }
            Trigger::Link { ifindex, name, up } => {
                self.links.insert(ifindex, LinkState { name, up });
            }
            Trigger::Overflow => self.overflow = true,
            Trigger::Reload | Trigger::Config { .. } => self.reload = true,
            Trigger::Stop => self.stop = true,
            Trigger::Reconcile => self.reconcile = true,
            Trigger::Isolation { .. } => self.isolation = true,
        }
    }

    /// Whether the CPU topology may have changed since the last pass and is read again whole:
    /// anything but device and link events and the reconcile timer may have (CPU hotplug, lost
    /// events, a reload, a file that isolates CPUs); a device or link event cannot add, remove or
    /// move a CPU, and a reconcile checks the CPU lists instead (see `SampleReader::stale_drift`).
    pub(crate) fn may_change_topology(&self) -> bool {
        // Destructured so that a new kind of trigger has to be placed on one side or the other.
        let Batch {
            cpus_changed,
            cpus: _,
            devices_changed,
            devpaths: _,
            links,
            reload,
            stop,
            overflow,
            reconcile,
            isolation,
            triggers: _,
        } = self;
        let only_devices_links_reconcile = (*devices_changed || !links.is_empty() || *reconcile)
            && !(*cpus_changed || *reload || *stop || *overflow || *isolation);
        !only_devices_links_reconcile
    }

    /// Whether no trigger was absorbed.
    pub fn is_empty(&self) -> bool {
        self.triggers == 0
    }
}

/// Turns a stream of triggers into batches, leading edge first: the first trigger after a quiet
/// `window` closes its batch at once (with whatever is already queued), so a single event is
/// handled in one pass time; triggers arriving within `window` of the last batch are coalesced
/// into one trailing batch that closes `window` after it. So a continuous flood yields one batch
/// per window, never an endless wait, and `window` stays the longest a burst can delay its final
/// pass. A [`Trigger::Stop`] closes the batch at once: shutdown is never delayed by the window.
pub(crate) struct Debouncer {
    rx: mpsc::Receiver<Trigger>,
    /// The window; read when a batch opens, so a reload changes it from the next batch on.
    window: watch::Receiver<Duration>,
    /// When the last batch closed.
    last: Option<Instant>,
}

impl Debouncer {
    #[cfg(test)]
    pub fn new(rx: mpsc::Receiver<Trigger>, window: Duration) -> Debouncer {
        Debouncer { rx, window: watch::channel(window).1, last: None }
    }

    /// A debouncer whose window follows `window` (the daemon's `debounce` after a reload).
    pub(crate) fn adjustable(rx: mpsc::Receiver<Trigger>, window: watch::Receiver<Duration>) -> Debouncer {
        Debouncer { rx, window, last: None }
    }

    /// Waits for the next trigger; after a quiet window returns at once with it and everything
    /// already queued, else collects until `window` after the last batch (or a stop).
    /// Returns `None` only when every sender is gone and nothing is pending.
    pub(crate) async fn next_batch(&mut self) -> Option<Batch> {
        let mut batch = Batch::default();
        batch.absorb(self.rx.recv().await?);
        let window = *self.window.borrow();
        let now = Instant::now();
        match self.last.map(|t| t + window).filter(|&until| until > now) {
            None => {
                while !batch.stop {
                    match self.rx.try_recv() {
                        Ok(trigger) => batch.absorb(trigger),
                        Err(_) => break,
                    }
                }
            }
            Some(deadline) => {
                while !batch.stop {
                    match timeout_at(deadline, self.rx.recv()).await {
                        Ok(Some(trigger)) => batch.absorb(trigger),
                        Ok(None) | Err(_) => break,
                    }
                }
            }
        }
        self.last = Some(Instant::now());
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::UeventAction;
    use tokio::time::sleep;

    fn cpu(cpu: u32) -> Trigger {
        Trigger::Cpu { cpu, action: UeventAction::Offline }
    }

    fn link(ifindex: u32, up: bool) -> Trigger {
        Trigger::Link { ifindex, name: Some(format!("eth{ifindex}")), up }
    }

    #[test]
    fn absorb_sets_the_flag_of_each_kind_and_keeps_the_latest_link_state() {
        let mut batch = Batch::default();
        assert!(batch.is_empty());
        batch.absorb(link(2, true));
        batch.absorb(link(3, true));
        batch.absorb(link(2, false));
        assert_eq!(batch.links.len(), 2);
        assert_eq!(batch.links[&2], LinkState { name: Some("eth2".into()), up: false });
        assert!(batch.links[&3].up);
        assert!(!(batch.cpus_changed || batch.devices_changed || batch.overflow || batch.reload || batch.stop));

        let device = Trigger::Device {
            subsystem: "pci".into(),
            action: UeventAction::Bind,
            devpath: "/devices/pci0000:00/0000:00:03.0".into(),
            name: None,
        };
        for trigger in [cpu(1), device, Trigger::Overflow, Trigger::Reload, Trigger::Reconcile, Trigger::Stop] {
            batch.absorb(trigger);
        }
        let Batch { cpus_changed, devices_changed, reload, stop, overflow, reconcile, triggers, .. } = batch;
        assert!(cpus_changed && devices_changed && reload && stop && overflow && reconcile);
        assert_eq!(triggers, 9);
    }

    /// 1,000 triggers spread evenly over 100 ms (10 per ms), window 50 ms. Each batch covers at
    /// least 50 ms from its first trigger, so at most ceil(100 / 50) + 1 = 3 batches; none lost.
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_1000_triggers_makes_at_most_three_batches_and_loses_none() {
        let (tx, rx) = mpsc::channel(64);
        let producer = tokio::spawn(async move {
            for i in 0..1000u32 {
                let trigger = match i % 3 {
                    0 => cpu(i % 8),
                    1 => link(i % 50, i % 2 == 0),
                    _ => Trigger::Overflow,
                };
                tx.send(trigger).await.unwrap();
                if i % 10 == 9 {
                    sleep(Duration::from_millis(1)).await;
                }
            }
        });
        let mut debouncer = Debouncer::new(rx, Duration::from_millis(50));
        let mut batches = Vec::new();
        while let Some(batch) = debouncer.next_batch().await {
            batches.push(batch);
        }
        producer.await.unwrap();
        assert!((1..=3).contains(&batches.len()), "{} batches", batches.len());
        assert_eq!(batches.iter().map(|b| b.triggers).sum::<usize>(), 1000);
        let links: std::collections::BTreeSet<u32> = batches.iter().flat_map(|b| b.links.keys().copied()).collect();
        let sent: std::collections::BTreeSet<u32> = (0..1000).filter(|i| i % 3 == 1).map(|i| i % 50).collect();
        assert_eq!(links, sent);
        assert!(batches.iter().any(|b| b.cpus_changed) && batches.iter().any(|b| b.overflow));
    }

    #[test]
    fn only_device_and_link_events_keep_the_topology() {
        let device = Trigger::Device {
            subsystem: "net".into(),
            action: UeventAction::Add,
            devpath: "/devices/pci0000:00/0000:00:03.0/net/eth0".into(),
            name: Some("eth0".into()),
        };
        let batch = |triggers: Vec<Trigger>| {
            let mut b = Batch::default();
            for t in triggers {
                b.absorb(t);
            }
            b
        };
        assert!(!batch(vec![device.clone()]).may_change_topology());
        assert!(!batch(vec![link(2, true), device.clone(), link(3, false)]).may_change_topology());
        assert!(!batch(vec![Trigger::Reconcile]).may_change_topology(), "a reconcile checks the CPU lists");
        assert!(!batch(vec![device.clone(), Trigger::Reconcile]).may_change_topology());
        for other in [cpu(1), Trigger::Overflow, Trigger::Reload, Trigger::Isolation { path: None }, Trigger::Stop] {
            assert!(batch(vec![device.clone(), other.clone()]).may_change_topology(), "{other:?}");
            assert!(batch(vec![other.clone()]).may_change_topology(), "{other:?}");
        }
        assert!(Batch::default().may_change_topology(), "an empty batch is read in full");
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_trigger_after_quiet_is_a_batch_at_once_and_the_rest_trail_one_window_later() {
        let (tx, rx) = mpsc::channel(8);
        let mut debouncer = Debouncer::new(rx, Duration::from_millis(100));
        let start = Instant::now();
        tx.send(cpu(0)).await.unwrap();
        let first = debouncer.next_batch().await.unwrap();
        assert_eq!((first.triggers, start.elapsed()), (1, Duration::ZERO), "leading edge: no wait");
        tokio::spawn(async move {
            sleep(Duration::from_millis(5)).await;
            tx.send(cpu(1)).await.unwrap();
            sleep(Duration::from_millis(20)).await;
            tx.send(link(2, true)).await.unwrap();
            sleep(Duration::from_secs(3600)).await; // keep the sender alive: the stream does not end
        });
        let trailing = debouncer.next_batch().await.unwrap();
        assert_eq!(trailing.triggers, 2, "both triggers within the window in one trailing batch");
        assert_eq!(start.elapsed(), Duration::from_millis(100), "closed a window after the first batch");
    }

    #[tokio::test(start_paused = true)]
    async fn stop_closes_the_batch_at_once_even_mid_window() {
        let (tx, rx) = mpsc::channel(8);
        let window = Duration::from_secs(10);
        let mut debouncer = Debouncer::new(rx, window);
        tx.send(cpu(0)).await.unwrap();
        debouncer.next_batch().await.unwrap();
        let start = Instant::now();
        tokio::spawn(async move {
            tx.send(cpu(1)).await.unwrap();
            sleep(Duration::from_millis(1)).await;
            tx.send(Trigger::Stop).await.unwrap();
            sleep(Duration::from_secs(3600)).await; // keep the sender alive: the stream does not end
        });
        let batch = debouncer.next_batch().await.unwrap();
        assert!(batch.stop && batch.cpus_changed);
        assert_eq!(start.elapsed(), Duration::from_millis(1), "stop waited for the window");
    }

    #[tokio::test(start_paused = true)]
    async fn an_adjusted_window_applies_from_the_next_batch() {
        let (tx, rx) = mpsc::channel(8);
        let (window, rx_window) = watch::channel(Duration::from_millis(100));
        let mut debouncer = Debouncer::adjustable(rx, rx_window);
        let start = Instant::now();
        tx.send(cpu(0)).await.unwrap();
        debouncer.next_batch().await.unwrap();
        tx.send(cpu(1)).await.unwrap();
        debouncer.next_batch().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(100));
        window.send_replace(Duration::from_secs(2));
        tx.send(cpu(2)).await.unwrap();
        debouncer.next_batch().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(2100), "2 s after the last batch");
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_alone_is_delivered_without_waiting() {
        let (tx, rx) = mpsc::channel(8);
        let mut debouncer = Debouncer::new(rx, Duration::from_secs(10));
        tx.send(Trigger::Stop).await.unwrap();
        let start = Instant::now();
        let batch = debouncer.next_batch().await.unwrap();
        assert_eq!((batch.stop, batch.triggers), (true, 1));
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn triggers_after_the_window_start_a_new_batch_and_the_end_yields_none() {
        let (tx, rx) = mpsc::channel(8);
        let mut debouncer = Debouncer::new(rx, Duration::from_millis(100));
        tx.send(cpu(1)).await.unwrap();
        tokio::spawn(async move {
            sleep(Duration::from_millis(150)).await;
            tx.send(Trigger::Reload).await.unwrap();
        });
        let first = debouncer.next_batch().await.unwrap();
        assert!(first.cpus_changed && !first.reload);
        let second = debouncer.next_batch().await.unwrap();
        assert!(second.reload && !second.cpus_changed);
        assert_eq!(debouncer.next_batch().await, None);
    }
}
