//! `profil::cli::parse` on a command line split from the input: arguments are separated by
//! NUL bytes (as in `/proc/PID/cmdline`), each taken as UTF-8 with invalid bytes replaced.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profil::cli::{self, Command};

fuzz_target!(|data: &[u8]| {
    let args: Vec<String> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    };
    for a in &args {
        if let Some(n) = cli::parse_number(a) {
            assert_eq!(cli::parse_number(&format!("{n:#x}")), Some(n));
            assert_eq!(cli::parse_number(&n.to_string()), Some(n));
        }
    }
    match cli::parse(args.clone()) {
        Ok(Command::Profile(a)) => {
            assert!((1..=100_000).contains(&a.frequency_hz));
            assert_ne!(a.sections.asm_top, Some(0));
            // Everything after the program name is the program's, unchanged.
            let own = a.target.arguments();
            let tail: Vec<std::ffi::OsString> = args[args.len() - own.len()..].iter().map(Into::into).collect();
            assert_eq!(tail, own);
            for f in [&a.exports.gmon, &a.exports.collapsed, &a.exports.json].into_iter().flatten() {
                assert!(!f.as_os_str().is_empty());
            }
        }
        Ok(Command::Help(h)) => assert!(h.starts_with("Usage: profil")),
        Ok(Command::Version) | Err(_) => {}
    }
});
