//! Where a run of plain string text, or of indentation, ends.
//!
//! Strings are most of a Kubernetes document (86,000 of them, 2.9 MB of
//! the 4 MB of 1.27's) and indentation most of the rest: the parser looks
//! for the end of each, and the renderer for the bytes a string must
//! escape. On x86-64 sixteen bytes are compared at once with SSE2, which
//! every x86-64 processor has (through `safe_arch`, as the crate forbids
//! `unsafe`); other processors go a 64-bit word at a time, which took a
//! tenth more of `convert`'s instructions (BENCHMARKS.md, Conversion).

#[cfg(not(target_arch = "x86_64"))]
pub(super) use words::{skip_plain, skip_spaces};

#[cfg(target_arch = "x86_64")]
pub(super) use sse2::{skip_plain, skip_spaces};

/// True for the bytes that end plain string text: exactly those JSON must
/// escape (`"`, `\` and the control characters).
fn ends_plain(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, min_u8_m128i,
        move_mask_i8_m128i, set_splat_i8_m128i,
    };

    use super::ends_plain;

    /// The position of the first byte at or after `from` that ends a run
    /// of plain string text, or the end.
    #[inline]
    pub(in crate::json::tree) fn skip_plain(bytes: &[u8], from: usize) -> usize {
        first_stop(bytes, from, plain_stops, ends_plain)
    }

    /// The position of the first byte at or after `from` that is not a
    /// space, or the end.
    pub(in crate::json::tree) fn skip_spaces(bytes: &[u8], from: usize) -> usize {
        first_stop(bytes, from, space_stops, |b| b != b' ')
    }

    fn splat(b: u8) -> m128i {
        set_splat_i8_m128i(i8::from_ne_bytes([b]))
    }

    /// All ones in each byte of `v` that ends plain text, zeros elsewhere.
    #[inline]
    fn plain_stops(v: m128i) -> m128i {
        let quote = cmp_eq_mask_i8_m128i(v, splat(b'"'));
        let backslash = cmp_eq_mask_i8_m128i(v, splat(b'\\'));
        // Below 0x20 (unsigned) exactly when the smaller of it and 0x1f is
        // the byte itself.
        let control = cmp_eq_mask_i8_m128i(min_u8_m128i(v, splat(0x1f)), v);
        bitor_m128i(bitor_m128i(quote, backslash), control)
    }

    /// All ones in each byte of `v` that is not a space.
    #[inline]
    fn space_stops(v: m128i) -> m128i {
        let spaces = cmp_eq_mask_i8_m128i(v, splat(b' '));
        // Equal to all ones exactly where `spaces` is all zeros.
        cmp_eq_mask_i8_m128i(spaces, set_splat_i8_m128i(0))
    }

    /// Bit `i` set for each byte `i` of `v` that is all ones.
    #[allow(clippy::cast_sign_loss)] // only the low sixteen bits can be set
    fn mask(v: m128i) -> u32 {
        move_mask_i8_m128i(v) as u32
    }

    /// The first byte at or after `from` where `stop` holds (`bytes.len()`
    /// if none): `stops` marks them in sixteen bytes at once; `stop` judges
    /// the last few bytes, after the last whole sixteen.
    #[inline]
    fn first_stop(
        bytes: &[u8],
        from: usize,
        stops: impl Fn(m128i) -> m128i,
        stop: impl Fn(u8) -> bool,
    ) -> usize {
        let chunk = |at: usize| {
            bytes.get(at..)?.first_chunk::<16>().map(|c| mask(stops(load_unaligned_m128i(c))))
        };
        let mut at = from;
        // Most strings (keys, names, types) and indentations end within
        // the first sixteen bytes.
        if let Some(found) = chunk(at) {
            if found != 0 {
                return at + found.trailing_zeros() as usize;
            }
            at += 16;
            // A description runs for hundreds of bytes: skipped 64 at a
            // time (one test of the four sixteens' marks together) up to
            // the block that holds the stop, which sixteens then search.
            let rest = bytes.get(at..).unwrap_or_default();
            for block in rest.chunks_exact(64) {
                let mut any = set_splat_i8_m128i(0);
                for sixteen in block.chunks_exact(16) {
                    if let Some(sixteen) = sixteen.first_chunk() {
                        any = bitor_m128i(any, stops(load_unaligned_m128i(sixteen)));
                    }
                }
                if mask(any) != 0 {
                    break;
                }
                at += 64;
            }
            while let Some(found) = chunk(at) {
                if found != 0 {
                    return at + found.trailing_zeros() as usize;
                }
                at += 16;
            }
        }
        let rest = bytes.get(at..).unwrap_or_default();
        at + rest.iter().take_while(|&&b| !stop(b)).count()
    }
}

