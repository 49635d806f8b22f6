//! The kernel patch adds `src/kprof/`; its files must be this crate's `src/kprof/`, byte for
//! byte, file for file, so what the host tests prove is what the kernel runs.

use std::path::Path;

/// The extraction test's file name (any added file would do).
const ADDED_FILE: &str = "src/kprof.rs";

/// The text of a file the patch adds (a `new file` section with one `@@ -0,0 +1,N @@` hunk).
fn added_file(patch: &str, path: &str) -> String {
    let header = format!("diff --git a/{path} b/{path}\n");
    let start = patch
        .find(&header)
        .unwrap_or_else(|| panic!("patch does not touch {path}"));
    let section = &patch[start + header.len()..];
    let section = match section.find("\ndiff --git ") {
        Some(end) => &section[..end + 1],
        None => section,
    };
    let mut lines = section.split_inclusive('\n');
    assert!(
        lines.next().unwrap().starts_with("new file mode "),
        "{path} is not a new file"
    );
    let mut hunk = None;
    for line in lines.by_ref() {
        if let Some(rest) = line.strip_prefix("@@ -0,0 +1,") {
            hunk = Some(rest.split(' ').next().unwrap().parse::<usize>().unwrap());
            break;
        }
        assert!(
            line.starts_with("index ")
                || line.starts_with("--- /dev/null")
                || line.starts_with("+++ b/"),
            "unexpected line in the header of {path}: {line:?}"
        );
    }
    let expected_lines = hunk.expect("no hunk");
    let mut text = String::new();
    let mut added = 0;
    for line in lines {
        if line.starts_with("\\ No newline at end of file") {
            assert!(text.ends_with('\n'));
            text.pop();
            continue;
        }
        let body = line
            .strip_prefix('+')
            .unwrap_or_else(|| panic!("not an added line: {line:?}"));
        text.push_str(body);
        added += 1;
    }
    assert_eq!(
        added, expected_lines,
        "hunk header and added lines disagree"
    );
    text
}

#[test]
fn kernel_module_in_the_patch_is_the_crate_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let patch = std::fs::read_to_string(root.join("../redox-kernel-prof.patch")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root.join("src/kprof"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["ctl.rs", "data.rs", "mod.rs", "nmi.rs", "session.rs", "stacks.rs", "walk.rs"]);
    for name in &names {
        let path = format!("src/kprof/{name}");
        let source = std::fs::read_to_string(root.join(&path)).unwrap();
        assert!(added_file(&patch, &path) == source, "{path} in the patch differs from kprof/{path}");
    }
    // The patch adds no other file to the module.
    let in_patch: Vec<&str> = patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/src/kprof"))
        .collect();
    assert_eq!(in_patch.len(), names.len(), "{in_patch:?}");
}

#[test]
fn extraction_handles_neighbouring_sections() {
    let patch = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\
                 diff --git a/src/kprof.rs b/src/kprof.rs\nnew file mode 100644\nindex 0000000..1111111\n\
                 --- /dev/null\n+++ b/src/kprof.rs\n@@ -0,0 +1,2 @@\n+one\n+\n\
                 diff --git a/y b/y\n";
    assert_eq!(added_file(patch, ADDED_FILE), "one\n\n");
}
