//! The functions of one ELF object, and how code without a symbol is named.
//!
//! Names come from `.symtab`, else `.dynsym` (a stripped shared library keeps its exported
//! functions there), demangled (Rust, then C++).  Code no symbol covers is named by its address
//! range, as Prospect brackets hits between the nearest known symbols:
//!
//! * a PLT stub, by the function it calls (`puts@plt`, [`crate::plt`]);
//! * inside a function the unwind tables describe ([`crate::eh_frame`]), that function's
//!   `[start-end]` — exact boundaries, even in a stripped program;
//! * elsewhere, the gap between the nearest known functions (or the segment's edges).
//!
//! Range names are `[0x15b70-0x15bc0]`: link-time addresses, start inclusive, end exclusive.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use goblin::elf::{sym, Elf};
use goblin::strtab::Strtab;
use crate::file_bytes::FileBytes;

/// The names of a symbol table: goblin's parsed string table, or the bytes `[start, end)` of
/// one in the object file, whose names are read (and demangled) only when asked for: a large
/// program's table is mostly names no profile shows.
#[derive(Clone, Copy)]
pub enum Names<'a> {
    Parsed(&'a Strtab<'a>),
    InFile { start: usize, end: usize },
}

/// One function (or unnamed code range): `[addr, addr + size)` in link-time addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub addr: u64,
    pub size: u64,
    /// Demangled name, or `[0xstart-0xend]` for code no symbol names.
    pub name: String,
}

impl Function {
    pub fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }

    /// Unnamed code, named by its range.
    pub fn range(start: u64, end: u64) -> Function {
        Function { addr: start, size: end - start, name: format!("[{start:#x}-{end:#x}]") }
    }
}

/// How an entry's name is had: a word beside its place, so a large program's table (120,000
/// functions) is 24 bytes a function, built where its symbols were sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// The mangled name at `offset` in symbol table `table`'s names in the object file (up to
    /// its NUL: [`SymbolTable::names`]), read when asked for; a PLT stub's (`stub`) gains `@plt`.
    InFile { table: u8, offset: u32, stub: bool },
    /// A mangled name among the table's strings, demangled when asked for; a stub's gains `@plt`.
    Mangled { index: u32, stub: bool },
    /// A name among the table's strings, as it is.
    Given(u32),
    /// Unnamed code: named by its range.
    Range,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    addr: u64,
    size: u64,
    name: Name,
}

impl Entry {
    fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }
}

/// The object's functions, sorted by address, plus its code segments (bounds for gaps).
#[derive(Debug, Clone, Default)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    code: Vec<(u64, u64)>,
    /// The object file that [`Name::InFile`] names are in, and where each table's names are in
    /// it (`[start, end)`: `.symtab`'s, `.dynsym`'s).
    file: Option<Arc<FileBytes>>,
    names: [(usize, usize); 2],
    /// The names that are not in the file ([`Name::Mangled`], [`Name::Given`]).
    strings: Vec<Box<str>>,
    /// Demangled names are shortened ([`crate::short_names`]).
    short_names: bool,
}

/// The name at `offset` of table `table`'s names as an entry has it: where it is in the file,
/// or (a parsed string table's) kept among `strings`.
fn name_of(names: Names, offset: usize, table: u8, stub: bool, strings: &mut Vec<Box<str>>) -> Option<Name> {
    match names {
        Names::InFile { .. } => Some(Name::InFile { table, offset: u32::try_from(offset).ok()?, stub }),
        Names::Parsed(t) => {
            let index = u32::try_from(strings.len()).ok()?;
            strings.push(t.get_at(offset)?.into());
            Some(Name::Mangled { index, stub })
        }
    }
}

