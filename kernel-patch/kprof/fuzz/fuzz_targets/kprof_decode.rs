//! `kprof::decode` of `sys:prof_data` bytes: never panics; what it accepts encodes back to
//! itself (byte for byte when the header has the standard length; a longer header's extra
//! bytes are skipped by the reader, as documented; version 1 is re-encoded as version 2), in one
//! piece or at any offset.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = kprof::decode(data) else { return };
    let bytes = s.to_bytes().unwrap();
    assert_eq!(bytes.len(), s.encoded_len());
    assert_eq!(kprof::decode(&bytes).as_ref(), Ok(&s));
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    let header_len = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
    // Version-1 input comes back as version 2 (its stack fields zero): compare the bodies.
    if header_len == kprof::HEADER_LEN && version == kprof::VERSION {
        assert_eq!(bytes, data);
    } else {
        assert_eq!(bytes[kprof::HEADER_LEN..], data[header_len..]);
    }
    // A reader may use any buffer size and position.
    for (offset, len) in [(0, 7), (5, 16), (kprof::HEADER_LEN - 1, 3), (kprof::HEADER_LEN + 9, 40), (bytes.len(), 8)] {
        let mut out = vec![0u8; len];
        let n = s.encode(offset, &mut out);
        let want = &bytes[offset.min(bytes.len())..(offset + len).min(bytes.len())];
        assert_eq!(&out[..n], want, "offset {offset} len {len}");
    }
    let _ = s.image_load_base(0x40_1000);
    let _ = s.image_load_base(u64::MAX);
});