/// The same, a 64-bit word at a time, for processors without SSE2 (and
/// the tests, which hold both to a byte-by-byte scan).
#[cfg(any(test, not(target_arch = "x86_64")))]
mod words {
    use super::ends_plain;

    /// The position of the first byte at or after `from` that ends a run
    /// of plain string text, or the end.
    #[inline]
    pub(in crate::json::tree) fn skip_plain(bytes: &[u8], from: usize) -> usize {
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
        /// High bit set in each byte of `v` that is zero; exact up to and
        /// including the first zero byte, which is all that is used.
        fn zero_bytes(v: u64) -> u64 {
            v.wrapping_sub(ONES) & !v & HIGH
        }
        let stops = |w: u64| {
            let quote = zero_bytes(w ^ (ONES * u64::from(b'"')));
            let backslash = zero_bytes(w ^ (ONES * u64::from(b'\\')));
            // High bit of each byte below 0x20 (exact up to the first one).
            let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
            quote | backslash | control
        };
        first_stop(bytes, from, stops, ends_plain)
    }

    /// The position of the first byte at or after `from` that is not a
    /// space, or the end.
    pub(in crate::json::tree) fn skip_spaces(bytes: &[u8], from: usize) -> usize {
        const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
        first_stop(bytes, from, |w| w ^ SPACES, |b| b != b' ')
    }

