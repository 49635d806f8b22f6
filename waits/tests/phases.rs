//! The program's own account: every phase prints how long it blocked, and the known waits
//! last at least what they ask (the scale multiplies them).

use std::process::Command;

fn phases(args: &[&str]) -> Vec<(String, f64)> {
    let o = Command::new(env!("CARGO_BIN_EXE_waits")).args(args).output().expect("run waits");
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stderr)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("waits.")?.split_once(": "))
        .map(|(name, s)| (name.to_string(), s.parse().unwrap()))
        .collect()
}

#[test]
fn every_phase_reports_its_wait() {
    let dir = std::env::temp_dir();
    let got = phases(&[dir.to_str().unwrap(), "1"]);
    let names: Vec<&str> = got.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["sleep", "pipe", "condvar", "child", "disk"]);
    for (name, least) in [("sleep", 0.3), ("pipe", 0.2), ("condvar", 0.15), ("child", 0.25)] {
        let s = got.iter().find(|p| p.0 == name).unwrap().1;
        assert!(s >= least && s < least + 1.0, "{name}: {s}");
    }
}

#[test]
fn a_bad_scale_is_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_waits")).args(["/tmp", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("usage: waits"));
}

#[test]
fn round_trips_are_counted() {
    let o = Command::new(env!("CARGO_BIN_EXE_waits")).args(["--trips", "2000"]).output().unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("waits.trips: ") && err.contains("waits.trips_per_second: "), "{err}");
}
