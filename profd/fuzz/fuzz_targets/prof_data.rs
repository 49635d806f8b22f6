//! `prof_core::ProfData::from_bytes`: if it accepts the bytes, `to_bytes` gives them back, and
//! what is made from a `prof_data` (its layout, the `bins` file) does not fail.
//!
//! Inputs shorter than the 8224 bytes of a `prof_data` are also tried padded with zeros, so
//! the fuzzer can explore headers and the first bins without writing every bin.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_core::formats::bins_text;
use prof_core::prof_data::PROF_DATA_SIZE;
use prof_core::ProfData;

fn check(bytes: &[u8]) {
    let Ok(d) = ProfData::from_bytes(bytes) else { return };
    assert_eq!(d.to_bytes(), bytes);
    let _ = format!("{d:?}");
    let total = d.total();
    if let Some(l) = d.layout() {
        assert!(l.nr_bins >= 1 && l.nr_bins <= prof_core::MAX_BINS);
        assert_eq!(l.bin_of(l.start), Some(0));
        assert_eq!(l.bin_of(l.end - 1), Some(l.nr_bins - 1));
        let text = bins_text(&d);
        assert_eq!(text.lines().count(), 1 + l.nr_bins);
    } else {
        assert_eq!(total, 0);
        assert_eq!(bins_text(&d).lines().count(), 1);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() < PROF_DATA_SIZE {
        let mut padded = data.to_vec();
        padded.resize(PROF_DATA_SIZE, 0);
        check(&padded);
    }
});
