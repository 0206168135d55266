//! Load-aware refinement (`balance = "load"`): the deterministic plan is the resting state; a
//! queue moves off a CPU measured hot onto a cool CPU no farther from the device, and comes back
//! when the load evens out.
//!
//! Pure: [`candidates`] reads a plan, [`refine`] turns interrupt rates into moves and returns,
//! [`apply_moves`] puts the moves into a plan. The daemon samples the rates and keeps the
//! [`LoadState`] between samples.
//!
//! Guarantees:
//! - only single-CPU queue IRQs irqwise places (set or keep, never managed, never skipped) of
//!   devices with `balance = "load"` move, and only onto a usable CPU of their home's last-level
//!   cache, else of their home's node (the plan's own ENOSPC steps): never a farther hop, never a
//!   banned, isolated or claimed CPU;
//! - a CPU is hot when its queues' combined rate is above [`HOT_FLOOR`] and above [`HOT_RATIO`]
//!   times the median of the candidate CPUs, for [`HOT_SAMPLES`] samples in a row; then the
//!   hottest queue but one leaves, if that takes at least [`MIN_GAIN`] of the CPU's rate off it
//!   and the target stays below what the hot CPU had;
//! - a moved queue stays at least `hold`; moves and returns together stay within
//!   `moves_per_minute` in any 60 s;
//! - a moved queue returns home once its home would not be hot with it back, judged on the load
//!   as it would be after the return (so a return never makes the CPU a move left hot again:
//!   constant load moves once, never back and forth);
//! - among equally cool targets, the one carrying the fewest queues.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Action, Plan};
use crate::cpuset::CpuSet;

/// Interrupts per second below which no CPU counts as hot: an idle machine never moves.
pub const HOT_FLOOR: f64 = 1000.0;
/// How many times the median of the candidate CPUs a hot CPU's rate is above.
pub const HOT_RATIO: f64 = 2.0;
/// Samples in a row a CPU must be hot before a queue leaves it.
pub const HOT_SAMPLES: u32 = 3;
/// The least share of the hot CPU's rate a move must take off it.
pub const MIN_GAIN: f64 = 0.2;

/// The knobs of one refinement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadParams {
    /// Seconds a moved queue stays before it may return or move again.
    pub hold: f64,
    pub moves_per_minute: u32,
}

/// A queue IRQ that may move: where the plan puts it (`home`) and where it may go instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub irq: u32,
    pub device: String,
    pub home: u32,
    /// Usable CPUs of the home's last-level cache, then of its node, each without `home`.
    pub near: [CpuSet; 2],
}

/// A queue away from home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    pub irq: u32,
    pub device: String,
    pub home: u32,
    pub to: u32,
    /// When it moved (seconds on the caller's clock).
    pub since: f64,
    /// Why, in the plan's words: `moved to 6 by load: 38k/s on CPU 4 vs 1k/s`.
    pub why: String,
}

/// One decision of a sample.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadNews {
    Moved { moved: Moved, rate: f64, hot: f64, target: f64 },
    Returned { moved: Moved, home_load: f64 },
}

/// What refinement remembers between samples.
#[derive(Debug, Clone, Default)]
pub struct LoadState {
    /// IRQ → where it is while away from home.
    pub moved: BTreeMap<u32, Moved>,
    /// CPU → samples in a row it was hot.
    streak: BTreeMap<u32, u32>,
    /// When the moves and returns of the last minute happened.
    recent: VecDeque<f64>,
}