/// The bytes from a name's start to its table's end (`None`: no name there).
fn name_bytes<'f>(names: Names<'f>, file: &'f [u8], offset: usize) -> Option<&'f [u8]> {
    match names {
        Names::Parsed(t) => t.get_at(offset).filter(|n| !n.is_empty()).map(str::as_bytes),
        Names::InFile { start, end } => start.checked_add(offset).filter(|&at| at < end).map(|at| &file[at..end]),
    }
}

/// Functions whose symbol has no size (hand-written assembly) are taken to reach the next
/// function, but no further than this.
const MAX_UNSIZED_FUNCTION: u64 = 64 * 1024;

impl SymbolTable {
    /// Functions from `.symtab`, or `.dynsym` for a stripped object, named from `names`
    /// (theirs, in that order) in `file`; `unwind` adds the function ranges of the unwind
    /// tables that no symbol names; `code` are the object's executable segments.
    pub fn from_elf(
        elf: &Elf,
        names: [Names; 2],
        file: &Arc<FileBytes>,
        unwind: &[(u64, u64)],
        code: Vec<(u64, u64)>,
    ) -> SymbolTable {
        // Each code symbol with its preference among aliases at one address (fewer leading
        // underscores, then global before weak before local) and its place in the file, 32
        // bytes (the sort moves 120,000 of them in a large program); the names not in the file;
        // the ends of unsized symbols' sections.
        let mut found: Vec<(Entry, (u8, u8), u32)> = Vec::with_capacity(elf.syms.len() + elf.dynsyms.len());
        let mut strings: Vec<Box<str>> = Vec::new();
        let mut section_ends: HashMap<u64, u64> = HashMap::default();
        for (t, (table, strtab)) in [(&elf.syms, names[0]), (&elf.dynsyms, names[1])].into_iter().enumerate() {
            for s in table.iter() {
                // IFUNC resolvers (glibc's memcpy, strlen) are code too.
                let is_code = s.st_type() == sym::STT_FUNC || s.st_type() == sym::STT_GNU_IFUNC;
                if !is_code || s.st_value == 0 || s.st_shndx == 0 {
                    continue;
                }
                // The name's first bytes: present, and how many leading underscores.
                let Some(head) = name_bytes(strtab, file, s.st_name) else { continue };
                if head.first().is_none_or(|&b| b == 0) {
                    continue;
                }
                // Of aliases, the name people call (`write`, not `__write`), as perf chooses.
                let underscores = head.iter().take_while(|&&b| b == b'_').count().min(255) as u8;
                let binding = match s.st_bind() {
                    sym::STB_GLOBAL => 0,
                    sym::STB_WEAK => 1,
                    _ => 2,
                };
                if let Some(sh) = elf.section_headers.get(s.st_shndx).filter(|_| s.st_size == 0) {
                    section_ends.entry(s.st_value).or_insert(sh.sh_addr.saturating_add(sh.sh_size));
                }
                let Some(name) = name_of(strtab, s.st_name, t as u8, false, &mut strings) else { continue };
                let seq = found.len() as u32;
                found.push((Entry { addr: s.st_value, size: s.st_size, name }, (underscores, binding), seq));
            }
        }
        // The table's order (address, larger first) with the preferred alias first and ties in
        // the file's order, in one sort: `from_entries` then finds it sorted.
        found.sort_unstable_by_key(|f| (f.0.addr, std::cmp::Reverse(f.0.size), f.1, f.2));
        // PLT stubs, named by the dynamic symbol each calls.
        let stubs: Vec<Entry> = crate::plt::stubs(elf, file)
            .into_iter()
            .filter_map(|stub| {
                let s = elf.dynsyms.get(stub.symbol)?;
                name_bytes(names[1], file, s.st_name)?;
                Some(Entry { addr: stub.addr, size: stub.size, name: name_of(names[1], s.st_name, 1, true, &mut strings)? })
            })
            .collect();
        // The entries where the sort left them (the records' buffer, a third of it to spare: the
        // stubs are merged in place, not into a copy of the table).
        let entries: Vec<Entry> = found.into_iter().map(|f| f.0).collect();
        let mut table = SymbolTable::from_entries(entries);
        table.file = Some(file.clone());
        table.names = names.map(|n| match n {
            Names::Parsed(_) => (0, 0),
            Names::InFile { start, end } => (start, end),
        });
        table.strings = strings;
        // An unsized symbol (`_init`) stops at its section's end too: .plt is not part of it.
        for f in &mut table.entries {
            if let Some(&end) = section_ends.get(&f.addr) {
                if end > f.addr && f.end() > end {
                    f.size = end - f.addr;
                }
            }
        }
        table.with_entries(stubs).with_unwind_ranges(unwind).with_code(code)
    }

