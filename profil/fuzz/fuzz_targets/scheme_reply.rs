//! What `profil` on Redox does with the daemon's replies: `Profile::from_scheme_files` on the
//! `status` line, the binary `data` and the `samples` text, then the report made from them (the
//! Minix statistics, the summary, the flat profile and the `--asm` hit counts); the `samples`
//! text is also read as a `stacks` reply (`Profile::with_scheme_stacks`) and reported with
//! totals, call graph and folded stacks, and as a `servers` reply (`parse_servers`, the "Where
//! the time went" section).
//!
//! Input: `[status length: u16 LE][data length: u16 LE][status][data][samples]`; lengths are
//! clipped to what is there, and a short `data` is padded with zeros to the 8224 bytes of a
//! `prof_data` (so the fuzzer need not write every bin).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use prof_core::prof_data::PROF_DATA_SIZE;
use profil::disasm;
use profil::flat::FlatProfile;
use profil::naming::Names;
use prof_objects::object_file::ObjectFile;
use profil::profile::Profile;
use profil::report::{self, ExitKind};
use prof_objects::symbolize::Symbolizer;
use prof_objects::symbols::{Function, SymbolTable};

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = data.split_at(n.min(data.len()));
    *data = tail;
    head
}

fuzz_target!(|input: &[u8]| {
    let mut rest = input;
    let lens = take(&mut rest, 4);
    let word = |i: usize| lens.get(i..i + 2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let status = take(&mut rest, word(0));
    let data = take(&mut rest, word(2));
    let samples = rest;

    let mut padded = data.to_vec();
    if padded.len() < PROF_DATA_SIZE {
        padded.resize(PROF_DATA_SIZE, 0);
    }
    let (status, samples_text) = (String::from_utf8_lossy(status), String::from_utf8_lossy(samples));
    let Ok(profile) = Profile::from_scheme_files(&status, &padded, &samples_text) else { return };
    let _ = report::minix_statistics(profile.data());
    let _ = report::summary(&profile, None, "fuzz", &[], ExitKind::Exited(0));
    let symbols = SymbolTable::new(vec![
        Function { addr: 0x1000, size: 0x100, name: "fib".into() },
        Function { addr: 0x2000, size: 0, name: "loop".into() },
    ])
    .with_code(vec![(0x1000, 0x6000)]);
    let symbolizer = || Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols.clone()), "fib", Default::default());
    // The same text as a `servers` reply, and the "Where the time went" section from it.
    if let Some(servers) = prof_core::formats::parse_servers(&samples_text) {
        let with_servers = Profile::from(profil::profile::Parts { servers: Some(servers.clone()), ..profile.clone().into_parts() });
        let names = Names::of_run(symbolizer(), &with_servers, Default::default());
        let named = profil::servers::name_servers(&servers, &names);
        let _ = profil::servers::render("fuzz", &profile, Some((&servers, &named)));
    }
    let names = Names::of_run(symbolizer(), &profile, Default::default());
    let samples = names.samples(&profile);
    let flat = FlatProfile::build(&samples, &names, None);
    let _ = flat.render(None);
    // The same reply's `samples` text as `/scheme/prof/stacks`: parsed, named, reported.
    let with_stacks = profile.clone().with_scheme_stacks(&samples_text);
    let stack_names = Names::of_run(symbolizer(), &with_stacks, Default::default());
    if let Some(sp) = profil::stacks::StackProfile::build(&with_stacks, &stack_names) {
        let located = stack_names.samples(&with_stacks);
        let flat = FlatProfile::build(&located, &stack_names, Some(&sp));
        let _ = flat.render(None);
        let _ = profil::callgraph::render(&sp, &flat, 10);
        let _ = profil::exports::collapsed::render("fuzz", &flat, Some(&sp));
    }
    // `--asm` over the hits (on made-up code: the object has no bytes here).
    for c in flat.entries.iter().filter_map(|e| e.code.as_ref()).take(3) {
        let symbols = names.object(c.object).file.as_ref().map(|f| &f.symbols);
        let _ = disasm::annotate(&[0x90; 64], c.start, &c.hits, symbols);
    }
});
