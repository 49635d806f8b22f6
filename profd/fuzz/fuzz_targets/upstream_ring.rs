//! Upstream Redox's profiler records (`debug:profiling-N`) as profd reads them:
//! `prof_samplers::upstream_ring::RingDecoder` never panics on any bytes, however the reads cut
//! them, and no word is counted twice (a record, part of a damaged one, or stray).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_samplers::upstream_ring::{RingDecoder, MAX_WORDS};

fuzz_target!(|data: &[u8]| {
    // The first byte says where the reads are cut.
    let Some((&cut, stream)) = data.split_first() else { return };
    let cut = (cut as usize).min(stream.len());
    let mut decoder = RingDecoder::new();
    let mut records = Vec::new();
    // As the kernel gives them: the word the first read cut comes again in the second.
    decoder.push(&stream[..cut], &mut records);
    decoder.push(&stream[cut / 8 * 8..], &mut records);
    let counts = decoder.finish();
    assert_eq!(counts.records as usize, records.len());
    for r in &records {
        assert!(4 + r.kernel_frames.len() + r.user_frames.len() <= MAX_WORDS);
    }
    // A record takes 4 words at least, a damaged one or a stray word 1.
    assert!(counts.records * 4 + counts.damaged + counts.stray_words <= stream.len() as u64 / 8);
});
