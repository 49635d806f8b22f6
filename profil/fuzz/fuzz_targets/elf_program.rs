//! The ELF reading path on arbitrary bytes: `prof_objects::elf::parse_program` (the program to
//! profile) and `ObjectFile::parse` (a shared object or the vdso, which need not be an
//! executable), then what the report does with the result: symbol lookup and the naming of
//! unnamed code (`symbols`, `eh_frame`), runtime -> link-time addresses (`object_file`),
//! naming the samples (`symbolize`), the Minix histogram, the flat profile and `--asm`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use prof_core::sampler::Mapping;
use prof_core::{BinLayout, ProfData};
use profil::disasm;
use prof_objects::elf::parse_program;
use profil::flat::FlatProfile;
use prof_objects::object_file::ObjectFile;
use profil::profile::Profile;
use profil::report::{self, ExitKind};
use prof_objects::symbolize::Symbolizer;

/// Addresses worth asking about: the edges of every function and segment, and some taken
/// from the input itself.
fn probe_addresses(object: &ObjectFile, data: &[u8]) -> Vec<u64> {
    let mut addrs = vec![0, 1, u64::MAX - 1, u64::MAX];
    for f in object.symbols.functions().iter().take(256) {
        addrs.extend([f.addr, f.addr.wrapping_sub(1), f.end(), f.end().wrapping_sub(1)]);
    }
    for s in object.segments().iter().take(64) {
        addrs.extend([s.vaddr, s.vaddr.wrapping_add(s.memsz), s.vaddr.wrapping_add(s.filesz).wrapping_sub(1)]);
    }
    addrs.extend(data.chunks_exact(8).take(32).map(|c| u64::from_le_bytes(c.try_into().unwrap())));
    addrs
}

/// Everything `run` does with an object once the session is over.
fn report_on(object: ObjectFile, text: Option<prof_core::TextSegment>, data: &[u8]) {
    let addrs = probe_addresses(&object, data);
    for &a in &addrs {
        let t = &object.symbols;
        if let Some(f) = t.lookup(a) {
            assert!(f.addr <= a && a < f.end(), "lookup({a:#x}) = {f:?}");
        }
        let r = t.resolve(a);
        // (The last address of the address space has no exclusive end: an empty range.)
        assert!(r.addr <= a && (a < r.end() || a == u64::MAX), "resolve({a:#x}) = {r:?}");
        let _ = t.by_name(&r.name);
        let _ = object.code(a, a.saturating_add(16));
        let _ = object.code(r.addr, r.end());
    }
    // The mapping path of a shared object: runtime address -> link-time address -> function.
    for s in object.segments().iter().take(16) {
        let base = 0x7f00_0000_0000u64;
        let m = Mapping { start: base + (s.vaddr & 0xffff_f000), len: s.memsz, pgoff: s.offset & !0xfff, path: String::new(), file: None, build_id: None };
        for &a in addrs.iter().take(64) {
            for runtime in [a, base.wrapping_add(a)] {
                if let Some(link) = object.address_in_mapping(&m, runtime) {
                    let _ = object.symbols.resolve(link);
                }
            }
        }
    }

    // The samples of a run: in the text (link-time) or elsewhere (runtime, in an anonymous
    // mapping or none: the symbolizer never reads other files for those).
    let in_text = |a: u64| text.is_none_or(|t| t.contains(a));
    let mut image_samples: Vec<(u64, u64)> = addrs.iter().filter(|&&a| in_text(a)).map(|&a| (a, 1 + a % 7)).collect();
    image_samples.sort_unstable();
    image_samples.dedup_by_key(|s| s.0);
    let foreign_samples: Vec<(u64, u64)> = addrs.iter().filter(|&&a| !in_text(a)).map(|&a| (a, 1)).take(16).collect();
    let mappings = vec![Mapping { start: 0x7f00_0000_0000, len: 0x10_0000, pgoff: 0, path: "[anon:jit]".into(), file: None, build_id: None }];

    // The Minix bins over the text, as profd fills them.
    let mut prof = ProfData::default();
    if let Some(t) = text {
        if let Ok(layout) = BinLayout::new(t, 0, 0, 0) {
            assert!((1..=prof_core::MAX_BINS).contains(&layout.nr_bins));
            prof = ProfData::new(&layout);
            for &(a, n) in &image_samples {
                if let Some(b) = layout.bin_of(a) {
                    prof.bin[b] += n;
                }
            }
        }
    }
    let profile = Profile::from(profil::profile::Parts {
        data: prof,
        image_samples,
        foreign_samples,
        mappings,
        user_ticks: 1,
        kernel_ticks: Some(0),
        ..Default::default()
    });
    let names = profil::naming::Names::of_run(Symbolizer::new(object, "fuzz", Default::default()), &profile, Default::default());
    let samples = names.samples(&profile);
    let flat = FlatProfile::build(&samples, &names, None);
    let _ = report::minix_statistics(profile.data());
    let _ = flat.render(None);
    let _ = disasm::render(&disasm::listings(&flat, &names, 3, None));
    let _ = report::summary(&profile, None, "fuzz", &[], ExitKind::Exited(0));
}

fuzz_target!(|data: &[u8]| {
    // The program to profile.
    if let Ok(image) = parse_program(Path::new("fuzz"), data.to_vec(), &Default::default()) {
        let text = image.layout.text;
        // (Empty only for a segment at the very top of the address space: [u64::MAX, u64::MAX).)
        assert!(text.start < text.end || text.start == u64::MAX, "{text:?}");
        for s in &image.layout.exec_segments {
            let _ = image.layout.load_base_for_mapping(0x5555_5555_4000, s.offset & !0xfff);
        }
        report_on(image.object, Some(text), data);
    }
    // Any other object samples fall in.
    if let Some(object) = ObjectFile::parse(Path::new("fuzz.so"), data.to_vec(), &Default::default()) {
        report_on(object, None, data);
    }
});
