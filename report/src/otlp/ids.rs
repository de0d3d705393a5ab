//! Deterministic trace and span ids: exporting the same database twice gives
//! the same ids, so a backend deduplicates a re-export instead of showing the
//! run twice, and a span can be found again from the data alone.

/// FNV-1a over the little-endian bytes of `parts`, started from `seed`.
fn fnv1a(seed: u64, parts: &[i64]) -> u64 {
    let mut h = seed;
    for p in parts {
        for b in p.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // Final avalanche (splitmix64) so nearby inputs give unrelated ids.
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 16-byte trace id as 32 lower-case hex digits, never all zeros.
pub fn trace_id(parts: &[i64]) -> String {
    let a = fnv1a(0xcbf2_9ce4_8422_2325, parts);
    let b = fnv1a(0x8422_2325_cbf2_9ce4, parts);
    let (a, b) = if a == 0 && b == 0 { (1, 0) } else { (a, b) };
    format!("{a:016x}{b:016x}")
}

/// An 8-byte span id as 16 lower-case hex digits, never all zeros.
pub fn span_id(parts: &[i64]) -> String {
    let a = fnv1a(0x6c62_272e_07bb_0142, parts);
    format!("{:016x}", if a == 0 { 1 } else { a })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(trace_id(&[1, 2]), trace_id(&[1, 2]));
        assert_ne!(trace_id(&[1, 2]), trace_id(&[2, 1]));
        assert_eq!(trace_id(&[7]).len(), 32);
        assert_eq!(span_id(&[7]).len(), 16);
        assert_ne!(span_id(&[1, 2, 3]), span_id(&[1, 2, 4]));
    }
}
