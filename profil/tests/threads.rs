//! `--threads`: the program's samples thread by thread, on a real run: `threads.c` burns 300 ms
//! of CPU in one thread (`spin_short`) and 900 ms in another (`spin_long`), at once.

mod common;

use common::*;

#[test]
fn each_thread_has_its_share_and_its_functions() {
    let dir = scratch("threads-view");
    let exe = compile("cc", "threads.c", &["-O1", "-pthread"], &dir);
    let speedscope = dir.join("threads.speedscope.json");
    let o = {
        let _s = session();
        profil(&["-f", "--threads", "--speedscope", speedscope.to_str().unwrap(), exe.to_str().unwrap()])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rows = table_rows(&out, "By thread (");
    // tid  name  samples  %  top functions...
    let row_of = |f: &str| {
        rows.iter()
            .find(|r| r.get(4).is_some_and(|first| *first == f))
            .unwrap_or_else(|| panic!("no thread whose top function is {f}:\n{out}"))
            .clone()
    };
    let (long, short) = (row_of("spin_long"), row_of("spin_short"));
    assert_ne!(long[0], short[0], "two threads, two tids:\n{out}");
    let samples = |r: &Vec<&str>| -> f64 { r[2].parse().unwrap() };
    // Each thread's samples are its own CPU time: 900 ms against 300 ms.
    let ratio = samples(&long) / samples(&short);
    assert!((2.5..=3.6).contains(&ratio), "spin_long / spin_short = {ratio:.2}:\n{out}");
    // The threads' samples add up to the program's, user and kernel.
    let total: u64 = rows.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    // "Ticks: 1190 user (1189 in bins), 10 kernel, 0 lost"
    let line = field(&out, "Ticks:");
    let words: Vec<&str> = line.split_whitespace().collect();
    let user: u64 = words[0].parse().unwrap();
    let kernel: u64 = words[words.iter().position(|w| w.starts_with("kernel")).unwrap() - 1].parse().unwrap();
    assert_eq!(total, user + kernel, "{out}");
    // Every thread is named as the kernel names it (the program's name, here).
    assert!(rows.iter().all(|r| r[1] == "threads"), "{out}");
    // The speedscope file has a profile per thread, each with its own function.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&speedscope).unwrap()).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let per_thread: Vec<&serde_json::Value> =
        doc["profiles"].as_array().unwrap().iter().filter(|p| p["name"].as_str().unwrap().ends_with(": functions")).collect();
    assert_eq!(per_thread.len(), rows.len(), "{doc}");
    for (row, f) in [(&long, "spin_long"), (&short, "spin_short")] {
        let p = per_thread.iter().find(|p| p["name"].as_str().unwrap().contains(&format!(" thread {} ", row[0]))).unwrap();
        let first = p["samples"][0][0].as_u64().unwrap() as usize;
        assert_eq!(frames[first], f, "{p}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Report filters on a saved run: `--tid` keeps one thread's samples, `--dso` one object's,
/// each said in a note, and the ticks follow what they keep.
#[test]
fn report_filters_keep_a_thread_or_an_object() {
    let dir = scratch("threads-filters");
    let exe = compile("cc", "threads.c", &["-O1", "-pthread"], &dir);
    let saved = dir.join("threads.profil");
    let o = {
        let _s = session();
        profil(&["-f", "--threads", "--save", saved.to_str().unwrap(), exe.to_str().unwrap()])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rows = table_rows(&out, "By thread (");
    let long = rows.iter().find(|r| r.get(4) == Some(&"spin_long")).unwrap_or_else(|| panic!("{out}"));
    let (tid, samples) = (long[0], long[2]);
    let load = |filter: &[&str]| {
        let o = profil(&[&["-f", "--load", saved.to_str().unwrap()], filter].concat());
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        (out, err)
    };
    let (out, err) = load(&["--tid", tid]);
    assert!(err.contains("Note: the report is of the samples --tid "), "{err}");
    let flat = flat_rows(&out);
    assert_eq!(flat[0].2, "spin_long", "{out}");
    assert!(!flat.iter().any(|r| r.2 == "spin_short"), "{out}");
    let ticks = field(&out, "Ticks:");
    let words: Vec<&str> = ticks.split_whitespace().collect();
    let kernel = words[words.iter().position(|w| w.starts_with("kernel")).unwrap() - 1];
    let kept: u64 = words[0].parse::<u64>().unwrap() + kernel.parse::<u64>().unwrap();
    assert_eq!(kept.to_string(), samples, "the thread's samples, user and kernel:\n{out}");
    // The program's own file: its functions, nothing of libc or the kernel.
    let name = exe.file_name().unwrap().to_str().unwrap();
    let (out, _) = load(&["--dso", name]);
    let flat = flat_rows(&out);
    assert!(flat.iter().any(|r| r.2 == "spin_long") && flat.iter().any(|r| r.2 == "spin_short"), "{out}");
    assert!(!flat.iter().any(|r| r.2.ends_with(']')), "{out}");
    let (out, err) = load(&["--dso", "[kernel]"]);
    assert!(!flat_rows(&out).iter().any(|r| r.2.starts_with("spin_")), "{out}");
    assert!(err.contains("--dso [kernel] keeps: "), "{err}");
    // A filter with --save is a usage error: the saved run is whole.
    let o = profil(&["--dso", name, "--save", saved.to_str().unwrap(), exe.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
