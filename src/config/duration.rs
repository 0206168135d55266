//! Durations as written in the config: a whole number and a unit, `"100ms"`, `"5s"`, `"2m"`, `"1h"`.

use std::time::Duration;

/// Parses `<digits><unit>` with unit `ms`, `s`, `m` or `h`; `None` for anything else (spaces,
/// signs, fractions, missing unit, overflow).
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    parse_in(text, &[("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000)])
}

/// `<digits><unit>` with a unit of `units` (each with its length in nanoseconds).
fn parse_in(text: &str, units: &[(&str, u64)]) -> Option<Duration> {
    let digits_end = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = text.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let (_, nanos) = units.iter().find(|(u, _)| *u == unit)?;
    Some(Duration::from_nanos(n.checked_mul(*nanos)?))
}

/// Parses `<digits><unit>` with unit `ns`, `us`, `ms` or `s` (the NAPI timeouts, which the kernel
/// takes in nanoseconds); `None` for anything else.
pub(crate) fn parse_fine_duration(text: &str) -> Option<Duration> {
    parse_in(text, &[("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_four_units() {
        assert_eq!(parse_duration("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
    }

    #[test]
    fn fine_durations_take_nanoseconds_to_seconds() {
        assert_eq!(parse_fine_duration("50us"), Some(Duration::from_micros(50)));
        assert_eq!(parse_fine_duration("200ns"), Some(Duration::from_nanos(200)));
        assert_eq!(parse_fine_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_fine_duration("1s"), Some(Duration::from_secs(1)));
        for bad in ["", "5", "5m", "5 us", "-5us", "1.5ms", "18446744073709551615s"] {
            assert_eq!(parse_fine_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for bad in ["", "5", "s", "5 s", "-5s", "1.5s", "5sec", "5S", "99999999999999999999h", "18446744073709551615h"]
        {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
