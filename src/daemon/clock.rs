//! The daemon's wall clock: the state file's times, `status`'s ages and the metrics' timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before it): the one wall clock of the state
/// file and `status`.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// [`unix_now`] with its fraction, for the metrics' timestamps.
pub(crate) fn unix_now_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}
