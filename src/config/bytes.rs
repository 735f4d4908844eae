//! Sizes in bytes as people write them: `67108864`, `64MiB`, `64Mi`,
//! `64 MiB`, `1G`.
//!
//! `--help` and docs/configuration.md give defaults as `64 MiB`; a flag that then
//! refuses `64MiB` with "invalid digit found in string" contradicts its own
//! help. Binary suffixes are Kubernetes' (`Ki`, `Mi`, `Gi`, `Ti`, as in a
//! resource quantity) with an optional `B`; decimal ones are `k`/`K`, `M`,
//! `G`, `T` with an optional `B`. A bare number is bytes.

use serde::{Deserialize, Deserializer};

/// Parses a size in bytes (see the module documentation).
///
/// # Errors
/// A message saying what is wrong (the caller adds the field's name).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let shape = || format!("{text:?} is not a size like 67108864, 64MiB or 64Mi");
    if number.is_empty() {
        return Err(shape());
    }
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is too large"))?;
    let unit = unit.trim_start();
    let multiplier: u64 = match unit.strip_suffix('B').unwrap_or(unit) {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(shape()),
    };
    n.checked_mul(multiplier)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// [`parse_bytes`] for clap's `value_parser` on `u64` flags.
///
/// # Errors
/// As [`parse_bytes`].
pub fn parse_bytes_u64(text: &str) -> Result<u64, String> {
    parse_bytes(text).map(|b| b as u64)
}

/// Reads an optional size from the configuration file: a number of bytes,
/// or a string as [`parse_bytes`] takes it.
///
/// # Errors
/// A serde error with [`parse_bytes`]'s message.
pub fn deserialize_optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(u64),
        Text(String),
    }
    match Option::<Written>::deserialize(d)? {
        None => Ok(None),
        Some(Written::Number(n)) => usize::try_from(n)
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("{n} is too large"))),
        Some(Written::Text(t)) => parse_bytes(&t).map(Some).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_as_written() {
        for (text, bytes) in [
            ("67108864", 67_108_864),
            ("64MiB", 64 << 20),
            ("64Mi", 64 << 20),
            ("64 MiB", 64 << 20),
            (" 512KiB ", 512 << 10),
            ("1Gi", 1 << 30),
            ("2G", 2_000_000_000),
            ("2GB", 2_000_000_000),
            ("500k", 500_000),
            ("0", 0),
        ] {
            assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn malformed_and_overflowing_sizes_are_refused() {
        for text in ["", "MiB", "64 mib", "64Mb", "-1", "1.5Mi", "64 MiB extra"] {
            let e = parse_bytes(text).unwrap_err();
            assert!(e.contains("is not a size like"), "{text}: {e}");
        }
        for text in ["99999999999999999999", "99999999999Ti"] {
            assert!(parse_bytes(text).unwrap_err().contains("too large"), "{text}");
        }
    }

    #[test]
    fn the_file_takes_numbers_and_strings() {
        #[derive(Deserialize)]
        struct F {
            #[serde(default, deserialize_with = "deserialize_optional")]
            size: Option<usize>,
        }
        let f: F = serde_yaml_ng::from_str("size: 64Mi").expect("string");
        assert_eq!(f.size, Some(64 << 20));
        let f: F = serde_yaml_ng::from_str("size: 1024").expect("number");
        assert_eq!(f.size, Some(1024));
        let f: F = serde_yaml_ng::from_str("{}").expect("absent");
        assert_eq!(f.size, None);
        assert!(serde_yaml_ng::from_str::<F>("size: 64 furlongs").is_err());
    }
}
