//! One ELF object on disk (the program, a shared library, the vdso image): its loadable
//! segments, its function symbols and its bytes, so samples can be named and disassembled.

use crate::Options;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use goblin::elf::{program_header, section_header, Elf};
use goblin::container::Ctx;
use goblin::elf::sym::Symtab;
pub use crate::file_bytes::FileBytes;
use prof_core::sampler::Mapping;

use crate::eh_frame;
use crate::symbols::{Names, SymbolTable};

/// goblin's `Elf` with what profil reads of it parsed: the headers
/// ([`crate::elf_headers`]) and the symbol tables (lazy views, as goblin makes them), with the
/// symbols' string tables left in the file (`Names::InFile`), each name read when a profile
/// needs it. `None` where the file is not laid out so simply (no section headers, a table out
/// of bounds): the caller then parses it fully.
pub(crate) fn parse_elf_lazily(bytes: &[u8]) -> Option<(Elf<'_>, [Names<'_>; 2])> {
    let (mut elf, ctx) = crate::elf_headers::parse(bytes)?;
    if elf.section_headers.is_empty() {
        return None;
    }
    let mut names = [Names::InFile { start: 0, end: 0 }, Names::InFile { start: 0, end: 0 }];
    if let Some((table, strings)) = symbol_table(&elf, ctx, bytes, section_header::SHT_SYMTAB)? {
        (elf.syms, names[0]) = (table, strings);
    }
    if let Some((table, strings)) = symbol_table(&elf, ctx, bytes, section_header::SHT_DYNSYM)? {
        (elf.dynsyms, names[1]) = (table, strings);
    }
    // A dynamic object whose section headers list no .dynsym is not laid out simply.
    if elf.dynsyms.is_empty() && elf.program_headers.iter().any(|ph| ph.p_type == program_header::PT_DYNAMIC) {
        return None;
    }
    Some((elf, names))
}

/// The last symbol table of type `kind` (`SHT_SYMTAB`, `SHT_DYNSYM`) of a header-parsed ELF,
/// as goblin's lazy view, with its string table left in the file: `Some(None)` if there is
/// none, `None` if it or its strings are not within the file.
fn symbol_table<'a>(elf: &Elf<'a>, ctx: Ctx, bytes: &'a [u8], kind: u32) -> Option<Option<(Symtab<'a>, Names<'a>)>> {
    let Some(sh) = elf.section_headers.iter().rfind(|sh| sh.sh_type == kind) else { return Some(None) };
    let count = sh.sh_size.checked_div(sh.sh_entsize)?;
    let table = Symtab::parse(bytes, usize::try_from(sh.sh_offset).ok()?, usize::try_from(count).ok()?, ctx).ok()?;
    let strings = crate::elf_headers::section_range(elf.section_headers.get(sh.sh_link as usize)?, bytes.len())?;
    Some(Some((table, Names::InFile { start: strings.start, end: strings.end })))
}

/// The functions of a separate debug file's `.symtab` (`None` if it has none), for the
/// object whose executable ranges are `code`. Only its section headers and that table are
/// read: the rest of such a file (its text, `.dynsym`) is not in it.
fn debug_file_symbols(path: &Path, code: Vec<(u64, u64)>) -> Option<SymbolTable> {
    let bytes = Arc::new(FileBytes::open(path).ok()?);
    let (mut elf, ctx) = crate::elf_headers::parse(&bytes)?;
    let (table, strings) = symbol_table(&elf, ctx, &bytes, section_header::SHT_SYMTAB)??;
    if table.is_empty() {
        return None;
    }
    elf.syms = table;
    Some(SymbolTable::from_elf(&elf, [strings, Names::InFile { start: 0, end: 0 }], &bytes, &[], code))
}

/// A `PT_LOAD` segment: where its bytes are in the file and in link-time memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    pub filesz: u64,
    pub executable: bool,
}

/// An ELF file, mapped or in memory.
#[derive(Debug, Clone)]
pub struct ObjectFile {
    pub path: PathBuf,
    /// Shared with the symbol table, whose names are read from it when asked for.
    bytes: Arc<FileBytes>,
    segments: Vec<Segment>,
    pub symbols: SymbolTable,
}

impl ObjectFile {
    /// Map and parse the ELF file at `path`; a stripped one's symbols are looked for in its
    /// debug file under `options`' directories, and named as `options` say.
    pub fn read(path: &Path, options: &Options) -> std::io::Result<ObjectFile> {
        let bytes = FileBytes::open(path)?;
        ObjectFile::parse(path, bytes, options)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an ELF file"))
    }

    /// An object from its bytes; `None` if they are not ELF.
    pub fn parse(path: &Path, bytes: impl Into<FileBytes>, options: &Options) -> Option<ObjectFile> {
        let bytes = Arc::new(bytes.into());
        match parse_elf_lazily(&bytes) {
            Some((elf, names)) => Some(ObjectFile::from_elf(path, &elf, names, &bytes, options)),
            None => {
                let elf = Elf::parse(&bytes).ok()?;
                let names = [Names::Parsed(&elf.strtab), Names::Parsed(&elf.dynstrtab)];
                Some(ObjectFile::from_elf(path, &elf, names, &bytes, options))
            }
        }
    }

