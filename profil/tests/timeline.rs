//! The run over time (Linux): fib's three phases (fib, loop, overflow) in the Timeline section
//! in their order and at the times fib itself measured (`FIB_TIMINGS=1`), a window of the run
//! (`--time`) reporting one phase alone, and both the same from a saved run as from the live
//! one.

mod common;

use std::process::Command;

use common::*;

/// The Timeline section's rows: (from, to, busiest function), seconds from the start.
fn timeline_rows(out: &str) -> Vec<(f64, f64, String)> {
    table_rows(out, "Timeline (")
        .into_iter()
        .map(|w| {
            // from, to, cpu, "%", then the function and its share ("-" for none).
            let name = if w[4] == "-" { "-".to_string() } else { w[4..w.len() - 2].join(" ") };
            (w[0].parse().unwrap(), w[1].parse().unwrap(), name)
        })
        .collect()
}

/// The section itself, for comparing two reports of one run.
fn timeline_section(out: &str) -> &str {
    let start = out.find("Timeline (").unwrap_or_else(|| panic!("no timeline in:\n{out}"));
    let len = out[start..].find("\n\n").unwrap();
    &out[start..start + len]
}

/// A run of fib with `args` saved in a fresh scratch directory `name`: the directory, the file.
fn saved_fib(name: &str, args: &[&str]) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let saved = dir.join("fib.profil");
    let o = {
        let _s = session();
        let fib = fib_bin();
        let mut all = vec!["-f", "--save", saved.to_str().unwrap(), fib.to_str().unwrap()];
        all.extend_from_slice(args);
        profil(&all)
    };
    assert!(o.status.success(), "{}", text(&o).1);
    (dir, saved)
}

/// fib's own timing of a phase, in seconds.
fn phase(err: &str, name: &str) -> f64 {
    field(err, &format!("fib.time.{name}:")).parse().unwrap()
}

