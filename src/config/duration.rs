//! Durations as written in the config: a whole number and a unit, `"100ms"`, `"5s"`, `"2m"`, `"1h"`.

use std::time::Duration;

/// Parses `<digits><unit>` with unit `ms`, `s`, `m` or `h`; `None` for anything else (spaces,
/// signs, fractions, missing unit, overflow).
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let digits_end = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = text.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let millis_per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    Some(Duration::from_millis(n.checked_mul(millis_per_unit)?))
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
    fn rejects_everything_else() {
        for bad in ["", "5", "s", "5 s", "-5s", "1.5s", "5sec", "5S", "99999999999999999999h", "18446744073709551615h"]
        {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