    /// A table of the given functions (aliases at the same address keep the first name).
    pub fn new(functions: Vec<Function>) -> SymbolTable {
        let mut strings = Vec::with_capacity(functions.len());
        let mut entries = Vec::with_capacity(functions.len());
        for f in functions {
            entries.push(Entry { addr: f.addr, size: f.size, name: Name::Given(strings.len() as u32) });
            strings.push(f.name.into_boxed_str());
        }
        SymbolTable { strings, ..SymbolTable::from_entries(entries) }
    }

    fn from_entries(mut entries: Vec<Entry>) -> SymbolTable {
        // Sorted already where they come from a symbol table (the sort would still take a
        // buffer of half their size).
        let order = |a: &Entry, b: &Entry| a.addr.cmp(&b.addr).then(b.size.cmp(&a.size));
        if !entries.is_sorted_by(|a, b| order(a, b).is_le()) {
            entries.sort_by(order);
        }
        entries.dedup_by_key(|f| f.addr);
        // A size-0 symbol reaches the next function (gprof's rule for every symbol).
        for i in 0..entries.len() {
            if entries[i].size == 0 {
                let next = entries.get(i + 1).map_or(entries[i].addr.saturating_add(1), |n| n.addr);
                entries[i].size = (next - entries[i].addr).clamp(1, MAX_UNSIZED_FUNCTION);
            }
        }
        SymbolTable { entries, code: Vec::new(), file: None, names: [(0, 0); 2], strings: Vec::new(), short_names: false }
    }

    /// Add unwind-table function ranges that no named function overlaps, named by range.
    pub fn with_unwind_ranges(self, ranges: &[(u64, u64)]) -> SymbolTable {
        let unnamed = ranges.iter().filter(|&&(lo, hi)| lo < hi).map(|&(lo, hi)| Entry { addr: lo, size: hi - lo, name: Name::Range });
        self.with_entries(unnamed.collect())
    }

    /// Add the entries that no function of the table overlaps.
    fn with_entries(mut self, more: Vec<Entry>) -> SymbolTable {
        let mut new: Vec<Entry> = more.into_iter().filter(|e| e.size > 0 && !self.overlaps(e.addr, e.end())).collect();
        if !new.is_empty() {
            // Merged in place, from the back, not sorted again: a few PLT stubs beside
            // 100,000 functions (the table's room for them made when it was built).
            new.sort_by_key(|f| f.addr);
            let (n, k) = (self.entries.len(), new.len());
            self.entries.resize_with(n + k, || Entry { addr: 0, size: 0, name: Name::Range });
            // From the back: the larger of the table's last unplaced and the new ones' last
            // into the last free slot (the table's own first where two start together).
            let (mut i, mut out) = (n, n + k);
            while let Some(last) = new.last() {
                if i > 0 && self.entries[i - 1].addr > last.addr {
                    self.entries.swap(i - 1, out - 1);
                    i -= 1;
                } else {
                    self.entries[out - 1] = new.pop().expect("a last one");
                }
                out -= 1;
            }
            self.entries.dedup_by_key(|f| f.addr);
        }
        self
    }

