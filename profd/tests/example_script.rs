//! The example client script (`examples/prof-session.sh`) run by a real POSIX shell against a
//! directory standing in for /scheme/prof, holding files in the daemon's own formats.

use std::path::Path;
use std::process::Command;

use prof_core::formats::bins_text;
use prof_core::image::TextSegment;
use prof_core::{BinLayout, ProfData};

fn scheme_dir(state: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-script-{}-{state}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ctl"), "").unwrap();
    std::fs::write(
        dir.join("status"),
        format!(
            "state={state} pid=42 reason=none ticks_in_bins=4 ticks_user=5 ticks_kernel=1 dropped=0 \
             start=0x1000 end=0x1100 bin_sz=64 nr_bins=4 load_base=0x0\n"
        ),
    )
    .unwrap();
    let layout = BinLayout::new(TextSegment { start: 0x1000, end: 0x2000 }, 0x1000, 0x1100, 64).unwrap();
    let mut d = ProfData::new(&layout);
    d.bin[0] = 3;
    d.bin[3] = 1;
    std::fs::write(dir.join("bins"), bins_text(&d)).unwrap();
    dir
}

/// A PATH holding only `cat` and `sleep`: what a minimal Redox image offers besides the shell.
fn minimal_path(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["cat", "sleep"] {
        let found = ["/bin", "/usr/bin"].iter().map(|d| Path::new(d).join(tool)).find(|p| p.exists()).unwrap();
        let _ = std::os::unix::fs::symlink(found, bin.join(tool));
    }
    bin
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/prof-session.sh");
    let shell = ["/bin/sh", "/usr/bin/sh"].into_iter().find(|p| Path::new(p).exists()).unwrap();
    let o = Command::new(shell)
        .arg(script)
        .args(args)
        .env("PATH", minimal_path(dir))
        .env("PROF_SCHEME", dir)
        .env("PROF_SECONDS", "1")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn starts_waits_and_prints_the_non_empty_bins() {
    let dir = scheme_dir("stopped");
    let (code, out, err) = run(&dir, &["42", "0x1000", "0x1100", "64"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("ctl")).unwrap(), "start 42 0x1000 0x1100 64\n");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("state=stopped pid=42 "));
    assert_eq!(&lines[1..], ["0x1000-0x103f 3", "0x10c0-0x10ff 1"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_session_still_running_is_stopped_after_the_wait() {
    let dir = scheme_dir("running");
    let (code, _, err) = run(&dir, &["42"]);
    assert_eq!(code, 0, "{err}");
    // The last write was the stop (the whole-text start came first).
    assert_eq!(std::fs::read_to_string(dir.join("ctl")).unwrap(), "stop\n");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn usage_and_refused_start() {
    let dir = scheme_dir("idle");
    assert_eq!(run(&dir, &[]).0, 2);
    std::fs::remove_file(dir.join("ctl")).unwrap();
    std::fs::create_dir(dir.join("ctl")).unwrap(); // writes fail, as EBUSY would
    let (code, _, err) = run(&dir, &["42"]);
    assert_eq!(code, 1);
    assert!(err.contains("could not start profiling pid 42"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
