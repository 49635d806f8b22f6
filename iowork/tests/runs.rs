//! iowork does its work and says how long each phase took; bad input is refused.

use std::process::Command;

fn iowork(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iowork")).args(args).output().unwrap()
}

#[test]
fn both_phases_run_and_are_timed() {
    let dir = std::env::temp_dir().join(format!("iowork-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = iowork(&[dir.to_str().unwrap(), "5", "50"]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out, "iowork: 5 file rounds of 64 KiB, 50 pipe round trips\n");
    for phase in ["file", "pipe"] {
        let line = err.lines().find(|l| l.starts_with(&format!("iowork.time.{phase}: "))).expect(phase);
        let secs: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(secs > 0.0, "{line}");
    }
    // Its file is gone afterwards.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn no_trips_no_pipe_phase() {
    let o = iowork(&[std::env::temp_dir().to_str().unwrap(), "1", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("iowork.time.file: ") && !err.contains("iowork.time.pipe"), "{err}");
}

#[test]
fn small_calls_are_timed() {
    let dir = std::env::temp_dir().join(format!("iowork-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = iowork(&["--calls", dir.to_str().unwrap(), "1000"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.starts_with("iowork.time.calls: "), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn bad_input_is_refused() {
    let o = iowork(&["/nonexistent-dir-of-iowork", "1", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("iowork: /nonexistent-dir-of-iowork/iowork."));
    let o = iowork(&["/tmp", "many"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "iowork: ROUNDS must be a whole number, not 'many'\n");
}

/// The relay daemon is Redox's (a scheme of its own); elsewhere it says so and does nothing.
#[test]
#[cfg(not(target_os = "redox"))]
fn the_relay_is_a_redox_daemon() {
    let o = Command::new(env!("CARGO_BIN_EXE_iowork-relay")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "iowork-relay: a Redox scheme daemon; nothing to do here\n");
}

#[test]
fn self_pipe_round_trips_are_timed_with_the_cpu_time() {
    let o = iowork(&["--self-pipe", "200000"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let value = |key: &str| -> f64 {
        let line = err.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in {err}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (wall, cpu) = (value("iowork.time.self_pipe: "), value("iowork.cpu: "));
    // All of it is the process's own work (its own code and the kernel's pipe).
    assert!(wall > 0.0 && cpu > 0.0 && cpu <= wall + 0.05, "{err}");
    assert_eq!(iowork(&["--self-pipe", "x"]).status.code(), Some(1));
}