    /// Set the executable segments `[start, end)`, which bound the unnamed gaps.
    pub fn with_code(mut self, mut code: Vec<(u64, u64)>) -> SymbolTable {
        code.sort_unstable();
        self.code = code;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Name its mangled functions in the short form (`--short-names`), or in full.
    pub fn with_short_names(mut self, short: bool) -> SymbolTable {
        self.short_names = short;
        self
    }

    /// Every function, named (each name read and demangled now: for tests and tools).
    pub fn functions(&self) -> Vec<Function> {
        self.entries.iter().map(|e| self.function(e)).collect()
    }

    fn function(&self, e: &Entry) -> Function {
        let string = |i: u32| self.strings.get(i as usize).map_or("", |s| s);
        let (name, stub) = match e.name {
            Name::Given(i) => (string(i).to_string(), false),
            Name::Range => return Function::range(e.addr, e.end()),
            Name::Mangled { index, stub } => (demangle_as(string(index), self.short_names), stub),
            Name::InFile { table, offset, stub } => {
                let (start, end) = self.names[usize::from(table).min(1)];
                let at = start.saturating_add(offset as usize);
                let raw = self.file.as_ref().and_then(|f| f.get(at..end)).unwrap_or_default();
                let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
                (demangle_as(&String::from_utf8_lossy(raw), self.short_names), stub)
            }
        };
        let name = if stub { format!("{name}@plt") } else { name };
        Function { addr: e.addr, size: e.size, name }
    }

    fn overlaps(&self, lo: u64, hi: u64) -> bool {
        let i = self.entries.partition_point(|f| f.addr < hi);
        self.entries[..i].iter().rev().take(4).any(|f| f.end() > lo)
    }

    fn entry_at(&self, addr: u64) -> Option<&Entry> {
        let i = self.entries.partition_point(|f| f.addr <= addr);
        // A few steps back: a small function may sit inside a larger one's range.
        self.entries[..i].iter().rev().take(4).find(|f| addr < f.end())
    }

    /// The function (named, or an unwind-table range) containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<Function> {
        self.entry_at(addr).map(|e| self.function(e))
    }

    /// What `addr` is called in a profile: its function, else the unnamed range between the
    /// nearest known functions, bounded by the code segment holding it.
    pub fn resolve(&self, addr: u64) -> Function {
        if let Some(f) = self.lookup(addr) {
            return f;
        }
        let segment = self.code.iter().find(|(s, e)| (*s..*e).contains(&addr)).copied();
        if segment.is_none() && !self.code.is_empty() {
            // Outside the code: a one-byte range rather than a made-up one.
            return Function::range(addr, addr.saturating_add(1));
        }
        let i = self.entries.partition_point(|f| f.addr <= addr);
        let prev = self.entries[..i].iter().map(Entry::end).filter(|&e| e <= addr).max();
        let next = self.entries.get(i).map(|f| f.addr);
        let lo = [segment.map(|s| s.0), prev].into_iter().flatten().max().unwrap_or(addr);
        let hi = [segment.map(|s| s.1), next].into_iter().flatten().min().unwrap_or(addr.saturating_add(1));
        Function::range(lo, hi)
    }

    /// The function with this exact name.
    pub fn by_name(&self, name: &str) -> Option<Function> {
        self.entries.iter().map(|e| self.function(e)).find(|f| f.name == name)
    }
}

/// Demangle a Rust (legacy or v0, without the hash) or C++ (Itanium) symbol; others as they
/// are.  Rust first: legacy Rust symbols are also valid C++ ones, which would keep the hash.
pub fn demangle(name: &str) -> String {
    demangle_as(name, false)
}