/// The candidates of `plan`: the single-CPU queue IRQs of the `enabled` devices that irqwise
/// sets or keeps, each with the usable CPUs near its home (`usable`: the CPUs device IRQs may
/// use now; `llc` and `node` say which CPUs share a CPU's last-level cache and node).
pub fn candidates(
    plan: &Plan,
    enabled: &BTreeSet<String>,
    usable: &BTreeMap<String, CpuSet>,
    llc: &dyn Fn(u32) -> CpuSet,
    node: &dyn Fn(u32) -> CpuSet,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for d in plan.devices.iter().filter(|d| enabled.contains(&d.bdf)) {
        let Some(usable) = usable.get(&d.bdf) else { continue };
        for p in &d.irqs {
            let single = p.desired.as_ref().filter(|s| s.len() == 1).and_then(CpuSet::first);
            let (Some(home), Some(_)) = (single, p.queue) else { continue };
            if p.managed || !matches!(p.action, Action::Set | Action::Keep) {
                continue;
            }
            let without = |s: CpuSet| {
                let mut s = s.intersection(usable);
                s.remove(home);
                s
            };
            let near = [without(llc(home)), without(node(home))];
            out.push(Candidate { irq: p.irq, device: d.bdf.clone(), home, near });
        }
    }
    out
}

/// The median of `values` (0 for none).
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The rate above which a CPU of `load` is hot: [`HOT_FLOOR`], or [`HOT_RATIO`] times the
/// median of the pool's CPUs when that is more.
fn hot_threshold(load: &BTreeMap<u32, f64>) -> f64 {
    HOT_FLOOR.max(HOT_RATIO * median(&mut load.values().copied().collect::<Vec<_>>()))
}

/// `38k/s`, `950/s`.
pub fn rate_words(r: f64) -> String {
    if r >= 10_000.0 {
        format!("{:.0}k/s", r / 1000.0)
    } else if r >= 1000.0 {
        format!("{:.1}k/s", r / 1000.0)
    } else {
        format!("{r:.0}/s")
    }
}

/// One sample: `rates` are interrupts per second per IRQ over the last window, `now` seconds on
/// the caller's clock. Updates `state` and returns what moved and what came back. Moves no
/// longer valid (their candidate gone, the target no longer near and usable) are dropped first,
/// silently: the plan re-planned them from their homes.
pub fn refine(
    state: &mut LoadState,
    cands: &[Candidate],
    rates: &BTreeMap<u32, f64>,
    params: LoadParams,
    now: f64,
) -> Vec<LoadNews> {
    let by_irq: BTreeMap<u32, &Candidate> = cands.iter().map(|c| (c.irq, c)).collect();
    state
        .moved
        .retain(|irq, m| by_irq.get(irq).is_some_and(|c| c.home == m.home && c.near.iter().any(|s| s.contains(m.to))));
    while state.recent.front().is_some_and(|t| now - t >= 60.0) {
        state.recent.pop_front();
    }
    let rate = |irq: u32| rate_of(rates, irq);
    // The pool: every CPU a candidate lives on or may go to.
    let mut pool: BTreeSet<u32> = BTreeSet::new();
    for c in cands {
        pool.insert(c.home);
        pool.extend(c.near.iter().flat_map(CpuSet::iter));
    }
    let mut load: BTreeMap<u32, f64> = pool.iter().map(|&cpu| (cpu, 0.0)).collect();
    for c in cands {
        *load.entry(at(c, state)).or_default() += rate(c.irq);
    }
    let threshold = hot_threshold(&load);
    let hot: Vec<u32> = load.iter().filter(|(_, l)| **l > threshold).map(|(c, _)| *c).collect();
    state.streak.retain(|cpu, _| hot.contains(cpu));
    for cpu in &hot {
        *state.streak.entry(*cpu).or_default() += 1;
    }
    let mut news = Vec::new();
    // Returns first: the plan is the resting state.
    take_returns(state, &mut load, rates, params, now, &mut news);
    // Then moves, hottest CPU first.
    take_moves(state, cands, &mut load, rates, params, now, &mut news);
    news
}

/// The interrupts per second of `irq` (0 when it has no rate).
fn rate_of(rates: &BTreeMap<u32, f64>, irq: u32) -> f64 {
    rates.get(&irq).copied().unwrap_or(0.0)
}

/// The CPU candidate `c` is on now: where it was moved to, else its home.
fn at(c: &Candidate, state: &LoadState) -> u32 {
    state.moved.get(&c.irq).map_or(c.home, |m| m.to)
}

