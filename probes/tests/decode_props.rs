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

/// The bytes of a `rec_cuda` (layout in `bpf/ingero_events.h`) with the
/// given launch fields and flags; other fields fixed.
fn cuda_record(grid: [u32; 3], block: [u32; 3], shared_mem: u32, flags: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_ne_bytes());
    b.extend_from_slice(&3u16.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&10u32.to_ne_bytes());
    b.extend_from_slice(&11u32.to_ne_bytes());
    for v in [1_000u64, 50, 0, u64::MAX, 0x5157, 0] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    for d in grid.iter().chain(&block).chain([shared_mem, flags].iter()) {
        b.extend_from_slice(&d.to_ne_bytes());
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    /// Launch geometry and the nested flag come back exactly as the kernel
    /// side wrote them, whatever the values.
    #[test]
    fn launch_fields_round_trip(
        grid in proptest::array::uniform3(any::<u32>()),
        block in proptest::array::uniform3(any::<u32>()),
        shared_mem in any::<u32>(),
        flags in any::<u32>(),
    ) {
        let clock = Clock::measure();
        let record = decode(&cuda_record(grid, block, shared_mem, flags), &clock);
        let Ok(ingero_probes::decode::Record::Cuda(c)) = record else {
            return Err(TestCaseError::fail(format!("not a CUDA record: {record:?}")));
        };
        prop_assert_eq!((c.grid, c.block, c.shared_mem), (grid, block, shared_mem));
        prop_assert_eq!(c.nested, flags & 1 != 0);
        prop_assert_eq!((c.stream, c.copy_kind), (0x5157, -1));
    }
}
