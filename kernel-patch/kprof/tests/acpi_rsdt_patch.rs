//! The RSDT fix is a patch of its own, the series' first (kernel-patch/series/README.md, "The RSDT
//! fix"): one hunk in upstream's `src/acpi/rxsdt.rs`, not behind `sys_prof`, touching no file
//! of the profiling patches, so it applies alone and they apply with or without it. The
//! kernel side cannot run here; this checks the patch text.

mod common;

fn files(patch: &str) -> Vec<&str> {
    patch.lines().filter_map(|l| l.strip_prefix("+++ b/")).collect()
}

#[test]
fn one_hunk_in_rxsdt_rs_apart_from_the_profiling_patch() {
    let names = common::series_names();
    assert!(names[0].contains(common::RSDT_FIX), "the RSDT fix is the series' first: {names:?}");
    let fix = common::patch_named(common::RSDT_FIX);
    assert_eq!(files(&fix), ["src/acpi/rxsdt.rs"]);
    assert_eq!(fix.lines().filter(|l| l.starts_with("@@")).count(), 1);
    let removed: Vec<&str> = fix.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).collect();
    assert_eq!(removed, ["-        if self.i < self.sdt.data_len() / size_of::<u64>() {"]);
    let added = fix.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).collect::<Vec<_>>().join("\n");
    assert!(added.contains("RxsdtEnum::Rsdt(_) => size_of::<u32>(),"), "{added}");
    assert!(added.contains("RxsdtEnum::Xsdt(_) => size_of::<u64>(),"), "{added}");
    assert!(added.contains("if self.i < self.sdt.data_len() / entry_size {"), "{added}");
    assert!(!fix.contains("sys_prof"), "a fix of upstream's, not behind the feature");
    for (name, prof) in common::profiling_series() {
        assert!(files(&prof).iter().all(|f| !files(&fix).contains(f)), "{name}: no file in common");
    }
}
