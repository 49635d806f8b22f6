//! `--off-cpu`: where the program waits, by the clock. `waits` blocks in named functions for
//! known times (a sleep, a pipe read, a condvar, a child) and prints how long each call took;
//! the report must name each wait's call, what it waited on and the function that made it,
//! with its time within 5 % (or 5 ms), as root and as a user without privilege.

mod common;

use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// The program's own timings: `waits.NAME: SECONDS`.
fn program_timings(err: &str) -> Vec<(String, f64)> {
    err.lines()
        .filter_map(|l| l.strip_prefix("waits.")?.split_once(": "))
        .map(|(n, s)| (n.to_string(), s.parse().unwrap()))
        .collect()
}

/// The wait made by `call` with `function` on its stack.
fn wait<'a>(doc: &'a Value, call: &str, function: &str) -> &'a Value {
    let waits = doc["clock"]["off_cpu"]["waits"].as_array().expect("off_cpu.waits");
    waits
        .iter()
        .find(|w| w["call"] == call && w["frames"].as_array().unwrap().iter().any(|f| f == function))
        .unwrap_or_else(|| panic!("no {call} in {function}: {}", serde_json::to_string_pretty(waits).unwrap()))
}

fn check_run(o: &Output, json: &std::path::Path) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let timings = program_timings(&err);
    let took = |name: &str| timings.iter().find(|t| t.0 == name).unwrap_or_else(|| panic!("{name}: {err}")).1;
    for (name, call, function) in [
        ("sleep", "clock_nanosleep", "waits::sleep_phase"),
        ("pipe", "read", "waits::pipe_phase"),
        ("condvar", "futex", "waits::condvar_phase"),
        ("child", "wait4", "waits::child_phase"),
    ] {
        let w = wait(&doc, call, function);
        let seen = w["ns"].as_u64().unwrap() as f64 / 1e9;
        let truth = took(name);
        assert!((seen - truth).abs() <= (truth * 0.05).max(0.005), "{name}: {seen} s seen, {truth} s by the program\n{out}");
        // Whole stacks: from the start routine down to the call.
        assert_eq!(w["frames"][0], "_start", "{w}");
    }
    assert!(wait(&doc, "read", "waits::pipe_phase")["targets"][0]["on"].as_str().unwrap().starts_with("pipe:["));
    assert!(wait(&doc, "wait4", "waits::child_phase")["targets"][0]["on"].as_str().unwrap().starts_with("pid "));
    // The ledger closes: the main thread's life is the run's elapsed time within 1 %, and its
    // parts add up to it.
    let elapsed = doc["clock"]["elapsed_ns"].as_u64().unwrap() as f64;
    let main = &doc["clock"]["threads"][0];
    let part = |k: &str| main[k].as_u64().unwrap();
    assert_eq!(part("on_cpu_ns") + part("blocked_ns") + part("preempted_ns"), part("wall_ns"));
    assert!((part("wall_ns") as f64 - elapsed).abs() <= elapsed * 0.01, "{main} vs {elapsed}");
    // The report says how the waits were seen and what that can miss.
    assert!(
        out.contains("Waiting (--off-cpu: each thread looked at 1000 times a second; its blocked time, the kernel's figure, is split over the calls by the looks that found it there):"),
        "{out}"
    );
    // The sleep's row, then its stack.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| l.contains("at clock_nanosleep [libc.so.6] <- std::thread::functions::sleep <- waits::sleep_phase <- waits::main")).expect(&out);
    let row = lines[at - 1];
    let shown: f64 = row.split_whitespace().next().and_then(|w| w.parse().ok()).expect(row);
    assert!((shown - took("sleep")).abs() <= (took("sleep") * 0.05).max(0.005), "{out}");
    assert!(row.ends_with("  clock_nanosleep, in waits::sleep_phase"), "{out}");
    // --callgraph: the blocked time by callers and callees; main's call of each phase.
    let graph = &out[out.find("Call graph by the clock (--off-cpu; ").expect(&out)..];
    let main = &graph[graph.find("\nwaits::main\n  blocked under it ").expect(graph)..];
    let main = &main[..main[1..].find("\n\n").map_or(main.len(), |e| e + 1)];
    for (name, phase) in [("sleep", "waits::sleep_phase"), ("pipe", "waits::pipe_phase"), ("child", "waits::child_phase")] {
        let line = main.lines().find(|l| l.ends_with(&format!("%  {phase}"))).unwrap_or_else(|| panic!("{phase}: {main}"));
        let secs: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
        assert!((secs - took(name)).abs() <= (took(name) * 0.05).max(0.005), "{phase}: {main}");
    }
}

