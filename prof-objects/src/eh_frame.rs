//! Function ranges from the unwind tables (`.eh_frame`), read with gimli.
//!
//! `strip` removes the symbol table but not the unwind tables, which the runtime needs to
//! unwind (panics, C++ exceptions, backtraces).  Each FDE there covers one function's code
//! `[pc_begin, pc_begin + pc_range)`, so a stripped program still has exact function
//! boundaries, only no names.  `.eh_frame` is found by its section header, or, where
//! `strip --strip-all` of the section headers left none, through `.eh_frame_hdr` (the
//! `PT_GNU_EH_FRAME` program header), which points at it. A static program may have
//! `.eh_frame` without `.eh_frame_hdr` (no `--eh-frame-hdr` at link time).

use gimli::{BaseAddresses, CieOrFde, EhFrame, EhFrameHdr, LittleEndian, Pointer, UnwindSection};
use goblin::elf::{program_header, Elf};

/// `[start, end)` of every function the unwind tables describe, sorted, in the file's
/// link-time addresses.  Empty if the file has no (readable) `.eh_frame`.
pub fn function_ranges(elf: &Elf, bytes: &[u8]) -> Vec<(u64, u64)> {
    let image = Image { elf, bytes };
    let mut ranges = eh_frame(&image).map(|(addr, data)| fde_ranges(addr, data)).unwrap_or_default();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// The file's bytes addressed by link-time virtual address (through the `PT_LOAD` segments).
struct Image<'a> {
    elf: &'a Elf<'a>,
    bytes: &'a [u8],
}

impl<'a> Image<'a> {
    /// The file bytes from `vaddr` to the end of its segment's file data.
    fn at(&self, vaddr: u64) -> Option<&'a [u8]> {
        let ph = self.elf.program_headers.iter().find(|ph| {
            ph.p_type == program_header::PT_LOAD && (ph.p_vaddr..ph.p_vaddr.saturating_add(ph.p_filesz)).contains(&vaddr)
        })?;
        let start = usize::try_from(ph.p_offset.checked_add(vaddr - ph.p_vaddr)?).ok()?;
        let end = usize::try_from(ph.p_offset.checked_add(ph.p_filesz)?).ok()?;
        self.bytes.get(start..end)
    }

    /// `.eh_frame`'s address and bytes, by its section header.
    fn section(&self, name: &str) -> Option<(u64, &'a [u8])> {
        let sh = self.elf.section_headers.iter().find(|sh| self.elf.shdr_strtab.get_at(sh.sh_name) == Some(name))?;
        let range = crate::elf_headers::section_range(sh, self.bytes.len())?;
        Some((sh.sh_addr, &self.bytes[range]))
    }
}

/// `.eh_frame`: by its section header, else where `.eh_frame_hdr` says it starts (to the end of
/// its segment: the section ends with a zero terminator, where reading stops).
fn eh_frame<'a>(image: &Image<'a>) -> Option<(u64, &'a [u8])> {
    if let Some(found) = image.section(".eh_frame").filter(|(_, data)| !data.is_empty()) {
        return Some(found);
    }
    let hdr = image.elf.program_headers.iter().find(|ph| ph.p_type == program_header::PT_GNU_EH_FRAME)?;
    let bases = BaseAddresses::default().set_eh_frame_hdr(hdr.p_vaddr);
    let parsed = EhFrameHdr::new(image.at(hdr.p_vaddr)?, LittleEndian).parse(&bases, 8).ok()?;
    let addr = match parsed.eh_frame_ptr() {
        Pointer::Direct(addr) => addr,
        Pointer::Indirect(_) => return None,
    };
    Some((addr, image.at(addr)?))
}

/// The range of every FDE in `.eh_frame` (`data`, at link-time address `addr`); an entry that
/// does not parse is passed over.
fn fde_ranges(addr: u64, data: &[u8]) -> Vec<(u64, u64)> {
    let eh_frame = EhFrame::new(data, LittleEndian);
    let bases = BaseAddresses::default().set_eh_frame(addr);
    let mut ranges = Vec::new();
    let mut entries = eh_frame.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else { continue };
        if let Ok(fde) = partial.parse(|section, bases, offset| section.cie_from_offset(bases, offset)) {
            let start = fde.initial_address();
            if fde.len() > 0 {
                ranges.push((start, start.saturating_add(fde.len())));
            }
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap as HashMap;

    /// Without section headers (`strip --strip-all` of them) `.eh_frame` is found through
    /// `.eh_frame_hdr`, with the same ranges. Segments placed at the top of the address space
    /// (malformed files) are read, not wrapped around: `p_vaddr + p_filesz` and
    /// `p_offset + ...` overflowed.
    #[test]
    fn segments_at_the_top_of_the_address_space() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut elf = Elf::parse(&bytes).unwrap();
        let by_section = function_ranges(&elf, &bytes);
        elf.section_headers.clear();
        let expected = function_ranges(&elf, &bytes).len();
        assert_eq!(expected, by_section.len());
        let hdr = elf.program_headers.iter().find(|ph| ph.p_type == program_header::PT_GNU_EH_FRAME).unwrap().p_vaddr;
        let load = |ph: &program_header::ProgramHeader| {
            ph.p_type == program_header::PT_LOAD && (ph.p_vaddr..ph.p_vaddr + ph.p_filesz).contains(&hdr)
        };
        let i = elf.program_headers.iter().position(load).unwrap();
        // Move the whole image so that the segment holding the tables ends exactly at 2^64.
        let seg = elf.program_headers[i].clone();
        let delta = 0u64.wrapping_sub(seg.p_vaddr + seg.p_filesz);
        for ph in &mut elf.program_headers {
            ph.p_vaddr = ph.p_vaddr.wrapping_add(delta);
        }
        assert_eq!(function_ranges(&elf, &bytes).len(), expected);
        // A file offset past the end of everything: nothing to read.
        elf.program_headers[i].p_offset = u64::MAX - 0x10;
        assert!(function_ranges(&elf, &bytes).is_empty());
    }

    /// Every function of this (unstripped) test binary that has an FDE has a symbol with the
    /// same start and size: the table is read right.
    #[test]
    fn ranges_match_the_symbol_table_of_this_binary() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let ranges = function_ranges(&elf, &bytes);
        assert!(ranges.len() > 100, "only {} FDEs", ranges.len());
        let sized: HashMap<u64, u64> = elf
            .syms
            .iter()
            .filter(|s| s.is_function() && s.st_size > 0)
            .map(|s| (s.st_value, s.st_value + s.st_size))
            .collect();
        let matched = ranges.iter().filter(|(lo, hi)| sized.get(lo) == Some(hi)).count();
        assert!(matched * 10 >= ranges.len() * 9, "{matched} of {} FDE ranges match a symbol", ranges.len());
    }
}
