//! The kernel's record layout is this crate's `layout` module: the series in
//! `kernel-patch/events/` adds it as `src/profiling/record.rs`, and the patch in
//! `kernel-patch/redox_syscall/` adds it to `redox_syscall` as `src/profiling.rs`, both byte for
//! byte, so the reader tested here reads what the kernel writes.

mod common;

use common::added_file;
use std::path::{Path, PathBuf};

fn patches(dir: &str) -> Vec<PathBuf> {
    let series = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-patch").join(dir);
    let mut patches: Vec<_> = std::fs::read_dir(&series).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "patch")).collect();
    patches.sort();
    patches
}

/// The patches of `dir` that add `path`, and what they add; and how many change it at all.
fn adding(dir: &str, path: &str) -> (Vec<(String, String)>, usize) {
    let patches = patches(dir);
    let adding = patches
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            added_file(&text, path).map(|f| (p.file_name().unwrap().to_string_lossy().into_owned(), f))
        })
        .collect();
    let changing = patches.iter().filter(|p| std::fs::read_to_string(p).unwrap().contains(&format!("b/{path}\n"))).count();
    (adding, changing)
}

fn ours() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/layout.rs")).unwrap()
}

#[test]
fn the_kernel_series_adds_the_layout_module_as_this_crate_has_it() {
    let (adding, changing) = adding("events", "src/profiling/record.rs");
    assert_eq!(adding.len(), 1, "one patch adds the layout: {:?}", adding.iter().map(|a| &a.0).collect::<Vec<_>>());
    assert!(adding[0].1 == ours(), "{} adds src/profiling/record.rs unlike prof-events/src/layout.rs", adding[0].0);
    assert_eq!(changing, 1, "no later patch changes it");
}

#[test]
fn the_redox_syscall_patch_adds_the_same_module() {
    let (adding, changing) = adding("redox_syscall", "src/profiling.rs");
    assert_eq!(adding.len(), 1, "one patch adds the layout to redox_syscall");
    assert!(adding[0].1 == ours(), "{} adds src/profiling.rs unlike prof-events/src/layout.rs", adding[0].0);
    assert_eq!(changing, 1);
    let patch = std::fs::read_to_string(&patches("redox_syscall")[0]).unwrap();
    assert!(patch.contains("\n+pub mod profiling;\n"), "and declares it in lib.rs");
}

#[test]
fn the_layout_holds_only_what_the_kernel_writes() {
    // The reader's half (parsing headers, numbers back into kinds, the version check) is this
    // crate's, not the kernel's.
    let layout = ours();
    for reader in ["fn parse", "fn from_u8", "fn from_u16", "fn min_words", "MARKER_MASK", "Exit = 7", "Waitpid"] {
        assert!(!layout.contains(reader), "the layout has {reader}");
    }
}