/// Whether the last minute's moves and returns leave room for one more.
fn within_budget(state: &LoadState, params: LoadParams) -> bool {
    (state.recent.len() as u32) < params.moves_per_minute
}

/// Brings home each moved queue held long enough whose home would not be hot with it back,
/// within the budget; `load` follows each return.
fn take_returns(
    state: &mut LoadState,
    load: &mut BTreeMap<u32, f64>,
    rates: &BTreeMap<u32, f64>,
    params: LoadParams,
    now: f64,
    news: &mut Vec<LoadNews>,
) {
    let due: Vec<Moved> = state.moved.values().filter(|m| now - m.since >= params.hold).cloned().collect();
    for m in due {
        if !within_budget(state, params) {
            break;
        }
        let r = rate_of(rates, m.irq);
        let home_load = load.get(&m.home).copied().unwrap_or(0.0);
        // Judged on the load as it would be with the queue back: the move itself raised the
        // median, and a return judged on that would make home hot again (back and forth).
        let mut back = load.clone();
        *back.entry(m.home).or_default() += r;
        *back.entry(m.to).or_default() -= r;
        if home_load + r > hot_threshold(&back) {
            continue;
        }
        *load = back;
        state.moved.remove(&m.irq);
        state.recent.push_back(now);
        news.push(LoadNews::Returned { moved: m, home_load: home_load + r });
    }
}

/// From each CPU hot for long enough, hottest first, moves its second-busiest movable queue to
/// the coolest near CPU it would not make as hot, within the budget; `load` follows each move.
fn take_moves(
    state: &mut LoadState,
    cands: &[Candidate],
    load: &mut BTreeMap<u32, f64>,
    rates: &BTreeMap<u32, f64>,
    params: LoadParams,
    now: f64,
    news: &mut Vec<LoadNews>,
) {
    let rate = |irq: u32| rate_of(rates, irq);
    let mut hot_now: Vec<(u32, f64)> = state
        .streak
        .iter()
        .filter(|(_, n)| **n >= HOT_SAMPLES)
        .map(|(cpu, _)| (*cpu, load.get(cpu).copied().unwrap_or(0.0)))
        .collect();
    hot_now.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for (cpu, hot_load) in hot_now {
        if !within_budget(state, params) {
            break;
        }
        let mut here: Vec<&Candidate> = cands.iter().filter(|c| at(c, state) == cpu).collect();
        if here.len() < 2 {
            continue;
        }
        here.sort_by(|a, b| rate(b.irq).total_cmp(&rate(a.irq)).then(a.irq.cmp(&b.irq)));
        // The hottest stays; the next that may move (not held) leaves.
        let Some(q) =
            here.iter().skip(1).find(|c| state.moved.get(&c.irq).is_none_or(|m| now - m.since >= params.hold))
        else {
            continue;
        };
        let r = rate(q.irq);
        if r < MIN_GAIN * hot_load {
            continue;
        }
        // The coolest near CPU; among equally cool ones, the one with the fewest queues.
        let queues = |t: u32| cands.iter().filter(|c| at(c, state) == t).count();
        let target = q.near.iter().find_map(|set| {
            let best = set.iter().filter(|t| *t != cpu).min_by(|a, b| {
                let (la, lb) = (load.get(a).copied().unwrap_or(0.0), load.get(b).copied().unwrap_or(0.0));
                la.total_cmp(&lb).then(queues(*a).cmp(&queues(*b))).then(a.cmp(b))
            })?;
            let after = load.get(&best).copied().unwrap_or(0.0) + r;
            (after < hot_load).then_some(best)
        });
        let Some(to) = target else { continue };
        let target_load = load.get(&to).copied().unwrap_or(0.0);
        let why = format!(
            "moved to {to} by load: {} on CPU {cpu} vs {} on CPU {to}",
            rate_words(hot_load),
            rate_words(target_load)
        );
        let moved = Moved { irq: q.irq, device: q.device.clone(), home: q.home, to, since: now, why };
        *load.entry(cpu).or_default() -= r;
        *load.entry(to).or_default() += r;
        state.streak.remove(&cpu);
        state.recent.push_back(now);
        if to == q.home {
            state.moved.remove(&q.irq);
        } else {
            state.moved.insert(q.irq, moved.clone());
        }
        news.push(LoadNews::Moved { moved, rate: r, hot: hot_load, target: target_load });
    }
}

