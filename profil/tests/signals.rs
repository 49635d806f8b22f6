//! The program's signal state under profil is the one a shell gives it.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::{child_of, profil_bin, session, text, wait_for_cpu, with_default_signals};

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

use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};

use common::{field, fib_bin};

/// fib's arguments for a run that lasts seconds (its default is under one on a fast machine),
/// long enough for a test to interrupt it.
const LONG_FIB: &str = "42";

/// Start profil in a process group of its own (as a shell starts a job), let its program use
/// `cpu_ms` of CPU time (its own clock: the machine may be busy), then send `signal` to the
/// whole group (as a terminal's Ctrl-C does) or to profil alone.
fn interrupted(args: &[&str], cpu_ms: u64, signal: i32, whole_group: bool) -> Output {
    let child = with_default_signals(&mut Command::new(profil_bin()))
        .args(["--report", "-"])
        .args(args)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_cpu(child_of(child.id()), cpu_ms);
    let pid = child.id() as i32;
    // SAFETY: plain kill(2).
    unsafe { libc::kill(if whole_group { -pid } else { pid }, signal) };
    child.wait_with_output().unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("profil-signals-{name}-{}", std::process::id()))
}

#[test]
fn ctrl_c_still_reports_and_writes_the_exports() {
    let _s = session();
    let json = scratch("int.json");
    let o = interrupted(&["--json", json.to_str().unwrap(), fib_bin().to_str().unwrap(), LONG_FIB], 300, libc::SIGINT, true);
    let (out, err) = text(&o);
    assert_eq!(o.status.signal(), Some(libc::SIGINT), "{err}");
    assert!(out.contains("Profile Statistics") && out.contains("Flat profile"), "{out}");
    assert_eq!(field(&out, "Session ended by:"), "exit");
    assert!(out.contains("was killed by SIGINT (2)"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["exit"]["signal"], libc::SIGINT);
    assert!(v["ticks"]["user"].as_u64().unwrap() > 100, "{}", v["ticks"]);
    std::fs::remove_file(&json).ok();
}

#[test]
fn a_signal_to_profil_alone_is_passed_on_to_the_program() {
    let _s = session();
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let o = interrupted(&[fib_bin().to_str().unwrap(), LONG_FIB], 100, signal, false);
        let (out, err) = text(&o);
        // fib was not left running: it died of the same signal, and profil reported it.
        assert_eq!(o.status.signal(), Some(signal), "signal {signal}: {err}");
        assert!(out.contains(&format!("was killed by {} ({signal})", profil::report::signal_name(signal))), "{out}");
        assert_eq!(field(&out, "Session ended by:"), "exit");
    }
}

#[test]
fn a_program_that_ignores_ctrl_c_is_reported_as_stopped_by_request() {
    let _s = session();
    // The shell ignores SIGINT and keeps busy for about 3 s; profil stops the session.
    let script = "trap '' INT; i=0; while [ $i -lt 1500000 ]; do i=$((i+1)); done";
    let o = interrupted(&["-f", "sh", "-c", script], 100, libc::SIGINT, true);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(field(&out, "Session ended by:"), "request");
}

/// Ctrl-C on a script that runs profil stops the script, as it would without profil: profil,
/// its report and exports written, ends by the program's SIGINT, so bash (which goes on after a
/// child that merely exited 130) stops too.
#[test]
fn ctrl_c_stops_a_script_that_runs_profil() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        common::skip("no bash");
        return;
    }
    let _s = session();
    let fib = fib_bin();
    let script = format!(
        "'{p}' -f '{fib}' {LONG_FIB}; echo after=$?; '{p}' -f '{fib}' 20 1; echo second=$?",
        p = profil_bin().display(),
        fib = fib.display()
    );
    let child = with_default_signals(&mut Command::new("bash"))
        .args(["-c", &script])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // fib (bash's profil's child) is under way.
    wait_for_cpu(child_of(child_of(child.id())), 100);
    // SAFETY: plain kill(2) of the job's process group, as a terminal's Ctrl-C.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    // The report is on standard error; the script's own words on standard output.
    assert!(err.contains("was killed by SIGINT (2)"), "{out}\n{err}");
    assert!(!out.contains("after=") && !out.contains("second="), "the script went on:\n{out}");
    assert_eq!(o.status.signal(), Some(libc::SIGINT), "{err}");
}

/// Ctrl-C at a terminal: the terminal echoes `^C` at the end of the line, and the report starts
/// on the next one rather than after it.
#[test]
fn ctrl_c_at_a_terminal_starts_the_report_on_a_new_line() {
    use std::io::Write;
    let _s = session();
    let mut cmd = Command::new(profil_bin());
    cmd.args(["-f", common::fib_bin().to_str().unwrap(), LONG_FIB]);
    let (mut child, mut terminal) = common::Terminal::new().spawn(cmd);
    let read = common::read_screen(terminal.try_clone().unwrap());
    wait_for_cpu(child_of(child.id()), 100);
    terminal.write_all(b"\x03").unwrap(); // the terminal's INTR character: SIGINT to the group
    let status = child.wait().unwrap();
    drop(terminal);
    let screen = read.join().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "{screen}");
    assert!(screen.contains("^C\r\nFlat profile ("), "{screen:?}");
}

/// A terminal that hangs up under profil (its controlling process, as under `ssh -t host
/// profil prog`): the kernel's SIGHUP is passed on to the program, the report is dropped
/// quietly (its terminal is gone), the exports are written, and profil ends by SIGHUP.
#[test]
fn a_terminal_hangup_ends_the_program_and_keeps_the_exports() {
    let _s = session();
    let json = common::scratch("hup").join("hup.json");
    let mut cmd = Command::new(profil_bin());
    cmd.args(["-f", "--json", json.to_str().unwrap(), common::fib_bin().to_str().unwrap(), LONG_FIB]);
    let (mut child, terminal) = common::Terminal::new().spawn(cmd);
    wait_for_cpu(child_of(child.id()), 100);
    drop(terminal); // the hangup
    let status = child.wait().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the export was written")).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGHUP), "{status:?}");
    assert_eq!(v["exit"]["signal"], libc::SIGHUP, "the program got the hangup");
    assert!(v["ticks"]["user"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(json.parent().unwrap());
}

/// No write error of standard output or error makes profil panic (exit 101): a full disk, a
/// closed pipe, a terminal that hung up. The exit status says what happened, not how the
/// message was lost.
#[test]
fn write_errors_on_stdout_and_stderr_never_panic() {
    let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
    for (args, code) in [(&["--help"][..], 0), (&["-V"][..], 0), (&["--bogus"][..], 2), (&["/no/such/program"][..], 1)] {
        let o = Command::new(profil_bin()).args(args).stdout(full()).stderr(full()).output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}");
    }
}
