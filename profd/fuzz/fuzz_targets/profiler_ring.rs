//! The Redox kernel profiler's records (`debug:profiling-N`) as profd reads them, upstream's
//! kind 0 and every typed kind: `prof_events::RingDecoder` never panics on any bytes, however
//! the reads cut them, no word is counted twice (a record, part of a damaged one, or stray),
//! and every typed record it reads is written back to the same words.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_events::layout::MAX_WORDS;
use prof_events::{record_words, Event, RingDecoder, UPSTREAM_MAX_WORDS};

fuzz_target!(|data: &[u8]| {
    // The first byte says where the reads are cut.
    let Some((&cut, stream)) = data.split_first() else { return };
    let cut = (cut as usize).min(stream.len());
    let mut decoder = RingDecoder::new(0);
    let mut events = Vec::new();
    // As the kernel gives them: the word the first read cut comes again in the second. A
    // `Start` of a newer layout ends the reading (and both pushes then say so).
    let first = decoder.push(&stream[..cut], &mut events);
    let second = decoder.push(&stream[cut / 8 * 8..], &mut events);
    assert!(first.is_ok() || second.is_err(), "a refused ring stays refused");
    let counts = decoder.finish();
    assert_eq!(counts.records as usize, events.len());
    for e in &events {
        if let Event::Sample(s) = e {
            // Upstream's records (no pid) are at most its buffer's length.
            let longest = if s.who.pid.is_none() { UPSTREAM_MAX_WORDS } else { MAX_WORDS };
            assert!(4 + s.kernel_frames.len() + s.user_frames.len() <= longest);
        }
        // A record read whole re-encodes within the record's bound.
        assert!(record_words(e).len() <= MAX_WORDS);
    }
    // A record takes 2 words at least, a damaged one or a stray word 1.
    assert!((counts.records + counts.unknown) * 2 + counts.damaged + counts.stray_words <= stream.len() as u64 / 8);
});
