//! The kernel's record layout is this crate's `layout` module: the series in
//! `kernel-patch/events/` adds it as `src/profiling/record.rs`, byte for byte, so the reader
//! tested here reads what the kernel writes.

mod common;

use common::added_file;
use std::path::Path;

#[test]
fn the_kernel_series_adds_the_layout_module_as_this_crate_has_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let series = root.join("../kernel-patch/events");
    let mut patches: Vec<_> = std::fs::read_dir(&series).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "patch")).collect();
    patches.sort();
    let adding: Vec<(String, String)> = patches
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            added_file(&text, "src/profiling/record.rs").map(|f| (p.file_name().unwrap().to_string_lossy().into_owned(), f))
        })
        .collect();
    assert_eq!(adding.len(), 1, "one patch adds the layout: {:?}", adding.iter().map(|a| &a.0).collect::<Vec<_>>());
    let ours = std::fs::read_to_string(root.join("src/layout.rs")).unwrap();
    assert!(adding[0].1 == ours, "{} adds src/profiling/record.rs unlike prof-events/src/layout.rs", adding[0].0);
    // No later patch changes it.
    let changing = patches.iter().filter(|p| std::fs::read_to_string(p).unwrap().contains("b/src/profiling/record.rs\n")).count();
    assert_eq!(changing, 1);
}