/// [`demangle`], the demangled name shortened where `short` ([`crate::short_names`]).
pub fn demangle_as(name: &str, short: bool) -> String {
    // A versioned symbol of a static symbol table (`__libc_start_main@@GLIBC_2.34`) is named
    // without its version, as .dynsym names it and perf shows it.
    let name = match name.find('@') {
        Some(at) if at > 0 => &name[..at],
        _ => name,
    };
    // Redox's C library (relibc) renames the Rust code linked into it `__relibc_` + its
    // mangled name, so that a program's own Rust std does not clash with it: named as the
    // function it is (`redox_rt::sys::close`), as a program's copy of it would be.
    let name = name.strip_prefix("__relibc_").filter(|rest| rest.starts_with("_R") || rest.starts_with("_Z")).unwrap_or(name);
    // Mangled names start `_R` (Rust v0) or `_Z` (Itanium, Rust legacy), or those without the
    // underscore or with two: skip the demanglers for the rest (C names), which is most of a
    // large C program's symbols.
    if !["_R", "_Z", "__R", "__Z", "R", "ZN"].iter().any(|p| name.starts_with(p)) {
        return name.to_string();
    }
    let shown = |name: String| match short {
        true => crate::short_names::shorten(&name),
        false => name,
    };
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return shown(format!("{d:#}"));
    }
    if name.starts_with("_Z") {
        if let Some(d) = cpp_demangle::Symbol::new(name).ok().and_then(|s| s.demangle().ok()) {
            return shown(d);
        }
        // Some expression templates (libstdc++'s enable_if'd std::swap) defeat cpp_demangle:
        // their qualified name, as far as it can be read, beats the mangled one.
        if let Some(prefix) = itanium_name_prefix(name) {
            return shown(prefix);
        }
    }
    name.to_string()
}

