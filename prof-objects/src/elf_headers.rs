//! An ELF file's headers alone, as goblin parses them on request: the program headers, the
//! section headers and their names. The unwinder and profil's symbol reader need no more, and
//! goblin's whole parse first splits and checks every string of the file (most of its time on
//! a large program).

use std::ops::Range;
use std::path::Path;

use goblin::container::Ctx;
use goblin::elf::{Elf, ProgramHeader, SectionHeader};
use goblin::strtab::Strtab;

/// `bytes` as an `Elf` with its headers parsed (symbol tables, dynamic section and string
/// tables other than the section names left empty), and the context to parse more of it.
pub fn parse(bytes: &[u8]) -> Option<(Elf<'_>, Ctx)> {
    let header = Elf::parse_header(bytes).ok()?;
    let ctx = Ctx::new(header.container().ok()?, header.endianness().ok()?);
    let mut elf = Elf::lazy_parse(header).ok()?;
    elf.program_headers = ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx).ok()?;
    elf.section_headers = SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx).ok()?;
    if let Some(sh) = elf.section_headers.get(usize::from(header.e_shstrndx)) {
        let range = section_range(sh, bytes.len())?;
        elf.shdr_strtab = Strtab::parse(bytes, range.start, range.len(), 0).ok()?;
    }
    Some((elf, ctx))
}

/// Where section `sh`'s bytes are in a file of `len` bytes; `None` if they are not all in it.
pub fn section_range(sh: &SectionHeader, len: usize) -> Option<Range<usize>> {
    let start = usize::try_from(sh.sh_offset).ok()?;
    let end = start.checked_add(usize::try_from(sh.sh_size).ok()?)?;
    (end <= len).then_some(start..end)
}

/// The GNU build-id of the ELF file at `path` (the `NT_GNU_BUILD_ID` note), where it has one.
pub fn build_id(path: &Path) -> Option<Vec<u8>> {
    let bytes = crate::file_bytes::FileBytes::open(path).ok()?;
    let (elf, _) = parse(&bytes)?;
    build_id_in(&elf, &bytes)
}

/// The GNU build-id of `elf`, parsed from `bytes` (its program headers are enough).
pub fn build_id_in(elf: &Elf, bytes: &[u8]) -> Option<Vec<u8>> {
    elf.iter_note_headers(bytes)?
        .filter_map(Result::ok)
        .find(|n| n.n_type == goblin::elf::note::NT_GNU_BUILD_ID && n.name == "GNU")
        .map(|n| n.desc.to_vec())
}