    /// An object from an already parsed ELF of `bytes`.
    pub(crate) fn from_elf(path: &Path, elf: &Elf, names: [Names; 2], bytes: &Arc<FileBytes>, options: &Options) -> ObjectFile {
        let segments: Vec<Segment> = elf
            .program_headers
            .iter()
            .filter(|ph| ph.p_type == program_header::PT_LOAD)
            .map(|ph| Segment {
                vaddr: ph.p_vaddr,
                memsz: ph.p_memsz,
                offset: ph.p_offset,
                filesz: ph.p_filesz,
                executable: ph.is_executable(),
            })
            .collect();
        let code: Vec<(u64, u64)> = segments.iter().filter(|s| s.executable).map(|s| (s.vaddr, s.vaddr.saturating_add(s.memsz))).collect();
        // A stripped object (no .symtab: stripped programs, distribution libraries) takes the
        // symbols of its separate debug file where there is one (Debian's -dbgsym packages).
        let from_debug_file = || {
            let debug = crate::debug_file::separate(path, &options.debug_dirs)?;
            debug_file_symbols(&debug, code.clone())
        };
        if let Some(symbols) = elf.syms.is_empty().then(from_debug_file).flatten() {
            let symbols = symbols.with_short_names(options.short_names);
            return ObjectFile { path: path.to_path_buf(), bytes: bytes.clone(), segments, symbols };
        }
        // The unwind tables name nothing a full symbol table does not: read them for stripped
        // objects only.
        let unwind = if elf.syms.is_empty() { eh_frame::function_ranges(elf, bytes) } else { Vec::new() };
        ObjectFile {
            path: path.to_path_buf(),
            bytes: bytes.clone(),
            segments,
            symbols: SymbolTable::from_elf(elf, names, bytes, &unwind, code).with_short_names(options.short_names),
        }
    }

    /// An object known only by its symbols (no bytes): for tests and synthetic reports.
    pub fn from_symbols(path: &Path, symbols: SymbolTable) -> ObjectFile {
        ObjectFile { path: path.to_path_buf(), bytes: Arc::new(Vec::new().into()), segments: Vec::new(), symbols }
    }

