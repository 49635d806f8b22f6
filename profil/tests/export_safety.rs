//! Export files are never damaged, and standard output can be an export: real runs of profil
//! on fib with `-o`, `--collapsed`, `--json` pointed at existing files, the program itself,
//! one file twice, `-` and `/dev/stdout`; and a report whose reader goes away (`| head`).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{fib_bin, installed, profil, profil_bin, scratch, session, text};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Only the files the test made are in `dir`: no temporary file is left behind.
fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    found.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn a_refused_run_leaves_existing_exports_untouched() {
    let _s = session();
    let dir = scratch("exports-refused");
    let (json, gmon, folded) = (dir.join("keep.json"), dir.join("gmon.out"), dir.join("keep.folded"));
    for f in [&json, &gmon, &folded] {
        std::fs::write(f, b"precious\n").unwrap();
    }
    // start > end: the run is refused (Address range invalid) after the child was forked.
    let o = profil(&["--json", s(&json), "-o", s(&gmon), "--collapsed", s(&folded), "-s", "0x100", "-e", "0x10", s(&fib_bin())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("Profil Error: Address range invalid"), "{}", text(&o).1);
    for f in [&json, &gmon, &folded] {
        assert_eq!(std::fs::read(f).unwrap(), b"precious\n", "{}", f.display());
    }
    assert_only(&dir, &["keep.json", "gmon.out", "keep.folded"]);

    // A successful run replaces them.
    let o = profil(&["--json", s(&json), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["format"], "profil");
    assert_only(&dir, &["keep.json", "gmon.out", "keep.folded"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn profil_killed_mid_run_leaves_existing_exports_untouched() {
    let _s = session();
    let dir = scratch("exports-killed");
    let json = dir.join("keep.json");
    std::fs::write(&json, b"precious\n").unwrap();
    let mut p = Command::new(profil_bin())
        .args(["--json", s(&json), s(&fib_bin())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    p.kill().unwrap();
    p.wait().unwrap();
    assert_eq!(std::fs::read(&json).unwrap(), b"precious\n");
    assert_only(&dir, &["keep.json"]);
    // Its orphaned child finishes by itself; wait for it before the next test takes the session.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_export_onto_the_program_or_twice_onto_one_file_is_refused_before_it_runs() {
    let _s = session();
    let dir = scratch("exports-refuse");
    let victim = dir.join("victim");
    std::fs::copy(fib_bin(), &victim).unwrap();
    let original = std::fs::read(&victim).unwrap();
    for flag in ["-o", "--json", "--collapsed"] {
        let o = profil(&[flag, s(&victim), s(&victim), "20", "1"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(err, format!("Profil Error: Cannot write '{}': it is the program to profile\n", s(&victim)));
        assert!(out.is_empty(), "the program ran:\n{out}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), original);

    // The same new file twice, also when spelled differently.
    let twice = dir.join("twice");
    let spelled = dir.join(".").join("twice");
    let o = profil(&["--json", s(&twice), "-o", s(&spelled), s(&victim), "20", "1"]);
    assert_eq!(o.status.code(), Some(1));
    // (-o is checked before --json, so --json's path is the one named.)
    assert_eq!(text(&o).1, format!("Profil Error: Cannot write '{}': another export names the same file\n", s(&twice)));
    assert!(text(&o).0.is_empty());
    assert!(!twice.exists());
    // And an existing one through a symbolic link.
    std::fs::write(&twice, b"x").unwrap();
    std::os::unix::fs::symlink(&twice, dir.join("link")).unwrap();
    let o = profil(&["--collapsed", s(&twice), "--json", s(&dir.join("link")), s(&victim), "20", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&twice).unwrap(), b"x");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dash_and_dev_stdout_put_the_export_alone_on_standard_output() {
    let _s = session();
    for path in ["-", "/dev/stdout"] {
        let o = profil(&["--json", path, s(&fib_bin()), "20", "1"]);
        assert!(o.status.success(), "{}", text(&o).1);
        let (out, err) = text(&o);
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{path}: stdout is not JSON alone ({e}):\n{out}"));
        assert_eq!(v["exit"]["code"], 0);
        // The report and fib's own output went to standard error.
        assert!(err.contains("Profile Statistics") && err.contains("fib.main:"), "{path}:\n{err}");
    }
    let o = profil(&["--collapsed", "-", "-f", s(&fib_bin()), "20", "1"]);
    let (out, err) = text(&o);
    assert!(out.lines().all(|l| l.starts_with("fib;")), "{out}");
    assert!(err.contains("Flat profile"));
}

#[test]
fn a_report_reader_that_goes_away_ends_the_report_quietly() {
    let _s = session();
    let dir = scratch("exports-pipe");
    let json = dir.join("p.json");
    let mut p = Command::new(profil_bin())
        .args(["--json", s(&json), s(&fib_bin()), "20", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(p.stdout.take()); // `| head -0`: the reader is gone before anything is printed
    let o = p.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("Broken pipe") && !err.contains("Profil Error"), "{err}");
    // fib writes to the same closed pipe and dies of SIGPIPE, as it would under a shell.
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["exit"]["signal"], libc::SIGPIPE);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_without_program_samples_still_writes_a_gmon_out_gprof_reads() {
    if !installed("gprof", "binutils") {
        return;
    }
    let _s = session();
    let dir = scratch("exports-gmon-empty");
    let quick = common::compile("cc", "quick.c", &["-O1"], &dir);
    let gmon = dir.join("gmon.out");
    let o = profil(&["-f", "-o", s(&gmon), s(&quick)]);
    assert!(o.status.success(), "{}", text(&o).1);
    let g = Command::new("gprof").args(["-b", "-p"]).arg(&quick).arg(&gmon).output().unwrap();
    assert!(g.status.success(), "gprof: {}", String::from_utf8_lossy(&g.stderr));
    assert!(String::from_utf8_lossy(&g.stdout).contains("no time accumulated"));
    let _ = std::fs::remove_dir_all(&dir);
}
