//! `-a`: every process of the system (Linux: root, or kernel.perf_event_paranoid <= 0). Three
//! CPU hogs each get their share, as the kernel measured their CPU time; a storm of 1,000
//! short processes is counted run by run; the run is the one session of the machine; Ctrl-C
//! ends it with a report; the exports have each process's stacks under it; and a user the
//! kernel does not allow is told why.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The rows of the `Processes:` table: (pid, samples, program).
fn process_rows(out: &str) -> Vec<(u32, u64, String)> {
    let table = out.split("\nProcesses: ").nth(1).expect("a Processes section");
    table
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.parse().ok()?, w.get(2)?.parse().ok()?, w.get(4..)?.join(" ")))
        })
        .collect()
}

/// The `By program` rows: (runs, samples, program).
fn program_rows(out: &str) -> Vec<(u64, u64, String)> {
    let table = out.split("\nBy program (its runs together):\n").nth(1).expect("a By program section");
    table
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.parse().ok()?, w.get(1)?.parse().ok()?, w.get(3..)?.join(" ")))
        })
        .collect()
}

/// `profil -a` with `args` from before `during` runs until after it has: started, its session
/// taken, then ended by SIGINT (Ctrl-C) once `during` is over.
fn system_run_around(args: &[&str], during: impl FnOnce()) -> std::process::Output {
    system_run_around_with_pid(args, during).0
}

