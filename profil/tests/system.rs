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

/// Three busy processes at different nice levels (so their shares differ): each one's share
/// of their samples is within 5 % of its share of the CPU time the kernel gave them meanwhile.
/// Their rows name their program, the by-program table has its three runs, each one's section
/// names `spin`, and the collapsed stacks are under each process.
#[test]
fn three_hogs_each_get_their_share() {
    if !root("for -a (or kernel.perf_event_paranoid <= 0)") {
        return;
    }
    let _s = session();
    let dir = scratch("system-hogs");
    let hog = compile("cc", "busy.c", &["-O1", "-fno-omit-frame-pointer"], &dir);
    let mut hogs: Vec<std::process::Child> = [0, 3, 8]
        .iter()
        .map(|nice| Command::new("nice").arg(format!("-n{nice}")).arg(&hog).arg("600000").spawn().unwrap())
        .collect();
    // Each one is running its loop (nice has exec'd it) before the window opens.
    for h in &hogs {
        wait_for_cpu(h.id(), 20);
    }
    let collapsed = dir.join("system.folded");
    let before: Vec<u64> = hogs.iter().map(|h| cpu_ms(h.id()).unwrap()).collect();
    let o = profil(&["-a", "-t", "3", "--call-graph", "fp", "--collapsed", collapsed.to_str().unwrap()]);
    let after: Vec<u64> = hogs.iter().map(|h| cpu_ms(h.id()).unwrap()).collect();
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = process_rows(&out);
    let hog_path = std::fs::canonicalize(&hog).unwrap().display().to_string();
    let samples: Vec<u64> = hogs
        .iter()
        .map(|h| {
            let row = rows.iter().find(|r| r.0 == h.id()).unwrap_or_else(|| panic!("no row for hog {}:\n{out}", h.id()));
            assert_eq!(row.2, hog_path, "{out}");
            row.1
        })
        .collect();
    let measured: Vec<u64> = before.iter().zip(&after).map(|(b, a)| a - b).collect();
    let (all_samples, all_ms) = (samples.iter().sum::<u64>() as f64, measured.iter().sum::<u64>() as f64);
    // Two CPUs for three hogs: about 4 s of their CPU time in the 3 s window (less on a busy
    // machine); every sample is 1 ms of it at the default 1 kHz.
    assert!(all_samples > 0.5 * all_ms && all_samples <= 1.02 * all_ms, "{samples:?} samples, {measured:?} ms\n{out}");
    for (s, m) in samples.iter().zip(&measured) {
        let (share, expected) = (*s as f64 / all_samples, *m as f64 / all_ms);
        assert!((share - expected).abs() <= 0.05 * expected, "share {share:.3}, CPU time's {expected:.3}: {samples:?} {measured:?}\n{out}");
    }
    let busy = program_rows(&out).into_iter().find(|r| r.2 == hog_path).expect("the hogs' program row");
    assert_eq!((busy.0, busy.1), (3, samples.iter().sum::<u64>()), "{out}");
    for h in &hogs {
        assert!(out.contains(&format!("busy [pid {}] ({hog_path}): ", h.id())), "{out}");
    }
    assert!(out.contains("  spin [busy]\n") || out.contains(" spin [busy]"), "{out}");
    // The shares of the whole: idle and the kernel are counted as well.
    assert!(out.starts_with("System-wide (-a) in 3.0"), "{out}");
    assert!(out.contains("  idle\n") && out.contains("processes, in user mode\n"), "{out}");
    // Folded stacks: each hog's under its process.
    let folded = std::fs::read_to_string(&collapsed).unwrap();
    for h in &hogs {
        let root = format!("busy [pid {}];", h.id());
        let n: u64 = folded.lines().filter(|l| l.starts_with(&root)).filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum();
        assert!(n > 0 && folded.lines().any(|l| l.starts_with(&root) && l.contains(";spin")), "{root}\n{folded}");
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
    let mut p = Command::new(profil_bin())
        .args(["-a", "--json", json.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !session_held() {
        assert!(t.elapsed() < Duration::from_secs(10), "profil -a never took the session");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The one session: a second profil is busy.
    let o = profil(&["-f", fib_bin().to_str().unwrap(), "20"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.starts_with("Profil Error: Already profiling another process\n"), "{}", text(&o).1);
    let storm = Command::new("sh").args(["-c", "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done"]).status().unwrap();
    assert!(storm.success());
    // SAFETY: kill with a pid of our own child.
    unsafe { libc::kill(p.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let o = loop {
        if p.try_wait().unwrap().is_some() {
            break p.wait_with_output().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(20), "profil -a did not end on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
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
