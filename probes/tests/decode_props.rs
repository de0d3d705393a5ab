//! The ring-buffer record decoder on arbitrary bytes: every input gives a
//! record or an error, never a panic (the kernel side and user side could
//! disagree after a partial upgrade, or memory could be damaged).

use ingero_probes::clock::Clock;
use ingero_probes::decode::decode;
use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES` when set (longer runs on demand),
/// else the short CI count.
fn cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2048), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_records_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
        let clock = Clock::measure();
        let _ = decode(&bytes, &clock);
    }

    /// Valid tags with random bodies exercise the per-kind decoders.
    #[test]
    fn known_tags_with_random_bodies_never_panic(
        tag in 0u32..8,
        body in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        let mut bytes = tag.to_le_bytes().to_vec();
        bytes.extend(body);
        let clock = Clock::measure();
        let _ = decode(&bytes, &clock);
    }
}
