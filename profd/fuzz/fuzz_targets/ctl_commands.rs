//! The text the daemon parses: `prof:` control writes (`prof_core::ctl::parse`, `parse_line`,
//! `number`), then what it does with a parsed `start` (the bin rules of `BinLayout`), and the
//! kernel's `sys:context` table (`owner_in_context_table`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_core::ctl::{self, CtlCommand};
use prof_samplers::context_table::owner_in_context_table;
use prof_core::{BinLayout, ProfError, MAX_BINS};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let all = ctl::parse(&text);
    let mut each = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let c = ctl::parse_line(line);
        if let Err(e) = &c {
            assert_eq!(*e, ProfError::Invalid, "{line:?}");
        }
        each.push(c);
    }
    // A write is accepted as a whole or refused (EINVAL) as a whole.
    match &all {
        Ok(cmds) => assert_eq!(each.iter().cloned().collect::<Result<Vec<_>, _>>().as_ref(), Ok(cmds)),
        Err(e) => assert!(*e == ProfError::Invalid && each.iter().any(Result::is_err)),
    }
    for c in each.into_iter().flatten() {
        let CtlCommand::Start { req, image } = c else { continue };
        if !image.is_unknown() {
            // What profil sends is read back as the same command.
            let line = ctl::format_start(&req, &image.text);
            assert_eq!(ctl::parse_line(&line), Ok(CtlCommand::Start { req, image: image.clone() }));
        }
        let _ = image.load_base_for_mapping(req.start & !0xfff, req.end & !0xfff);
        if let Ok(l) = BinLayout::new(image.text, req.start, req.end, req.interval) {
            assert!((1..=MAX_BINS).contains(&l.nr_bins), "{l:?}");
            assert!(l.start < l.end && l.bin_sz >= l.min_bin_size());
            assert_eq!(l.bin_of(l.start), Some(0));
            assert_eq!(l.bin_of(l.end - 1), Some(l.nr_bins - 1));
            assert_eq!(l.bin_of(l.end), None);
            let last = l.last_bin_bytes();
            assert!(last >= 1 && last <= l.bin_sz);
            assert_eq!(l.bin_bounds(0).0, l.start);
            assert_eq!(l.bin_bounds(l.nr_bins - 1).1, l.end - 1);
        }
    }
    for word in text.split_ascii_whitespace() {
        if let Ok(n) = ctl::number(word) {
            assert_eq!(ctl::number(&n.to_string()), Ok(n));
            assert_eq!(ctl::number(&format!("{n:#x}")), Ok(n));
        }
    }
    for pid in [0, 1, 42] {
        let _ = owner_in_context_table(&text, pid);
    }
});
