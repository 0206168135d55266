//! Load refinement in the daemon (`balance = "load"`, see [`crate::plan::refine`]): every
//! `balance_interval` the interrupt counts of `/proc/interrupts` are read, the rates of the
//! candidate queues computed over the window, and the moves they call for made by a pass.
//!
//! Guarantees: no sampling at all while no device has `balance = "load"` and no queue is away
//! from home; a sample that cannot be read is said once and moves nothing; each move and return
//! is logged with its rates (`LOAD_MOVED`) and counted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::once::SaidOnce;
use crate::config::BalanceKnobs;
use crate::plan::refine::{rate_words, refine, Candidate, LoadNews, LoadParams, LoadState, Moved};
use crate::report::counts::{counter_delta, InterruptCounts};
use crate::report::read::read_counts;
use crate::sysfs::Root;

/// What the daemon keeps for refinement.
#[derive(Debug)]
pub(crate) struct Balancer {
    state: LoadState,
    /// The last pass's candidates, at home.
    candidates: Vec<Candidate>,
    /// The last read of the counts, and when.
    last: Option<(Instant, InterruptCounts)>,
    /// The clock of the refinement's hold and budget.
    started: Instant,
    unreadable: SaidOnce<String>,
    /// Candidate IRQs the last sample had no count for (a line of `/proc/interrupts` missing
    /// or unreadable): they cannot be balanced; said once per set.
    unsampled: Vec<u32>,
    unsampled_said: SaidOnce<Vec<u32>>,
    /// Moves and returns since start.
    pub moves: u64,
    pub returns: u64,
}

impl Default for Balancer {
    fn default() -> Self {
        Balancer {
            state: LoadState::default(),
            candidates: Vec::new(),
            last: None,
            started: Instant::now(),
            unreadable: SaidOnce::default(),
            unsampled: Vec::new(),
            unsampled_said: SaidOnce::default(),
            moves: 0,
            returns: 0,
        }
    }
}

impl Balancer {
    /// The queues away from home, by IRQ.
    pub fn moved(&self) -> &BTreeMap<u32, Moved> {
        &self.state.moved
    }

    /// Takes a pass's candidates; with none (no device balances), forgets every move and the
    /// last sample.
    pub fn take_candidates(&mut self, candidates: Vec<Candidate>) {
        if candidates.is_empty() {
            self.state = LoadState::default();
            self.last = None;
        }
        self.candidates = candidates;
    }

    /// When the next sample is due; `None` while nothing balances.
    pub fn due(&self, knobs: &BalanceKnobs) -> Option<Instant> {
        if self.candidates.is_empty() {
            return None;
        }
        Some(self.last.as_ref().map_or_else(Instant::now, |(at, _)| *at + knobs.interval))
    }

    /// One sample: reads the counts, refines, logs each move and return. Whether anything
    /// changed (a pass must put it in place).
    pub fn sample(&mut self, root: &Root, knobs: &BalanceKnobs) -> bool {
        let now = Instant::now();
        let (counts, bad_lines) = match read_counts(root) {
            Ok(read) => {
                self.unreadable.worked();
                read
            }
            Err(e) => {
                let e = e.to_string();
                if self.unreadable.failed(e.clone()) {
                    tracing::warn!("balance = \"load\": {e}; no queue moves by load until it can be read");
                }
                self.last = Some((now, InterruptCounts::default()));
                return false;
            }
        };
        let Some((then, before)) = self.last.replace((now, counts)) else { return false };
        let Some((_, after)) = self.last.as_ref() else { return false };
        let secs = now.duration_since(then).max(Duration::from_millis(1)).as_secs_f64();
        let rates = rates(&before, after, secs, self.candidates.iter().map(|c| c.irq));
        self.say_unsampled(&rates, &bad_lines);
        let params = LoadParams { hold: knobs.hold.as_secs_f64(), moves_per_minute: knobs.moves_per_minute };
        let clock = now.duration_since(self.started).as_secs_f64();
        let news = refine(&mut self.state, &self.candidates, &rates, params, clock);
        for n in &news {
            self.say(n);
        }
        !news.is_empty()
    }

    /// Candidate IRQs without a count in the last sample, by number.
    #[cfg(test)]
    pub fn unsampled(&self) -> &[u32] {
        &self.unsampled
    }

