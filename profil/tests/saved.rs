//! `--save FILE` and `--load FILE`: a run saved once is reported again, with any report and
//! export option, byte for byte as the live run was; what is not a saved run is one clear
//! error.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The report and every export of one run, live (`--save`) and loaded (`--load`), with the
/// report options `report` (the recording ones, `record`, only live): the same bytes each.
fn same_bytes_live_and_loaded(dir: &Path, program: &[&str], record: &[&str], report: &[&str]) {
    let saved = dir.join("run.profil");
    let files = ["report", "json", "collapsed", "pprof", "svg", "gmon", "speedscope"];
    let outputs = |tag: &str| -> Vec<(String, PathBuf)> {
        files.iter().map(|f| (f.to_string(), dir.join(format!("{tag}.{f}")))).collect()
    };
    let with_outputs = |args: &mut Vec<String>, outs: &[(String, PathBuf)]| {
        for (f, path) in outs {
            args.push(if f == "gmon" { "-o".into() } else { format!("--{f}") });
            args.push(path.to_str().unwrap().into());
        }
    };
    let live = outputs("live");
    let mut args: Vec<String> = ["-f", "--save", saved.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    args.extend(record.iter().chain(report).map(|s| s.to_string()));
    with_outputs(&mut args, &live);
    args.extend(program.iter().map(|s| s.to_string()));
    let o = {
        let _s = session();
        profil(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let loaded = outputs("loaded");
    let mut args: Vec<String> = ["-f", "--load", saved.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    args.extend(report.iter().map(|s| s.to_string()));
    with_outputs(&mut args, &loaded);
    let o = profil(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The report went to its file: nothing else is said.
    assert_eq!((out.as_str(), err.as_str()), ("", ""));
    for ((f, a), (_, b)) in live.iter().zip(&loaded) {
        let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(!a.is_empty(), "{f} of {record:?} {report:?} is empty");
        assert!(a == b, "{f} differs live and loaded, {record:?} {report:?}:\n{}\n---\n{}", String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    }
}

/// A run saved by profil of version 2 (its stacks inside the profile, a frame an object) is
/// reported as the same run saved now (version 3, the stacks as rows beside it).
#[test]
fn a_version_2_file_reports_as_the_same_run_saved_now() {
    let dir = scratch("saved-v2");
    let saved = dir.join("run.profil");
    let o = {
        let _s = session();
        profil(&["-f", "-g", "--save", saved.to_str().unwrap(), fib_bin().to_str().unwrap(), "30", "300"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let mut doc = saved_run_json(&saved);
    assert_eq!(doc["version"], 3);
    assert!(doc["run"]["profile"].get("stacks").is_none(), "version 3 keeps no stacks in the profile");
    let rows = doc["call_stacks"].as_array().unwrap().len();
    assert!(rows > 1, "a -g run of fib has stacks");
    stacks_inside_the_profile(&mut doc);
    doc["version"] = 2.into();
    assert_eq!(doc["run"]["profile"]["stacks"].as_array().unwrap().len(), rows);
    let old = dir.join("v2.profil");
    write_saved_run(&old, &doc);
    let report = |file: &Path, json: &Path| {
        let o = profil(&["--load", file.to_str().unwrap(), "-f", "--callgraph", "--json", json.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o).1);
        (text(&o).0, std::fs::read(json).unwrap())
    };
    let now = report(&saved, &dir.join("now.json"));
    assert!(now.0.contains("Call graph"), "{}", now.0);
    assert_eq!(report(&old, &dir.join("old.json")), now);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_loaded_run_is_reported_as_the_live_one_was() {
    let dir = scratch("saved");
    let fib = fib_bin();
    let fib = fib.to_str().unwrap();
    same_bytes_live_and_loaded(&dir, &[fib], &[], &[]);
    same_bytes_live_and_loaded(&dir, &[fib], &["-g"], &["--callgraph", "--top", "3"]);
    same_bytes_live_and_loaded(&dir, &[fib], &["--call-graph", "fp"], &["--lines", "--asm", "--short-names"]);
    same_bytes_live_and_loaded(&dir, &[fib], &["-g"], &["--inline"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--load <(cat run)`: a saved run read from a stream (bash's process substitution, a pipe
/// at /dev/fd/N) reports as the file does.
#[test]
fn a_saved_run_loads_from_a_stream() {
    let dir = scratch("saved-stream");
    let saved = dir.join("run.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--save", saved.to_str().unwrap(), fib_bin().to_str().unwrap(), "25", "20"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let from_file = profil(&["-f", "--load", saved.to_str().unwrap()]);
    assert!(from_file.status.success(), "{}", text(&from_file).1);
    let script = format!("exec '{}' -f --load <(cat '{}')", profil_bin().display(), saved.display());
    let from_stream = std::process::Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(from_stream.status.code(), Some(0), "{}", text(&from_stream).1);
    assert_eq!(text(&from_stream), text(&from_file));
    assert!(text(&from_file).0.contains("Flat profile ("), "{}", text(&from_file).0);
    // An empty stream is no saved run: one error, exit 1.
    let empty = std::process::Command::new("bash").args(["-c", &format!("exec '{}' --load <(true)", profil_bin().display())]).output().unwrap();
    assert_eq!(empty.status.code(), Some(1), "{}", text(&empty).1);
    assert!(text(&empty).1.starts_with("Profil Error: '/dev/fd/"), "{}", text(&empty).1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The clock, the waits, the children: the whole model comes back.
#[test]
fn waits_and_children_come_back_too() {
    let dir = scratch("saved-waits");
    let waits = waits_bin();
    same_bytes_live_and_loaded(&dir, &[waits.to_str().unwrap(), dir.to_str().unwrap()], &["-g", "--off-cpu", "--children"], &["--callgraph"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Minix histogram (without -f) comes back too, and the run's own options are its.
#[test]
fn the_minix_report_comes_back_and_recording_options_are_refused() {
    let dir = scratch("saved-minix");
    let saved = dir.join("run.profil");
    let (live, loaded) = (dir.join("live.txt"), dir.join("loaded.txt"));
    let o = {
        let _s = session();
        profil(&["-i", "512", "--save", saved.to_str().unwrap(), "--report", live.to_str().unwrap(), fib_bin().to_str().unwrap()])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let o = profil(&["--load", saved.to_str().unwrap(), "--report", loaded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(std::fs::read(&live).unwrap(), std::fs::read(&loaded).unwrap());
    assert!(std::fs::read_to_string(&loaded).unwrap().contains("\nBin Size: 512\n"), "the Minix statistics");
    // Options that say how to record a run have no run to act on.
    for (opt, said) in [(&["-g"][..], "-g"), (&["-F", "100"], "-F"), (&["-i", "16"], "-i"), (&["--children"], "--children")] {
        let mut args = vec!["--load", saved.to_str().unwrap()];
        args.extend_from_slice(opt);
        let o = profil(&args);
        assert_eq!(o.status.code(), Some(2), "{opt:?}");
        assert!(text(&o).1.starts_with(&format!("profil: {said} does not go with --load: the saved run was recorded with its own\n")), "{}", text(&o).1);
    }
    let o = profil(&["--load", saved.to_str().unwrap(), fib_bin().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.starts_with("profil: --load reports a saved run: no program to run\n"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that is not a saved run, or not all of one, is one error and exit 1; nothing
/// panics, nothing is written.
#[test]
fn what_is_not_a_saved_run_is_one_error() {
    let dir = scratch("saved-bad");
    let saved = dir.join("run.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--save", saved.to_str().unwrap(), "--report", "/dev/null", fib_bin().to_str().unwrap()])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let good = std::fs::read(&saved).unwrap();
    // Saved gzipped; its JSON, unpacked, loads too (and is what a script reads).
    let mut text_of = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&good[..]), &mut text_of).unwrap();
    let unpacked = dir.join("unpacked.profil");
    std::fs::write(&unpacked, &text_of).unwrap();
    let o = profil(&["--load", unpacked.to_str().unwrap(), "--report", "/dev/null"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "the file is empty"),
        ("truncated", good[..good.len() / 2].to_vec(), "not a saved run (its gzip stream: "),
        ("truncated JSON", text_of.as_bytes()[..text_of.len() / 2].to_vec(), "not a saved run ("),
        ("an ELF", std::fs::read(fib_bin()).unwrap(), "not a saved run ("),
        ("a JSON export", br#"{"format": "profil", "version": 7}"#.to_vec(), "not a saved run (no \"format\": \"profil-run\")"),
        ("from the future", text_of.replacen("\"version\":3", "\"version\":4", 1).into_bytes(), "a saved run of version 4; this profil reads versions 1 to 3"),
        ("damaged", text_of.replacen("\"frequency_hz\":", "\"frequency_hz\":-", 1).into_bytes(), "a damaged saved run ("),
    ];
    for (what, bytes, says) in cases {
        let bad = dir.join(format!("{}.profil", what.replace(' ', "-")));
        std::fs::write(&bad, &bytes).unwrap();
        let json = dir.join("out.json");
        let o = profil(&["--load", bad.to_str().unwrap(), "--json", json.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {err}");
        let expected = format!("Profil Error: '{}' is not a run profil can load: {says}", bad.display());
        assert!(err.starts_with(&expected) && err.lines().count() == 1, "{what}: {err}");
        assert!(out.is_empty() && !json.exists(), "{what}");
    }
    let o = profil(&["--load", dir.join("none").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.starts_with("Profil Error: Cannot read '"), "{}", text(&o).1);
    // A saved run whose program file is gone says which file it needed.
    let moved = text_of.replacen(&format!("\"file\":{}", serde_json::to_string(&std::fs::canonicalize(fib_bin()).unwrap()).unwrap()), "\"file\":\"/no/such/fib\"", 1);
    assert_ne!(moved, text_of, "the saved run names its program file");
    let gone = dir.join("gone.profil");
    std::fs::write(&gone, moved).unwrap();
    let o = profil(&["--load", gone.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.starts_with("Profil Error: Cannot read '/no/such/fib', the program of the saved run: "), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run reported where its program is not at the path it ran from (another machine, a Redox
/// guest's image on the host): `--sysroot DIR` finds it under DIR, and the report is the live
/// one's; without it, one clear error that names the option.
#[test]
fn a_moved_program_is_found_under_the_sysroot() {
    let dir = scratch("saved-sysroot");
    let first = dir.join("machine").join("fib");
    std::fs::create_dir_all(first.parent().unwrap()).unwrap();
    std::fs::copy(fib_bin(), &first).unwrap();
    let (saved, live, loaded) = (dir.join("run.profil"), dir.join("live.txt"), dir.join("loaded.txt"));
    let o = {
        let _s = session();
        profil(&["-f", "-g", "--save", saved.to_str().unwrap(), "--report", live.to_str().unwrap(), first.to_str().unwrap()])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    // The program leaves its path; a copy of that tree is mounted at `root`.
    let root = dir.join("root");
    let moved = root.join(first.strip_prefix("/").unwrap());
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&first, &moved).unwrap();
    let o = profil(&["-f", "--load", saved.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the program of the saved run") && err.contains("--sysroot DIR"), "{err}");
    let o = profil(&["-f", "--load", saved.to_str().unwrap(), "--sysroot", root.to_str().unwrap(), "--report", loaded.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_eq!(std::fs::read_to_string(&loaded).unwrap(), std::fs::read_to_string(&live).unwrap());
    // Only a saved run reads another machine's files; the directory must be one.
    let o = profil(&["--sysroot", root.to_str().unwrap(), "true"]);
    assert_eq!(o.status.code(), Some(2));
    let o = profil(&["--load", saved.to_str().unwrap(), "--sysroot", saved.to_str().unwrap()]);
    assert_eq!((o.status.code(), text(&o).1.contains("not a directory")), (Some(2), true));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A saved run reported where one of its libraries is not, or is another build: one warning
/// names it, and its samples keep their addresses; the rest of the report is as it was. The
/// run's builds are found by build-id under `--debug-dir` (`.build-id/xx/rest`), the
/// program's too; another build of the program is refused.
#[test]
fn objects_of_a_saved_run_are_found_by_build_id_or_named_in_one_warning() {
    let dir = scratch("saved-missing-lib");
    let build_lib = |opt: &str| {
        let lib = compile("cc", "spinlib.c", &[opt, "-shared", "-fPIC", "-Wl,--build-id"], &dir);
        std::fs::rename(&lib, dir.join("libspin.so")).unwrap();
    };
    build_lib("-O1");
    let so = dir.join("libspin.so");
    let exe = dir.join("uses_spinlib");
    let build_exe = |opt: &str| {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/uses_spinlib.c");
        let built = std::process::Command::new("cc")
            .args([opt, "-Wl,--build-id", "-o"])
            .arg(&exe)
            .arg(&src)
            .arg(format!("-L{}", dir.display()))
            .arg("-lspin")
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .status()
            .unwrap();
        assert!(built.success());
    };
    build_exe("-O1");
    let saved = dir.join("run.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--save", saved.to_str().unwrap(), exe.to_str().unwrap()])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("spin_in_library [libspin.so]"), "{out}");
    let load = |extra: &[&str]| {
        let mut args = vec!["-f", "--load", saved.to_str().unwrap()];
        args.extend(extra);
        let o = profil(&args);
        let (out, err) = text(&o);
        let warnings: Vec<String> = err.lines().filter(|l| l.contains("warning")).map(str::to_string).collect();
        (o.status.code(), out, err, warnings)
    };
    // The run recorded each object's build-id.
    let run = saved_run_json(&saved);
    let lib_id = run["run"]["profile"]["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == so.to_str().unwrap())
        .and_then(|m| m["build_id"].as_str())
        .expect("the library's mapping records its build-id")
        .to_string();
    let exe_id = run["build_id"].as_str().expect("the program's build-id").to_string();
    assert!(lib_id.len() >= 16 && lib_id.chars().all(|c| c.is_ascii_hexdigit()), "{lib_id}");

    // Another build of the library where the run's was: not read, named.
    let original = dir.join("libspin.so.run");
    std::fs::rename(&so, &original).unwrap();
    build_lib("-O0");
    let (code, out, err, warnings) = load(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains(&format!("a file is another build than the saved run's: {}; its samples keep their addresses", so.display())), "{err}");
    assert!(!out.contains("spin_in_library") && out.contains("[libspin.so]"), "{out}");

    // The run's build under --debug-dir, by its build-id: named again, nothing to warn of.
    let debug = dir.join("debug");
    let by_id = |id: &str| debug.join(".build-id").join(&id[..2]).join(&id[2..]);
    std::fs::create_dir_all(by_id(&lib_id).parent().unwrap()).unwrap();
    std::fs::rename(&original, by_id(&lib_id)).unwrap();
    let (code, out, err, warnings) = load(&["--debug-dir", debug.to_str().unwrap()]);
    assert_eq!((code, warnings.len()), (Some(0), 0), "{err}");
    assert!(out.contains("spin_in_library [libspin.so]"), "{out}");

    // Another build of the program is refused; the run's, under --debug-dir, is reported.
    let run_exe = dir.join("uses_spinlib.run");
    std::fs::rename(&exe, &run_exe).unwrap();
    build_exe("-O0");
    let (code, _, err, _) = load(&[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&format!("'{}' is another build than the program of the saved run (build-id {exe_id})", exe.display())), "{err}");
    std::fs::create_dir_all(by_id(&exe_id).parent().unwrap()).unwrap();
    std::fs::rename(&run_exe, by_id(&exe_id)).unwrap();
    let (code, out, err, _) = load(&["--debug-dir", debug.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("spin_in_library [libspin.so]"), "{out}");
    // The library not here at all: named, its samples kept.
    std::fs::remove_file(&so).unwrap();
    std::fs::remove_file(by_id(&lib_id)).unwrap();
    let (code, out, err, warnings) = load(&["--debug-dir", debug.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains(&format!("cannot read a file of the saved run: {}; its samples keep their addresses", so.display())), "{err}");
    assert!(!out.contains("spin_in_library") && out.contains("[libspin.so]"), "{out}");

    let _ = std::fs::remove_dir_all(&dir);
}

/// A Redox run loaded here (its sampling source says it is one: the kernel walked its stacks)
/// gets no hint about how to take stacks on Linux, however many were cut short; the same run
/// as a Linux one does.
#[test]
fn a_redox_runs_cut_stacks_get_no_linux_hint() {
    let dir = scratch("saved-redox-hint");
    let saved = dir.join("run.profil");
    let fib = fib_bin();
    // A stack copy of 8 bytes: nearly every stack is cut short.
    let o = {
        let _s = session();
        profil(&["-f", "-g", "--stack-size", "8", "--save", saved.to_str().unwrap(), fib.to_str().unwrap(), "25", "1"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let hint = "Hint: ";
    let loaded = |file: &Path| text(&profil(&["-f", "--load", file.to_str().unwrap()])).0;
    assert!(loaded(&saved).contains(hint), "{}", loaded(&saved));
    // The same run as the Redox sampler records it: with its source.
    let mut doc = saved_run_json(&saved);
    let profile = doc["run"]["profile"].as_object_mut().expect("the run's profile");
    profile.insert("sampling".into(), serde_json::json!({"source": "nmi-ipi", "rate": 0}));
    let redox = dir.join("redox.profil");
    write_saved_run(&redox, &doc);
    let report = loaded(&redox);
    assert!(report.contains("Sampling: nmi-ipi") && !report.contains(hint), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
