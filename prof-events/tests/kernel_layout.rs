//! The kernel's record layout is this crate's `layout` module: the series in
//! `kernel-patch/events/` adds it as `src/profiling/record.rs` at version 1.0 (0001), and its
//! later patches' hunks, applied to that in order, give `src/layout.rs` byte for byte (a minor
//! version only adds: 0012 made it 1.1); the patch in `kernel-patch/redox_syscall/` adds the
//! layout to `redox_syscall` as `src/profiling.rs`, byte for byte too. So the reader tested here
//! reads what the kernel writes.

mod common;

use common::{added_file, unidiff};
use std::path::{Path, PathBuf};

const RECORD_RS: &str = "src/profiling/record.rs";

fn patches(dir: &str) -> Vec<PathBuf> {
    let series = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-patch").join(dir);
    let mut patches: Vec<_> = std::fs::read_dir(&series).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "patch")).collect();
    patches.sort();
    patches
}

/// The patches of `dir` that add `path` as a new file, and what they add; and how many change it
/// at all.
fn adding(dir: &str, path: &str) -> (Vec<(String, String)>, usize) {
    let patches = patches(dir);
    let adding = patches
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            unidiff::file_diff(&text, path).filter(|diff| diff.contains("\nnew file mode "))?;
            added_file(&text, path).map(|f| (name(p), f))
        })
        .collect();
    let changing = patches.iter().filter(|p| unidiff::file_diff(&std::fs::read_to_string(p).unwrap(), path).is_some()).count();
    (adding, changing)
}

fn name(patch: &Path) -> String {
    patch.file_name().unwrap().to_string_lossy().into_owned()
}

fn ours() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/layout.rs")).unwrap()
}

/// The `VERSION` line of a layout text.
fn version_line(layout: &str) -> &str {
    layout.lines().find(|l| l.starts_with("pub const VERSION: u64 = ")).expect("a VERSION")
}

#[test]
fn the_kernel_series_adds_the_layout_at_1_0_and_its_later_patches_make_it_this_crates() {
    let (adding, _) = adding("events", RECORD_RS);
    assert_eq!(adding.len(), 1, "one patch adds the layout: {:?}", adding.iter().map(|a| &a.0).collect::<Vec<_>>());
    let (first, mut text) = adding.into_iter().next().unwrap();
    assert!(first.starts_with("0001-"), "0001 adds the layout, not {first}");
    assert_eq!(version_line(&text), "pub const VERSION: u64 = 1 << 32;", "{first} adds version 1.0");
    let mut changed_by = Vec::new();
    for patch in patches("events").iter().filter(|p| name(p) != first) {
        let patch_text = std::fs::read_to_string(patch).unwrap();
        let Some(diff) = unidiff::file_diff(&patch_text, RECORD_RS) else { continue };
        assert!(name(patch) > first, "{} changes {RECORD_RS} before {first} adds it", name(patch));
        assert!(!diff.contains("\nnew file mode ") && !diff.contains("\ndeleted file mode "), "{} adds or deletes {RECORD_RS} again", name(patch));
        text = unidiff::apply(&text, diff, &format!("{} on {RECORD_RS}", name(patch)));
        changed_by.push(name(patch));
    }
    assert!(text == ours(), "{first} and the hunks of {changed_by:?} give a {RECORD_RS} unlike prof-events/src/layout.rs");
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

// The hunk applier itself.

const DIFF: &str = "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -5,0 +6,2 @@ fn x\n+f\n+g\n";

#[test]
fn the_applier_applies_hunks_where_their_headers_say() {
    assert_eq!(unidiff::apply("a\nb\nc\nd\ne\nh\n", DIFF, "test"), "a\nB\nc\nd\ne\nf\ng\nh\n");
    let patch = format!("Subject: x\n---\n{DIFF}diff --git a/other b/other\n");
    assert_eq!(unidiff::file_diff(&patch, "f"), Some(DIFF));
}

#[test]
#[should_panic(expected = "line 2 is \"x\", the hunk has \"b\"")]
fn the_applier_refuses_a_context_mismatch() {
    unidiff::apply("a\nx\nc\nd\ne\nh\n", DIFF, "test");
}

#[test]
#[should_panic(expected = "the text ends at line 4")]
fn the_applier_refuses_a_hunk_past_the_text() {
    unidiff::apply("x\na\nb\n", "@@ -2,3 +2,3 @@\n a\n-b\n+B\n c\n", "test");
}

#[test]
#[should_panic(expected = "more lines than the header counts")]
fn the_applier_refuses_a_hunk_longer_than_its_header() {
    unidiff::apply("a\nb\nc\n", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n", "test");
}