    /// Says once which candidates the sample has no rate for (they stay where they are, as if
    /// idle), with the first unreadable line of `/proc/interrupts` when there was one.
    fn say_unsampled(&mut self, rates: &BTreeMap<u32, f64>, bad_lines: &[String]) {
        self.unsampled = self.candidates.iter().map(|c| c.irq).filter(|irq| !rates.contains_key(irq)).collect();
        if self.unsampled.is_empty() {
            self.unsampled_said.worked();
            return;
        }
        if self.unsampled_said.failed(self.unsampled.clone()) {
            let irqs: Vec<String> = self.unsampled.iter().map(ToString::to_string).collect();
            let why = bad_lines
                .first()
                .map_or_else(|| "no line for them".to_string(), |b| crate::text::printable(b).into_owned());
            tracing::warn!(
                "balance = \"load\": /proc/interrupts gives no count for IRQ(s) {} ({why}): they are not balanced",
                irqs.join(", ")
            );
        }
    }

    fn say(&mut self, news: &LoadNews) {
        match news {
            LoadNews::Moved { moved: m, rate, hot, target } => {
                self.moves += 1;
                tracing::info!(
                    message_id = super::catalog::LOAD_MOVED,
                    load_move = "moved",
                    irq = m.irq,
                    device = m.device.as_str(),
                    cpu_home = m.home,
                    cpu_to = m.to,
                    rate_hot = *hot,
                    rate_target = *target,
                    "irq {} of {}: home {}, {} (the queue: {})",
                    m.irq,
                    m.device,
                    m.home,
                    m.why,
                    rate_words(*rate)
                );
            }
            LoadNews::Returned { moved: m, home_load } => {
                self.returns += 1;
                tracing::info!(
                    message_id = super::catalog::LOAD_MOVED,
                    load_move = "returned",
                    irq = m.irq,
                    device = m.device.as_str(),
                    cpu_home = m.home,
                    cpu_to = m.home,
                    "irq {} of {}: back home on CPU {} from {} (the load evened out: {} there with it)",
                    m.irq,
                    m.device,
                    m.home,
                    m.to,
                    rate_words(*home_load)
                );
            }
        }
    }
}

/// Interrupts per second of each of `irqs` between two reads `secs` apart (over the CPUs with a
/// column in both); an IRQ missing from either read has no rate.
fn rates(
    before: &InterruptCounts,
    after: &InterruptCounts,
    secs: f64,
    irqs: impl Iterator<Item = u32>,
) -> BTreeMap<u32, f64> {
    let columns: Vec<(usize, usize)> = after
        .cpus
        .iter()
        .enumerate()
        .filter_map(|(j, cpu)| Some((before.cpus.iter().position(|c| c == cpu)?, j)))
        .collect();
    let mut out = BTreeMap::new();
    for irq in irqs {
        let (Some(b), Some(a)) = (before.irqs.get(&irq), after.irqs.get(&irq)) else { continue };
        let total: u64 = columns.iter().map(|&(i, j)| counter_delta(b[i], a[j])).sum();
        out.insert(irq, total as f64 / secs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;

    #[test]
    fn rates_sum_the_cpus_both_reads_have() {
        let before = InterruptCounts { cpus: vec![0, 1, 2], irqs: [(5, vec![10, 20, 30]), (6, vec![0, 0, 0])].into() };
        let after = InterruptCounts { cpus: vec![0, 2], irqs: [(5, vec![110, 130]), (7, vec![1, 1])].into() };
        let r = rates(&before, &after, 2.0, [5, 6, 7].into_iter());
        assert_eq!(r, [(5, 100.0)].into(), "CPU 1 went offline; 6 and 7 are not in both");
    }

    #[test]
    fn candidates_the_counts_lack_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let write = |n: u64| {
            let text = format!("           CPU0       CPU1\n  33: {n} 0 PCI-MSI eth0-0\n  34: x y PCI-MSI eth0-1\n");
            std::fs::write(dir.path().join("proc/interrupts"), text).unwrap();
        };
        let root = Root::new(dir.path());
        let mut b = Balancer::default();
        let cand = |irq| Candidate { irq, device: "nic".into(), home: 0, near: [CpuSet::new(), CpuSet::new()] };
        b.take_candidates(vec![cand(33), cand(34)]);
        let knobs = BalanceKnobs::default();
        write(10);
        b.sample(&root, &knobs);
        write(20);
        b.sample(&root, &knobs);
        assert_eq!(b.unsampled(), [34]);
    }
}
