//! `--children`: the processes the program starts, forked copies and exec'd programs, each
//! profiled on its own and together, in the report and in every export.

mod common;

use std::collections::BTreeMap;

use common::*;

/// One row of the "Processes (--children)" table: (pid, parent, samples, program).
fn process_rows(out: &str) -> Vec<(u32, Option<u32>, u64, String)> {
    table_rows(out, "Processes (--children)")
        .into_iter()
        .map(|w| (w[0].parse().unwrap(), w[1].parse().ok(), w[2].parse().unwrap(), w[4..].join(" ")))
        .collect()
}

/// `profil -f --children ARGS…`, which must succeed: its report.
fn children_report(args: &[&str]) -> String {
    let mut all = vec!["-f", "--children"];
    all.extend_from_slice(args);
    let o = {
        let _s = session();
        profil(&all)
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    out
}

/// The section of one child process: its heading's line and the function rows under it.
fn process_section<'a>(out: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(heading));
    let head = lines.next().unwrap_or_else(|| panic!("no {heading:?} in:\n{out}"));
    std::iter::once(head).chain(lines.skip(1).take_while(|l| !l.trim().is_empty())).collect()
}

/// forks.c: the program spins 1 unit, its forked child 2, the child's forked child 3; at 1 kHz
/// a unit of 200 ms is ~200 samples. Every process is in the table with its parent and its
/// share, its own section names its own work, the total adds up, and the folded stacks root
/// each process's stacks at it, through the code it inherited (no exec: the unwinder has the
/// parent's mappings).
#[test]
fn forked_children_are_profiled_each_and_together() {
    let dir = scratch("children-forks");
    let exe = compile("cc", "forks.c", &["-O1", "-g"], &dir);
    let (folded, json) = (dir.join("c.txt"), dir.join("p.json"));
    let o = {
        let _s = session();
        profil(&[
            "-f",
            "-g",
            "--children",
            "--collapsed",
            folded.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            exe.to_str().unwrap(),
            "200",
        ])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rows = process_rows(&out);
    assert_eq!(rows.len(), 3, "{out}");
    let (main, child, grandchild) = (&rows[0], &rows[1], &rows[2]);
    assert_eq!((main.1, child.1, grandchild.1), (None, Some(main.0), Some(child.0)), "{out}");
    assert_eq!((child.3.as_str(), grandchild.3.as_str()), (exe.to_str().unwrap(), exe.to_str().unwrap()));
    // Shares of CPU time 1 : 2 : 3, within a fifth.
    for (row, units) in [(main, 1.0), (child, 2.0), (grandchild, 3.0)] {
        let expected = 200.0 * units;
        assert!((row.2 as f64 - expected).abs() <= expected * 0.2, "pid {} has {} samples, not ~{expected}:\n{out}", row.0, row.2);
    }
    // Each child's own section, its user samples, the program's functions without "[forks]".
    let heading = |pid: u32| format!("forks [pid {pid}] (");
    let section = process_section(&out, &heading(grandchild.0));
    assert!(section[0].contains("user samples"), "{section:?}");
    assert!(section.iter().skip(1).any(|l| l.ends_with("  spin_for")), "{section:?}");
    // The total: the program's and every child's user samples, named together.
    let user_of = |pid: u32| -> u64 {
        let section = process_section(&out, &heading(pid));
        section[0].split(": ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap()
    };
    let together = field(&out, "All 3 processes together:");
    let total: u64 = together.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(total, ticks(&out).0 + user_of(child.0) + user_of(grandchild.0), "{out}");
    // Folded stacks: one root per process, each process's work under its own root.
    let folded = std::fs::read_to_string(&folded).unwrap();
    let mut by_root: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for line in folded.lines() {
        by_root.entry(line.split(';').next().unwrap().to_string()).or_default().push(line);
    }
    let root = |pid: u32| format!("forks [pid {pid}]");
    assert_eq!(by_root.keys().cloned().collect::<Vec<_>>(), [main.0, child.0, grandchild.0].map(root).to_vec(), "{folded}");
    let busiest = |pid: u32| *by_root[&root(pid)].iter().max_by_key(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).unwrap();
    assert!(busiest(main.0).contains(";main;parent_work;spin_for"), "{folded}");
    assert!(busiest(child.0).contains(";main;child_work;spin_for"), "{folded}");
    assert!(busiest(grandchild.0).contains(";main;grandchild_work;spin_for"), "{folded}");
    // JSON: the same processes, parents and per-process flat profiles.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let processes = doc["processes"].as_array().unwrap();
    let pids: Vec<(u64, u64)> = processes.iter().map(|p| (p["pid"].as_u64().unwrap(), p["parent"].as_u64().unwrap())).collect();
    assert_eq!(pids, vec![(u64::from(child.0), u64::from(main.0)), (u64::from(grandchild.0), u64::from(child.0))]);
    for p in processes {
        let flat: u64 = p["flat"].as_array().unwrap().iter().map(|e| e["samples"].as_u64().unwrap()).sum();
        let stacks: u64 = p["stacks"].as_array().unwrap().iter().map(|e| e["count"].as_u64().unwrap()).sum();
        assert_eq!((flat, stacks), (p["ticks"]["user"].as_u64().unwrap(), flat), "{p}");
    }
}

/// Programs the program runs (`sh -c` forks and execs them) are named by their own files;
/// without --children they are only counted, and the note says how to see them.
#[test]
fn exec_children_are_named_by_their_programs() {
    let dir = scratch("children-exec");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let script = format!("{b} 300; {b} 150; exit 0", b = busy.display());
    let out = children_report(&["/bin/sh", "-c", &script]);
    let rows = process_rows(&out);
    let programs: Vec<&str> = rows.iter().skip(1).map(|r| r.3.as_str()).collect();
    assert_eq!(programs, [busy.to_str().unwrap(); 2], "{out}");
    for (row, expected) in rows.iter().skip(1).zip([300.0, 150.0]) {
        assert!((row.2 as f64 - expected).abs() <= expected * 0.2, "{row:?}\n{out}");
        let section = process_section(&out, &format!("busy [pid {}] ({})", row.0, busy.display()));
        assert!(section[1].ends_with("  spin [busy]"), "{section:?}");
    }
    assert!(!out.contains("were not counted"), "{out}");
    // sh did next to nothing itself: the report leads with its processes, then sh's own
    // (near empty) flat profile, and has the processes' section once.
    let (processes, flat) = (out.find("Processes (--children)").unwrap(), out.find("Flat profile of sh [pid ").unwrap());
    assert!(processes < flat, "{out}");
    assert_eq!(out.matches("Processes (--children)").count(), 1, "{out}");
}

/// A child that execs again (a shim: `env` runs the program, as pyenv's do) is named by the
/// image it ran last, which did the work, not by the shim it exec'd first.
#[test]
fn a_chain_of_execs_is_named_by_its_last_image() {
    let dir = scratch("children-exec-chain");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let script = format!("/usr/bin/env {} 200; exit 0", busy.display());
    let out = children_report(&["/bin/sh", "-c", &script]);
    let rows = process_rows(&out);
    let programs: Vec<&str> = rows.iter().skip(1).map(|r| r.3.as_str()).collect();
    assert_eq!(programs, [busy.to_str().unwrap()], "{out}");
    let section = process_section(&out, &format!("busy [pid {}] ({})", rows[1].0, busy.display()));
    assert!(section[1].ends_with("  spin [busy]"), "{section:?}");
}

/// `sh -c 'exec busy 200'` (as dash runs a script's last command on Redox): the program's pid
/// runs busy, so the program's row says what it became, beside the busy work that is its own.
#[test]
fn a_program_that_execs_in_place_says_what_it_became() {
    let dir = scratch("children-exec-in-place");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let out = children_report(&["/bin/sh", "-c", &format!("exec {} 200", busy.display())]);
    let rows = process_rows(&out);
    assert_eq!(rows[0].3, format!("/bin/sh (exec'd {})", busy.display()), "{out}");
    assert!(out.contains("  spin [busy]\n"), "{out}");
    assert!(out.contains("Processes (--children): '/bin/sh', which started no other process, "), "{out}");
}

/// A program that does the work itself keeps its flat profile first, its processes after.
#[test]
fn a_busy_program_leads_with_its_own_flat_profile() {
    let dir = scratch("children-busy-first");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let o = {
        let _s = session();
        profil(&["-f", "--children", busy.to_str().unwrap(), "200"])
    };
    let out = text(&o).0;
    assert!(o.status.success(), "{out}");
    let (processes, flat) = (out.find("Processes (--children)").unwrap(), out.find("Flat profile (").unwrap());
    assert!(flat < processes, "{out}");
}

/// `--pprof` with --children: every sample is tagged with its process (`pid`, `process`), so
/// `go tool pprof -tags` (and `-tagfocus`) tell them apart.
#[test]
fn pprof_samples_are_tagged_with_their_process() {
    if !installed("go", "golang-go") {
        return;
    }
    let dir = scratch("children-pprof");
    let exe = compile("cc", "forks.c", &["-O1"], &dir);
    let pb = dir.join("p.pb.gz");
    let out = children_report(&["--pprof", pb.to_str().unwrap(), exe.to_str().unwrap(), "100"]);
    let g = std::process::Command::new("go").args(["tool", "pprof", "-tags"]).arg(&pb).env("HOME", &dir).output().unwrap();
    let tags = String::from_utf8_lossy(&g.stdout).into_owned();
    assert!(g.status.success(), "{tags}\n{}", String::from_utf8_lossy(&g.stderr));
    for row in process_rows(&out) {
        assert!(tags.lines().any(|l| l.trim_end().ends_with(&format!(": {}", row.0))), "pid {} not in\n{tags}", row.0);
    }
    assert!(tags.contains(" process: Total") && tags.contains(": forks"), "{tags}");
}

/// pprof's header names the program's file and the run's wall time: with --children the
/// program (sh) has next to no samples, yet it is pprof's "File:", not its busy child; and the
/// "Duration:" of a run that sleeps a second is its wall time, not its 0.2 s of samples.
#[test]
fn pprof_names_the_program_and_the_wall_time() {
    if !installed("go", "golang-go") {
        return;
    }
    let dir = scratch("children-pprof-header");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let pb = dir.join("p.pb.gz");
    let script = format!("sleep 1; {} 200", busy.display());
    let started = std::time::Instant::now();
    let o = {
        let _s = session();
        profil(&["-f", "--children", "--pprof", pb.to_str().unwrap(), "sh", "-c", &script])
    };
    let wall = started.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let g = std::process::Command::new("go").args(["tool", "pprof", "-top"]).arg(&pb).env("HOME", &dir).output().unwrap();
    let top = String::from_utf8_lossy(&g.stdout).into_owned();
    assert!(g.status.success(), "{top}\n{}", String::from_utf8_lossy(&g.stderr));
    assert!(top.lines().any(|l| l == "File: sh"), "{top}");
    // "Duration: 1.23s, Total samples = 200ms (16.26%)"
    let line = top.lines().find(|l| l.starts_with("Duration: ")).unwrap_or_else(|| panic!("{top}"));
    let seconds: f64 = line["Duration: ".len()..].split('s').next().unwrap().parse().unwrap();
    // pprof prints the duration rounded to 10 ms: up to 5 ms above the true one.
    assert!(seconds >= 1.2 && seconds <= wall + 0.005, "{line} ({wall:.3} s around profil)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child that outlives the program: the session ends with the program, and the report says
/// the child was still running then (it was listed with its samples so far and no word why).
#[test]
fn a_child_still_running_when_the_program_exits_is_said_to_be() {
    let dir = scratch("children-outlive");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let json = dir.join("p.json");
    // The shell starts busy in the background and exits at once; busy spins 3 s of CPU.
    let script = format!("{} 3000 & {} 100", busy.display(), busy.display());
    let out = children_report(&["--json", json.to_str().unwrap(), "sh", "-c", &script]);
    let rows = process_rows(&out);
    let running: Vec<&(u32, Option<u32>, u64, String)> = rows.iter().filter(|r| r.3.ends_with("(still running)")).collect();
    assert_eq!(running.len(), 1, "{out}");
    assert!(out.contains("Note: 1 process was still running when 'sh' exited and profiling stopped"), "{out}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let flags: Vec<(u64, bool)> =
        doc["processes"].as_array().unwrap().iter().map(|p| (p["pid"].as_u64().unwrap(), p["running"].as_bool().unwrap())).collect();
    assert!(flags.contains(&(running[0].0 as u64, true)) && flags.iter().filter(|f| f.1).count() == 1, "{flags:?}");
    // Let the background busy finish before the next test takes the session.
    let _ = std::process::Command::new("sh").arg("-c").arg(format!("while kill -0 {} 2>/dev/null; do sleep 0.1; done", running[0].0)).status();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program run many times (a shell loop): each run a row of the process table, and all its
/// runs together a row of `By program`, whose counts are the sums of the table's.
#[test]
fn runs_of_one_program_are_grouped() {
    let dir = scratch("children-grouped");
    let busy = compile("cc", "busy.c", &["-O1"], &dir);
    let script = format!("for i in 1 2 3 4 5; do {} 30; done", busy.display());
    let out = children_report(&["sh", "-c", &script]);
    let rows = process_rows(&out);
    let busy_name = busy.to_str().unwrap();
    let runs: Vec<&(u32, Option<u32>, u64, String)> = rows.iter().filter(|r| r.3 == busy_name).collect();
    assert_eq!(runs.len(), 5, "{out}");
    let groups = table_rows(&out, "By program (its runs together):");
    let group = groups.iter().find(|g| g[3..].join(" ") == busy_name).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(group[0], "5", "{out}");
    assert_eq!(group[1].parse::<u64>().unwrap(), runs.iter().map(|r| r.2).sum::<u64>(), "{out}");
    // Every sample of the run is in exactly one group.
    let all: u64 = rows.iter().map(|r| r.2).sum();
    assert_eq!(groups.iter().map(|g| g[1].parse::<u64>().unwrap()).sum::<u64>(), all, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Report filters on a run with --children: `--comm` keeps the processes running that program
/// (sh's own samples go), live; `--pids` the processes listed, on the run saved.
#[test]
fn report_filters_keep_processes_by_name_or_pid() {
    let dir = scratch("children-filters");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let script = format!("{b} 100; {b} 50; /bin/true; exit 0", b = busy.display());
    let saved = dir.join("sh.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--children", "--save", saved.to_str().unwrap(), "/bin/sh", "-c", &script])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let all = process_rows(&text(&o).0);
    assert_eq!(all.len(), 4, "sh, two busy, true: {}", text(&o).0);
    let o = {
        let _s = session();
        profil(&["-f", "--children", "--comm", "busy", "/bin/sh", "-c", &script])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rows = process_rows(&out);
    // sh's own row stays (with no samples), then the two busy runs alone.
    assert_eq!(rows[0].2, 0, "{out}");
    let programs: Vec<&str> = rows.iter().skip(1).map(|r| r.3.as_str()).collect();
    assert_eq!(programs, [busy.to_str().unwrap(); 2], "{out}");
    assert!(err.contains("Note: the report is of the samples --comm busy keeps: "), "{err}");
    // The second busy run, by its pid, from the saved run.
    let second = all[2].0.to_string();
    let o = profil(&["-f", "--load", saved.to_str().unwrap(), "--pids", &second]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rows = process_rows(&out);
    assert_eq!(rows.iter().map(|r| (r.0, r.2)).collect::<Vec<_>>(), [(all[0].0, 0), (all[2].0, all[2].2)], "{out}");
    assert!(err.contains(&format!("--pids {second} keeps: {} of ", all[2].2)), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree keeps its time axis: `--samples` has every process's samples by its thread,
/// `--time` keeps the processes that ran in its window (on the clock they share), and
/// `--timeline` slices them all; live, then loaded.
#[test]
fn a_tree_keeps_its_time_axis() {
    let dir = scratch("children-time");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let script = format!("{b} 300; {b} 300; exit 0", b = busy.display());
    let (saved, samples) = (dir.join("run.profil"), dir.join("samples.txt"));
    let out = children_report(&["--save", saved.to_str().unwrap(), "--samples", samples.to_str().unwrap(), "/bin/sh", "-c", &script]);
    let rows = process_rows(&out);
    assert_eq!(rows.len(), 3, "sh and two busy runs: {out}");
    let (first, second) = (rows[1].0, rows[2].0);
    // Each busy run's samples, by its thread (its pid), in time order.
    let lines = std::fs::read_to_string(&samples).unwrap();
    let times_of = |pid: u32, spin: bool| -> Vec<f64> {
        lines
            .lines()
            .skip(1)
            .map(|l| l.split('\t').collect::<Vec<_>>())
            .filter(|w| w[1] == pid.to_string() && (!spin || w[3].ends_with("spin [busy]")))
            .map(|w| w[0].parse().unwrap())
            .collect()
    };
    let (a, b) = (times_of(first, true), times_of(second, true));
    assert!(a.len() as f64 >= 0.5 * rows[1].2 as f64 && b.len() as f64 >= 0.5 * rows[2].2 as f64, "{} {} of {rows:?}", a.len(), b.len());
    assert!(a.windows(2).all(|w| w[0] <= w[1]) && b.windows(2).all(|w| w[0] <= w[1]), "in time order");
    // Between the runs, by every sample of theirs: a run's start-up (the loader, `_start`)
    // comes before its spin, and is of the run too.
    let (a, b) = (times_of(first, false), times_of(second, false));
    assert!(a.last() < b.first(), "the first busy run ends before the second starts: {lines}");
    let mid = (a.last().unwrap() + b.first().unwrap()) / 2.0;
    // Each half of the run holds the busy run that ran then, and not the other.
    for (window, kept) in [(format!("0,{mid:.6}"), first), (format!("{mid:.6},"), second)] {
        let o = profil(&["-f", "--load", saved.to_str().unwrap(), "--time", &window]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        let busy_rows: Vec<u32> = process_rows(&out).iter().skip(1).filter(|r| r.2 > 0).map(|r| r.0).collect();
        assert_eq!(busy_rows, [kept], "--time {window}: {out}");
    }
    // The timeline: both runs' work, sliced on one clock.
    let o = profil(&["-f", "--load", saved.to_str().unwrap(), "--timeline=2"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let timeline: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("Timeline (")).take(4).collect();
    assert!(timeline[0].contains("cpu: the samples of its "), "{timeline:?}");
    assert!(timeline[2].contains("spin [busy]") && timeline[3].contains("spin [busy]"), "{timeline:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree's `--threads` and `--diff` are of every process: each busy run's thread is a row
/// with its pid, and the comparison with a saved run of busy alone is of the tree's
/// processes together, busy's functions by their own names on both sides (`spin`, not
/// `spin [busy]`), live and loaded.
#[test]
fn a_tree_s_threads_and_comparison_are_of_every_process() {
    let dir = scratch("children-threads-diff");
    let busy = compile("cc", "busy.c", &["-O1", "-g"], &dir);
    let (alone, tree) = (dir.join("alone.profil"), dir.join("tree.profil"));
    {
        let _s = session();
        let o = profil(&["-f", "--save", alone.to_str().unwrap(), busy.to_str().unwrap(), "200"]);
        assert!(o.status.success(), "{}", text(&o).1);
    }
    let script = format!("{b} 200; {b} 200; exit 0", b = busy.display());
    let live = children_report(&["--threads", "--diff", alone.to_str().unwrap(), "--save", tree.to_str().unwrap(), "/bin/sh", "-c", &script]);
    let o = profil(&["-f", "--load", tree.to_str().unwrap(), "--threads", "--diff", alone.to_str().unwrap()]);
    let (loaded, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for out in [&live, &loaded] {
        let runs: Vec<u32> = process_rows(out).iter().filter(|r| r.3.ends_with("/busy")).map(|r| r.0).collect();
        assert_eq!(runs.len(), 2, "{out}");
        let threads = table_rows(out, "By thread (");
        let heading = out.lines().find(|l| l.starts_with("By thread (")).unwrap();
        assert!(heading.contains(" processes, "), "{heading}");
        for pid in &runs {
            // pid, tid (its one thread is the process), name, samples, %, top function.
            let row = threads.iter().find(|w| w[0] == pid.to_string()).unwrap_or_else(|| panic!("no thread of {pid}: {out}"));
            assert_eq!((row[1], row[2], row[5..7].join(" ")), (pid.to_string().as_str(), "busy", "spin [busy]".to_string()), "{out}");
        }
        let compared = out.lines().find(|l| l.starts_with("Compared with ")).unwrap_or_else(|| panic!("{out}"));
        assert!(compared.contains(", every process together ("), "{compared}");
        let spin = table_rows(out, "Compared with ").into_iter().find(|w| w.last() == Some(&"spin")).unwrap_or_else(|| panic!("{out}"));
        let (base, new): (f64, f64) = (spin[0].parse().unwrap(), spin[1].parse().unwrap());
        assert!(base > 80.0 && new > 80.0, "{spin:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
