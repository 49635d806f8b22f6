//! Fault and security tests on Linux: the profiled program killed, crashing, exiting at once or
//! failing to exec; two profils racing; an unprivileged user. After each fault the session must
//! end cleanly, the partial profile be reported, the status propagated, and the next run work.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{child_of, profil_bin, root, session, wait_for_cpu, wait_for_session};

/// tests/data/busy.c, built once: `busy MS [STATUS [segv]]`.
fn busy() -> &'static Path {
    static BUSY: OnceLock<PathBuf> = OnceLock::new();
    BUSY.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("profil-faults-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("busy");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/busy.c");
        let ok = Command::new("cc").args(["-O1", "-o"]).arg(&exe).arg(src).status().map(|s| s.success());
        assert_eq!(ok.ok(), Some(true), "cc failed");
        exe
    })
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn field(text: &str, key: &str) -> u64 {
    let v = text.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key:?} in:\n{text}"));
    v.trim().parse().unwrap()
}

/// The next run after a fault works and holds real ticks.
fn next_run_works() {
    let o = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).arg("150").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(field(&out(&o), "Total ticks in all bins:") >= 50, "{}", out(&o));
}

#[test]
fn program_killed_with_sigkill() {
    let _s = session();
    let p = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).arg("30000").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let child = child_of(p.id());
    // 400 ms of its CPU time, however long that takes on a busy machine.
    wait_for_cpu(child, 400);
    // SAFETY: plain kill(2).
    assert_eq!(unsafe { libc::kill(child as i32, libc::SIGKILL) }, 0);
    let o = p.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(9), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("was killed by SIGKILL (9)\n"), "{text}");
    assert!(text.contains("Session ended by: exit\n"));
    // The partial profile: the 400 ms of CPU it had, in spin().
    assert!(field(&text, "Total ticks in all bins:") >= 100, "{text}");
    assert!(text.lines().any(|l| l.ends_with("  spin")), "{text}");
    next_run_works();
}

#[test]
fn program_crashing_with_sigsegv() {
    let _s = session();
    let o = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).args(["200", "0", "segv"]).output().unwrap();
    // A signal that dumps core: profil exits 128 + N rather than dump a core of its own.
    assert_eq!((o.status.code(), o.status.core_dumped()), (Some(128 + 11), false), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("was killed by SIGSEGV (11)\n"), "{text}");
    assert!(field(&text, "Total ticks in all bins:") >= 100, "{text}");
    next_run_works();
}

#[test]
fn program_exiting_at_once() {
    let _s = session();
    let o = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).args(["0", "7"]).output().unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("exited with status 7\n"), "{text}");
    assert!(text.contains("Session ended by: exit\n"));
    // Nothing (or next to nothing) was sampled, and that is reported, not an error.
    let total = field(&text, "Total ticks in all bins:");
    assert!(total <= 2, "{text}");
    if total == 0 {
        assert!(text.contains("No ticks fell in the profiled range.\n"));
    }
    next_run_works();
}