    /// Give a synthetic object one executable segment holding `code` at `vaddr` (tests and
    /// synthetic reports).
    pub fn set_test_code(&mut self, vaddr: u64, code: &[u8]) {
        let len = code.len() as u64;
        self.segments = vec![Segment { vaddr, memsz: len, offset: 0, filesz: len, executable: true }];
        self.bytes = Arc::new(code.to_vec().into());
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The link-time address of runtime address `addr` inside mapping `m` of this file:
    /// the file offset `addr - start + pgoff`, placed by the segment that holds it
    /// (`p_vaddr - p_offset` apart).
    pub fn address_in_mapping(&self, m: &Mapping, addr: u64) -> Option<u64> {
        let offset = addr.checked_sub(m.start)?.checked_add(m.pgoff)?;
        let s = self.segments.iter().find(|s| (s.offset..s.offset.saturating_add(s.filesz)).contains(&offset))?;
        (offset - s.offset).checked_add(s.vaddr)
    }

    /// The file's GNU build-id (its `NT_GNU_BUILD_ID` note), where it has one.
    pub fn build_id(&self) -> Option<Vec<u8>> {
        let (elf, _) = crate::elf_headers::parse(&self.bytes)?;
        crate::elf_headers::build_id_in(&elf, &self.bytes)
    }

    /// The file's bytes for link-time addresses `[lo, hi)`, if they are all in one segment.
    pub fn code(&self, lo: u64, hi: u64) -> Option<&[u8]> {
        let s = self.segments.iter().find(|s| s.vaddr <= lo && hi <= s.vaddr.saturating_add(s.filesz))?;
        let start = usize::try_from(s.offset.checked_add(lo - s.vaddr)?).ok()?;
        let end = usize::try_from(s.offset.checked_add(hi - s.vaddr)?).ok()?;
        self.bytes.get(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> ObjectFile {
        ObjectFile::read(&std::env::current_exe().unwrap(), &Options::default()).unwrap()
    }

    #[test]
    fn a_synthetic_object_has_no_build_id() {
        let path = std::env::current_exe().unwrap();
        // rustc on Linux links with --build-id (crate::elf's tests read it both ways).
        assert!(me().build_id().is_some_and(|id| id.len() >= 16));
        assert_eq!(ObjectFile::from_symbols(&path, SymbolTable::default()).build_id(), None);
    }

    #[test]
    fn mapping_addresses_become_link_time_addresses() {
        let o = me();
        let text = *o.segments().iter().find(|s| s.executable).unwrap();
        // The loader maps the page holding the segment's start at base + page_down(vaddr).
        let base = 0x7f12_3400_0000u64;
        let page = text.offset & !0xfff;
        let m = Mapping { start: base + (text.vaddr & !0xfff), len: text.memsz, pgoff: page, path: String::new(), file: None, build_id: None };
        let addr = base + text.vaddr + 0x10;
        assert_eq!(o.address_in_mapping(&m, addr), Some(text.vaddr + 0x10));
        assert_eq!(o.address_in_mapping(&m, m.start - 1), None);
    }

    #[test]
    fn code_bytes_come_from_the_file_offset() {
        let o = me();
        let f = o.symbols.functions().iter().find(|f| f.size >= 4 && !f.name.starts_with('[')).unwrap().clone();
        let s = *o.segments().iter().find(|s| s.vaddr <= f.addr && f.addr < s.vaddr + s.filesz).unwrap();
        let raw = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let at = (s.offset + f.addr - s.vaddr) as usize;
        assert_eq!(o.code(f.addr, f.addr + 4).unwrap(), &raw[at..at + 4]);
        assert_eq!(o.code(u64::MAX - 4, u64::MAX), None);
    }

    fn with_segment(s: Segment, bytes: usize) -> ObjectFile {
        let mut o = ObjectFile::from_symbols(Path::new("x"), SymbolTable::default());
        o.segments = vec![s];
        o.bytes = Arc::new(vec![0x90; bytes].into());
        o
    }

    /// Segments with offsets or addresses near 2^64 (malformed files): no overflow, and no
    /// wrapped-around address or file offset.
    #[test]
    fn segments_at_the_top_of_the_address_space() {
        let high_offset =
            Segment { vaddr: 0x1000, memsz: 0x1000, offset: u64::MAX - 0xff, filesz: 0x1000, executable: true };
        let o = with_segment(high_offset, 0x1000);
        let m = Mapping { start: 0x10000, len: 0x1000, pgoff: u64::MAX - 0xff, path: String::new(), file: None, build_id: None };
        assert_eq!(o.address_in_mapping(&m, 0x10010), Some(0x1010));
        assert_eq!(o.code(0x1200, 0x1210), None);
        let high_vaddr = Segment { vaddr: u64::MAX - 0xf, memsz: 0x100, offset: 0, filesz: 0x100, executable: true };
        let o = with_segment(high_vaddr, 0x100);
        let m = Mapping { start: 0x10000, len: 0x1000, pgoff: 0, path: String::new(), file: None, build_id: None };
        assert_eq!(o.address_in_mapping(&m, 0x10020), None);
        assert_eq!(o.code(u64::MAX - 0xf, u64::MAX - 8), Some(&[0x90; 7][..]));
    }

    /// An executable segment reaching past 2^64 bounds unnamed code up to the top of the
    /// address space, not to a wrapped-around end.
    #[test]
    fn code_segment_past_the_end_of_the_address_space() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut elf = Elf::parse(&bytes).unwrap();
        let text =
            elf.program_headers.iter_mut().find(|ph| ph.p_type == program_header::PT_LOAD && ph.is_executable()).unwrap();
        text.p_vaddr = u64::MAX - 0xfff;
        text.p_memsz = 0x2000;
        let names = [Names::Parsed(&elf.strtab), Names::Parsed(&elf.dynstrtab)];
        let o = ObjectFile::from_elf(Path::new("x"), &elf, names, &Arc::new(bytes.clone().into()), &Options::default());
        assert_eq!(o.symbols.resolve(u64::MAX - 0x800).addr, u64::MAX - 0xfff);
    }

    /// The quick parse names every function exactly as goblin's whole parse does: this test
    /// binary (.symtab) and the C library (.dynsym of a stripped object).
    #[test]
    fn the_quick_parse_gives_the_same_functions() {
        let libc = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        for path in [Some(std::env::current_exe().unwrap()), libc.map(Into::into)].into_iter().flatten() {
            let bytes: Arc<FileBytes> = Arc::new(std::fs::read(&path).unwrap().into());
            let (lazy, names) = parse_elf_lazily(&bytes).expect("laid out simply");
            let quick = ObjectFile::from_elf(&path, &lazy, names, &bytes, &Options::default());
            let elf = Elf::parse(&bytes).unwrap();
            let names = [Names::Parsed(&elf.strtab), Names::Parsed(&elf.dynstrtab)];
            let full = ObjectFile::from_elf(&path, &elf, names, &bytes, &Options::default());
            assert!(full.symbols.functions().len() > 100, "{}", path.display());
            assert_eq!(quick.symbols.functions(), full.symbols.functions(), "{}", path.display());
        }
        // No section headers (as `sstrip` leaves a file): not for the quick parse.
        let mut bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        bytes[0x28..0x30].copy_from_slice(&0u64.to_le_bytes()); // e_shoff
        assert!(parse_elf_lazily(&bytes).is_none());
    }

    #[test]
    fn non_elf_bytes_are_refused() {
        assert!(ObjectFile::parse(Path::new("x"), b"#!/bin/sh\n".to_vec(), &Options::default()).is_none());
    }
}
