//! The NMI source maps the HPET's and the I/O APIC's registers (and ACPI tables) itself,
//! fallibly: the kernel's `memory::map_device_memory` panics ("failed to linearly map device
//! memory") when no frame is left for a page table, and the NMI source is armed from a system
//! call. A check on the patch text: the NMI source's file does not call it, and its mapping
//! returns `None` (the source is then not armed) where `map_linearly` fails.

mod common;

fn nmi_source() -> String {
    let patch = common::combined();
    let start = patch.find("+++ b/src/scheme/sys/prof_nmi.rs").expect("prof_nmi.rs in the patch");
    let rest = &patch[start..];
    let end = rest[3..].find("diff --git").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

#[test]
fn the_nmi_source_maps_device_memory_without_a_panic() {
    let source = nmi_source();
    assert!(!source.contains("map_device_memory("), "calls the kernel's panicking mapper");
    assert!(source.contains("mapper.map_linearly(page, PageFlags::new().write(true).device_memory(true))"));
    assert!(source.contains("}?;"), "a failed mapping is not passed on as None");
    assert!(!source.contains(".expect("), "an expect in the NMI source");
}
