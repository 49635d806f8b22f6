//! `profil -p PID [-t SECONDS]`: profiling a process that runs already, on Linux for real.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{compile, cpu_ms, field, flat_shares, profil_bin, scratch, session, share, text, user_share};

fn start(exe: &std::path::Path, args: &[&str]) -> Child {
    let child = Command::new(exe).args(args).stdout(Stdio::null()).spawn().unwrap();
    // Let it get going (and, for late_threads, be asleep) before profil attaches.
    std::thread::sleep(Duration::from_millis(300));
    child
}

#[test]
fn attach_for_a_while_to_a_busy_process() {
    let _s = session();
    let dir = scratch("attach-busy");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let mut target = start(&busy, &["4000"]);
    let pid = target.id().to_string();
    let json = dir.join("p.json");
    let before = cpu_ms(target.id()).unwrap();
    let o = Command::new(profil_bin()).args(["-f", "-p", &pid, "-t", "1", "--json", json.to_str().unwrap()]).output().unwrap();
    let used = cpu_ms(target.id()).unwrap() - before;
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // A tick a millisecond of the CPU time the process had while profil ran (however much
    // that was on a busy machine: the process's own clock, not the wall's), less what it had
    // while profil started and ended; /proc counts in 10 ms steps. Nearly all in spin().
    let user: u64 = field(&out, "Ticks:").split_whitespace().next().unwrap().parse().unwrap();
    assert!(user <= used + 20 && user as f64 >= used as f64 * 0.6 - 50.0, "{user} ticks for {used} ms of CPU:\n{out}");
    assert!(user_share(&out, "spin") > 90.0, "{out}");
    assert_eq!(field(&out, "Session ended by:"), "request");
    assert!(out.contains(&format!("(pid {pid}, attached) was still running when profiling stopped")), "{out}");
    assert!(!out.contains("Output of"), "no program output banner when attaching:\n{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["exit"]["attached_pid"].as_u64(), Some(pid.parse().unwrap()));
    assert_eq!(v["exit"]["running"], true);
    // The process was only watched: it goes on and ends by itself.
    assert!(target.try_wait().unwrap().is_none());
    assert!(target.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_created_after_attaching_are_counted_until_the_process_exits() {
    let _s = session();
    let dir = scratch("attach-threads");
    let exe = compile("cc", "late_threads.c", &["-O1", "-pthread"], &dir);
    // Asleep for 800 ms (profil attaches at 300 ms), then two threads spin 700 ms each.
    let mut target = start(&exe, &["800", "700"]);
    let pid = target.id().to_string();
    let o = Command::new(profil_bin()).args(["-f", "-p", &pid]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(field(&out, "Session ended by:"), "exit");
    assert!(out.contains(&format!("(pid {pid}, attached) exited")), "{out}");
    let rows = flat_shares(&out);
    assert!(share(&rows, "worker") > 90.0, "{out}");
    // 2 x 700 ms of CPU time in worker(): most of it counted (the machine may be busy).
    let user: u64 = field(&out, "Ticks:").split_whitespace().next().unwrap().parse().unwrap();
    assert!(user >= 1000, "{user} ticks for 1400 ms of threads:\n{out}");
    target.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A process with several threads at the time profil attaches (the kernel refused the redirect
/// of the other threads' events into the first one's buffer before it was mapped: "Generic
/// error" on every threaded process): every thread is counted.
#[test]
fn attach_to_a_process_that_already_runs_threads() {
    let _s = session();
    let dir = scratch("attach-running-threads");
    let exe = compile("cc", "late_threads.c", &["-O1", "-pthread"], &dir);
    // No sleep: both threads spin 3 s of CPU each from the start.
    let mut target = start(&exe, &["0", "3000"]);
    let pid = target.id();
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().count();
    assert_eq!(threads, 3, "main and two workers");
    let o = Command::new(profil_bin()).args(["-f", "-p", &pid.to_string(), "-t", "0.5"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(user_share(&out, "worker") > 90.0, "{out}");
    // -g and --children take the same path.
    let o = Command::new(profil_bin()).args(["-f", "-g", "--children", "-p", &pid.to_string(), "-t", "0.5"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(user_share(&out, "worker") > 90.0, "{out}");
    target.kill().unwrap();
    target.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attach_errors() {
    let _s = session();
    // No such process.
    let o = Command::new(profil_bin()).args(["-p", "999999999"]).output().unwrap();
    assert_eq!((o.status.code(), text(&o).1.as_str()), (Some(1), "Profil Error: No process for profiled program\n"));
    // Not ours to profile: an unprivileged user and a process of root's.
    if common::root("to own a process nobody may not profile") {
        let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
        let o = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(profil_bin())
            .args(["-p", &sleeper.id().to_string(), "-t", "1"])
            .output()
            .expect("setpriv (util-linux)");
        assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
        assert_eq!(
            text(&o).1,
            format!(
                "Profil Error: Permission denied: pid {} is another user's process; only root or its owner may profile it\n",
                sleeper.id()
            )
        );
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
    // One's own process whose program the kernel will not show (it is not dumpable): that is
    // a permission problem, not "no process".
    if common::root("to run a process as nobody") {
        let dir = scratch("attach-undumpable");
        let exe = compile("cc", "undumpable.c", &["-O1"], &dir);
        let mut target = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(&exe)
            .arg("5")
            .spawn()
            .expect("setpriv (util-linux)");
        // setpriv execs the program: its pid is the target's; give it time to drop dumpable.
        std::thread::sleep(Duration::from_millis(300));
        let pid = target.id().to_string();
        let o = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(profil_bin())
            .args(["-p", &pid, "-t", "0.2"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            text(&o).1,
            format!("Profil Error: Permission denied: cannot read /proc/{pid}/exe, pid {pid}'s program (the kernel keeps it from this user)\n")
        );
        target.kill().unwrap();
        target.wait().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A process whose program file was deleted since it started (every package upgrade replaces
/// files under running programs): profil reads it through /proc/PID/exe and names its code.
#[test]
fn attach_to_a_process_whose_program_was_deleted() {
    let _s = session();
    let dir = scratch("attach-deleted");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let gone = dir.join("gone");
    std::fs::copy(&busy, &gone).unwrap();
    let mut target = start(&gone, &["3000"]);
    std::fs::remove_file(&gone).unwrap();
    let pid = target.id().to_string();
    let o = Command::new(profil_bin()).args(["-f", "-p", &pid, "-t", "0.7"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(user_share(&out, "spin") > 90.0, "{out}");
    assert!(out.contains(&format!("'{} (deleted)' (pid {pid}, attached)", gone.display())), "{out}");
    // -g: the deleted file's unwind tables are read through /proc/PID/exe; stacks are whole.
    let o = Command::new(profil_bin()).args(["-f", "-g", "-p", &pid, "-t", "0.7"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = field(&out, "Call stacks:");
    // "A of B user samples, C truncated", or "… of B samples (user and kernel), …".
    let (head, tail) = line.split_once(", ").unwrap();
    let (all, cut): (u64, u64) = (head.split_whitespace().nth(2).unwrap().parse().unwrap(), tail.split_whitespace().next().unwrap().parse().unwrap());
    assert!(all > 100 && cut * 10 < all, "{out}");
    target.kill().unwrap();
    target.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-p PID FILE` with a FILE the process does not run: a warning, and the run goes on; a copy
/// of the same build (same GNU build-id) is the program and gets none.
#[test]
fn a_program_file_the_process_does_not_run_is_warned_about() {
    let _s = session();
    let dir = scratch("attach-other-file");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let copy = dir.join("busy-copy");
    std::fs::copy(&busy, &copy).unwrap();
    let mut target = start(&busy, &["1500"]);
    let pid = target.id().to_string();
    let warning = format!("is not the program pid {pid} runs (");
    let other = common::fib_bin();
    let o = Command::new(profil_bin()).args(["-f", "-p", &pid, "-t", "0.3", other.to_str().unwrap()]).output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("Warning: '{}' {warning}{})", other.display(), busy.display())), "{err}");
    for same in [&busy, &copy] {
        let o = Command::new(profil_bin()).args(["-f", "-p", &pid, "-t", "0.3", same.to_str().unwrap()]).output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(!err.contains("Warning:"), "{}: {err}", same.display());
    }
    target.kill().unwrap();
    let _ = target.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