/// Puts `moved` into `plan`: each moved IRQ's desired CPU becomes its target, its reason says
/// so (`home 4, moved to 6 by load: ...`). Only IRQs of `cands` whose home is still the plan's
/// and whose target is still near; others stay as planned.
pub fn apply_moves(plan: &mut Plan, moved: &BTreeMap<u32, Moved>, cands: &[Candidate]) {
    if moved.is_empty() {
        return;
    }
    let valid: BTreeMap<u32, &Moved> = cands
        .iter()
        .filter_map(|c| {
            let m = moved.get(&c.irq)?;
            (m.home == c.home && c.near.iter().any(|s| s.contains(m.to))).then_some((c.irq, m))
        })
        .collect();
    for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()) {
        let Some(m) = valid.get(&p.irq) else { continue };
        let to: CpuSet = std::iter::once(m.to).collect();
        p.action = if p.current.as_ref() == Some(&to) { Action::Keep } else { Action::Set };
        p.desired = Some(to);
        p.reason = format!("{}; home {}, {}", p.reason, m.home, m.why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_two_middle_ones() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [7.0]), 7.0);
        assert_eq!(median(&mut [9.0, 1.0, 4.0]), 4.0);
        assert_eq!(median(&mut [10.0, 1.0, 3.0, 100.0]), 6.5);
    }

    #[test]
    fn rates_are_worded_per_second_with_thousands_as_k() {
        assert_eq!(rate_words(950.4), "950/s");
        assert_eq!(rate_words(999.0), "999/s");
        assert_eq!(rate_words(1000.0), "1.0k/s");
        assert_eq!(rate_words(2345.0), "2.3k/s");
        assert_eq!(rate_words(10_000.0), "10k/s");
        assert_eq!(rate_words(38_400.0), "38k/s");
    }

    /// Node 0 = CPUs 0-3 (one LLC), node 1 = 4-7 (one LLC); two queues per CPU of node 0:
    /// IRQs 10+2c and 11+2c on CPU c.
    fn two_per_cpu() -> Vec<Candidate> {
        (0..4)
            .flat_map(|cpu| {
                (0..2).map(move |k| {
                    let mut near = set("0-3");
                    near.remove(cpu);
                    Candidate { irq: 10 + 2 * cpu + k, device: "nic".into(), home: cpu, near: [near.clone(), near] }
                })
            })
            .collect()
    }

    const PARAMS: LoadParams = LoadParams { hold: 60.0, moves_per_minute: 4 };

    fn rates(hot: &[(u32, f64)]) -> BTreeMap<u32, f64> {
        let mut r: BTreeMap<u32, f64> = (10..18).map(|i| (i, 10.0)).collect();
        r.extend(hot.iter().copied());
        r
    }

    #[test]
    fn two_hot_queues_on_one_cpu_are_split_after_the_third_hot_sample_onto_the_coolest_near_cpu() {
        let cands = two_per_cpu();
        let mut state = LoadState::default();
        let hot = rates(&[(10, 40_000.0), (11, 30_000.0), (14, 500.0)]);
        for t in 0..2 {
            assert!(refine(&mut state, &cands, &hot, PARAMS, f64::from(t) * 10.0).is_empty(), "sample {t}");
        }
        let news = refine(&mut state, &cands, &hot, PARAMS, 20.0);
        assert_eq!(news.len(), 1, "{news:?}");
        let LoadNews::Moved { moved, .. } = &news[0] else { panic!("{news:?}") };
        assert_eq!((moved.irq, moved.home, moved.to), (11, 0, 1), "the second hottest, to the coolest (CPU 1: 20/s)");
        assert!(moved.why.contains("moved to 1 by load: 70k/s on CPU 0"), "{}", moved.why);
        // Nothing more: CPU 0 is no longer hot enough to keep moving.
        assert!(refine(&mut state, &cands, &hot, PARAMS, 30.0).is_empty());
    }

    #[test]
    fn an_idle_machine_and_a_single_hot_queue_never_move() {
        let cands = two_per_cpu();
        let mut state = LoadState::default();
        for t in 0..10 {
            assert!(
                refine(&mut state, &cands, &rates(&[(10, 900.0)]), PARAMS, f64::from(t)).is_empty(),
                "below the floor"
            );
        }
        let mut state = LoadState::default();
        for t in 0..10 {
            let one = rates(&[(10, 50_000.0)]);
            assert!(refine(&mut state, &cands, &one, PARAMS, f64::from(t)).is_empty(), "its partner is idle: no gain");
        }
    }

    #[test]
    fn never_a_farther_cpu_nor_one_outside_the_near_sets() {
        // Queues on CPU 0 whose only near CPU is 0's sibling 1, which is as busy: nowhere to go.
        let near = [set("1"), set("1")];
        let cands = vec![
            Candidate { irq: 1, device: "d".into(), home: 0, near: near.clone() },
            Candidate { irq: 2, device: "d".into(), home: 0, near: near.clone() },
            Candidate { irq: 3, device: "d".into(), home: 1, near: [set("0"), set("0")] },
        ];
        let r: BTreeMap<u32, f64> = [(1, 30_000.0), (2, 30_000.0), (3, 60_000.0)].into();
        let mut state = LoadState::default();
        for t in 0..10 {
            let news = refine(&mut state, &cands, &r, PARAMS, f64::from(t));
            for n in &news {
                let LoadNews::Moved { moved, .. } = n else { continue };
                assert!(moved.to <= 1, "{moved:?}");
            }
            assert!(news.is_empty(), "moving would make CPU 1 as hot: {news:?}");
        }
    }

    #[test]
    fn a_moved_queue_returns_home_when_the_load_evens_out_after_its_hold() {
        let cands = two_per_cpu();
        let mut state = LoadState::default();
        let hot = rates(&[(10, 40_000.0), (11, 30_000.0)]);
        let mut t = 0.0;
        while state.moved.is_empty() {
            refine(&mut state, &cands, &hot, PARAMS, t);
            t += 10.0;
        }
        let idle = rates(&[]);
        assert!(refine(&mut state, &cands, &idle, PARAMS, t).is_empty(), "held: not back before `hold`");
        let news = refine(&mut state, &cands, &idle, PARAMS, t + 60.0);
        assert!(
            matches!(&news[..], [LoadNews::Returned { moved, .. }] if moved.irq == 11 && moved.home == 0),
            "{news:?}"
        );
        assert!(state.moved.is_empty());
    }

    #[test]
    fn alternating_load_moves_at_most_the_budget_per_minute() {
        let cands = two_per_cpu();
        let params = LoadParams { hold: 0.0, moves_per_minute: 2 };
        let mut state = LoadState::default();
        let mut times = Vec::new();
        for step in 0..120u32 {
            let t = f64::from(step) * 2.0;
            // Every 10 s the hot pair changes CPU.
            let cpu = (step / 5) % 4;
            let hot = rates(&[(10 + 2 * cpu, 40_000.0), (11 + 2 * cpu, 30_000.0)]);
            for _ in refine(&mut state, &cands, &hot, params, t) {
                times.push(t);
            }
        }
        assert!(!times.is_empty(), "it does react");
        for (i, t) in times.iter().enumerate() {
            let in_minute = times[i..].iter().take_while(|u| **u - t < 60.0).count();
            assert!(in_minute <= 2, "{in_minute} moves within a minute from t={t}: {times:?}");
        }
    }

    #[test]
    fn moves_into_a_plan_keep_home_in_the_reason_and_drop_stale_ones() {
        use crate::devices::{DeviceClass, QueueRole, Recognition};
        use crate::plan::Placement;
        let cands = two_per_cpu();
        let mut plan = Plan::default();
        let irqs = cands
            .iter()
            .map(|c| {
                let home: CpuSet = std::iter::once(c.home).collect();
                Placement {
                    irq: c.irq,
                    name: None,
                    role: QueueRole::RxTx,
                    queue: Some(c.irq),
                    recognised: Recognition::UnknownDriver { driver: None },
                    queue_source: None,
                    managed: false,
                    current: Some(home.clone()),
                    current_locality: None,
                    desired: Some(home),
                    hint: None,
                    action: Action::Keep,
                    reason: "queue".into(),
                    fallbacks: Vec::new(),
                    mismatch: None,
                    uncertain: None,
                }
            })
            .collect();
        plan.devices.push(crate::plan::test_plans::device("nic", DeviceClass::Nic, irqs).with_node(Some(0)));
        let moved: BTreeMap<u32, Moved> = [
            (11, Moved { irq: 11, device: "nic".into(), home: 0, to: 1, since: 0.0, why: "moved to 1 by load".into() }),
            (13, Moved { irq: 13, device: "nic".into(), home: 0, to: 2, since: 0.0, why: "stale: home is 1".into() }),
        ]
        .into();
        apply_moves(&mut plan, &moved, &cands);
        let p11 = plan.devices[0].irqs.iter().find(|p| p.irq == 11).unwrap();
        assert_eq!((p11.desired.clone(), p11.action), (Some(set("1")), Action::Set));
        assert_eq!(p11.reason, "queue; home 0, moved to 1 by load");
        let p13 = plan.devices[0].irqs.iter().find(|p| p.irq == 13).unwrap();
        assert_eq!(p13.desired, Some(set("1")), "left as planned");
    }

    /// Refines `cands` with the hot pair of CPU 0 (IRQs 10 at 40k/s, 11 at 30k/s) for three
    /// samples, t = 0, 10, 20: IRQ 11 moves to CPU 1 at t = 20.
    fn after_the_first_move(cands: &[Candidate]) -> LoadState {
        let mut state = LoadState::default();
        let hot = rates(&[(10, 40_000.0), (11, 30_000.0)]);
        for t in [0.0, 10.0, 20.0] {
            refine(&mut state, cands, &hot, PARAMS, t);
        }
        assert_eq!(state.moved.get(&11).map(|m| (m.home, m.to, m.since)), Some((0, 1, 20.0)), "{state:?}");
        state
    }

    #[test]
    fn a_moved_queue_stays_away_while_its_home_would_be_hot_again() {
        let cands = two_per_cpu();
        let mut state = after_the_first_move(&cands);
        let hot = rates(&[(10, 40_000.0), (11, 30_000.0)]);
        // Past the hold, CPU 0 would carry 70k/s again: IRQ 11 stays on CPU 1.
        for t in [80.0, 90.0] {
            let news = refine(&mut state, &cands, &hot, PARAMS, t);
            assert!(!news.iter().any(|n| matches!(n, LoadNews::Returned { .. })), "t = {t}: {news:?}");
        }
        assert_eq!(state.moved.get(&11).map(|m| m.to), Some(1));
    }

    #[test]
    fn a_queue_held_after_its_move_does_not_move_again_within_the_hold() {
        let cands = two_per_cpu();
        let mut state = after_the_first_move(&cands);
        // CPU 1 turns hot with IRQ 12 at 40k/s beside IRQ 11 (30k/s): 11 is the one that would
        // leave, but it moved 10-30 s ago; 13 (10/s) gains too little. Nothing moves.
        let hot1 = rates(&[(10, 40_000.0), (11, 30_000.0), (12, 40_000.0)]);
        for t in [30.0, 40.0, 50.0] {
            let news = refine(&mut state, &cands, &hot1, PARAMS, t);
            assert!(news.is_empty(), "t = {t}: {news:?}");
        }
    }

    #[test]
    fn a_queue_back_home_counts_there_for_a_move_in_the_same_sample() {
        let cands = two_per_cpu();
        let mut state = after_the_first_move(&cands);
        // CPU 0 goes quiet (IRQ 10 silent, 11 at 3k/s), CPU 2 turns hot (14: 40k/s, 15: 30k/s).
        let r = rates(&[(10, 0.0), (11, 3_000.0), (14, 40_000.0), (15, 30_000.0)]);
        for t in [60.0, 70.0] {
            assert!(refine(&mut state, &cands, &r, PARAMS, t).is_empty(), "t = {t}");
        }
        // At t = 80: IRQ 11 is due and returns (CPU 0: 3k/s), then 15 leaves CPU 2 for the
        // coolest near CPU, which is CPU 1 (20/s), not CPU 0 where 11 now is.
        let news = refine(&mut state, &cands, &r, PARAMS, 80.0);
        let seen: Vec<(bool, u32, u32)> = news
            .iter()
            .map(|n| match n {
                LoadNews::Returned { moved, .. } => (false, moved.irq, moved.home),
                LoadNews::Moved { moved, .. } => (true, moved.irq, moved.to),
            })
            .collect();
        assert_eq!(seen, [(false, 11, 0), (true, 15, 1)], "{news:?}");
    }

    /// Three CPUs near each other: IRQs 1 and 2 at home on CPU 0, 3 on CPU 1, CPU 2 free.
    fn three_cpus() -> Vec<Candidate> {
        let near = |home: u32| {
            let mut s = set("0-2");
            s.remove(home);
            [s.clone(), s]
        };
        vec![
            Candidate { irq: 1, device: "d".into(), home: 0, near: near(0) },
            Candidate { irq: 2, device: "d".into(), home: 0, near: near(0) },
            Candidate { irq: 3, device: "d".into(), home: 1, near: near(1) },
        ]
    }

    #[test]
    fn constant_load_moves_once_and_never_back_and_forth() {
        // 700/s and 700/s on CPU 0, 600/s on CPU 1: CPU 0 is hot (1.4k/s over twice the median,
        // 600/s); IRQ 2 leaves for CPU 2. With it back CPU 0 would be hot again, whatever the
        // median its move raised (700/s): it stays, for half an hour of the same load.
        let cands = three_cpus();
        let r: BTreeMap<u32, f64> = [(1, 700.0), (2, 700.0), (3, 600.0)].into();
        let params = LoadParams { hold: 300.0, moves_per_minute: 4 };
        let mut state = LoadState::default();
        let mut news = Vec::new();
        for step in 0..180u32 {
            news.extend(refine(&mut state, &cands, &r, params, f64::from(step) * 10.0));
        }
        assert_eq!(news.len(), 1, "{news:?}");
        assert!(matches!(&news[0], LoadNews::Moved { moved, .. } if moved.irq == 2 && moved.to == 2), "{news:?}");
    }

    #[test]
    fn among_equally_cool_cpus_the_one_with_fewer_queues_is_the_target() {
        // CPU 0 hot with IRQs 1 and 2; CPU 1 carries two idle queues (3, 4), CPU 2 one idle
        // queue (5): both at 0/s, the move goes to CPU 2.
        let near = |home: u32| {
            let mut s = set("0-2");
            s.remove(home);
            [s.clone(), s]
        };
        let cands: Vec<Candidate> = [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2)]
            .into_iter()
            .map(|(irq, home)| Candidate { irq, device: "d".into(), home, near: near(home) })
            .collect();
        let r: BTreeMap<u32, f64> = [(1, 40_000.0), (2, 30_000.0), (3, 0.0), (4, 0.0), (5, 0.0)].into();
        let mut state = LoadState::default();
        let mut news = Vec::new();
        for t in [0.0, 10.0, 20.0] {
            news.extend(refine(&mut state, &cands, &r, PARAMS, t));
        }
        assert!(matches!(&news[..], [LoadNews::Moved { moved, .. }] if moved.irq == 2 && moved.to == 2), "{news:?}");
    }
}
