//! Wall-clock time as the agent directory's records store it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
