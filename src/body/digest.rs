//! Content hashes: the `?hash=` value and the ETag of every document we
//! serve.
//!
//! docs/wire.md#a-2: upper-case hex SHA-512 of the exact bytes
//! served, so every replica serving the same content hands out the same
//! hash URLs and ETags, and caches stay valid across replicas and restarts.

use sha2::{Digest, Sha512};

/// Upper-case hex SHA-512 of `bytes` (128 characters), as Go's `%X` prints
/// it.
#[must_use]
pub fn sha512_hex(bytes: &[u8]) -> String {
    upper_hex(&Sha512::digest(bytes))
}

/// `digest` in upper-case hex, as Go's `%X` prints it.
#[must_use]
pub fn upper_hex(digest: &[u8]) -> String {
    let mut out = String::with_capacity(digest.len() * 2);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The quoted form of a hash, as an ETag header carries it.
#[must_use]
pub fn quoted(hash: &str) -> String {
    format!("\"{hash}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_upper_case_hex_sha512() {
        // SHA-512("abc"), FIPS 180-2 appendix C.1.
        assert_eq!(
            sha512_hex(b"abc"),
            "DDAF35A193617ABACC417349AE20413112E6FA4E89A97EA20A9EEEE64B55D39A\
             2192992A274FC1A836BA3C23A3FEEBBD454D4423643CE80E2A9AC94FA54CA49F"
        );
        assert_eq!(sha512_hex(b"").len(), 128);
    }

    #[test]
    fn etag_is_quoted() {
        assert_eq!(quoted("AB"), "\"AB\"");
    }
}
