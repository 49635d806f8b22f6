//! `--requests` on Linux: every system call of the program, counted as `strace -f -c` counts
//! them, each timed enter to exit; kept by a saved run; without privilege, the off-CPU looks'
//! blocked time per call instead, labelled as such.
//!
//! The rule the counts follow: profil's events are armed at the program's exec
//! (`enable_on_exec`), so that exec's end is seen and its start is not: strace counts one
//! `execve` more, and profil counts it among the calls "seen to start or end alone", with the
//! `exit_group` that never returns (which strace -c leaves out of its table too). Every other
//! call's count is the same.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{profil_bin, session};

/// A directory of its own for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("profil-requests-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Requests table of a report: each call's count (every row: run with a large `--top`),
/// and the line of calls seen to start or end alone.
fn profil_counts(report: &str) -> (BTreeMap<String, u64>, u64) {
    let section = report.split("\nRequests (system calls of ").nth(1).unwrap_or_else(|| panic!("no Requests section in:\n{report}"));
    let mut lines = section.lines().skip(1).filter(|l| !l.starts_with("  Under each call, "));
    let summary = lines.next().unwrap();
    let alone = summary.split("; ").nth(1).and_then(|s| s.split_whitespace().next()).map_or(0, |n| n.parse().unwrap());
    assert!(lines.next().unwrap().trim_start().starts_with("call "), "{section}");
    let mut counts = BTreeMap::new();
    // A row's call sites (-g) are the lines under it that start with a count.
    let rows = lines.take_while(|l| !l.is_empty() && !l.contains("latency, log2 buckets"));
    for l in rows.filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<u64>().is_err())) {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert!(!w[0].starts_with('('), "a row left out: run with a larger --top\n{section}");
        counts.insert(w[0].to_string(), w[1].parse().unwrap());
    }
    (counts, alone)
}

/// The call sites under `call`'s row of a report's Requests section (`-g`): (count, share, site).
fn sites_of(report: &str, call: &str) -> Vec<(u64, String, String)> {
    let section = report.split("\nRequests (system calls of ").nth(1).unwrap_or_else(|| panic!("no Requests section in:\n{report}"));
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some(call))
        .skip(1)
        .map_while(|l| {
            let (count, rest) = l.trim_start().split_once(' ')?;
            let count = count.parse().ok()?;
            let (share, site) = rest.trim_start().split_once("  ")?;
            Some((count, share.to_string(), site.to_string()))
        })
        .collect()
}

/// `strace -f -c`'s table: each call's count.
fn strace_counts(table: &str) -> BTreeMap<String, u64> {
    table
        .lines()
        .filter(|l| l.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit()))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.last() != Some(&"total")).then(|| (w.last().unwrap().to_string(), w[3].parse().unwrap()))
        })
        .collect()
}

/// `program args` under profil --requests --children (report to a file) and under
/// `strace -f -c`, each with its output thrown away: (profil's counts, its calls alone,
/// strace's counts).
fn both(program: &Path, args: &[&str], dir: &Path) -> (BTreeMap<String, u64>, u64, BTreeMap<String, u64>) {
    let quiet = |c: &mut Command| -> std::process::ExitStatus { c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap() };
    // Once first: what a first run writes (python's compiled modules) is there for both.
    quiet(Command::new(program).args(args));
    let report = dir.join("report.txt");
    let status = quiet(Command::new(profil_bin()).args(["--requests", "--children", "--top", "100000", "--report"]).arg(&report).arg(program).args(args));
    assert!(status.success(), "profil {program:?} {args:?}: {status}");
    let table = dir.join("strace.txt");
    let status = quiet(Command::new("strace").args(["-f", "-c", "-o"]).arg(&table).arg(program).args(args));
    assert!(status.success(), "strace {program:?}: {status}");
    let (counts, alone) = profil_counts(&std::fs::read_to_string(&report).unwrap());
    (counts, alone, strace_counts(&std::fs::read_to_string(&table).unwrap()))
}

/// The real python3 (not a shim: a `#!` script runs through env's search of PATH, whose calls
/// differ from run to run of a launcher).
fn python3() -> Option<PathBuf> {
    let o = Command::new("python3").args(["-c", "import os, sys; print(os.path.realpath(sys.executable))"]).output().ok()?;
    o.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
}

