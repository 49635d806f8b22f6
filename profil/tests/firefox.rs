//! `--firefox FILE`: the run in the Firefox Profiler's processed format (Linux). Read back as
//! the profiler reads it (each sample's stack through the stack, frame and function tables to
//! its name): fib's phases in their order on its main thread, each sample's CPU time, fib's
//! library with its build-id; `waits`'s waits as markers of the lengths it measured itself; a
//! `.gz` name gzipped; the same bytes from a saved run as from the live one.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

/// A thread of the file, read as the profiler reads it.
struct Thread<'a>(&'a Value);

impl Thread<'_> {
    fn string(&self, i: &Value) -> &str {
        self.0["stringArray"][i.as_u64().unwrap() as usize].as_str().unwrap()
    }

    /// The function name of frame `frame`.
    fn frame_name(&self, frame: usize) -> &str {
        let func = self.0["frameTable"]["func"][frame].as_u64().unwrap() as usize;
        self.string(&self.0["funcTable"]["name"][func])
    }

    /// Stack `stack`'s function names, root first.
    fn stack(&self, stack: &Value) -> Vec<&str> {
        let mut names = Vec::new();
        let mut at = stack.as_u64();
        while let Some(s) = at.map(|s| s as usize) {
            names.push(self.frame_name(self.0["stackTable"]["frame"][s].as_u64().unwrap() as usize));
            at = self.0["stackTable"]["prefix"][s].as_u64();
        }
        names.reverse();
        names
    }

    /// Each sample: (ms from the start, its stack's names, its CPU time in µs).
    fn samples(&self) -> Vec<(f64, Vec<&str>, u64)> {
        let s = &self.0["samples"];
        let mut time = 0.0;
        (0..s["length"].as_u64().unwrap() as usize)
            .map(|i| {
                time += s["timeDeltas"][i].as_f64().unwrap();
                (time, self.stack(&s["stack"][i]), s["threadCPUDelta"][i].as_u64().unwrap_or(0))
            })
            .collect()
    }

    /// Its markers: (name, start ms, length ms, call field).
    fn markers(&self) -> Vec<(&str, f64, f64, &str)> {
        let m = &self.0["markers"];
        (0..m["length"].as_u64().unwrap() as usize)
            .map(|i| {
                let (start, end) = (m["startTime"][i].as_f64().unwrap(), m["endTime"][i].as_f64().unwrap());
                (self.string(&m["name"][i]), start, end - start, self.string(&m["data"][i]["call"]))
            })
            .collect()
    }
}

fn read_file(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let json = match bytes.starts_with(&[0x1f, 0x8b]) {
        true => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut s).unwrap();
            s
        }
        false => String::from_utf8(bytes).unwrap(),
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn main_thread(doc: &Value) -> Thread<'_> {
    let threads = doc["threads"].as_array().unwrap();
    Thread(threads.iter().find(|t| t["isMainThread"] == true).expect("a main thread"))
}

