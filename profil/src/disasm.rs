//! The instruction view (`--asm`): each instruction of the hottest functions with its hits,
//! as Prospect's assembly-level profile.  Disassembled in-process with iced-x86 from the
//! object file's own bytes, in AT&T syntax like `objdump -d` and `perf annotate`, so lines
//! can be compared with theirs.

use std::collections::BTreeMap;
use std::fmt::Write;

use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, OpKind, SymbolResolver, SymbolResult};

use crate::flat::{FlatEntry, FlatProfile};
use prof_objects::lines::Sources;
use prof_objects::symbolize::Location;

use crate::naming::Names as RunNames;
use prof_objects::symbols::SymbolTable;

/// How many functions `--asm` shows unless `--asm-top` says otherwise.
pub const DEFAULT_TOP: usize = 3;

/// Longer functions list only their instructions with hits (a stripped program's unnamed gap
/// can be the whole text segment).
const MAX_FULL_LISTING: usize = 2000;

/// One instruction and the ticks that interrupted the program there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsmLine {
    pub address: u64,
    pub hits: u64,
    pub text: String,
}

/// A function's instructions with their hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub lines: Vec<AsmLine>,
    /// Hits at addresses that are not the start of a decoded instruction (never dropped
    /// silently: only possible if the bytes are not the code that ran).
    pub stray: u64,
}

/// Decode `code` (which starts at link-time address `start`) and attach `hits`.  Branch
/// targets are named from `symbols` where they land in a named function.
pub fn annotate(code: &[u8], start: u64, hits: &[(u64, u64)], symbols: Option<&SymbolTable>) -> Annotated {
    let mut remaining: BTreeMap<u64, u64> = BTreeMap::new();
    for &(a, n) in hits {
        // Saturating, as in the flat profile: counts read from the daemon may not add up.
        let total = remaining.entry(a).or_insert(0);
        *total = total.saturating_add(n);
    }
    let names = Names(symbols.cloned());
    let mut formatter = GasFormatter::with_options(Some(Box::new(names.clone())), None);
    // As objdump prints them: every number in lower-case hex (`$0x1`, `-0x4(%rsp)`, where the
    // formatter's default prints small ones in decimal), RIP-relative operands as
    // displacements (the target follows as a comment).
    formatter.options_mut().set_uppercase_hex(false);
    formatter.options_mut().set_small_hex_numbers_in_decimal(false);
    formatter.options_mut().set_rip_relative_addresses(true);
    let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let mut instruction = Instruction::default();
    let mut lines = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        let mut text = String::new();
        formatter.format(&instruction, &mut text);
        if instruction.is_ip_rel_memory_operand() {
            text.push_str(&format!("  # {}", names.describe(instruction.ip_rel_memory_address())));
        }
        let address = instruction.ip();
        lines.push(AsmLine { address, hits: remaining.remove(&address).unwrap_or(0), text });
    }
    Annotated { lines, stray: remaining.values().fold(0, |sum, &n| sum.saturating_add(n)) }
}

/// Names branch targets as objdump does: `164f0 <overflow+0x10>` inside a named function,
/// the bare address (`1040`) elsewhere.
#[derive(Clone)]
struct Names(Option<SymbolTable>);

impl Names {
    fn describe(&self, address: u64) -> String {
        match self.0.as_ref().and_then(|s| s.lookup(address)).filter(|f| !f.name.starts_with('[')) {
            Some(f) if address == f.addr => format!("{address:x} <{}>", f.name),
            Some(f) => format!("{address:x} <{}+{:#x}>", f.name, address - f.addr),
            None => format!("{address:x}"),
        }
    }
}

impl SymbolResolver for Names {
    fn symbol(&mut self, i: &Instruction, _: u32, operand: Option<u32>, address: u64, _: u32) -> Option<SymbolResult<'_>> {
        // Branch targets only: immediates and displacements keep their own form.
        let kind = i.op_kind(operand?);
        matches!(kind, OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64)
            .then(|| SymbolResult::with_string(address, self.describe(address)))
    }
}

/// Source files read for the interleaved listing, each once (`None`: not readable here).
#[derive(Default)]
struct SourceFiles(rustc_hash::FxHashMap<String, Option<Vec<String>>>);

