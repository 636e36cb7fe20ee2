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

/// The wall clock, now, for APIs that take a [`SystemTime`] (the epoch if the clock is
/// before it, as [`now`] reads it).
pub(crate) fn system_now() -> SystemTime {
    UNIX_EPOCH + now()
}

/// Seconds since the Unix epoch, now (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    now().as_secs()
}

/// A `YYYY-MM-DD` date as days since 1970-01-01: `None` when the text does not have that
/// shape (ten characters, digits and two dashes), `Some(None)` when it does but names no
/// day of the proleptic Gregorian calendar (`2026-02-30`, month 13).
pub(crate) fn calendar_day(date: &str) -> Option<Option<i64>> {
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10))
    {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (
        date[..4].parse().ok()?,
        date[5..7].parse().ok()?,
        date[8..].parse().ok()?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Some(None),
    };
    Some(
        (1..=days_in_month)
            .contains(&d)
            .then(|| days_from_civil(y, m, d)),
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
