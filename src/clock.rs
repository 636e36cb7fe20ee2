//! Wall-clock time as memoria stores and compares it: durations since the Unix epoch.
//! Every Unix timestamp in the crate comes from here.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Time since the Unix epoch at `time`; `None` for a time before it.
pub(crate) fn since_epoch(time: SystemTime) -> Option<Duration> {
    time.duration_since(UNIX_EPOCH).ok()
}

/// Time since the Unix epoch, now (zero if the clock is before it).
pub(crate) fn now() -> Duration {
    since_epoch(SystemTime::now()).unwrap_or_default()
}

/// Seconds since the Unix epoch, now (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    now().as_secs()
}
