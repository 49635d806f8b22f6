//! The kernel series is inert unless the kernel is built with its cargo feature: each of its
//! profiling patches (all but the RSDT fix) changes or removes no upstream line, every line it
//! adds to an upstream source file is an item or statement under `#[cfg(feature = "sys_prof")]`
//! (or the `cfg(not(...))` that keeps a stock item for the feature-off build), and the feature
//! is declared, by the first of them, but not in `default`. Lines a patch removes are the
//! series' own, in files an earlier patch added.

mod common;

const FEATURE: &str = "sys_prof";

/// The profiling patches of the series as one diff (`common::combined`).
fn patch() -> String {
    common::combined()
}

/// The sections of a `git diff`: (path, is a new file, lines after the header).
fn sections(patch: &str) -> Vec<(String, bool, Vec<&str>)> {
    let mut out = Vec::new();
    for section in patch.split("diff --git a/").skip(1) {
        let mut lines = section.lines();
        let path = lines.next().unwrap().split(' ').next().unwrap().to_string();
        let body: Vec<&str> = lines.collect();
        let new_file = body.iter().any(|l| l.starts_with("new file mode"));
        out.push((path, new_file, body));
    }
    out
}

/// Runs of consecutive added lines (their text without the `+`), hunk by hunk.
fn added_blocks<'a>(body: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut blocks = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in body.iter().skip_while(|l| !l.starts_with("@@")) {
        match line.strip_prefix('+') {
            Some(text) => current.push(text),
            None => {
                if !current.is_empty() {
                    blocks.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        blocks.push(current);
    }
    blocks
}

fn is_gate(code: &str) -> bool {
    code == format!("#[cfg(feature = \"{FEATURE}\")]") || code == format!("#[cfg(not(feature = \"{FEATURE}\"))]")
}

/// Check that every code line of a block of added Rust lines belongs to an item or statement
/// that a gate attribute stands in front of. Items end where brackets balance and the line
/// ends an item, a statement or a list element.
fn ungated_lines<'a>(block: &[&'a str]) -> Vec<&'a str> {
    let mut bad = Vec::new();
    let mut gated = false;
    let mut depth: i64 = 0;
    for &line in block {
        let code = line.split("//").next().unwrap().trim();
        if code.is_empty() {
            continue;
        }
        if depth == 0 && is_gate(code) {
            gated = true;
            continue;
        }
        if !gated {
            bad.push(line);
        }
        for c in code.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        if depth == 0 && (code.ends_with(';') || code.ends_with('}') || code.ends_with(',')) {
            gated = false;
        }
    }
    bad
}

#[test]
fn each_patch_changes_no_upstream_line_and_gates_every_added_one() {
    let ours = common::added_files();
    let mut upstream_files: Vec<String> = Vec::new();
    let mut added_so_far: Vec<String> = Vec::new();
    let series = common::profiling_series();
    assert_eq!(series.len(), 5, "the profiling patches");
    for (name, patch) in &series {
        for (path, new_file, body) in sections(patch) {
            let removed: Vec<_> =
                body.iter().skip_while(|l| !l.starts_with("@@")).filter(|l| l.starts_with('-')).collect();
            if new_file {
                added_so_far.push(path);
                continue;
            }
            if ours.contains_key(&path) {
                // A file of the series' own: added by an earlier patch, compiled only through
                // its gated module declaration.
                assert!(added_so_far.contains(&path), "{name}: {path} changed before it is added");
                continue;
            }
            assert!(removed.is_empty(), "{name}: {path}: removes or changes upstream lines: {removed:?}");
            if !path.ends_with(".rs") {
                continue;
            }
            if !upstream_files.contains(&path) {
                upstream_files.push(path.clone());
            }
            for block in added_blocks(&body) {
                let bad = ungated_lines(&block);
                assert!(bad.is_empty(), "{name}: {path}: lines outside #[cfg(feature = \"{FEATURE}\")]: {bad:?}");
            }
        }
    }
    assert_eq!(upstream_files.len(), 12, "the upstream source files the series touches: {upstream_files:?}");
}

#[test]
fn the_first_profiling_patch_declares_the_feature_and_no_other_touches_cargo_toml() {
    let series = common::profiling_series();
    for (at, (name, patch)) in series.iter().enumerate() {
        let touches = sections(patch).iter().any(|s| s.0 == "Cargo.toml");
        assert_eq!(touches, at == 0, "{name}");
    }
    assert!(series[0].1.contains(&format!("\n+{FEATURE} = []\n")));
}

#[test]
fn the_new_files_are_compiled_only_with_the_feature() {
    let patch = patch();
    let sections = sections(&patch);
    let new_files: Vec<&str> = sections.iter().filter(|s| s.1).map(|s| s.0.as_str()).collect();
    assert_eq!(
        new_files,
        [
            "src/kprof/clock.rs",
            "src/kprof/ctl.rs",
            "src/kprof/data.rs",
            "src/kprof/mod.rs",
            "src/kprof/nmi.rs",
            "src/kprof/session.rs",
            "src/kprof/stacks.rs",
            "src/kprof/tree.rs",
            "src/kprof/walk.rs",
            "src/scheme/sys/prof.rs",
            "src/scheme/sys/prof_nmi.rs"
        ]
    );
    // Each is a module whose declaration is gated.
    let added = |path: &str| -> Vec<String> {
        let s = sections.iter().find(|s| s.0 == path).unwrap();
        added_blocks(&s.2).concat().iter().map(|l| l.trim().to_string()).collect()
    };
    let gate = format!("#[cfg(feature = \"{FEATURE}\")]");
    for (parent, module) in [
        ("src/main.rs", "mod kprof;"),
        ("src/scheme/sys/mod.rs", "pub mod prof;"),
        ("src/scheme/sys/mod.rs", "mod prof_nmi;"),
    ] {
        let lines = added(parent);
        let at = lines.iter().position(|l| l == module).unwrap_or_else(|| panic!("{parent} has no {module}"));
        assert_eq!(lines[at - 1], gate, "{parent}: {module}");
    }
}

#[test]
fn the_feature_is_declared_and_off_by_default() {
    let patch = patch();
    let (_, _, body) = sections(&patch).into_iter().find(|s| s.0 == "Cargo.toml").expect("Cargo.toml hunk");
    let added: Vec<&str> = added_blocks(&body).concat();
    let code: Vec<&str> = added.iter().copied().filter(|l| !l.trim_start().starts_with('#')).collect();
    assert_eq!(code, [format!("{FEATURE} = []").as_str()]);
    // The hunk sits in [features], after upstream's own sys_fdstat, and adds nothing to `default`.
    assert!(body.contains(&" sys_fdstat = []"), "{body:?}");
    assert!(!patch.contains(&format!("+  \"{FEATURE}\"")));
}

#[test]
fn the_gate_checker_catches_ungated_lines() {
    // The checker itself: a statement without the attribute, and one after a gated item.
    assert_eq!(ungated_lines(&["    crate::kprof::tick();"]), ["    crate::kprof::tick();"]);
    let block = [
        "    #[cfg(feature = \"sys_prof\")]",
        "    foo(",
        "        a,",
        "    );",
        "    bar();",
    ];
    assert_eq!(ungated_lines(&block), ["    bar();"]);
    let gated_if = [
        "#[cfg(feature = \"sys_prof\")]",
        "if x",
        "    && y",
        "{",
        "    z();",
        "}",
    ];
    assert!(ungated_lines(&gated_if).is_empty());
    // Another feature's gate is no gate.
    assert_eq!(ungated_lines(&["#[cfg(feature = \"profiling\")]", "foo();"]).len(), 2);
}
