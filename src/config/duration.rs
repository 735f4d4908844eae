//! Durations as the configuration file and the flags write them (`30s`,
//! `2m`, `500ms`).
//!
//! Every duration the proxy and `check` take — poll intervals, timeouts,
//! `keepAlive`, `requestTimeout`, `--deadline` — ends up as a timer:
//! `Instant::now() + d` or a tokio sleep, here and inside actix. A value
//! near `u64::MAX` seconds was once accepted and made every connection
//! panic on `Instant` overflow while the process stayed up. So a duration
//! is refused at load, with the field named, when it is longer than
//! [`MAX_DURATION`]: no timer of the proxy is meant to be longer than a day
//! (the longest default is the 5-minute `check --deadline`), and a day
//! added to any `Instant` cannot overflow.

use std::time::Duration;

/// The longest duration any field or flag accepts: one day.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Parses `500ms`, `30s`, `2m`, `1h` (a whole number and a unit); zero and
/// anything longer than [`MAX_DURATION`] are refused.
///
/// # Errors
/// A message saying what is wrong (the caller adds the field's name).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let too_long = || format!("{text:?} is longer than the maximum, 24h");
    let n: u64 = match number.parse() {
        Ok(n) => n,
        // All digits and still no u64: far beyond any maximum.
        Err(_) if !number.is_empty() => return Err(too_long()),
        Err(_) => return Err(format!("{text:?} is not a duration like 30s, 500ms or 2m")),
    };
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(format!("{text:?} needs a unit: ms, s, m or h")),
    };
    if d.is_zero() {
        return Err(format!("{text:?} must be more than zero"));
    }
    if d > MAX_DURATION {
        return Err(too_long());
    }
    Ok(d)
}

/// Like [`parse_duration`], but zero (`0s`, `0`) is a value: for a wait
/// that may be left out, such as the readiness grace period.
///
/// # Errors
/// A message saying what is wrong (the caller adds the field's name).
pub fn parse_duration_or_zero(text: &str) -> Result<Duration, String> {
    let digits = text.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !digits.is_empty() && digits.bytes().all(|b| b == b'0') {
        // Still refuse what is not a unit (`0x`).
        return match text.trim().trim_start_matches('0') {
            "" | "ms" | "s" | "m" | "h" => Ok(Duration::ZERO),
            _ => parse_duration(text),
        };
    }
    parse_duration(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_read() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 30s "), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn a_day_is_the_longest_duration_accepted() {
        for ok in ["24h", "1440m", "86400s", "86400000ms"] {
            assert_eq!(parse_duration(ok), Ok(MAX_DURATION), "{ok}");
        }
        for long in ["25h", "1441m", "86401s", "86400001ms"] {
            let e = parse_duration(long).expect_err(long);
            assert!(e.ends_with("is longer than the maximum, 24h"), "{long}: {e}");
        }
    }

    /// The values that used to be accepted and overflowed `Instant` on
    /// every connection: the largest `h` that fits in a `Duration`, values
    /// whose seconds saturate, and numbers beyond `u64`.
    #[test]
    fn durations_that_would_overflow_an_instant_are_refused() {
        for huge in [
            "2562047788015215h",
            "18446744073709551615s",
            "18446744073709551615ms",
            "18446744073709551615h",
            "99999999999999999999999999m",
        ] {
            let e = parse_duration(huge).expect_err(huge);
            assert_eq!(e, format!("{huge:?} is longer than the maximum, 24h"));
        }
    }

    #[test]
    fn malformed_durations_say_what_is_wrong() {
        assert_eq!(parse_duration("0s"), Err("\"0s\" must be more than zero".into()));
        assert_eq!(parse_duration("10"), Err("\"10\" needs a unit: ms, s, m or h".into()));
        assert_eq!(
            parse_duration("s"),
            Err("\"s\" is not a duration like 30s, 500ms or 2m".into())
        );
        assert_eq!(parse_duration("1d"), Err("\"1d\" needs a unit: ms, s, m or h".into()));
    }

    #[test]
    fn zero_is_a_value_where_a_wait_may_be_left_out() {
        assert_eq!(parse_duration_or_zero("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration_or_zero("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration_or_zero("00ms"), Ok(Duration::ZERO));
        assert_eq!(parse_duration_or_zero("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration_or_zero("0x").is_err());
        assert!(parse_duration_or_zero("").is_err());
        assert!(parse_duration_or_zero("25h").is_err());
    }
}
