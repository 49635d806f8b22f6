//! The kernel series (kernel-patch/series/) adds `src/kprof/`; at the end of the series its
//! files must be this crate's `src/kprof/`, byte for byte, file for file, so what the host
//! tests prove is what the kernel runs. Patches in between may carry small series stubs, in
//! `mod.rs` only (allows for code a later patch starts calling); every other module file a
//! patch adds is already the crate's.

use std::path::Path;

mod common;

/// The crate's module files: name → text.
fn crate_module() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(root.join("src/kprof"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join("src/kprof").join(&name)).unwrap();
            (name, text)
        })
        .collect()
}

#[test]
fn kernel_module_at_the_end_of_the_series_is_the_crate_source() {
    let module = crate_module();
    let names: Vec<&str> = module.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["clock.rs", "ctl.rs", "data.rs", "mod.rs", "nmi.rs", "session.rs", "stacks.rs", "tree.rs", "walk.rs"]);
    let added = common::added_files();
    for (name, source) in &module {
        let path = format!("src/kprof/{name}");
        let in_series = added.get(&path).unwrap_or_else(|| panic!("the series does not add {path}"));
        assert!(in_series == source, "{path} at the end of the series differs from kprof/{path}");
    }
    // The series adds no other file to the module.
    let in_series: Vec<&String> = added.keys().filter(|p| p.starts_with("src/kprof/")).collect();
    assert_eq!(in_series.len(), module.len(), "{in_series:?}");
}

#[test]
fn every_module_file_is_added_as_the_crate_has_it_and_only_mod_rs_changes_later() {
    let module = crate_module();
    let series = common::series();
    for (at, (name, patch)) in series.iter().enumerate() {
        for section in common::sections(patch) {
            let Some(file) = section.path.strip_prefix("src/kprof/") else { continue };
            if section.new_file {
                // A file no later patch changes is added as the crate has it.
                let later = series[at + 1..]
                    .iter()
                    .any(|(_, p)| common::sections(p).iter().any(|s| s.path == section.path));
                if !later {
                    let text = common::apply_section(&[], &section.body, &section.path).concat();
                    let source = &module.iter().find(|(n, _)| n == file).unwrap().1;
                    assert!(&text == source, "{name} adds {} unlike kprof/{}", section.path, section.path);
                }
            } else {
                assert_eq!(file, "mod.rs", "{name} changes {} after adding it", section.path);
            }
        }
        // After each patch, the module's files but mod.rs are the crate's.
        for (path, text) in common::added_files_after(Some(name)) {
            if let Some(file) = path.strip_prefix("src/kprof/")
                && file != "mod.rs"
            {
                let source = &module.iter().find(|(n, _)| n == file).unwrap().1;
                assert!(&text == source, "after {name}: {path} differs from the crate's");
            }
        }
    }
}

#[test]
fn extraction_and_application_handle_neighbouring_sections() {
    let patch = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\
                 diff --git a/src/kprof.rs b/src/kprof.rs\nnew file mode 100644\nindex 0000000..1111111\n\
                 --- /dev/null\n+++ b/src/kprof.rs\n@@ -0,0 +1,2 @@\n+one\n+\n\
                 diff --git a/y b/y\n";
    let sections = common::sections(patch);
    assert_eq!(sections.len(), 3);
    let added = common::apply_section(&[], &sections[1].body, "src/kprof.rs");
    assert_eq!(added.concat(), "one\n\n");
    assert!(sections[1].new_file && !sections[0].new_file);
    // A later hunk in the added file: context, a removed and an added line, exactly placed.
    let later = "diff --git a/src/kprof.rs b/src/kprof.rs\nindex 1111111..2222222 100644\n\
                 --- a/src/kprof.rs\n+++ b/src/kprof.rs\n@@ -1,2 +1,2 @@\n one\n-\n+two\n";
    let changed = common::apply_section(&added, &common::sections(later)[0].body, "src/kprof.rs");
    assert_eq!(changed.concat(), "one\ntwo\n");
}

#[test]
#[should_panic(expected = "line 1")]
fn application_refuses_a_hunk_that_does_not_match() {
    let later = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-other\n+two\n";
    common::apply_section(&["one\n".to_string()], &common::sections(later)[0].body, "f");
}
