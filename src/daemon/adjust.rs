//! What the adjust stage of a pass found, as one value: the pass reads the machine, plans it,
//! lets its collaborators adjust the plan (claims, load refinement, fights, other owners, NAPI
//! drift, irqbalance's banned CPUs), applies it, and hands this value with the apply's report
//! to the record ([`super::record`]), which keeps it and has [`super::journal`] say its news.
//! Nothing here is logged or recorded before the plan is applied.
//!
//! Pure data.

use std::collections::BTreeSet;

use super::claims::{ClaimNews, HeldClaim};
use super::fights::FightNews;
use super::napi_profiles::NapiJudgement;
use super::respect::{LeftToOther, RespectNews};
use crate::plan::refine::Moved;
use crate::topology::claims::RefusedClaim;

/// The news of one pass's collaborators, and what the state file and counters keep of them.
#[derive(Debug, Default)]
pub(crate) struct Adjusted {
    /// What changed among the runtime claims.
    pub claim_news: Vec<ClaimNews>,
    /// The runtime claims this pass held, and the live ones it refused.
    pub claims: Vec<HeldClaim>,
    pub refused_claims: Vec<RefusedClaim>,
    /// The CPUs the held claims keep free, counted.
    pub claimed_cpus: u64,
    /// The queues load refinement keeps away from home, and its moves and returns so far.
    pub away: Vec<Moved>,
    pub load_moves: u64,
    pub load_returns: u64,
    /// IRQs whose drift the kernel or a driver made (said as such, not as drift).
    pub kernel_rewrites: BTreeSet<u32>,
    /// `on_drift = "restore"`: what changed among the fought IRQs, and how many are fought.
    pub fights: Option<(Vec<FightNews>, u64)>,
    /// `on_drift = "respect"`: what changed among the IRQs left to others, and all of them.
    pub respect: Option<(Vec<RespectNews>, Vec<LeftToOther>)>,
    /// The NAPI instances another writer changed since irqwise wrote them.
    pub napi: NapiJudgement,
}