impl SourceFiles {
    /// Line `line` (from 1) of `file`, trimmed, where the file can be read.
    fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let lines = self.0.entry(file.to_string()).or_insert_with(|| {
            // A source file: far below 64 MiB (a device or a FIFO named by DWARF is not read).
            let text = prof_objects::bounded::read(std::path::Path::new(file), 64 << 20).ok()?;
            Some(String::from_utf8_lossy(&text).lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get((line as usize).checked_sub(1)?).map(|l| l.trim())
    }
}

/// One hot function's instructions, read from its object, decoded and each run of them
/// placed at its source line: what the view shows, made before it is rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The function's name as the flat profile prints it.
    pub name: String,
    pub samples: u64,
    /// Its share of the flat profile, in percent.
    pub share: f64,
    pub start: u64,
    pub end: u64,
    /// Its object's name.
    pub object: String,
    /// The instructions shown: those with hits, or all of a short function; each with the
    /// source line above it where that line begins a run (`; inline.c:13  return …;`).
    pub lines: Vec<(Option<String>, AsmLine)>,
    /// Instructions without hits left out.
    pub hidden: usize,
    /// Hits between instruction boundaries.
    pub stray: u64,
}

/// The listings of the `top` hottest functions whose code can be read. With `sources` and
/// line tables, each run of instructions from one source line has the line above it (the
/// innermost line, as `objdump -S` and perf annotate interleave them).
pub fn listings(flat: &FlatProfile, names: &RunNames, top: usize, sources: Option<&Sources>) -> Vec<Listing> {
    let mut files = SourceFiles::default();
    let hottest: Vec<(&FlatEntry, &[u8])> = flat
        .entries
        .iter()
        .filter_map(|e| {
            let c = e.code.as_ref()?;
            Some((e, names.code(c.object, c.start, c.end)?))
        })
        .take(top)
        .collect();
    let mut out = Vec::new();
    for (e, bytes) in hottest {
        let Some(c) = &e.code else { continue };
        let object = names.object(c.object);
        let symbols = object.file.as_ref().map(|f| &f.symbols);
        let a = annotate(bytes, c.start, &c.hits, symbols);
        let full = a.lines.len() <= MAX_FULL_LISTING;
        let mut listing = Listing {
            name: e.name(),
            samples: e.samples,
            share: flat.share(e.samples),
            start: c.start,
            end: c.end,
            object: object.name.clone(),
            lines: Vec::new(),
            hidden: 0,
            stray: a.stray,
        };
        let mut last_line = None;
        for l in a.lines {
            if l.hits == 0 && !full {
                listing.hidden += 1;
                continue;
            }
            let mut above = None;
            if let Some(sources) = sources {
                let at = Location { object: c.object, address: Some(l.address), function: None, inlined: None };
                let frames = names.source_frames(sources, &at);
                let here = frames.first().map(|f| (f.file.clone(), f.line));
                if let Some((file, line)) = here.clone().filter(|_| here != last_line) {
                    let base = file.rsplit('/').next().unwrap_or(&file).to_string();
                    above = Some(match files.line(&file, line) {
                        Some(text) => format!("; {base}:{line}  {text}"),
                        None => format!("; {base}:{line}"),
                    });
                }
                last_line = here;
            }
            listing.lines.push((above, l));
        }
        out.push(listing);
    }
    out
}

/// The instruction view of the listings.
pub fn render(listings: &[Listing]) -> String {
    let mut out = String::new();
    match listings.len() {
        1 => out.push_str("Instructions of the hottest function:\n"),
        n => {
            let _ = writeln!(out, "Instructions of the {n} hottest functions:");
        }
    }
    for f in listings {
        let _ = writeln!(
            out,
            "\n{} ({}, {:.2}%), {:#x}-{:#x} in {}:",
            f.name,
            crate::words::count(f.samples, "sample"),
            f.share,
            f.start,
            f.end,
            f.object
        );
        let width = format!("{:x}", f.end).len().max(7);
        let _ = writeln!(out, "  {:>width$} {:>8} {:>7}  instruction", "address", "hits", "%");
        for (above, l) in &f.lines {
            if let Some(above) = above {
                let _ = writeln!(out, "  {:>width$} {above}", "");
            }
            if l.hits > 0 {
                let pct = l.hits as f64 * 100.0 / f.samples as f64;
                let _ = writeln!(out, "  {:>width$x} {:>8} {:>7.2}  {}", l.address, l.hits, pct, l.text);
            } else {
                let _ = writeln!(out, "  {:>width$x} {:>8} {:>7}  {}", l.address, "", "", l.text);
            }
        }
        if f.hidden > 0 {
            let _ = writeln!(out, "  ({} instructions without hits not shown)", f.hidden);
        }
        if f.stray > 0 {
            let _ = writeln!(out, "  ({} hits between instruction boundaries)", f.stray);
        }
    }
    out
}

#[cfg(test)]
mod objdump_form {
    use super::*;