#[test]
fn fib_s_phases_come_in_order_at_their_own_times_and_a_window_reports_one_alone() {
    let dir = scratch("timeline");
    let saved = dir.join("fib.profil");
    let o = {
        let _s = session();
        Command::new(profil_bin())
            .args(["--report", "-", "-f", "--timeline=40", "--save", saved.to_str().unwrap()])
            .arg(fib_bin())
            .args(["38", "3000"])
            .env("FIB_TIMINGS", "1")
            .output()
            .unwrap()
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let live = timeline_section(&out).to_string();
    let (fib, lp, overflow) = (phase(&err, "fib"), phase(&err, "loop"), phase(&err, "overflow"));
    let rows = timeline_rows(&out);
    assert_eq!(rows.len(), 40, "{out}");
    // The busiest function of each slice, runs of one named once: the phases in their order.
    let mut order: Vec<&str> = rows.iter().map(|r| r.2.as_str()).filter(|&n| n != "-").collect();
    order.dedup();
    assert_eq!(order, ["fib", "loop", "overflow"], "{out}");
    // Each phase begins where fib's own timings put it: within a slice, and 2 % of the run
    // (the program's start is its exec, a little before fib's main).
    let span = rows.last().unwrap().1;
    let width = rows[0].1 - rows[0].0;
    assert!((span - (fib + lp + overflow)).abs() <= 0.02 * span + width, "span {span} against fib's {}", fib + lp + overflow);
    for (name, begins) in [("loop", fib), ("overflow", fib + lp)] {
        let first = rows.iter().find(|r| r.2 == name).unwrap();
        assert!((first.0 - begins).abs() <= width + 0.02 * span, "{name} from {} in the timeline, {begins} by fib's clock:\n{out}", first.0);
    }

    // The loop phase alone, from the saved run: loop is (nearly) all of it.
    // (Rounded to 0.1 ms, written as the note writes a number back: 0.15, not 0.1500.)
    let ms = |s: f64| (s * 1e4).round() / 1e4;
    let window = format!("{},{}", ms(fib + 0.1 * lp), ms(fib + 0.9 * lp));
    let o = profil(&["--load", saved.to_str().unwrap(), "-f", "--time", &window]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(user_share(&out, "loop") >= 95.0, "--time {window}:\n{out}");
    assert!(err.contains(&format!("Note: the report is of the samples --time {window} keeps: ")), "{err}");
    // The window's time is the report's time line.
    let elapsed: f64 = field(&out, "Time:").split_whitespace().next().unwrap().parse().unwrap();
    assert!((elapsed - 0.8 * lp).abs() < 0.01, "{elapsed} s for a window of {} s", 0.8 * lp);

    // The saved run's timeline is the live run's, byte for byte.
    let o = profil(&["--load", saved.to_str().unwrap(), "-f", "--timeline=40"]);
    assert_eq!(timeline_section(&text(&o).0), live);

    // The per-sample dump: a line per sample, in time order, each phase's first sample where
    // fib's timings put it (the samples stand 1 ms apart).
    let o = profil(&["--load", saved.to_str().unwrap(), "-f", "--report", "/dev/null", "--samples", "-"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("# seconds\ttid\tstate\tstack"));
    let samples: Vec<(f64, &str)> = lines
        .map(|l| {
            let w: Vec<&str> = l.split('\t').collect();
            assert_eq!((w.len(), w[2]), (4, "cpu"), "{l}");
            (w[0].parse().unwrap(), w[3])
        })
        .collect();
    // Every user tick a line (and each of the kernel's: `[kernel]`, or its function where the
    // kernel's symbols name it, `vfs_write [kernel]`).
    let user = samples.iter().filter(|s| !s.1.ends_with("[kernel]")).count() as u64;
    assert_eq!(user, ticks(&text(&profil(&["--load", saved.to_str().unwrap(), "-f"])).0).0);
    assert!(samples.windows(2).all(|w| w[0].0 <= w[1].0), "not in time order");
    for (name, begins) in [("loop", fib), ("overflow", fib + lp)] {
        let first = samples.iter().find(|s| s.1 == name).unwrap().0;
        assert!((first - begins).abs() <= 0.02 * span, "{name}'s first sample at {first}, {begins} by fib's clock");
    }

    // speedscope's thread over time: each phase's frame first opened where fib's timings put it.
    let o = profil(&["--load", saved.to_str().unwrap(), "-f", "--report", "/dev/null", "--speedscope", "-"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let over_time = doc["profiles"].as_array().unwrap().iter().find(|p| p["type"] == "evented").expect("a thread over time");
    let opened = |name: &str| -> f64 {
        let at = over_time["events"].as_array().unwrap().iter().find(|e| e["type"] == "O" && frames[e["frame"].as_u64().unwrap() as usize] == name);
        at.unwrap()["at"].as_u64().unwrap() as f64 / 1e9
    };
    assert!(opened("fib") < opened("loop") && opened("loop") < opened("overflow"));
    for (name, begins) in [("loop", fib), ("overflow", fib + lp)] {
        assert!((opened(name) - begins).abs() <= 0.02 * span, "{name} opened at {}, {begins} by fib's clock", opened(name));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Windows in percentages, and a window of a run's slices: the timeline of `--time` is cut
/// in its slices, not the run's.
#[test]
fn a_window_in_percent_is_sliced_itself() {
    let (dir, saved) = saved_fib("timeline-percent", &["35", "1000"]);
    let whole = timeline_rows(&text(&profil(&["--load", saved.to_str().unwrap(), "-f", "--timeline=10"])).0);
    let span = whole.last().unwrap().1;
    let o = profil(&["--load", saved.to_str().unwrap(), "-f", "--time", "50%,", "--timeline=5"]);
    let rows = timeline_rows(&text(&o).0);
    assert_eq!(rows.len(), 5);
    assert!((rows[0].0 - span / 2.0).abs() < 0.002 && (rows[4].1 - span).abs() < 0.002, "{rows:?} of a run of {span} s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run saved before samples had times (version 1) still loads; a window of it is one error,
/// its timeline says it has none.
#[test]
fn a_run_without_times_loads_but_has_no_window() {
    let (dir, saved) = saved_fib("timeline-v1", &["30", "300"]);
    let mut doc = saved_run_json(&saved);
    assert_eq!(doc["version"], 3);
    assert!(doc["timeline"]["samples"].as_array().is_some_and(|s| !s.is_empty()));
    doc["version"] = 1.into();
    doc.as_object_mut().unwrap().remove("timeline");
    stacks_inside_the_profile(&mut doc);
    let old = dir.join("old.profil");
    write_saved_run(&old, &doc);
    let o = profil(&["--load", old.to_str().unwrap(), "-f"]);
    assert!(o.status.success() && text(&o).0.contains("Flat profile ("), "{}", text(&o).1);
    let o = profil(&["--load", old.to_str().unwrap(), "-f", "--timeline"]);
    assert!(text(&o).0.contains("Timeline: none: this run's samples have no times"), "{}", text(&o).0);
    let o = profil(&["--load", old.to_str().unwrap(), "-f", "--time", "0,1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o).1.trim_end(),
        "Profil Error: --time needs a run whose samples have times: this one has none (a run saved by an older profil, or a profd that serves no timeline)"
    );
    // A window that is no window is a usage error, before anything runs.
    for bad in ["2,1", "1", "x,2", "10%,200%"] {
        let o = profil(&["--load", old.to_str().unwrap(), "--time", bad]);
        assert_eq!(o.status.code(), Some(2), "--time {bad}");
        assert!(text(&o).1.starts_with("profil: invalid window for --time: "), "{}", text(&o).1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
