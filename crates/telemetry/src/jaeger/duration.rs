//! Jaeger's duration strings (`minDuration=1.2s`, `maxDuration=500us`): Go's `time.ParseDuration` syntax, a
//! sequence of decimal numbers each with a unit (`1h2m3.5s`), without a sign.

use std::time::Duration;

/// Why a duration string is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("an empty duration")]
    Empty,
    #[error("`{input}` is not a duration: expected a number before `{rest}`")]
    NoNumber { input: String, rest: String },
    #[error("`{input}` is not a duration: `{number}` has no unit (ns, us, µs, ms, s, m or h)")]
    NoUnit { input: String, number: String },
    #[error("`{input}` is not a duration: unknown unit `{unit}` (ns, us, µs, ms, s, m or h)")]
    UnknownUnit { input: String, unit: String },
    #[error("`{input}` is too long a duration")]
    Overflow { input: String },
}

/// Parse `1.2s`, `100ms`, `500us` (or `µs`), `2m30s`, `1h`, `250ns`, or `0`.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    if input.is_empty() {
        return Err(DurationError::Empty);
    }
    if input == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = input;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (whole, fraction, after_number) =
            split_number(rest).ok_or_else(|| DurationError::NoNumber {
                input: input.to_string(),
                rest: rest.to_string(),
            })?;
        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, next) = after_number.split_at(unit_len);
        let number = &rest[..rest.len() - after_number.len()];
        if unit.is_empty() {
            return Err(DurationError::NoUnit {
                input: input.to_string(),
                number: number.to_string(),
            });
        }
        let nanos_per_unit = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            input: input.to_string(),
            unit: unit.to_string(),
        })?;
        total = scaled(whole, fraction, nanos_per_unit)
            .and_then(|n| total.checked_add(n))
            .ok_or_else(|| DurationError::Overflow {
                input: input.to_string(),
            })?;
        rest = next;
    }
    let nanos = u64::try_from(total).map_err(|_| DurationError::Overflow {
        input: input.to_string(),
    })?;
    Ok(Duration::from_nanos(nanos))
}

/// `12.5ms` -> ("12", "5", "ms"); `.5s` -> ("", "5", "s"). None when there are no digits at all.
fn split_number(s: &str) -> Option<(&str, &str, &str)> {
    let whole_len = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (whole, after) = s.split_at(whole_len);
    let (fraction, after) = match after.strip_prefix('.') {
        Some(f) => {
            let len = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
            f.split_at(len)
        }
        None => ("", after),
    };
    (!whole.is_empty() || !fraction.is_empty()).then_some((whole, fraction, after))
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        // U+00B5 (micro sign) and U+03BC (Greek mu), as Go accepts both.
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// `whole.fraction` units in nanoseconds, the fraction truncated to whole nanoseconds.
fn scaled(whole: &str, fraction: &str, nanos_per_unit: u128) -> Option<u128> {
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut nanos = whole.checked_mul(nanos_per_unit)?;
    let mut scale = nanos_per_unit;
    for digit in fraction.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        nanos = nanos.checked_add(u128::from(digit - b'0') * scale)?;
    }
    Some(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> u64 {
        parse_duration(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .as_nanos() as u64
    }

    #[test]
    fn jaeger_ui_durations() {
        assert_eq!(ok("1.2s"), 1_200_000_000);
        assert_eq!(ok("100ms"), 100_000_000);
        assert_eq!(ok("500us"), 500_000);
        assert_eq!(ok("500µs"), 500_000);
        assert_eq!(ok("500\u{3bc}s"), 500_000);
        assert_eq!(ok("250ns"), 250);
        assert_eq!(ok("2m"), 120_000_000_000);
        assert_eq!(ok("1h"), 3_600_000_000_000);
        assert_eq!(ok("0"), 0);
        assert_eq!(ok("0s"), 0);
    }

    #[test]
    fn sequences_and_fractions_add_up() {
        assert_eq!(ok("1h2m3.5s"), 3_723_500_000_000);
        assert_eq!(ok("1m30s"), 90_000_000_000);
        assert_eq!(ok(".5s"), 500_000_000);
        assert_eq!(ok("1.s"), 1_000_000_000);
        assert_eq!(ok("1.0005ms"), 1_000_500);
        // Digits finer than a nanosecond are dropped, as Go does.
        assert_eq!(ok("1.0000000009s"), 1_000_000_000);
        assert_eq!(ok("0.0015us"), 1);
    }

    #[test]
    fn malformed_durations_say_why() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert!(
            matches!(parse_duration("12"), Err(DurationError::NoUnit { number, .. }) if number == "12")
        );
        assert!(matches!(
            parse_duration("1.5"),
            Err(DurationError::NoUnit { .. })
        ));
        assert!(
            matches!(parse_duration("1d"), Err(DurationError::UnknownUnit { unit, .. }) if unit == "d")
        );
        assert!(matches!(
            parse_duration("1S"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("s"),
            Err(DurationError::NoNumber { .. })
        ));
        assert!(matches!(
            parse_duration("-1s"),
            Err(DurationError::NoNumber { .. })
        ));
        assert!(
            matches!(parse_duration("1s "), Err(DurationError::UnknownUnit { unit, .. }) if unit == "s ")
        );
        assert!(matches!(
            parse_duration("."),
            Err(DurationError::NoNumber { .. })
        ));
        assert!(matches!(
            parse_duration("99999999999h"),
            Err(DurationError::Overflow { .. })
        ));
        let message = parse_duration("1d").unwrap_err().to_string();
        assert_eq!(
            message,
            "`1d` is not a duration: unknown unit `d` (ns, us, µs, ms, s, m or h)"
        );
    }
}