    #[test]
    fn rip_relative_operands_and_unnamed_targets_read_as_objdump_prints_them() {
        // movsd 0x100(%rip),%xmm0 at 0x1000 (8 bytes: the target is 0x1108); call 0x1010; a
        // plain immediate.
        let code = [0xf2, 0x0f, 0x10, 0x05, 0x00, 0x01, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00, 0x00, 0xb8, 0x10, 0, 0, 0];
        let lines: Vec<String> = annotate(&code, 0x1000, &[], None).lines.into_iter().map(|l| l.text).collect();
        assert_eq!(lines, ["movsd 0x100(%rip),%xmm0  # 1108", "call 1010", "mov $0x10,%eax"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::Code;
    use prof_objects::object_file::ObjectFile;
    use prof_objects::symbols::Function;

    /// push %rax; mov $0x1,%eax; inc %eax; jne back to the inc; call 0x1000; pop %rcx; ret
    const CODE: &[u8] =
        &[0x50, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xff, 0xc0, 0x75, 0xfc, 0xe8, 0xe1, 0xff, 0xff, 0xff, 0x59, 0xc3];

    fn symbols() -> SymbolTable {
        SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x10, name: "helper".into() },
            Function { addr: 0x1010, size: CODE.len() as u64, name: "hot".into() },
        ])
    }

    #[test]
    fn instructions_get_their_hits() {
        let a = annotate(
            CODE,
            0x1010,
            &[(0x1016, 7), (0x1018, 2), (0x1016, 1), (0x1011, 1), (0x1017, 3)],
            Some(&symbols()),
        );
        let got: Vec<(u64, u64, &str)> = a.lines.iter().map(|l| (l.address, l.hits, l.text.as_str())).collect();
        assert_eq!(
            got,
            [
                (0x1010, 0, "push %rax"),
                (0x1011, 1, "mov $0x1,%eax"),
                (0x1016, 8, "inc %eax"),
                (0x1018, 2, "jne 1016 <hot+0x6>"),
                (0x101a, 0, "call 1000 <helper>"),
                (0x101f, 0, "pop %rcx"),
                (0x1020, 0, "ret"),
            ]
        );
        // 0x1017 is inside `inc`: reported, not dropped.
        assert_eq!(a.stray, 3);
    }

    #[test]
    fn hits_that_do_not_add_up_saturate() {
        // Repeated addresses with huge counts (a malformed /scheme/prof/samples) overflowed.
        let hits = [(0x1016, u64::MAX), (0x1016, 1), (0x1017, u64::MAX), (0x1012, 1)];
        let a = annotate(CODE, 0x1010, &hits, None);
        assert_eq!(a.lines.iter().find(|l| l.address == 0x1016).unwrap().hits, u64::MAX);
        assert_eq!(a.stray, u64::MAX);
    }

    #[test]
    fn view_of_the_hottest_functions() {
        let mut file = ObjectFile::from_symbols(std::path::Path::new("/bin/hot"), symbols());
        file.set_test_code(0x1010, CODE);
        let names = RunNames::of_run(prof_objects::symbolize::Symbolizer::new(file, "hot", Default::default()), &Default::default(), Default::default());
        let entry = |name: &str, samples, code| FlatEntry { function: Some(name.into()), object: None, samples, total: None, code };
        let flat = FlatProfile {
            entries: vec![
                entry(
                    "hot",
                    10,
                    Some(Code { object: 0, start: 0x1010, end: 0x1021, hits: vec![(0x1016, 8), (0x1018, 2)] }),
                ),
                entry("[vdso]", 5, None),
                entry("helper", 1, Some(Code { object: 0, start: 0x1000, end: 0x1010, hits: vec![(0x1000, 1)] })),
            ],
            total: 16,
            kernel: 0,
            with_totals: false,
            whole: None,
        };
        expect_test::expect_file!["../tests/golden/asm_hot.txt"].assert_eq(&render(&listings(&flat, &names, 1, None)));
        // helper's bytes are not in the file: skipped, not a half-empty listing.
        assert_eq!(render(&listings(&flat, &names, 3, None)).matches("samples, ").count(), 1);
    }
}