    /// The first byte at or after `from` where `stop` holds (`bytes.len()`
    /// if none): `stops` of a word read little-endian is nonzero in the
    /// first such byte and zero in every byte before it; `stop` judges one
    /// byte without a branch, so that the compiler turns it, applied to 32
    /// bytes at once, into vector compares where it can.
    #[inline]
    fn first_stop(
        bytes: &[u8],
        from: usize,
        stops: impl Fn(u64) -> u64,
        stop: impl Fn(u8) -> bool,
    ) -> usize {
        // Little-endian: the lowest set bit is in the first such byte.
        let offset = |found: u64| (found.trailing_zeros() / 8) as usize;
        // Two words tested at once; `None` past the last whole pair.
        let pair_at = |at: usize| {
            let pair = u128::from_le_bytes(*bytes.get(at..)?.first_chunk::<16>()?);
            Some((stops(pair as u64), stops((pair >> 64) as u64)))
        };
        let in_pair = |(low, high): (u64, u64)| {
            if low != 0 { Some(offset(low)) } else { (high != 0).then(|| 8 + offset(high)) }
        };
        let mut at = from;
        if let Some(pair) = pair_at(at) {
            if let Some(found) = in_pair(pair) {
                return at + found;
            }
            at += 16;
            // Skipped 32 at a time up to the block that holds the stop,
            // which pairs then search.
            while let Some(block) = bytes.get(at..).and_then(<[u8]>::first_chunk::<32>) {
                if block.iter().fold(false, |any, &b| any | stop(b)) {
                    break;
                }
                at += 32;
            }
            while let Some(pair) = pair_at(at) {
                if let Some(found) = in_pair(pair) {
                    return at + found;
                }
                at += 16;
            }
        }
        let rest = bytes.get(at..).unwrap_or_default();
        at + rest.iter().take_while(|&&b| !stop(b)).count()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::ends_plain;

    type Scan = fn(&[u8], usize) -> usize;

    /// Each implementation: its name, `skip_plain` and `skip_spaces`.
    fn implementations() -> Vec<(&'static str, Scan, Scan)> {
        let mut all: Vec<(&'static str, Scan, Scan)> =
            vec![("words", super::words::skip_plain, super::words::skip_spaces)];
        #[cfg(target_arch = "x86_64")]
        all.push(("sse2", super::sse2::skip_plain, super::sse2::skip_spaces));
        all
    }

    fn naive(bytes: &[u8], from: usize, stop: impl Fn(u8) -> bool) -> usize {
        bytes.iter().enumerate().skip(from).find(|&(_, &b)| stop(b)).map_or(bytes.len(), |(i, _)| i)
    }

    #[test]
    fn stops_at_each_kind_of_byte_in_every_lane() {
        // The first sixteen (or pair of words), blocks of 64 (or 32) and
        // what follows them, and a tail shorter than sixteen, each from a
        // few starting points.
        for (name, skip_plain, skip_spaces) in implementations() {
            for len in 0..180 {
                for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    for at in 0..len {
                        let mut bytes = vec![b'a'; len];
                        bytes[at] = stop;
                        // A byte above 0x80 and a 0x01 after the stop must
                        // not move the answer.
                        if at + 1 < len {
                            bytes[at + 1] = 0x01;
                        }
                        for from in [0, 1, 7, 8, 15, 16, 17, 31, 47, 80, at.saturating_sub(1), at] {
                            if from <= at {
                                assert_eq!(
                                    skip_plain(&bytes, from),
                                    at,
                                    "{name}: {bytes:?} from {from}"
                                );
                            }
                        }
                    }
                }
                // Bytes either side of each stop: 0x20 (the first plain
                // one), 0x7f, 0x80 and above (signed, negative), 0x21.
                let plain: Vec<u8> = (0..len)
                    .map(|i| [b'x', 0xc3, 0xa9, 0x7f, 0x20, 0x80, 0xff, 0x21][i % 8])
                    .collect();
                assert_eq!(skip_plain(&plain, 0), len, "{name}");
                let mut spaces = vec![b' '; len];
                assert_eq!(skip_spaces(&spaces, 0), len, "{name}");
                for at in 0..len {
                    for other in [b'"', b'\t', 0x21, 0x1f, 0xa0] {
                        spaces[at] = other;
                        assert_eq!(skip_spaces(&spaces, 0), at, "{name}: {spaces:?}");
                    }
                    spaces[at] = b' ';
                }
            }
        }
    }

    /// Short texts dense with stops, and long ones (a description's runs)
    /// where they are rare: `run` bytes, with `stop` bytes among them.
    fn texts(
        run: impl Strategy<Value = u8> + Clone + 'static,
        stop: impl Strategy<Value = u8> + Clone + 'static,
    ) -> impl Strategy<Value = (Vec<u8>, usize)> {
        prop_oneof![Just((4u32, 64usize)), Just((60, 400))].prop_flat_map(move |(runs, len)| {
            let byte = prop_oneof![runs => run.clone(), 1 => stop.clone()];
            (prop::collection::vec(byte, 0..len), 0..len)
        })
    }

    proptest! {
        #[test]
        fn plain_runs_agree_with_a_byte_by_byte_scan(
            (bytes, from) in texts(0x20u8..=0xff, prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20]),
        ) {
            let from = from.min(bytes.len());
            for (name, skip_plain, _) in implementations() {
                prop_assert_eq!(skip_plain(&bytes, from), naive(&bytes, from, ends_plain), "{}", name);
            }
        }

        #[test]
        fn space_runs_agree_with_a_byte_by_byte_scan((bytes, from) in texts(Just(b' '), any::<u8>())) {
            let from = from.min(bytes.len());
            for (name, _, skip_spaces) in implementations() {
                prop_assert_eq!(skip_spaces(&bytes, from), naive(&bytes, from, |b| b != b' '), "{}", name);
            }
        }
    }
}
