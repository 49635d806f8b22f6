//! The kernel series (kernel-patch/series/): its patches in the order of its `series` file,
//! and what they add up to, for the tests that check the patch text. Shared by the test files
//! (`mod common;`); each uses only some of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The directory of the series.
pub fn series_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../series")
}

/// The file names of the patches, in the order of the `series` file (one a line, as quilt's).
pub fn series_names() -> Vec<String> {
    let list = std::fs::read_to_string(series_dir().join("series")).unwrap();
    list.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// The patches, (file name, text), in order.
pub fn series() -> Vec<(String, String)> {
    series_names()
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(series_dir().join(&name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}

/// The file name part of the RSDT fix, upstream's bug: not profiling, not behind `sys_prof`.
pub const RSDT_FIX: &str = "acpi-rsdt";

/// The profiling patches (all but the RSDT fix), (file name, text), in order.
pub fn profiling_series() -> Vec<(String, String)> {
    series().into_iter().filter(|(name, _)| !name.contains(RSDT_FIX)).collect()
}

/// The patch of the series whose file name contains `part`.
pub fn patch_named(part: &str) -> String {
    let mut found = series().into_iter().filter(|(name, _)| name.contains(part));
    let (_, text) = found.next().unwrap_or_else(|| panic!("no patch named *{part}*"));
    assert!(found.next().is_none(), "several patches named *{part}*");
    text
}

/// One file's section of a `git diff`.
pub struct Section {
    pub path: String,
    /// A `new file` section.
    pub new_file: bool,
    /// The lines after the `diff --git` line, each with its `\n`.
    pub body: Vec<String>,
}

/// The sections of a `git diff`, in order.
pub fn sections(patch: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for section in patch.split("diff --git a/").skip(1) {
        let mut lines = section.split_inclusive('\n');
        let path = lines.next().unwrap().split(' ').next().unwrap().to_string();
        let body: Vec<String> = lines.map(str::to_string).collect();
        let new_file = body.iter().any(|l| l.starts_with("new file mode"));
        out.push(Section { path, new_file, body });
    }
    out
}

/// The hunks of a section: (old start, old length, new start, new length, lines).
fn hunks(body: &[String]) -> Vec<(usize, usize, Vec<String>)> {
    let mut out: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for line in body.iter().skip_while(|l| !l.starts_with("@@")) {
        if let Some(rest) = line.strip_prefix("@@ -") {
            let old = rest.split(' ').next().unwrap();
            let mut parts = old.split(',');
            let start: usize = parts.next().unwrap().parse().unwrap();
            let len: usize = parts.next().map_or(1, |n| n.parse().unwrap());
            out.push((start, len, Vec::new()));
        } else {
            out.last_mut().unwrap().2.push(line.clone());
        }
    }
    out
}

/// `lines` (each with its `\n`) after a section's hunks, which must apply exactly (context
/// and removed lines as given, at the lines given: no fuzz, no offset).
pub fn apply_section(lines: &[String], body: &[String], path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0; // old lines copied or consumed
    for (start, len, hunk) in hunks(body) {
        let before = if len == 0 { start } else { start - 1 };
        assert!(before >= at && before <= lines.len(), "{path}: hunk at {start} out of order");
        out.extend_from_slice(&lines[at..before]);
        at = before;
        for line in hunk {
            assert!(!line.starts_with('\\'), "{path}: a file without a final newline");
            let (kind, text) = line.split_at(1);
            match kind {
                "+" => out.push(text.to_string()),
                " " | "-" => {
                    assert_eq!(lines.get(at).map(String::as_str), Some(text), "{path}: line {}", at + 1);
                    at += 1;
                    if kind == " " {
                        out.push(text.to_string());
                    }
                }
                _ => panic!("{path}: unexpected hunk line {line:?}"),
            }
        }
    }
    out.extend_from_slice(&lines[at..]);
    out
}

/// The files the series adds, as each stands after the patch `upto` (a file name of the
/// series; `None`: the whole series): path → text. A later patch's hunks in a file an earlier
/// one added are applied to it exactly.
pub fn added_files_after(upto: Option<&str>) -> BTreeMap<String, String> {
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, patch) in series() {
        for s in sections(&patch) {
            if s.new_file {
                assert!(!files.contains_key(&s.path), "{name} adds {} again", s.path);
                files.insert(s.path.clone(), apply_section(&[], &s.body, &s.path));
            } else if let Some(lines) = files.get(&s.path) {
                let new = apply_section(lines, &s.body, &s.path);
                files.insert(s.path.clone(), new);
            }
        }
        if upto == Some(name.as_str()) {
            break;
        }
    }
    files.into_iter().map(|(path, lines)| (path, lines.concat())).collect()
}

/// The files the whole series adds, as they stand at its end: path → text.
pub fn added_files() -> BTreeMap<String, String> {
    added_files_after(None)
}

/// The profiling patches as one `git diff` against upstream plus the RSDT fix, as the tests
/// of the patch text read it: a `new file` section with the final text of each file the
/// series adds, and for each upstream file one section with the hunks of every patch, in
/// order (their line numbers are each patch's own). Upstream files are only added to, so the
/// added lines are the series' additions.
pub fn combined() -> String {
    let added = added_files();
    let mut order: Vec<String> = Vec::new();
    let mut upstream: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, patch) in profiling_series() {
        for s in sections(&patch) {
            if !order.contains(&s.path) {
                order.push(s.path.clone());
            }
            if !added.contains_key(&s.path) {
                let hunks: Vec<String> =
                    s.body.iter().skip_while(|l| !l.starts_with("@@")).cloned().collect();
                upstream.entry(s.path.clone()).or_default().extend(hunks);
            }
        }
    }
    order.sort();
    let mut out = String::new();
    for path in order {
        out.push_str(&format!("diff --git a/{path} b/{path}\n"));
        match added.get(&path) {
            Some(text) => {
                out.push_str("new file mode 100644\nindex 0000000..0000000\n--- /dev/null\n");
                out.push_str(&format!("+++ b/{path}\n@@ -0,0 +1,{} @@\n", text.lines().count()));
                for line in text.split_inclusive('\n') {
                    out.push('+');
                    out.push_str(line);
                }
            }
            None => {
                out.push_str(&format!("--- a/{path}\n+++ b/{path}\n"));
                out.push_str(&upstream[&path].concat());
            }
        }
    }
    out
}

/// The added lines of `patch`'s section for `path`, without the `+`.
pub fn added_lines(patch: &str, path: &str) -> Vec<String> {
    let header = format!("diff --git a/{path} b/{path}\n");
    let start = patch.find(&header).unwrap_or_else(|| panic!("patch does not touch {path}"));
    let section = &patch[start + header.len()..];
    let section = &section[..section.find("\ndiff --git ").unwrap_or(section.len())];
    section
        .lines()
        .skip_while(|l| !l.starts_with("@@"))
        .filter_map(|l| l.strip_prefix('+'))
        .map(str::to_string)
        .collect()
}
