//! The program's signal state under profil is the one a shell gives it.

mod common;

use std::process::Command;

use common::{profil_bin, session, text};

/// The `SigIgn:` and `SigBlk:` lines of a `/proc/PID/status`.
fn ignored_and_blocked(status: &str) -> Vec<String> {
    status.lines().filter(|l| l.starts_with("SigIgn:") || l.starts_with("SigBlk:")).map(str::to_string).collect()
}

#[test]
fn the_program_starts_with_default_dispositions_and_no_blocked_signal() {
    let _s = session();
    // cat reports its own status: what it inherited, as a shell (or std's Command) starts it.
    let direct = Command::new("cat").arg("/proc/self/status").output().unwrap();
    let expected = ignored_and_blocked(&String::from_utf8_lossy(&direct.stdout));
    assert_eq!(expected.len(), 2);
    let o = Command::new(profil_bin()).args(["-f", "cat", "/proc/self/status"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    // SIGPIPE (bit 13 of SigIgn) in particular is not ignored, as it is in profil itself.
    assert_eq!(ignored_and_blocked(&text(&o).0), expected);
}
