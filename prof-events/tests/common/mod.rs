//! Reading the kernel series' patches: the files a patch adds, and (`unidiff`) what a later one
//! changes in them.

#![allow(dead_code, reason = "each test file uses what it needs")]

use std::path::{Path, PathBuf};

pub mod unidiff;

/// The lines a patch adds to a new file `path`, if it adds that file.
pub fn added_file(patch: &str, path: &str) -> Option<String> {
    let start = patch.find(&format!("diff --git a/{path} b/{path}\n"))?;
    let section = &patch[start..];
    let section = &section[..section[1..].find("\ndiff --git ").map_or(section.len(), |i| i + 1)];
    assert!(section.contains("\nnew file mode "), "{path} is not a new file there");
    let body = &section[section.find("\n@@ ")? + 1..];
    let mut text = String::new();
    for line in body.lines().skip(1) {
        match line.strip_prefix('+') {
            Some(added) => {
                text.push_str(added);
                text.push('\n');
            }
            // The end of the hunk: a format-patch signature or the next file.
            None => break,
        }
    }
    Some(text)
}

/// The series' patches, in order.
pub fn patches() -> Vec<PathBuf> {
    let series = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-patch/events");
    let mut patches: Vec<_> = std::fs::read_dir(&series).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "patch")).collect();
    patches.sort();
    patches
}

/// Every file a patch of the series adds whole: (patch file name, path, text).
pub fn added_files() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for p in patches() {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        for line in text.lines() {
            let Some(path) = line.strip_prefix("diff --git a/").and_then(|l| l.split(" b/").next()) else { continue };
            let section = &text[text.find(line).unwrap()..];
            let next = section[1..].find("\ndiff --git ").map_or(section.len(), |i| i + 1);
            if section[..next].contains("\nnew file mode ") {
                out.push((name.clone(), path.to_string(), added_file(&text, path).unwrap()));
            }
        }
    }
    out
}
