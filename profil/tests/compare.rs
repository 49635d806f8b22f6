//! `--diff BASE`: a run compared with a saved one, each function's change of share with its
//! interval, the difference as folded stacks and as a differential flame graph, and the gate
//! `--fail-above` a CI job can use (exit status 3).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Save a run of `fib 30 LOOPS` (its `loop` phase grows with LOOPS², `overflow` stays).
fn saved_fib(dir: &Path, name: &str, loops: &str, record: &[&str]) -> PathBuf {
    let file = dir.join(name);
    let fib = fib_bin();
    let mut args = vec!["-f", "--save", file.to_str().unwrap()];
    args.extend_from_slice(record);
    args.extend_from_slice(&[fib.to_str().unwrap(), "30", loops]);
    let o = {
        let _s = session();
        profil(&args)
    };
    assert!(o.status.success(), "{}", text(&o).1);
    file
}

/// The section's row of `function`: (base %, new %, change in points, verdict).
fn row(report: &str, function: &str) -> (f64, f64, f64, String) {
    let line = report
        .lines()
        .skip_while(|l| !l.starts_with("Compared with"))
        .find(|l| l.trim_end().ends_with(&format!("  {function}")))
        .unwrap_or_else(|| panic!("no row for {function}:\n{report}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[0].parse().unwrap(), w[1].parse().unwrap(), w[2].parse().unwrap(), w[6].trim_end_matches(',').to_string())
}

/// `new`: the saved run `base` as if its function at `range` (link-time addresses) had taken
/// `times` as long: its samples, stacks, bins and ticks that many times, the rest as they
/// were. (Two real runs cannot stand for this on a shared virtual machine: the same work took
/// from 1 to 5.5 times the CPU time from one run to the next there.)
fn scaled(base: &Path, new: &Path, range: std::ops::Range<u64>, times: u64) {
    let mut doc = saved_run_json(base);
    let p = &mut doc["run"]["profile"];
    let (start, bin) = (p["data"]["start_addr"].as_u64().unwrap(), p["data"]["bin_sz"].as_u64().unwrap());
    let mut more = 0;
    let mut bins_more = Vec::new();
    for s in p["image_samples"].as_array_mut().unwrap() {
        let (addr, n) = (s[0].as_u64().unwrap(), s[1].as_u64().unwrap());
        if range.contains(&addr) {
            s[1] = (n * times).into();
            more += n * (times - 1);
            bins_more.push(((addr - start) / bin, n * (times - 1)));
        }
    }
    for (i, n) in bins_more {
        let b = &mut p["data"]["bins"][i as usize];
        *b = (b.as_u64().unwrap() + n).into();
    }
    p["user_ticks"] = (p["user_ticks"].as_u64().unwrap() + more).into();
    // Each stack a row `[count, truncated, [kind, address, ...]]`, its innermost frame first
    // (kind 0: the program's text).
    for st in doc["call_stacks"].as_array_mut().unwrap() {
        if st[2][0] == 0 && st[2][1].as_u64().is_some_and(|a| range.contains(&a)) {
            st[0] = (st[0].as_u64().unwrap() * times).into();
        }
    }
    assert!(more > 0, "no sample of the function in the base run");
    write_saved_run(new, &doc);
}

#[test]
fn a_function_with_four_times_the_samples_is_significant_and_gates_the_exit_status() {
    let dir = scratch("compare");
    // A real run (loop 285 ms, overflow 540 ms), and the same run with loop four times as long.
    let base = saved_fib(&dir, "base.profil", "3000", &["-g"]);
    let new = dir.join("new.profil");
    let fib = prof_objects::elf::read_program(&fib_bin(), &Default::default()).unwrap();
    let lp = fib.symbols().by_name("loop").unwrap().clone();
    scaled(&base, &new, lp.addr..lp.addr + lp.size, 4);
    let (folded, svg, pprof) = (dir.join("diff.folded"), dir.join("diff.svg"), dir.join("diff.pb.gz"));
    let o = profil(&[
        "-f",
        "--load",
        new.to_str().unwrap(),
        "--diff",
        base.to_str().unwrap(),
        "--collapsed",
        folded.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--pprof",
        pprof.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let (before, after, change, verdict) = row(&out, "loop");
    assert!(after > before + 5.0 && verdict == "significant", "{out}");
    assert!((change - (after - before)).abs() < 0.011, "{out}");
    // overflow did the same work: its share fell because loop's grew, by the same cause.
    let (_, _, overflow, _) = row(&out, "overflow");
    assert!(overflow < 0.0, "{out}");
    // The difference as inferno's differential folded lines (base scaled to this run), and a
    // differential flame graph of them.
    let folded = std::fs::read_to_string(&folded).unwrap();
    let loop_line = folded.lines().find(|l| l.contains(";loop ")).unwrap_or_else(|| panic!("{folded}"));
    let counts: Vec<u64> = loop_line.rsplitn(3, ' ').take(2).map(|n| n.parse().unwrap()).collect();
    assert!(counts[0] > counts[1], "loop: {loop_line}");
    assert!(folded.lines().all(|l| l.rsplitn(3, ' ').count() == 3), "{folded}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("compared with") && svg.contains("loop"), "{}", &svg[..svg.len().min(2000)]);
    // As pprof, this run less the base (go tool pprof -diff_base's way): loop's samples grew,
    // overflow's (the same work) stayed within a few.
    if installed("go", "golang-go") {
        let o = std::process::Command::new("go")
            .args(["tool", "pprof", "-top", "-sample_index=samples", pprof.to_str().unwrap()])
            .output()
            .unwrap();
        let top = String::from_utf8_lossy(&o.stdout);
        // A function whose samples did not change at all is not listed: 0.
        let flat = |f: &str| -> i64 {
            let line = top.lines().find(|l| l.trim_end().ends_with(&format!(" {f}")));
            line.map_or(0, |l| l.split_whitespace().next().unwrap().parse().unwrap())
        };
        // loop's samples grew by hundreds; overflow's did not move.
        assert!(flat("loop") > 300, "{top}");
        assert_eq!(flat("overflow"), 0, "{top}");
    }

    // The gate: loop grew by more than 5 points for sure, not by 50.
    let o = profil(&["-f", "--load", new.to_str().unwrap(), "--diff", base.to_str().unwrap(), "--fail-above", "5"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("grew by more than 5 points of the samples since") && err.contains("loop ("), "{err}");
    let o = profil(&["-f", "--load", new.to_str().unwrap(), "--diff", base.to_str().unwrap(), "--fail-above", "50"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);

    // A run compared with itself: no change anywhere.
    let o = profil(&["-f", "--load", base.to_str().unwrap(), "--diff", base.to_str().unwrap(), "--fail-above", "0"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains(" 0 of ") && out.contains("functions changed more than sampling noise explains"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_run_compares_with_a_saved_one() {
    let dir = scratch("compare-live");
    let base = saved_fib(&dir, "base.profil", "3000", &[]);
    let fib = fib_bin();
    let o = {
        let _s = session();
        profil(&["-f", "--diff", base.to_str().unwrap(), fib.to_str().unwrap(), "30", "3000"])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // Without stacks: own shares only, and the seconds each function's samples stand for.
    assert!(out.contains("own share change  seconds  function\n"), "{out}");
    row(&out, "loop");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_bases_and_gates_are_one_clear_error() {
    let dir = scratch("compare-bad");
    let junk = dir.join("junk");
    std::fs::write(&junk, b"not a run\n").unwrap();
    let fib = fib_bin();
    for (args, status, says) in [
        (vec!["--diff", "/nonexistent/base.profil", fib.to_str().unwrap()], 1, "Cannot read '/nonexistent/base.profil'"),
        (vec!["--diff", junk.to_str().unwrap(), fib.to_str().unwrap()], 1, "is not a run profil can compare with"),
        (vec!["--fail-above", "3", fib.to_str().unwrap()], 2, "--fail-above goes with --diff"),
        (vec!["--diff", junk.to_str().unwrap(), "--fail-above", "x", fib.to_str().unwrap()], 2, "invalid points 'x' for --fail-above"),
        (vec!["--diff", junk.to_str().unwrap(), "--fail-above", "101", fib.to_str().unwrap()], 2, "invalid points '101'"),
    ] {
        let o = {
            let _s = session();
            profil(&args)
        };
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(status), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A base that cannot say what `--diff` seems to: of another program (every function then
/// differs), or without call stacks against a run with them. One warning says so; the
/// comparison is still made.
#[test]
fn a_base_of_another_program_or_without_stacks_is_warned_about() {
    let dir = scratch("compare-warn");
    let other = dir.join("true.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--save", other.to_str().unwrap(), "/bin/true"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let flat = saved_fib(&dir, "flat.profil", "3000", &[]);
    let fib = fib_bin();
    let diff = |base: &Path, record: &[&str]| {
        let mut args = vec!["-f", "--diff", base.to_str().unwrap()];
        args.extend_from_slice(record);
        args.extend_from_slice(&[fib.to_str().unwrap(), "30", "3000"]);
        let _s = session();
        profil(&args)
    };
    let o = diff(&other, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("Compared with"), "{out}");
    let warning = format!(
        "profil: warning: the base run is of another program ('/bin/true', this run '{}'): the changes compare two programs\n",
        fib.display()
    );
    assert_eq!(err.matches("profil: warning:").count(), 1, "{err}");
    assert!(err.contains(&warning), "{err}");
    let o = diff(&flat, &["-g"]);
    let err = text(&o).1;
    assert_eq!(
        err,
        "profil: warning: the base run has no call stacks (record it with -g): total shares and the stack exports compare with nothing\n"
    );
    // The same program, without stacks on either side: no word.
    let o = diff(&flat, &[]);
    assert_eq!(text(&o).1, "");
    let _ = std::fs::remove_dir_all(&dir);
}