/// [`system_run_around`], and profil's pid.
fn system_run_around_with_pid(args: &[&str], during: impl FnOnce()) -> (std::process::Output, u32) {
    // SIGINT as a terminal gives it, even where the suite runs as a background job (which
    // starts with SIGINT ignored, and profil keeps an ignored signal ignored).
    let p = with_default_signals(&mut Command::new(profil_bin()))
        .arg("-a")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = p.id();
    // Killed if the test fails: a run left sampling would hold the session for the others.
    let mut p = Reaped::new(p);
    wait_for_session("profil -a");
    during();
    // SAFETY: kill with a pid of our own child.
    unsafe { libc::kill(p.child().id() as i32, libc::SIGINT) };
    let t = Instant::now();
    loop {
        if p.child().try_wait().unwrap().is_some() {
            return (p.let_go().wait_with_output().unwrap(), pid);
        }
        assert!(t.elapsed() < Duration::from_secs(20), "profil -a did not end on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three busy processes, each using a set amount of CPU time (0.9 s, 0.6 s, 0.3 s: busy.c
/// measures its own) wholly inside the run: each one's samples are its CPU time within 5 %
/// (one sample a millisecond at the default 1 kHz), and so its share of theirs. Their rows
/// name their program, the by-program table has its three runs, the busiest one's section
/// names `spin`, and the collapsed stacks are under each process.
#[test]
fn three_hogs_each_get_their_share() {
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let dir = scratch("system-hogs");
    let hog = compile("cc", "busy.c", &["-O1", "-fno-omit-frame-pointer"], &dir);
    let collapsed = dir.join("system.folded");
    let budgets = [900u64, 600, 300];
    let mut pids = Vec::new();
    let o = system_run_around(&["--call-graph", "fp", "--collapsed", collapsed.to_str().unwrap()], || {
        let mut hogs: Vec<std::process::Child> =
            budgets.iter().map(|ms| Command::new(&hog).arg(ms.to_string()).spawn().unwrap()).collect();
        for h in &mut hogs {
            pids.push(h.id());
            assert!(h.wait().unwrap().success());
        }
    });
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = process_rows(&out);
    let hog_path = std::fs::canonicalize(&hog).unwrap().display().to_string();
    let samples: Vec<u64> = pids
        .iter()
        .map(|pid| {
            let row = rows.iter().find(|r| r.0 == *pid).unwrap_or_else(|| panic!("no row for hog {pid}:\n{out}"));
            assert_eq!(row.2, hog_path, "{out}");
            row.1
        })
        .collect();
    let all: u64 = samples.iter().sum();
    for (s, ms) in samples.iter().zip(&budgets) {
        assert!(s.abs_diff(*ms) * 20 <= *ms, "{samples:?} samples for {budgets:?} ms of CPU\n{out}");
        let (share, expected) = (*s as f64 / all as f64, *ms as f64 / 1800.0);
        assert!((share - expected).abs() <= 0.05 * expected, "share {share:.3}, its CPU time's {expected:.3}\n{out}");
    }
    let busy = program_rows(&out).into_iter().find(|r| r.2 == hog_path).expect("the hogs' program row");
    assert_eq!((busy.0, busy.1), (3, all), "{out}");
    assert!(out.contains("busy ×3 (") || out.contains(&format!("busy [pid {}] ({hog_path}): ", pids[0])), "{out}");
    assert!(out.contains(" spin [busy]\n"), "{out}");
    assert!(out.starts_with("System-wide (-a) in ") && out.contains("  idle\n"), "{out}");
    // Folded stacks: each hog's under its process.
    let folded = std::fs::read_to_string(&collapsed).unwrap();
    for pid in &pids {
        let root = format!("busy [pid {pid}];");
        assert!(folded.lines().any(|l| l.starts_with(&root) && l.contains(";spin")), "{root}\n{folded}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run until Ctrl-C (SIGINT) while 1,000 `/bin/true` run one after another: every one is a
/// run of the `true` row, in the report and in the JSON; meanwhile another profil is told
/// the machine's session is taken.
#[test]
fn a_storm_of_short_processes_is_counted_run_by_run() {
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let dir = scratch("system-storm");
    let json = dir.join("system.json");
    let o = system_run_around(&["--json", json.to_str().unwrap()], || {
        // The one session: a second profil is busy.
        let o = profil(&["-f", fib_bin().to_str().unwrap(), "20"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o).1.starts_with("Profil Error: Already profiling another process\n"), "{}", text(&o).1);
        let storm = Command::new("sh").args(["-c", "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done"]).status().unwrap();
        assert!(storm.success());
    });
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let true_path = std::fs::canonicalize("/bin/true").unwrap().display().to_string();
    let row = program_rows(&out).into_iter().find(|r| r.2 == true_path).unwrap_or_else(|| panic!("no {true_path} row:\n{out}"));
    assert_eq!(row.0, 1000, "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["program"], "system");
    let runs = v["processes"].as_array().unwrap().iter().filter(|c| c["program"] == true_path.as_str()).count();
    assert_eq!(runs, 1000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A user the kernel does not let sample every CPU gets one error that says why and what
/// would allow it.
#[test]
fn an_unprivileged_user_is_told_why() {
    if !root("to switch to nobody") {
        return;
    }
    let level: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    let _s = session();
    let o = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(profil_bin())
        .args(["-a", "-t", "0.2"])
        .output()
        .expect("setpriv (util-linux)");
    let (out, err) = text(&o);
    if level > 0 {
        assert_eq!(o.status.code(), Some(1), "{out}{err}");
        assert_eq!(
            err,
            format!(
                "Profil Error: Permission denied: -a samples every CPU, which the kernel allows root (or CAP_PERFMON), or anyone where kernel.perf_event_paranoid is 0 or below; it is {level}\n"
            )
        );
        assert!(out.is_empty(), "{out}");
    } else {
        assert_eq!(o.status.code(), Some(0), "{err}");
    }
}

/// A system-wide run saved (`-a --save`) is reported again (`--load`) with the same bytes,
/// report and every export; it has no program, so `--diff` with it is refused.
#[test]
fn a_saved_system_wide_run_is_reported_again_byte_for_byte() {
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let dir = scratch("system-saved");
    let hog = compile("cc", "busy.c", &["-O1"], &dir);
    let saved = dir.join("run.profil");
    let outputs = ["report", "json", "collapsed", "pprof", "svg", "speedscope", "firefox"];
    let args = |tag: &str| -> Vec<String> {
        outputs.iter().flat_map(|f| [format!("--{f}"), dir.join(format!("{tag}.{f}")).display().to_string()]).collect()
    };
    let mut live: Vec<String> = vec!["-g".into(), "--save".into(), saved.display().to_string()];
    live.extend(args("live"));
    let o = system_run_around(&live.iter().map(String::as_str).collect::<Vec<_>>(), || {
        assert!(Command::new(&hog).arg("200").status().unwrap().success());
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let mut load: Vec<String> = vec!["--load".into(), saved.display().to_string()];
    load.extend(args("loaded"));
    let o = profil(&load.iter().map(String::as_str).collect::<Vec<_>>());
    let (out, err) = text(&o);
    assert_eq!((o.status.code(), out.as_str()), (Some(0), ""), "{err}");
    // Another process's object gone since (a deleted file it ran, on a busy machine) is named
    // in the one warning, and its samples are then unnamed: the hog's are still the same.
    if !err.is_empty() {
        assert!(err.starts_with("profil: warning: cannot read ") && err.lines().count() == 1, "{err}");
        let (live, loaded) = (std::fs::read_to_string(dir.join("live.report")).unwrap(), std::fs::read_to_string(dir.join("loaded.report")).unwrap());
        let hog_lines = |r: &str| r.lines().filter(|l| l.contains("busy")).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(hog_lines(&live), hog_lines(&loaded), "{err}");
    }
    for f in outputs.iter().filter(|_| err.is_empty()) {
        let (a, b) = (std::fs::read(dir.join(format!("live.{f}"))).unwrap(), std::fs::read(dir.join(format!("loaded.{f}"))).unwrap());
        let first = String::from_utf8_lossy(&a).lines().zip(String::from_utf8_lossy(&b).lines()).find(|(x, y)| x != y).map(|(x, y)| format!("{x}\n{y}"));
        assert!(!a.is_empty() && a == b, "{f} differs live and loaded: {first:?}");
    }
    let report = std::fs::read_to_string(dir.join("live.report")).unwrap();
    assert!(report.starts_with("System-wide (-a) in ") && report.contains(" spin [busy]\n"), "{report}");
    // In the Firefox Profiler's file every process sampled is a track: the hog's samples
    // there, in time order, their stacks ending in its spin.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("live.firefox")).unwrap()).unwrap();
    let track = doc["threads"].as_array().unwrap().iter().find(|t| t["processName"] == "busy").expect("the hog's track");
    let times = track["samples"]["timeDeltas"].as_array().unwrap();
    assert!(times.len() > 50 && times.iter().all(|d| d.as_f64().unwrap() >= 0.0), "{} samples", times.len());
    let names = track["stringArray"].as_array().unwrap();
    assert!(names.iter().any(|n| n == "spin"), "{names:?}");
    // Every view is of every process: its threads (the hog's with its pid), its timeline, its
    // samples in time order, and a comparison with itself (nothing changed). What is about one
    // program is refused, as -a refuses it.
    let samples = dir.join("samples.txt");
    let o = profil(&["--load", saved.to_str().unwrap(), "--threads", "--timeline=2", "--diff", saved.to_str().unwrap(), "--samples", samples.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let hog_pid = table_rows(&out, "Processes: ").into_iter().find(|w| w.last() == Some(&hog.to_str().unwrap())).map(|w| w[0].to_string());
    let hog_pid = hog_pid.unwrap_or_else(|| panic!("no row of the hog: {out}"));
    // The hog's one thread (its tid its pid), named busy, its top function spin; a pid column
    // comes first where more than one process's threads were sampled.
    let thread = table_rows(&out, "By thread (").into_iter().find(|w| w.iter().position(|x| *x == "busy").is_some_and(|i| i > 0 && w[i - 1] == hog_pid));
    let thread = thread.unwrap_or_else(|| panic!("no thread of the hog: {out}"));
    let name = thread.iter().position(|x| *x == "busy").unwrap();
    assert_eq!(thread[name + 3..name + 5].join(" "), "spin [busy]", "{out}");
    assert!(out.contains("\nTimeline (2 slices of "), "{out}");
    let compared = out.lines().find(|l| l.starts_with("Compared with ")).unwrap_or_else(|| panic!("{out}"));
    assert!(compared.contains(", every process together ("), "{compared}");
    assert!(out.contains(" functions changed more than sampling noise explains") && out.contains("  0 of "), "{out}");
    let lines = std::fs::read_to_string(&samples).unwrap();
    assert!(lines.lines().any(|l| l.split('\t').nth(1) == Some(hog_pid.as_str()) && l.ends_with("spin [busy]")), "{lines}");
    let o = profil(&["--load", saved.to_str().unwrap(), "--asm"]);
    let err = text(&o).1;
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--asm does not go with '") && err.contains("a system-wide run (-a)"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `profil -a` at a terminal: it says how to end it, Ctrl-C (the terminal's INTR character)
/// ends the run, and the report follows on a new line; profil exits 0.
#[test]
fn ctrl_c_at_a_terminal_ends_a_system_wide_run() {
    use std::io::Write;
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let mut cmd = Command::new(profil_bin());
    cmd.arg("-a");
    let (mut child, mut terminal) = Terminal::new().spawn(cmd);
    let read = read_screen(terminal.try_clone().unwrap());
    wait_for_session("profil -a");
    std::thread::sleep(Duration::from_millis(300));
    terminal.write_all(b"\x03").unwrap();
    let status = child.wait().unwrap();
    drop(terminal);
    let screen = read.join().unwrap();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(screen.starts_with("profil: sampling every process until Ctrl-C\r\n"), "{screen:?}");
    assert!(screen.contains("^C\r\nSystem-wide (-a) in "), "{screen:?}");
}

/// `-a --requests`: every process's system calls but profil's own, by process. dd, started
/// during the run, writes its bytes one at a time and nothing else (`status=none`: no
/// statistics): its table has exactly that many writes, and its exec whole (the events were on
/// before it began). No table or row is this profil's (others may run on the machine). Saved,
/// the run keeps them; `--pids` keeps that process's alone. Under -g each process's calls have
/// their sites, named from its own files: writes.c's 300 and 100 writes by log_line and
/// log_other. (Processes by pid: one sampled before its exec may go by its parent's name.)
#[test]
fn requests_system_wide_count_a_known_program_s_calls() {
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let dir = scratch("system-requests");
    let saved = dir.join("run.profil");
    let n = 1000;
    let writes = compile("cc", "writes.c", &["-O0", "-fno-omit-frame-pointer"], &dir);
    let (mut dd, mut logger) = (0, 0);
    // By its path: a search of PATH would try an exec in each directory before it.
    let path = std::env::var("PATH").unwrap_or_default();
    let program = std::env::split_paths(&path).map(|d| d.join("dd")).find(|p| p.is_file()).expect("dd (coreutils)");
    let (o, own) = system_run_around_with_pid(&["--requests", "-g", "--top", "100000", "--save", saved.to_str().unwrap()], || {
        let child = Command::new(&program)
            .args(["if=/dev/zero", "of=/dev/null", "bs=1", &format!("count={n}"), "status=none"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        dd = child.id();
        assert!(child.wait_with_output().unwrap().status.success());
        let mut child = Command::new(&writes).args(["300", "100"]).spawn().unwrap();
        logger = child.id();
        assert!(child.wait().unwrap().success());
    });
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let list = out.split("\nRequests by process (").nth(1).unwrap_or_else(|| panic!("no Requests section: {out}"));
    let list = list.split("\n\n").next().unwrap();
    assert!(list.lines().any(|l| l.contains(&format!(" [pid {dd}] "))), "{list}");
    assert!(!list.contains(&format!("[pid {own}] ")), "profil's own calls: {list}");
    assert!(!out.contains("records lost"), "{out}");
    let o = profil(&["--load", saved.to_str().unwrap(), "--pids", &dd.to_string(), "--top", "1000"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let table = out.split(&format!(" [pid {dd}], each timed ")).nth(1).unwrap_or_else(|| panic!("no table of dd: {out}\nlive: {list}"));
    let table = table.split("\n\n").next().unwrap();
    let count = |call: &str| table.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w.first() == Some(&call)).then(|| w[1].parse::<u64>().unwrap())
    });
    assert_eq!((count("write"), count("execve")), (Some(n), Some(1)), "{table}");
    // dd alone is kept: every process together is dd.
    assert!(out.contains("\nRequests (system calls of every process together, 1 process, "), "{out}");
    let o = profil(&["--load", saved.to_str().unwrap(), "--pids", &logger.to_string(), "--top", "1000"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let table = out.split(&format!(" [pid {logger}], each timed ")).nth(1).unwrap_or_else(|| panic!("no table of writes: {out}"));
    let sites: Vec<String> = table.lines().skip_while(|l| !l.starts_with("  write ")).skip(1).take_while(|l| l.trim_start().starts_with(char::is_numeric)).map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(sites, ["300 75.0% log_line [writes] <- main [writes]", "100 25.0% log_other [writes] <- main [writes]"], "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}