/// As root: the per-call counts of three real programs are strace's, but for the program's
/// own exec (the module's rule).
#[test]
fn per_call_counts_are_strace_s() {
    if !common::root("to read the system calls' tracepoints") || !common::installed("strace", "strace") {
        return;
    }
    let Some(python) = python3() else { return common::skip("python3 is not installed") };
    let _s = session();
    let dir = scratch("strace");
    // A file for gzip to compress: 2 MB of text that compresses some.
    let data = dir.join("data.txt");
    std::fs::write(&data, (0..200_000).map(|i| format!("line {i} {}\n", i * 7919 % 1000)).collect::<String>()).unwrap();
    let data = data.to_string_lossy().into_owned();
    let ls = which("ls");
    let gzip = which("gzip");
    for (program, args) in [(ls.as_path(), vec!["-l", "/usr/bin"]), (python.as_path(), vec!["-c", "import json"]), (gzip.as_path(), vec!["-c", &data])] {
        let (mut profil, alone, strace) = both(program, &args, &dir);
        // The program's own exec: its end seen, its start not.
        *profil.entry("execve".into()).or_insert(0) += 1;
        assert_eq!(profil, strace, "{program:?} {args:?}: profil's counts (its execve + 1), then strace's");
        // That exec's end, and exit_group's start.
        assert_eq!(alone, 2, "{program:?}");
        assert!(strace.values().sum::<u64>() > 50, "{strace:?}");
    }
}

