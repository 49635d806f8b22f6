//! Rules the patch keeps with the kernel's own definitions rather than copies of them, and
//! its one permission rule, checked on the patch text (the kernel side cannot run here).

use std::path::Path;

mod common;

/// The profiling patches of the series as one diff (`common::combined`).
fn patch() -> String {
    common::combined()
}

/// The added lines of the patch's section for `path`, without the `+`.
fn added(patch: &str, path: &str) -> Vec<String> {
    common::added_lines(patch, path)
}

fn code(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn kernel_space_starts_where_the_kernels_user_space_ends() {
    // The kernel's `USER_END_OFFSET`, mirrored: x86_64's canonical upper half here.
    assert_eq!(kprof::KERNEL_SPACE_START, 0xFFFF_8000_0000_0000);
    let patch = patch();
    let module: String = ["mod", "ctl", "data", "nmi", "session", "stacks", "walk"]
        .iter()
        .map(|name| code(&added(&patch, &format!("src/kprof/{name}.rs"))))
        .collect();
    assert!(
        module.contains("pub const KERNEL_SPACE_START: u64 = crate::USER_END_OFFSET.wrapping_neg() as u64;"),
        "KERNEL_SPACE_START comes from the kernel's USER_END_OFFSET"
    );
    assert!(!module.contains("0xFFFF_8000_0000_0000"), "no copy of the kernel's layout in the module");
}

#[test]
fn the_kernel_walk_takes_the_kernel_stacks_length_from_the_kernel() {
    let glue = code(&added(&patch(), "src/scheme/sys/prof.rs"));
    assert!(glue.contains("kstack.len()"), "Kstack::len() of a live context");
    assert!(!glue.contains("<< 4"), "no copy of the Kstack's order");
    assert!(!glue.contains("const KSTACK_LEN"), "no constant copy");
}

#[test]
fn both_files_are_roots_by_one_rule_at_open() {
    let patch = patch();
    // The sys scheme refuses to open a writable entry unless the caller's effective uid is 0
    // (`CallerCtx::uid` is the context's `euid`); the patch applies the same check to
    // `prof_data`, at open, and checks nothing else at read.
    let open = code(&added(&patch, "src/scheme/sys/mod.rs"));
    assert!(open.contains("if entry.0 == \"prof_data\" && ctx.uid != 0 {"), "{open}");
    assert!(open.contains("return Err(Error::new(EPERM));"));
    let glue = code(&added(&patch, "src/scheme/sys/prof.rs"));
    assert!(!glue.contains("euid"), "no second rule at read");
    assert!(!glue.contains("EPERM"));
}

#[test]
fn the_scheduler_reports_the_switch_when_it_is_done() {
    let switch = code(&added(&patch(), "src/context/switch.rs"));
    for hook in ["note_switch_begin(", "note_switch_to(", "note_switch_end("] {
        assert!(switch.contains(hook), "{hook} in {switch}");
    }
    // The pid is given on the next context's stack only, in the finish hook, not before.
    assert!(!switch.contains("note_switch(cpu_id"), "{switch}");
    let patch = patch();
    let section = &patch[patch.find("diff --git a/src/context/switch.rs").unwrap()..];
    for hook in ["note_switch_to(", "note_switch_end("] {
        let at = section.find(hook).unwrap();
        let hunk = &section[section[..at].rfind("\n@@ ").unwrap()..at];
        let header = hunk.lines().nth(1).unwrap();
        assert!(header.contains("switch_finish_hook"), "{hook} under {header}");
    }
}

#[test]
fn the_kernel_gets_only_what_it_runs() {
    // The decoder, the host's shorthands and the kernel-constant stand-in are the host crate's
    // own (src/decode.rs, src/host.rs, src/lib.rs); the module has no blanket allow to hide
    // code the kernel does not use (its build warns of none on the four architectures:
    // kernel-patch/series/README.md).
    let patch = patch();
    let module: String = ["mod", "ctl", "data", "nmi", "session", "stacks", "walk"]
        .iter()
        .map(|name| code(&added(&patch, &format!("src/kprof/{name}.rs"))))
        .collect();
    for absent in ["fn decode", "DecodeError", "HEADER_LEN_V", "fn as_str", "image_load_base", "#![allow", "HostKernel"] {
        assert!(!module.contains(absent), "{absent} in the kernel module");
    }
    // The only allows: dead code of the sampling path on architectures whose kernel does not
    // sample (no x86 timer hook), walk stacks or have the NMI source (not x86_64), each naming
    // them.
    let flat: String = module.split_whitespace().collect();
    let named = [
        "#[cfg_attr(not(any(target_arch=\"x86\",target_arch=\"x86_64\")),allow(dead_code))]",
        "#[cfg_attr(not(target_arch=\"x86_64\"),allow(dead_code))]",
    ];
    let allows = flat.matches("allow(dead_code)").count();
    let per_architecture: usize = named.iter().map(|form| flat.matches(form).count()).sum();
    assert_eq!(allows, per_architecture, "an allow that names no architecture");
    assert!(allows <= 6, "{allows} allows");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for host_only in ["src/decode.rs", "src/host.rs", "src/lib.rs"] {
        assert!(root.join(host_only).exists());
        assert!(!patch.contains(&format!("+++ b/{host_only}")), "{host_only} is not the kernel's");
    }
}