/// The qualified name at the start of an Itanium-mangled `name` up to its first template
/// arguments, shown as `<…>` (`_ZSt4swapIdE…` is `std::swap<…>`), with `::…` where more of a
/// nested name follows them; `None` where it does not start with plain names.
fn itanium_name_prefix(name: &str) -> Option<String> {
    let mut rest = name.strip_prefix("_Z")?.as_bytes();
    let nested = rest.first() == Some(&b'N');
    if nested {
        rest = &rest[1..];
        // CV-qualifiers of a member function.
        while let Some((b'r' | b'V' | b'K', tail)) = rest.split_first() {
            rest = tail;
        }
    }
    let mut parts: Vec<String> = Vec::new();
    if let Some(tail) = rest.strip_prefix(b"St") {
        parts.push("std".into());
        rest = tail;
    }
    loop {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            break;
        }
        let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
        let id = rest.get(digits..digits + len)?;
        parts.push(String::from_utf8_lossy(id).into_owned());
        rest = &rest[digits + len..];
        if !nested {
            break;
        }
    }
    if parts.is_empty() || parts == ["std"] {
        return None;
    }
    let mut out = parts.join("::");
    if rest.first() == Some(&b'I') {
        out.push_str("<…>");
        if nested {
            out.push_str("::…");
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SymbolTable {
        SymbolTable::new(vec![
            Function { addr: 0x2000, size: 0x40, name: "loop".into() },
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x1000, size: 0x100, name: "fib_alias".into() },
            Function { addr: 0x3000, size: 0x10, name: "overflow".into() },
        ])
    }

    #[test]
    fn lookup_is_exact_at_the_edges() {
        let t = table();
        assert_eq!(t.lookup(0x1000).unwrap().name, "fib");
        assert_eq!(t.lookup(0x10ff).unwrap().name, "fib");
        assert_eq!(t.lookup(0x1100), None);
        assert_eq!(t.lookup(0xfff), None);
        assert_eq!(t.lookup(0x203f).unwrap().name, "loop");
        assert_eq!(t.lookup(0x3010), None);
        assert_eq!(t.functions().len(), 3);
    }

    #[test]
    fn a_function_inside_another_does_not_hide_it() {
        let t = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x200, name: "outer".into() },
            Function { addr: 0x1080, size: 0x10, name: "inner".into() },
        ]);
        assert_eq!(t.lookup(0x1085).unwrap().name, "inner");
        assert_eq!(t.lookup(0x1100).unwrap().name, "outer");
    }

    #[test]
    fn unsized_symbols_reach_the_next_function() {
        let t = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0, name: "asm_entry".into() },
            Function { addr: 0x1040, size: 0x10, name: "next".into() },
            Function { addr: 0x9_0000, size: 0, name: "last".into() },
        ]);
        assert_eq!(t.lookup(0x103f).unwrap().name, "asm_entry");
        assert_eq!(t.lookup(0x1040).unwrap().name, "next");
        assert_eq!(t.lookup(0x9_0000).unwrap().size, 1);
    }

    #[test]
    fn the_top_of_the_address_space_does_not_overflow() {
        // Found by fuzzing: an address at u64::MAX has no one-past-the-end; its range is empty.
        let t = SymbolTable::new(vec![Function { addr: u64::MAX, size: 0, name: "top".into() }]);
        assert_eq!(t.functions()[0].size, 1);
        assert_eq!(t.resolve(u64::MAX).name, "[0xffffffffffffffff-0xffffffffffffffff]");
        let t = t.with_code(vec![(0x1000, 0x2000)]);
        assert_eq!(t.resolve(u64::MAX).name, "[0xffffffffffffffff-0xffffffffffffffff]");
    }

    #[test]
    fn a_section_past_the_end_of_the_address_space_does_not_overflow() {
        // Found by fuzzing: the end of an unsized symbol's section, sh_addr + sh_size,
        // overflowed (here it would wrap to just past `_init`, cutting it to one byte).
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut elf = Elf::parse(&bytes).unwrap();
        let init = elf.syms.iter().find(|s| s.st_size == 0 && elf.strtab.get_at(s.st_name) == Some("_init"));
        let Some(init) = init else { return }; // no unsized `_init` (not glibc's crti.o)
        let section = &mut elf.section_headers[init.st_shndx];
        section.sh_addr = u64::MAX - 0xfff;
        section.sh_size = 0x1000 + init.st_value + 1;
        let names = [Names::Parsed(&elf.strtab), Names::Parsed(&elf.dynstrtab)];
        let file = Arc::new(FileBytes::Owned(bytes.clone()));
        let t = SymbolTable::from_elf(&elf, names, &file, &[], Vec::new());
        assert!(t.by_name("_init").unwrap().size > 1);
    }

    #[test]
    fn unnamed_code_is_named_by_its_range() {
        // A stripped program: only unwind ranges, inside one code segment.
        let t = SymbolTable::new(vec![])
            .with_unwind_ranges(&[(0x15b70, 0x15bc0), (0x15d70, 0x15e05)])
            .with_code(vec![(0x15780, 0x57200)]);
        assert_eq!(t.resolve(0x15b80).name, "[0x15b70-0x15bc0]");
        assert_eq!(t.resolve(0x15b80), Function { addr: 0x15b70, size: 0x50, name: "[0x15b70-0x15bc0]".into() });
        // Between two known functions: the gap between them.
        assert_eq!(t.resolve(0x15c00).name, "[0x15bc0-0x15d70]");
        // Before the first: from the segment's start; after the last: to its end.
        assert_eq!(t.resolve(0x15800).name, "[0x15780-0x15b70]");
        assert_eq!(t.resolve(0x20000).name, "[0x15e05-0x57200]");
    }

    /// Code no function covers, added before, between and after the functions, lands in
    /// address order (merged in place, not sorted again); what a function covers is not added.
    #[test]
    fn added_code_is_merged_in_address_order() {
        let f = |addr, name: &str| Function { addr, size: 0x100, name: name.into() };
        let t = SymbolTable::new(vec![f(0x2000, "b"), f(0x4000, "d")]);
        let range = |lo: u64, hi: u64| Entry { addr: lo, size: hi - lo, name: Name::Range };
        let t = t.with_entries(vec![range(0x5000, 0x5010), range(0x1000, 0x1010), range(0x2010, 0x2020), range(0x3000, 0x3040)]);
        let got: Vec<(u64, String)> = t.functions().into_iter().map(|f| (f.addr, f.name)).collect();
        let want = [(0x1000, "[0x1000-0x1010]"), (0x2000, "b"), (0x3000, "[0x3000-0x3040]"), (0x4000, "d"), (0x5000, "[0x5000-0x5010]")];
        assert_eq!(got, want.map(|(a, n)| (a, n.to_string())));
    }

    #[test]
    fn symbols_win_over_unwind_ranges_and_name_gaps_around_them() {
        let t = table().with_unwind_ranges(&[(0x1000, 0x1100), (0x1800, 0x1900)]).with_code(vec![(0x800, 0x4000)]);
        assert_eq!(t.resolve(0x1010).name, "fib");
        assert_eq!(t.resolve(0x1810).name, "[0x1800-0x1900]");
        assert_eq!(t.resolve(0x1100).name, "[0x1100-0x1800]");
        assert_eq!(t.resolve(0x3020).name, "[0x3010-0x4000]");
        assert_eq!(t.resolve(0x900).name, "[0x800-0x1000]");
        // Outside every code segment: a one-byte range rather than a made-up one.
        assert_eq!(t.resolve(0x5000).name, "[0x5000-0x5001]");
        // Without known segments: between the neighbours, one byte past the last.
        let t = table();
        assert_eq!(t.resolve(0x1800).name, "[0x1100-0x2000]");
        assert_eq!(t.resolve(0x500).name, "[0x500-0x1000]");
        assert_eq!(t.resolve(0x3020).name, "[0x3010-0x3021]");
    }

    /// cpp_demangle cannot read libstdc++'s enable_if'd std::swap (c++filt: `std::enable_if<…,
    /// void>::type std::swap<double>(double&, double&)`): its name as far as it reads.
    #[test]
    fn cpp_names_the_demangler_cannot_read_keep_their_qualified_name() {
        let swap = "_ZSt4swapIdENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21is_move_constructibleIS4_ESt18is_move_assignableIS4_EEE5valueEvE4typeERS4_SE_";
        assert_eq!(demangle(swap), "std::swap<…>");
        assert_eq!(itanium_name_prefix("_ZN3foo3barIiE3bazEv"), Some("foo::bar<…>::…".into()));
        assert_eq!(itanium_name_prefix("_ZNK3foo3getEv"), Some("foo::get".into()));
        assert_eq!(itanium_name_prefix("_ZSt"), None);
        assert_eq!(itanium_name_prefix("_Z999x"), None);
    }

    #[test]
    fn demangles_rust_and_cpp_names() {
        assert_eq!(demangle("_ZN3fib4main17h0123456789abcdefE"), "fib::main");
        assert_eq!(demangle("_RNvCs123_3foo3bar"), "foo::bar");
        assert_eq!(demangle("_ZN4demo7Spinner4spinEi"), "demo::Spinner::spin(int)");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
        assert_eq!(demangle("_Z3addii.cold"), "add(int, int) [clone .cold]");
        assert_eq!(demangle("main"), "main");
        // relibc's renamed Rust code (Redox): the function under the prefix.
        assert_eq!(demangle("__relibc__RNvNtCskp7Zp9SXVf9_8redox_rt3sys5close"), "redox_rt::sys::close");
        assert_eq!(demangle("__relibc__ZN3fib4main17h0123456789abcdefE"), "fib::main");
        assert_eq!(demangle("__relibc_start"), "__relibc_start");
        assert_eq!(demangle("_Znot_really"), "_Znot_really");
        assert_eq!(demangle("__libc_start_main@@GLIBC_2.34"), "__libc_start_main");
        assert_eq!(demangle("memcpy@GLIBC_2.2.5"), "memcpy");
    }
}