/// The path of `tool` on PATH.
fn which(tool: &str) -> PathBuf {
    let o = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().unwrap();
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// As root: a run saved with its requests reports the same Requests section loaded, and a
/// child's calls are the tree's with --children.
#[test]
fn a_saved_run_keeps_its_requests_and_children_count() {
    if !common::root("to read the system calls' tracepoints") {
        return;
    }
    let _s = session();
    let dir = scratch("saved");
    let saved = dir.join("run.profil");
    let report = dir.join("live.txt");
    // sh starts two children (ls and wc), each an exec of its own, seen whole.
    let o = Command::new(profil_bin())
        .args(["--requests", "--children", "--top", "1000", "--save"])
        .arg(&saved)
        .arg("--report")
        .arg(&report)
        .args(["sh", "-c", "ls /usr >/dev/null; wc -c /etc/hostname >/dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let live = std::fs::read_to_string(&report).unwrap();
    let (counts, _) = profil_counts(&live);
    assert_eq!(counts.get("execve"), Some(&2), "ls's and wc's execs, whole; sh's own not\n{live}");
    assert!(live.contains("and the processes it started, 3 in all"), "{live}");
    let loaded = Command::new(profil_bin()).args(["--top", "1000", "--load"]).arg(&saved).output().unwrap();
    assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
    let section = |r: &str| r.split("\nRequests (").nth(1).map(|s| s.split("\n\n").next().unwrap().to_string());
    let loaded = String::from_utf8_lossy(&loaded.stdout).into_owned();
    assert_eq!(section(&loaded), section(&live));
    assert!(section(&live).is_some());
}

/// Without the privilege the tracepoints need (as nobody): the table holds the blocked time
/// the off-CPU looks saw, says so, and says how to get the latencies.
#[test]
fn without_privilege_the_looks_stand_in_labelled() {
    if !common::root("to run profil as nobody") || !common::installed("setpriv", "util-linux") {
        return;
    }
    let _s = session();
    let o = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(profil_bin())
        .args(["--report", "-", "--requests", "sleep", "0.3"])
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("\nRequests: not measured; blocked time per call of sleep [pid "), "{out}");
    assert!(out.contains("as --off-cpu's looks saw it (not system-call latencies):"), "{out}");
    assert!(out.contains("Note: the raw_syscalls tracepoints could not be opened"), "{out}");
    let row = out.lines().find(|l| l.trim_start().starts_with("clock_nanosleep ")).unwrap_or_else(|| panic!("{out}"));
    // Seen once or more, at least most of its 0.3 s blocked, no latency figures.
    let w: Vec<&str> = row.split_whitespace().collect();
    assert!(w[1].parse::<u64>().unwrap() >= 1 && w[2].parse::<f64>().unwrap() > 0.2 && w[3..] == ["-"; 5], "{row}");
    assert!(out.contains("  Every call's latency: run profil as root"), "{out}");
}

/// As root: the requests are on the run's time axis. Two halves of the run (`--time`) count
/// every request the whole run does, each call's count adding up; the Firefox Profiler's file
/// has each request as a marker on its thread's track, as many of each call as the report
/// counts.
#[test]
fn requests_are_on_the_run_s_time_axis() {
    if !common::root("to read the system calls' tracepoints") {
        return;
    }
    let _s = session();
    let dir = scratch("time");
    let (saved, firefox) = (dir.join("run.profil"), dir.join("run.json.gz"));
    let o = Command::new(profil_bin())
        .args(["-f", "--requests", "--top", "1000", "--save"])
        .arg(&saved)
        .arg("--firefox")
        .arg(&firefox)
        .args(["ls", "-l", "/usr/bin"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = |window: Option<&str>| {
        let mut args = vec!["-f", "--top", "1000", "--load", saved.to_str().unwrap()];
        args.extend(window.map(|w| ["--time", w]).into_iter().flatten());
        let o = Command::new(profil_bin()).args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        profil_counts(&String::from_utf8_lossy(&o.stdout)).0
    };
    let (whole, first, second) = (report(None), report(Some("0%,50%")), report(Some("50%,")));
    let (n_first, n_second): (u64, u64) = (first.values().sum(), second.values().sum());
    assert!(n_first > 0 && n_second > 0, "{first:?} {second:?}");
    for (call, n) in &whole {
        let halves = first.get(call).unwrap_or(&0) + second.get(call).unwrap_or(&0);
        assert_eq!(halves, *n, "{call}: {first:?} + {second:?} against {whole:?}");
    }
    // The Timeline's slices count the requests begun in each: all of them, once.
    let o = Command::new(profil_bin()).args(["-f", "--timeline=3", "--load"]).arg(&saved).output().unwrap();
    let timeline = String::from_utf8_lossy(&o.stdout).into_owned();
    let begun: u64 = timeline
        .lines()
        .skip_while(|l| !l.starts_with("Timeline ("))
        .filter_map(|l| l.split("  | ").nth(1)?.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(begun, whole.values().sum::<u64>(), "{timeline}");
    // The markers: gzip'd JSON, a track per thread, each request an interval marker named by
    // its call.
    let mut json = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(&firefox).unwrap()), &mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let strings = doc["shared"]["stringArray"].as_array().or_else(|| doc["threads"][0]["stringArray"].as_array()).unwrap();
    let thread = &doc["threads"][0];
    let mut markers: BTreeMap<String, u64> = BTreeMap::new();
    let m = &thread["markers"];
    for (i, data) in m["data"].as_array().unwrap().iter().enumerate() {
        if data["type"] == "Request" {
            let name = strings[m["name"][i].as_u64().unwrap() as usize].as_str().unwrap().to_string();
            assert!(m["endTime"][i].as_f64().unwrap() >= m["startTime"][i].as_f64().unwrap());
            *markers.entry(name).or_insert(0) += 1;
        }
    }
    assert_eq!(markers, whole, "a marker a request, by call");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A call's row in `perf trace -s`'s summary of the process named `process`: (calls, total
/// ms).
fn perf_trace_row(summary: &str, process: &str, call: &str) -> Option<(u64, f64)> {
    let block = summary.split(&format!("\n {process} (")).nth(1)?;
    let block = block.split("\n\n").nth(1)?;
    let w: Vec<&str> = block.lines().map(str::split_whitespace).find_map(|mut w| (w.next() == Some(call)).then(|| w.collect()))?;
    // calls errors total min avg max stddev%
    Some((w.first()?.parse().ok()?, w.get(2)?.parse().ok()?))
}

/// As root, against `perf trace -s`, which reads the kernel's same tracepoints: profil run
/// under perf trace, both timing the very same calls of one run of a program, give each call
/// the same count and the same total time, within 5 % (or 0.5 ms): a 10 ms sleep's and a
/// one-byte pipe write's alike (perf trace's own cost per call is in both: the calls of a run
/// traced by it are slower, and two separate runs of a program differ by far more than the
/// two tools do). Alone they agree within 2 %; in the whole suite on a busy machine the
/// writes' totals once differed by 2.6 % (18.09 against 18.57 ms).
#[test]
fn the_same_calls_as_perf_trace_counts_and_times_them() {
    if !common::root("to read the system calls' tracepoints") || !common::installed("perf", "linux-perf") {
        return;
    }
    let _s = session();
    let dir = scratch("perf-trace");
    let naps = common::compile("cc", "naps.c", &["-O1"], &dir);
    let (trace, report) = (dir.join("trace.txt"), dir.join("report.txt"));
    let o = Command::new("perf")
        .args(["trace", "-s", "-o"])
        .arg(&trace)
        .arg(profil_bin())
        .args(["-f", "--requests", "--top", "1000", "--report"])
        .arg(&report)
        .arg(&naps)
        .args(["20", "10", "1000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "perf trace: {}", String::from_utf8_lossy(&o.stderr));
    let (trace, report) = (std::fs::read_to_string(&trace).unwrap(), std::fs::read_to_string(&report).unwrap());
    for call in ["clock_nanosleep", "write"] {
        let row = report.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).find(|w| w.first() == Some(&call)).unwrap_or_else(|| panic!("no {call} in:\n{report}"));
        let (count, total_ms): (u64, f64) = (row[1].parse().unwrap(), row[2].parse::<f64>().unwrap() * 1e3);
        let (calls, their_ms) = perf_trace_row(&trace, "naps", call).unwrap_or_else(|| panic!("no {call} of naps in:\n{trace}"));
        assert_eq!(count, calls, "{call}\n{report}\n{trace}");
        assert!((total_ms - their_ms).abs() <= (0.05 * their_ms).max(0.5), "{call}: profil {total_ms:.3} ms, perf trace {their_ms:.3} ms\n{report}\n{trace}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// As root, `-g` and `--time`: a window of the run counts its requests' sites as the whole
/// run counts them. writes.c writes from log_line, then from log_other: in each half of the run
/// every write has its site, and the halves add up to the whole run's 30,000 and 10,000; the
/// first half holds log_line's first writes, the second log_other's last.
#[test]
fn g_sites_are_counted_within_a_time_window() {
    if !common::root("to read the system calls' tracepoints") {
        return;
    }
    let _s = session();
    let dir = scratch("sites-time");
    let writes = common::compile("cc", "writes.c", &["-O0", "-fno-omit-frame-pointer"], &dir);
    let saved = dir.join("run.profil");
    let o = Command::new(profil_bin()).args(["--requests", "-g", "-f", "--save"]).arg(&saved).args(["--report", "/dev/null"]).arg(&writes).args(["30000", "10000"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let window = |time: &str| {
        let o = Command::new(profil_bin()).args(["-f", "--top", "1000", "--time", time, "--load"]).arg(&saved).output().unwrap();
        let report = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sites: BTreeMap<String, u64> = sites_of(&report, "write").into_iter().map(|(n, _, site)| (site, n)).collect();
        let writes = profil_counts(&report).0.get("write").copied().unwrap_or(0);
        assert_eq!(sites.values().sum::<u64>(), writes, "every write of the window has its site:\n{report}");
        sites
    };
    let (first, second) = (window("0%,50%"), window("50%,"));
    let (line, other) = ("log_line [writes] <- main [writes]", "log_other [writes] <- main [writes]");
    let both = |site: &str| first.get(site).unwrap_or(&0) + second.get(site).unwrap_or(&0);
    assert_eq!((both(line), both(other)), (30_000, 10_000), "{first:?} {second:?}");
    assert!(first.get(line).is_some_and(|&n| n > 0) && second.get(other).is_some_and(|&n| n > 0), "{first:?} {second:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// As root, `-g`: each write's site is the function that called the C library's `write`, with
/// its caller: 300 from log_line, 100 from log_other, exactly as writes.c made them (a
/// frame-pointer walk alone would skip both: glibc's `write` keeps no frame). A saved run keeps
/// them; without -g there are none; a child's are named from its own files.
#[test]
fn g_shows_each_call_s_sites() {
    if !common::root("to read the system calls' tracepoints") {
        return;
    }
    let _s = session();
    let dir = scratch("sites");
    let writes = common::compile("cc", "writes.c", &["-O0", "-fno-omit-frame-pointer"], &dir);
    let (saved, report) = (dir.join("run.profil"), dir.join("report.txt"));
    let o = Command::new(profil_bin()).args(["--requests", "-g", "--top", "1000", "--save"]).arg(&saved).arg("--report").arg(&report).arg(&writes).args(["300", "100"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let live = std::fs::read_to_string(&report).unwrap();
    let sites = sites_of(&live, "write");
    assert_eq!(sites, [
        (300, "75.0%".to_string(), "log_line [writes] <- main [writes]".to_string()),
        (100, "25.0%".to_string(), "log_other [writes] <- main [writes]".to_string())
    ], "{live}");
    assert_eq!(profil_counts(&live).0.get("write"), Some(&400), "{live}");
    assert!(live.contains("\n  Under each call, the busiest sites it was made from"), "{live}");
    // Loaded: the same section, byte for byte.
    let loaded = Command::new(profil_bin()).args(["--top", "1000", "--load"]).arg(&saved).output().unwrap();
    assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
    let section = |r: &str| r.split("\nRequests (").nth(1).map(|s| s.split("\n\n").next().unwrap().to_string());
    assert_eq!(section(&String::from_utf8_lossy(&loaded.stdout)), section(&live));
    // Without -g: the same counts, no sites.
    let o = Command::new(profil_bin()).args(["--requests", "--top", "1000", "--report", "-"]).arg(&writes).args(["300", "100"]).output().unwrap();
    let plain = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && sites_of(&plain, "write").is_empty() && !plain.contains("Under each call"), "{plain}");
    assert_eq!(profil_counts(&plain).0.get("write"), Some(&400), "{plain}");
    // Started by sh (--children): the same sites, named from the child's own files; its
    // execve, made by sh's image, is counted apart from them.
    let o = Command::new(profil_bin())
        .args(["--requests", "-g", "--children", "--top", "1000", "--report", "-", "sh", "-c"])
        .arg(format!("{} 300 100; true", writes.display()))
        .output()
        .unwrap();
    let tree = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(sites_of(&tree, "write"), sites, "{tree}");
    assert_eq!(sites_of(&tree, "execve"), [(1, "100.0%".to_string(), "(made before an exec by the image it replaced)".to_string())], "{tree}");
    let _ = std::fs::remove_dir_all(&dir);
}
