//! Durations as the configuration file and the flags write them (`30s`,
//! `2m`, `500ms`).

use std::time::Duration;

/// Parses `500ms`, `30s`, `2m`, `1h` (a whole number and a unit); zero is
/// refused.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 =
        number.parse().map_err(|_| format!("{text:?} is not a duration like 30s, 500ms or 2m"))?;
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
    Ok(d)
}