#[test]
fn fib_s_phases_are_its_main_thread_s_samples_in_order_in_its_library() {
    let dir = scratch("firefox-fib");
    let (file, saved) = (dir.join("fib.json"), dir.join("fib.profil"));
    let o = {
        let _s = session();
        let fib = fib_bin();
        profil(&["-g", "--report", "/dev/null", "--firefox", file.to_str().unwrap(), "--save", saved.to_str().unwrap(), fib.to_str().unwrap(), "33", "3000"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let doc = read_file(&file);
    assert_eq!(doc["meta"]["product"], "fib");
    assert_eq!(doc["meta"]["interval"].as_f64(), Some(1.0), "1 kHz: a sample a millisecond");
    let t = main_thread(&doc);
    let samples = t.samples();
    assert!(samples.len() > 100, "{} samples", samples.len());
    // Each sample's leaf function, runs of one named once: fib, loop, overflow, under main.
    let mut phases: Vec<&str> = samples.iter().filter_map(|s| s.1.last().copied()).filter(|&n| ["fib", "loop", "overflow"].contains(&n)).collect();
    phases.dedup();
    assert_eq!(phases, ["fib", "loop", "overflow"]);
    assert!(samples.iter().filter(|s| s.1.last() == Some(&"fib")).all(|s| s.1.contains(&"main")), "fib under main");
    // In time order, each standing for a period of CPU time (1 ms) or, where the clock saw less
    // since the previous one (the samples' times jitter by microseconds), that.
    assert!(samples.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(samples.iter().all(|s| s.2 <= 1000));
    let cpu: u64 = samples.iter().map(|s| s.2).sum();
    assert!(cpu * 100 >= samples.len() as u64 * 1000 * 97, "{cpu} µs of CPU in {} samples", samples.len());
    // fib's library: its GNU build-id as the code id, its functions named from its symbol table.
    let fib_id = prof_objects::elf::build_id(&fib_bin()).expect("fib has a build-id");
    let hex: String = fib_id.iter().map(|b| format!("{b:02x}")).collect();
    let lib = doc["libs"].as_array().unwrap().iter().find(|l| l["name"] == "fib").expect("fib's library");
    assert_eq!(lib["codeId"].as_str(), Some(hex.as_str()));
    assert_eq!(lib["path"].as_str(), fib_bin().to_str());
    assert_eq!(lib["breakpadId"].as_str().map(str::len), Some(33));
    assert_eq!(doc["meta"]["symbolicated"], true);
    // The saved run gives the same bytes, gzipped where the name ends in .gz.
    let again = dir.join("again.json.gz");
    let o = profil(&["--load", saved.to_str().unwrap(), "--report", "/dev/null", "--firefox", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(&std::fs::read(&again).unwrap()[..2], [0x1f, 0x8b]);
    assert_eq!(read_file(&again), doc);
    let o = profil(&["--load", saved.to_str().unwrap(), "--report", "/dev/null", "--firefox", "-"]);
    assert_eq!(o.stdout, std::fs::read(&file).unwrap());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn each_wait_is_a_marker_of_the_length_the_program_measured() {
    let dir = scratch("firefox-waits");
    let file = dir.join("waits.json.gz");
    let o = {
        let _s = session();
        Command::new(profil_bin())
            .args(["--off-cpu", "--report", "/dev/null", "--firefox", file.to_str().unwrap()])
            .arg(waits_bin())
            .arg(&dir)
            .output()
            .unwrap()
    };
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let doc = read_file(&file);
    let t = main_thread(&doc);
    let markers = t.markers();
    for (phase, call) in [("sleep", "clock_nanosleep"), ("pipe", "read"), ("condvar", "futex"), ("child", "wait4")] {
        let measured = field(&err, &format!("waits.{phase}:")).parse::<f64>().unwrap() * 1000.0;
        let longest = markers.iter().filter(|m| m.0 == call).map(|m| m.2).fold(0.0, f64::max);
        assert!((longest - measured).abs() <= 0.05 * measured, "{phase}: a {call} marker of {longest} ms, measured {measured} ms: {markers:?}");
        assert!(markers.iter().any(|m| m.0 == call && m.3 == call));
    }
    // The looks that found it blocked are samples without CPU time, their stacks ending in the
    // wait's frame.
    let samples = t.samples();
    let blocked: Vec<_> = samples.iter().filter(|s| s.1.last().is_some_and(|f| f.starts_with("[off-CPU:"))).collect();
    assert!(blocked.len() > 500, "{} looks", blocked.len());
    assert!(blocked.iter().all(|s| s.2 == 0));
    assert!(blocked.iter().any(|s| s.1.contains(&"waits::sleep_phase") && s.1.last() == Some(&"[off-CPU: clock_nanosleep]")), "{blocked:?}");
    let _ = std::fs::remove_dir_all(dir);
}


#[test]
fn the_processes_it_starts_are_tracks_of_their_own_in_order() {
    let dir = scratch("firefox-children");
    let (file, saved) = (dir.join("sh.json"), dir.join("sh.profil"));
    let fib = fib_bin();
    let script = format!("{0} 33 3000 >/dev/null; {0} 34 3000 >/dev/null", fib.display());
    let o = {
        let _s = session();
        profil(&["-g", "--children", "--report", "/dev/null", "--firefox", file.to_str().unwrap(), "--save", saved.to_str().unwrap(), "sh", "-c", &script])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let doc = read_file(&file);
    // A track a process: sh, then each fib it ran, the one after the other.
    let threads: Vec<Thread> = doc["threads"].as_array().unwrap().iter().map(Thread).collect();
    let names: Vec<&str> = threads.iter().map(|t| t.0["processName"].as_str().unwrap()).collect();
    assert_eq!(names, ["sh", "fib", "fib"]);
    let pids: Vec<&str> = threads.iter().map(|t| t.0["pid"].as_str().unwrap()).collect();
    assert!(pids[0] != pids[1] && pids[1] != pids[2], "{pids:?}");
    let (first, second) = (threads[1].samples(), threads[2].samples());
    for samples in [&first, &second] {
        let mut phases: Vec<&str> = samples.iter().filter_map(|s| s.1.last().copied()).filter(|n| ["fib", "loop", "overflow"].contains(n)).collect();
        phases.dedup();
        assert_eq!(phases, ["fib", "loop", "overflow"]);
    }
    // The second began after the first's last sample (times from the program's start).
    assert!(second[0].0 > first.last().unwrap().0, "{} then {}", first.last().unwrap().0, second[0].0);
    assert!(threads[2].0["processStartupTime"].as_f64().unwrap() >= first.last().unwrap().0);
    // The saved run gives the same file.
    let o = profil(&["--load", saved.to_str().unwrap(), "--report", "/dev/null", "--firefox", "-"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let loaded: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(loaded, doc);
    assert!(o.stdout == std::fs::read(&file).unwrap(), "the same document, other bytes");
    let _ = std::fs::remove_dir_all(dir);
}

/// The profiler's own client reads the file as the report reads the run: the process's
/// threads by tid with their CPU time, each function's samples in the flat profile, and the
/// call tree's root.
#[test]
fn the_firefox_profiler_s_own_client_reads_what_the_report_says() {
    let dir = scratch("firefox-cli");
    let (file, report) = (dir.join("fib.json"), dir.join("report.txt"));
    let fib = fib_bin();
    let o = {
        let _s = session();
        profil(&["-f", "-g", "--report", report.to_str().unwrap(), "--firefox", file.to_str().unwrap(), fib.to_str().unwrap(), "30", "600"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let out = std::fs::read_to_string(&report).unwrap();
    let Some(cli) = profiler_cli() else {
        skip("the Firefox Profiler's client is not installed (.ci/run: npm install @firefox-devtools/profiler-cli into ~/.cache/profil-ci/profiler-cli)");
        return;
    };
    if !installed("node", "nodejs") {
        return;
    }
    let session = format!("profil-test-{}", std::process::id());
    let o = Command::new("node").arg(&cli).arg("load").arg(&file).args(["--session", &session]).output().unwrap();
    assert!(o.status.success(), "profiler-cli load: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let threads = ask(&cli, &session, &["thread", "list"]);
    let functions = ask(&cli, &session, &["thread", "functions", "--limit", "0"]);
    let tree = ask(&cli, &session, &["thread", "samples-top-down"]);
    let _ = Command::new("node").arg(&cli).args(["stop", &session]).output();

    // One thread, fib's, its CPU time the report's samples at 1 kHz (each sample stands for
    // the CPU time since the thread's one before).
    let threads = threads["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
    let ticks_line = field(&out, "Ticks:");
    let words: Vec<&str> = ticks_line.split_whitespace().collect();
    let (user, kernel): (u64, u64) = (words[0].parse().unwrap(), words[5].parse().unwrap());
    let all = user + kernel;
    let cpu_ms = threads[0]["cpuMs"].as_f64().unwrap();
    assert!((cpu_ms - all as f64).abs() <= 0.02 * all as f64, "{cpu_ms} ms against {user} + {kernel} samples:\n{out}");
    // Each function's own and total samples, as the flat profile has them (`memcpy
    // [libc.so.6]` is the profiler's `libc.so.6!memcpy`).
    let theirs: std::collections::BTreeMap<String, (u64, u64)> = functions["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["nameWithLibrary"].as_str().unwrap().to_string(), (f["selfSamples"].as_u64().unwrap(), f["totalSamples"].as_u64().unwrap())))
        .collect();
    let rows = flat_rows(&out);
    assert!(rows.len() >= 4, "{out}");
    // The flat profile's shares are of its samples: the user ones and the kernel's it names
    // (where the kernel's symbols show: root, by default).
    let (flat_all, named_kernel) = flat_ticks(&out);
    for (samples, _, name) in &rows {
        let key = match name.rsplit_once(" [") {
            Some((function, object)) => format!("{}!{function}", object.trim_end_matches(']')),
            None => format!("fib!{name}"),
        };
        // fib's function `fib` is its library's name: the profiler shows it alone.
        let (own, total) = theirs.get(&key).or_else(|| theirs.get(name)).unwrap_or_else(|| panic!("{key} not in {theirs:?}"));
        assert_eq!(own, samples, "{key}");
        let pct: f64 = out.lines().find(|l| l.ends_with(&format!("  {name}"))).unwrap().split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!((*total as f64 * 100.0 / flat_all as f64 - pct).abs() <= 0.006, "{key}: total {total} of {flat_all}, the report {pct} %");
    }
    // The kernel's samples it does not name are one entry.
    assert_eq!(theirs.get("[kernel]").map_or(0, |k| k.0), kernel - named_kernel, "{theirs:?}");
    // The call tree: its root holds every sample, user and kernel, and its first call is the
    // program's `_start` (whose total the rows above checked).
    let root = &tree["regularCallTree"];
    assert_eq!(root["totalSamples"].as_u64(), Some(all), "{root}");
    assert!(root["children"].as_array().unwrap().iter().any(|c| c["name"] == "_start"), "{root}");
    let _ = std::fs::remove_dir_all(&dir);
}
