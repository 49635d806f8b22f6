//! The clock as profd serves it and profil reads it (`prof:clock`):
//! `prof_core::kernel_clock::parse` never panics, and what it reads is served back (`render`)
//! as text that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_core::kernel_clock::{parse, render};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(report) = parse(&text) {
        for t in &report.threads {
            let _ = t.wall(report.at);
        }
        for s in &report.sites {
            let _ = report.daemon_of(s.scheme);
        }
        let served = render(&report);
        assert_eq!(parse(&served).as_ref(), Some(&report), "{served}");
    }
});