#[test]
fn program_failing_to_exec() {
    let _s = session();
    let dir = std::env::temp_dir().join(format!("profil-noexec2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("busy");
    std::fs::copy(busy(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let o = Command::new(profil_bin()).args(["--report", "-"]).arg(&copy).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("Cannot execute"), "{}", err(&o));
    assert!(!out(&o).contains("Profile Statistics"));
    std::fs::remove_dir_all(&dir).unwrap();
    next_run_works();
}

/// 50 times, two profils start together: exactly one profiles, the other is refused, and the
/// winner's profile is intact.
#[test]
fn fifty_races_have_exactly_one_winner() {
    let _s = session();
    for round in 0..50 {
        let start = || {
            Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).arg("120").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        };
        let (a, b) = (start(), start());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let won: Vec<&Output> = [&a, &b].into_iter().filter(|o| o.status.code() == Some(0)).collect();
        let lost: Vec<&Output> = [&a, &b].into_iter().filter(|o| o.status.code() != Some(0)).collect();
        assert_eq!(won.len(), 1, "round {round}: {} winners\n{}\n{}", won.len(), err(&a), err(&b));
        // The holder is named if it still holds the session when the loser asks.
        let lost_err = err(lost[0]);
        let mut lines = lost_err.lines();
        assert_eq!(lines.next(), Some("Profil Error: Already profiling another process"), "round {round}");
        assert!(lines.all(|l| l.starts_with("  Held by pid ")), "round {round}: {lost_err}");
        assert_eq!(lost[0].status.code(), Some(1));
        let text = out(won[0]);
        assert!(field(&text, "Total ticks in all bins:") >= 40, "round {round}: {text}");
        assert!(text.contains(", 0 lost\n") && text.contains("Session ended by: exit\n"), "round {round}: {text}");
    }
}

fn as_nobody(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(profil_bin())
        .args(["--report", "-"])
        .args(args)
        .output()
        .expect("setpriv (util-linux)")
}

/// An unprivileged user profiles its own program (user mode only) ...
#[test]
fn unprivileged_user_profiles_its_own_program() {
    if !root("to switch to nobody") {
        return;
    }
    let _s = session();
    let o = as_nobody(&[busy().to_str().unwrap(), "150"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(field(&out(&o), "Total ticks in all bins:") >= 50);
}

/// ... but not a program that would run as another user (set-user-ID): refused with a clear
/// message before anything runs.
#[test]
fn unprivileged_user_cannot_profile_another_users_process() {
    if !root("to make a set-user-ID program") {
        return;
    }
    let _s = session();
    let dir = std::env::temp_dir().join(format!("profil-setuid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let suid = dir.join("busy-suid");
    std::fs::copy(busy(), &suid).unwrap();
    std::fs::set_permissions(&suid, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
    let o = as_nobody(&[suid.to_str().unwrap(), "50"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(
        err(&o),
        format!(
            "Profil Error: Permission denied: '{}' runs as user 0 (set-user-ID); only root or that user may profile it\n",
            suid.display()
        )
    );
    assert!(!out(&o).contains("Output of"), "nothing may run");
}

/// The session is machine-wide across users: nobody's profil is refused while root profiles.
#[test]
fn another_users_session_makes_profil_busy() {
    if !root("to run profil as another user") {
        return;
    }
    let _s = session();
    let first = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).arg("1500").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for_session("root's profil");
    let o = as_nobody(&[busy().to_str().unwrap(), "50"]);
    let e = err(&o);
    assert!(
        e.starts_with(&format!("Profil Error: Already profiling another process\n  Held by pid {} (user root): ", first.id())),
        "{e}"
    );
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));
}

/// The profile is of one process (the Minix rule): threads count, but a process the program
/// starts does not, even though the sampling events are inherited across its fork.
#[test]
fn processes_the_program_starts_are_not_counted() {
    let _s = session();
    // `; exit 0` keeps sh from exec-ing busy in place of itself: busy runs as sh's child.
    let script = format!("{} 400; exit 0", busy().display());
    let o = Command::new(profil_bin()).args(["--report", "-", "/bin/sh", "-c", &script]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let ticks = text.lines().find_map(|l| l.strip_prefix("Ticks: ")).unwrap();
    let user: u64 = ticks.split_whitespace().next().unwrap().parse().unwrap();
    assert!(user < 40, "sh itself barely runs, but {user} user ticks were counted:\n{text}");
    assert!(!text.lines().any(|l| l.ends_with("  spin")), "busy's spin() was counted:\n{text}");
    // ... and the report says what it left out: busy's 400 ms at 1 kHz.
    let note = text.lines().find(|l| l.starts_with("Note: ")).unwrap_or_else(|| panic!("no note:\n{text}"));
    let samples: u64 = note["Note: ".len()..].split_whitespace().next().unwrap().parse().unwrap();
    assert!(samples > 250 && note.ends_with(" samples in 1 process '/bin/sh' started were not counted: the profile is of one process (--children profiles them too)."), "{note}");
}

/// profil killed outright (SIGKILL, nothing can end its session cleanly): the program it
/// launched does not run on unprofiled, the kernel kills it too.
#[test]
fn the_program_dies_with_profil() {
    let _s = session();
    let mut p = Command::new(profil_bin()).args(["--report", "-"]).arg(busy()).arg("30000").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let child = child_of(p.id());
    std::thread::sleep(Duration::from_millis(300));
    p.kill().unwrap();
    p.wait().unwrap();
    let t = Instant::now();
    // Gone, or a zombie waiting for whoever inherited it.
    let dead = || match std::fs::read_to_string(format!("/proc/{child}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    while !dead() {
        assert!(t.elapsed() < Duration::from_secs(5), "the program {child} still runs after profil was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    next_run_works();
}

/// An error the spec has no word for is its "Generic error", followed by what failed: here
/// perf_event_open, out of file descriptors (`ulimit -n 7`: profil's own files fit, the
/// sampling events do not).
#[test]
fn a_generic_error_says_what_failed() {
    let _s = session();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n 7; exec '{}' -f '{}' 100", profil_bin().display(), busy().display()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(err(&o), "Profil Error: Generic error\n  perf_event_open: Too many open files\n");
    next_run_works();
}