#[test]
fn known_waits_are_seen_with_their_calls_and_stacks() {
    let dir = scratch("off-cpu");
    let json = dir.join("run.json");
    let o = {
        let _s = session();
        profil(&["-f", "--off-cpu", "--callgraph", "--json", json.to_str().unwrap(), waits_bin().to_str().unwrap(), dir.to_str().unwrap()])
    };
    check_run(&o, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same, as a user without privilege (perf_event_paranoid as the machine has it, 2 by
/// default): /proc's syscall file and process_vm_readv need only the access a user has to
/// their own processes.
#[test]
fn known_waits_are_seen_without_privilege() {
    if !common::root("to run profil as nobody") {
        return;
    }
    let dir = scratch("off-cpu-nobody");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let json = dir.join("run.json");
    let o = {
        let _s = session();
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(profil_bin())
            .args(["--report", "-", "-f", "--off-cpu", "--callgraph", "--json", json.to_str().unwrap(), waits_bin().to_str().unwrap(), dir.to_str().unwrap()])
            .output()
            .expect("setpriv (util-linux)")
    };
    check_run(&o, &json);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Attached to a process that sleeps through the session: blocked all of it (it left the CPU
/// before the attach, so no switch record says so), in its sleep.
#[test]
fn an_attached_sleeper_is_blocked_the_whole_session() {
    let dir = scratch("off-cpu-attach");
    let exe = compile("cc", "sleepy.c", &["-O1"], &dir);
    let mut child = with_default_signals(&mut Command::new(&exe)).args(["5000", "0"]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = {
        let _s = session();
        profil(&["-f", "--off-cpu", "-p", &child.id().to_string(), "-t", "1"])
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = table_rows(&out, "By the clock");
    let blocked: f64 = rows[1][0].parse().unwrap();
    assert!((blocked - 1.0).abs() <= 0.05, "{out}");
    let sleep_line = out.lines().find(|l| l.ends_with("  clock_nanosleep, in nap")).expect(&out);
    assert!(sleep_line.trim_start().starts_with("1.0") || sleep_line.trim_start().starts_with("0.9"), "{out}");
    assert!(out.contains("<- nap <- main <-"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Threads that begin and end between two looks (200 threads that each sleep 2 ms): the
/// account does not count their lives as on a CPU (they would sum to 0.4 s of a process that
/// used milliseconds of CPU); it says how much is not known, and each thread's parts add up
/// to its life.
#[test]
fn threads_no_look_saw_are_not_counted_on_a_cpu() {
    let dir = scratch("off-cpu-short");
    let exe = compile("cc", "short_threads.c", &["-O1", "-pthread"], &dir);
    let json = dir.join("run.json");
    let o = {
        let _s = session();
        profil(&["-f", "--off-cpu", "--json", json.to_str().unwrap(), exe.to_str().unwrap(), "200", "2"])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let cpu_ms: f64 = err.lines().find_map(|l| l.strip_prefix("short_threads.cpu_ms: ")).expect(&err).trim().parse().unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let threads = doc["clock"]["threads"].as_array().unwrap();
    let ns = |t: &Value, k: &str| t[k].as_u64().unwrap_or(0);
    for t in threads {
        let parts = ns(t, "on_cpu_ns") + ns(t, "blocked_ns") + ns(t, "preempted_ns") + ns(t, "unknown_ns");
        assert_eq!(parts, ns(t, "wall_ns"), "{t}");
    }
    let on_cpu_ms = threads.iter().map(|t| ns(t, "on_cpu_ns")).sum::<u64>() as f64 / 1e6;
    let unseen = threads.iter().filter(|t| ns(t, "unknown_ns") > 0).count();
    // On a CPU by the clock: the looked-at threads' statistics and the others' ticks, not more
    // than the process's own CPU time and a tick a thread.
    assert!(on_cpu_ms <= cpu_ms + 50.0 + threads.len() as f64, "{on_cpu_ms} ms on a CPU, the process used {cpu_ms} ms\n{out}");
    assert!(unseen > 0, "{out}");
    assert!(out.contains(&format!("not known: {unseen} threads began and ended between two looks")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without --off-cpu, no Waiting section, no threads' accounts, no probes.
#[test]
fn the_waiting_section_needs_the_option() {
    let _s = session();
    let o = profil(&["-f", fib_bin().to_str().unwrap(), "20"]);
    let (out, _) = text(&o);
    assert!(!out.contains("Waiting ("), "{out}");
    // Nor the threads' accounts: no switch was recorded (they cost the program per switch).
    assert!(!out.contains("By the clock"), "{out}");
    assert!(out.contains("Time: "), "the wall and CPU time stay on every run:\n{out}");
    let help = text(&profil(&["--help"])).0;
    assert!(help.contains("--off-cpu"), "{help}");
}

/// The exports carry the waits: folded stacks (and the SVG drawn from them) by the clock in
/// microseconds, each wait under the function that made it, ending in `[off-CPU: CALL]` (drawn
/// blue); pprof with an `off_cpu` sample type `go tool pprof -sample_index` selects.
#[test]
fn exports_carry_the_waits() {
    let dir = scratch("off-cpu-exports");
    let (folded, svg, pb) = (dir.join("w.folded"), dir.join("w.svg"), dir.join("w.pb.gz"));
    let o = {
        let _s = session();
        profil(&[
            "-f",
            "-g",
            "--off-cpu",
            "--collapsed",
            folded.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--pprof",
            pb.to_str().unwrap(),
            waits_bin().to_str().unwrap(),
            dir.to_str().unwrap(),
        ])
    };
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let pipe_us = program_timings(&err).iter().find(|t| t.0 == "pipe").unwrap().1 * 1e6;
    let folded = std::fs::read_to_string(&folded).unwrap();
    let line = folded
        .lines()
        .find(|l| l.contains(";waits::pipe_phase;") && l.contains(";[off-CPU: read] "))
        .unwrap_or_else(|| panic!("{folded}"));
    let us: f64 = line.rsplit_once(' ').unwrap().1.parse().unwrap();
    assert!((us - pipe_us).abs() <= (pipe_us * 0.05).max(5000.0), "{line}: {pipe_us} us by the program");
    // CPU stacks in microseconds too: spin's samples, 1,000 us each at 1 kHz.
    let spin: u64 = folded.lines().filter(|l| l.contains(";waits::spin ")).map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert!(spin > 0 && spin.is_multiple_of(1000), "{folded}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("by the clock, in microseconds"), "subtitle");
    let read_rect = svg.split("<title>").find(|t| t.starts_with("[off-CPU: read]")).expect("[off-CPU: read] frame");
    assert!(read_rect.contains("fill=\"rgb(80,130,230)\""), "{read_rect}");
    if !installed("go", "golang-go") {
        return;
    }
    let g = Command::new("go")
        .args(["tool", "pprof", "-top", "-nodecount=100", "-sample_index=off_cpu", "-unit=ms"])
        .arg(&pb)
        .env("HOME", &dir)
        .output()
        .unwrap();
    let top = String::from_utf8_lossy(&g.stdout).into_owned();
    assert!(g.status.success(), "{top}\n{}", String::from_utf8_lossy(&g.stderr));
    assert!(top.contains("Type: off_cpu"), "{top}");
    let row = top.lines().find(|l| l.ends_with(" [off-CPU: read]")).unwrap_or_else(|| panic!("{top}"));
    let ms: f64 = row.split_whitespace().next().unwrap().trim_end_matches("ms").parse().unwrap();
    assert!((ms * 1000.0 - pipe_us).abs() <= (pipe_us * 0.05).max(5000.0), "{row}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Off-CPU time per phase from perf's own scheduler trace of the same run: every switch of
/// the program's threads, system-wide, as root (`perf record -e sched:sched_switch
/// --call-graph dwarf -a`, profil running under it). The main thread's blocked period runs
/// from a switch out in state S or D to its next switch in; it goes to the phase whose call
/// the switch-out's kernel stack shows (perf's user stacks through libc are sometimes cut at
/// the libc function, its kernel frames never are). profil's waits under each phase must
/// agree within 5 % (or 5 ms).
#[test]
fn off_cpu_time_agrees_with_perfs_scheduler_trace() {
    if !common::root("for perf record -a") || !installed("perf", "linux-perf") {
        return;
    }
    let dir = scratch("off-cpu-perf");
    // The kernel function each phase's call blocks in.
    let phases = [
        ("waits::sleep_phase", "do_nanosleep"),
        ("waits::pipe_phase", "pipe_read"), // anon_pipe_read in newer kernels
        ("waits::condvar_phase", "futex_do_wait"),
        ("waits::child_phase", "do_wait"),
    ];
    // One run of the two side by side may disagree by chance on a busy machine (perf's trace
    // misses a phase's switch or wake-up, or its switch-out stack shows another function:
    // CI saw condvar's 150 ms as 0.08 ms in perf's trace and child's as 0 while profil said
    // 150 and 251 each time): up to three runs are made, and each phase must agree in one of
    // them; an error of profil's own would show in every run. A trace in which a phase's blocked
    // period has no end (the thread switched out again with neither its wake-up nor its switch
    // in between) has lost records, which perf does not say (seen here: a CPU's events as it
    // left idle): that run is no reference and is made again, six runs at most. The run is
    // pinned to CPU 0 (`taskset`): on this project's 2-vCPU machines perf's trace lost the
    // other CPU's events as it left idle in most runs, and in none of five pinned ones.
    let mut tries = Vec::new();
    let mut agreed = std::collections::BTreeSet::new();
    let mut runs = 0;
    while tries.len() < 3 && runs < 6 {
        runs += 1;
        let (doc, perf_ns, whole) = record_with_perf(&dir, &phases);
        if !whole {
            eprintln!("perf's trace lost the end of a blocked period: not a reference");
            continue;
        }
        let waits = doc["clock"]["off_cpu"]["waits"].as_array().unwrap();
        let mut said = String::new();
        for (phase, _) in phases {
            let ours: u64 = waits
                .iter()
                .filter(|w| w["frames"].as_array().unwrap().iter().any(|f| f == phase))
                .map(|w| w["ns"].as_u64().unwrap())
                .sum();
            let theirs = perf_ns.get(phase).copied().unwrap_or(0.0);
            said.push_str(&format!("{phase}: profil {:.3} ms, perf's trace {:.3} ms\n", ours as f64 / 1e6, theirs / 1e6));
            if theirs > 0.0 && (ours as f64 - theirs).abs() <= (theirs * 0.05).max(5e6) {
                agreed.insert(phase);
            }
        }
        eprint!("{said}");
        if agreed.len() == phases.len() {
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        tries.push(said);
    }
    assert!(!tries.is_empty(), "perf's trace lost the end of a blocked period in all {runs} runs: no reference to compare with");
    panic!(
        "profil and perf's trace disagreed on a phase in all {} runs with a whole trace (of {runs}):\n{}",
        tries.len(),
        tries.join("---\n")
    );
}

/// One run of `waits` under profil (`--off-cpu`, its JSON), all of it recorded by perf's
/// scheduler trace: profil's document, and perf's blocked time of the main thread by phase,
/// from each switch out to its wake-up (`phases`: a phase function and the kernel function its
/// call blocks in).
fn record_with_perf(dir: &std::path::Path, phases: &[(&'static str, &str)]) -> (Value, std::collections::HashMap<&'static str, f64>, bool) {
    let (json, data) = (dir.join("run.json"), dir.join("perf.data"));
    let o = {
        let _s = session();
        Command::new("perf")
            .args(["record", "-q", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "-g", "-a", "-o"])
            .arg(&data)
            .args(["--", "taskset", "-c", "0"])
            .arg(profil_bin())
            .args(["--report", "-", "-f", "--off-cpu", "--callgraph", "--json", json.to_str().unwrap(), waits_bin().to_str().unwrap(), dir.to_str().unwrap()])
            .output()
            .unwrap()
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let script = Command::new("perf").args(["script", "-F", "tid,time,event,trace,ip,sym", "-i"]).arg(&data).output().unwrap();
    assert!(script.status.success(), "{}", String::from_utf8_lossy(&script.stderr));
    let script = String::from_utf8_lossy(&script.stdout);
    let main_tid = doc["clock"]["threads"][0]["tid"].as_u64().unwrap();
    let field = |line: &str, key: &str| -> Option<String> {
        line.split_whitespace().find_map(|w| w.strip_prefix(key)).map(str::to_string)
    };
    let mut left: Option<(f64, Option<&str>)> = None;
    let mut perf_ns: std::collections::HashMap<&str, f64> = Default::default();
    // A phase's blocked period still open when the thread switches out again: the trace lost
    // its wake-up and its switch in.
    let mut whole = true;
    for ev in script.split("\n\n") {
        let mut lines = ev.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        let time = || -> f64 { head.split_whitespace().find(|w| w.ends_with(':') && w.contains('.')).unwrap().trim_end_matches(':').parse().unwrap() };
        // Blocked ends at the wake-up: the wait for a CPU after it is preemption (profil
        // counts it apart, from the thread's run-queue time), not part of the call's wait.
        if let Some((_, trace)) = head.split_once("sched:sched_wakeup:") {
            if field(trace, "pid=").and_then(|p| p.parse::<u64>().ok()) == Some(main_tid) {
                if let Some((out, Some(phase))) = left.take() {
                    *perf_ns.entry(phase).or_default() += (time() - out) * 1e9;
                }
            }
            continue;
        }
        let Some((_, trace)) = head.split_once("sched:sched_switch:") else { continue };
        let time = time();
        let prev: u64 = field(trace, "prev_pid=").unwrap().parse().unwrap();
        let next: u64 = field(trace, "next_pid=").unwrap().parse().unwrap();
        let state = field(trace, "prev_state=").unwrap();
        if next == main_tid {
            if let Some((out, Some(phase))) = left.take() {
                *perf_ns.entry(phase).or_default() += (time - out) * 1e9;
            }
        }
        // Not before the exec (profil's child waits at its gate as "profil").
        let program = field(trace, "prev_comm=").is_some_and(|c| c == "waits");
        if prev == main_tid && left.is_some_and(|(_, phase)| phase.is_some()) {
            whole = false;
        }
        if prev == main_tid && program && (state.starts_with('S') || state.starts_with('D')) {
            let stack: Vec<&str> = lines.collect();
            let phase = phases.iter().find(|p| stack.iter().any(|l| l.trim_end().ends_with(p.1))).map(|p| p.0);
            left = Some((time, phase));
        }
    }
    (doc, perf_ns, whole)
}

/// With `--children` the processes the program starts are looked at too: the child `waits`
/// forks sleeps its 250 ms under `waits::child_phase` (a forked copy: its stack unwound with
/// the mappings it inherited), as a wait of its own process, rooted at it in the exports.
#[test]
fn the_childrens_waits_are_seen_with_children() {
    let dir = scratch("off-cpu-children");
    let json = dir.join("run.json");
    let folded = dir.join("run.folded");
    let o = {
        let _s = session();
        profil(&[
            "-f",
            "--off-cpu",
            "--children",
            "--json",
            json.to_str().unwrap(),
            "--collapsed",
            folded.to_str().unwrap(),
            waits_bin().to_str().unwrap(),
            dir.to_str().unwrap(),
        ])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let timings = program_timings(&err);
    let child_took = timings.iter().find(|t| t.0 == "child").unwrap_or_else(|| panic!("{err}")).1;
    // The main thread is the first, its tid the program's pid.
    let program = doc["clock"]["threads"][0]["tid"].as_u64().expect("main thread");
    let waits = doc["clock"]["off_cpu"]["waits"].as_array().unwrap();
    let slept = waits
        .iter()
        .find(|w| {
            w["pid"].as_u64() != Some(program)
                && w["call"].as_str().is_some_and(|c| c.contains("nanosleep"))
                && w["frames"].as_array().unwrap().iter().any(|f| f == "waits::child_phase")
        })
        .unwrap_or_else(|| panic!("no wait of the child: {}", serde_json::to_string_pretty(waits).unwrap()));
    let seen = slept["ns"].as_u64().unwrap() as f64 / 1e9;
    assert!((seen - child_took).abs() <= (child_took * 0.1).max(0.01), "{seen} s seen, {child_took} s by the program\n{out}");
    // The program's own wait for it stays the program's.
    assert!(wait(&doc, "wait4", "waits::child_phase")["pid"].as_u64() == Some(program));
    // The report names the process; the folded file roots the child's wait at it.
    let child = slept["pid"].as_u64().unwrap();
    assert!(out.contains(&format!(" (waits [pid {child}])\n")), "{out}");
    let folded = std::fs::read_to_string(&folded).unwrap();
    assert!(
        folded.lines().any(|l| l.starts_with(&format!("waits [pid {child}];")) && l.contains("waits::child_phase") && l.contains("[off-CPU: ")),
        "{folded}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

