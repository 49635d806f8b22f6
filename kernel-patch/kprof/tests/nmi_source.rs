//! The NMI source on the kernel's own HPET and I/O APIC code, claiming exactly its own NMIs
//! (issue 26 item 2), checked on the patch text (the kernel side cannot run here; the claim
//! itself is `kprof::NmiClaim`, tested in `nmi_claim.rs`).

mod common;

/// The profiling patches of the series as one diff (`common::combined`).
fn patch() -> String {
    common::combined()
}

/// The added lines of the patch's section for `path`, without the `+`, comments cut.
fn added_code(patch: &str, path: &str) -> String {
    common::added_lines(patch, path)
        .iter()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_source_uses_the_kernels_hpet_and_ioapic_code() {
    let source = added_code(&patch(), "src/scheme/sys/prof_nmi.rs");
    for used in [
        "acpi::hpet::Hpet",
        "crate::acpi::ACPI_TABLE.hpet.read()",
        "hpet::prof::*",
        ".read_u64(",
        ".write_u64(",
        "ioapic::ioapics()",
        "IoApic::new(",
        ".map(",
        "MapInfo {",
        "DeliveryMode::Nmi",
        "ApicTriggerMode::Edge",
        "TN_INT_TYPE_LEVEL_CNF",
        "GENERAL_INTERRUPT_OFFSET",
    ] {
        assert!(source.contains(used), "{used} not in prof_nmi.rs");
    }
    // No MMIO helpers of its own, no walk of the root table (the kernel's ACPI finds the HPET
    // once the RSDT fix is applied first), no claim by time.
    for absent in [
        "read_volatile",
        "write_volatile",
        "RXSDT_ENUM",
        "RxsdtEnum",
        "hpet_in_root_table",
        "CLAIM_UNTIL",
        "MAIN_COUNTER_OFFSET) <",
        "ARMED",
    ] {
        assert!(!source.contains(absent), "{absent} in prof_nmi.rs");
    }
}

#[test]
fn the_kernels_modules_gain_only_gated_x86_64_items() {
    let patch = patch();
    for path in ["src/arch/x86_shared/device/hpet.rs", "src/arch/x86_shared/device/ioapic.rs"] {
        let code = added_code(&patch, path);
        let lines: Vec<&str> = code.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(lines[0], "#[cfg(feature = \"sys_prof\")]", "{path}");
        assert_eq!(lines[1], "#[cfg(target_arch = \"x86_64\")]", "{path}");
        assert_eq!(code.matches("#[cfg(feature = \"sys_prof\")]").count(), 1, "{path}: one gated item");
    }
}

#[test]
fn an_nmi_is_the_profilers_only_if_the_claim_says_so() {
    let patch = patch();
    let source = added_code(&patch, "src/scheme/sys/prof_nmi.rs");
    assert!(source.contains("static CLAIM: NmiClaim = NmiClaim::new();"));
    assert!(source.contains("CLAIM.claim(crate::cpu_id().get() as usize, &mut Status(source))"));
    // Before the first `rate=` session no register is read.
    assert!(source.contains("let Some(source) = SOURCE.get() else {\n        return false;"));
    let glue = added_code(&patch, "src/scheme/sys/prof.rs");
    assert!(glue.contains("if !super::prof_nmi::claims() {\n        return false;\n    }"));
    let handler = added_code(&patch, "src/arch/x86_shared/interrupt/exception.rs");
    assert!(handler.contains("if crate::scheme::sys::prof::nmi(stack) {\n        return;\n    }"));
    // Disarming parks the comparator (its interrupt still enabled and routed) so that a fire
    // in flight or after is still told by its status bit; it never masks the input.
    assert!(source.contains("pub fn disarm() {"));
    assert!(!source.contains("set_mask("));
    assert!(source.contains("hpet_park_comparator("));
    // One-shot, never periodic (a fire only once every CPU has claimed the one before, so never
    // while the status bit is set or a CPU is behind): the first fire through the claim's
    // `arm`, no next one once disarmed, before the comparator is parked.
    assert!(!source.contains("TN_TYPE_CNF") && !source.contains("TN_VAL_SET_CNF"));
    assert!(source.contains("CLAIM.arm(ticks, source.wide, &mut Status(source));"));
    let disarm = &source[source.find("pub fn disarm() {").unwrap()..];
    let disarm = &disarm[..disarm.find("\n}\n").unwrap()];
    let (no_next, park) = (disarm.find("CLAIM.disarm();"), disarm.find("unsafe { park(source) };"));
    assert!(no_next.is_some() && no_next < park, "{disarm}");
}
