//! Function ranges from the unwind tables (`.eh_frame_hdr` → `.eh_frame`).
//!
//! `strip` removes the symbol table but not the unwind tables, which the runtime needs to
//! unwind (panics, C++ exceptions, backtraces).  Each FDE there covers one function's code
//! `[pc_begin, pc_begin + pc_range)`, so a stripped program still has exact function
//! boundaries, only no names.  Found through the `PT_GNU_EH_FRAME` program header, which
//! survives even `strip --strip-all` of the section headers.

use rustc_hash::FxHashMap as HashMap;

use goblin::elf::{program_header, Elf};

const DW_EH_PE_OMIT: u8 = 0xff;
const DW_EH_PE_PCREL: u8 = 0x10;
const DW_EH_PE_DATAREL: u8 = 0x30;

/// `[start, end)` of every function the unwind tables describe, sorted, in the file's
/// link-time addresses.  Empty if the file has no (readable) `.eh_frame_hdr`.
pub fn function_ranges(elf: &Elf, bytes: &[u8]) -> Vec<(u64, u64)> {
    let image = Image { elf, bytes };
    let mut ranges = eh_frame_hdr_ranges(&image).unwrap_or_default();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// The file's bytes addressed by link-time virtual address (through the `PT_LOAD` segments).
struct Image<'a> {
    elf: &'a Elf<'a>,
    bytes: &'a [u8],
}

impl Image<'_> {
    /// The file bytes from `vaddr` to the end of its segment's file data.
    fn at(&self, vaddr: u64) -> Option<&[u8]> {
        let ph = self.elf.program_headers.iter().find(|ph| {
            ph.p_type == program_header::PT_LOAD && (ph.p_vaddr..ph.p_vaddr.saturating_add(ph.p_filesz)).contains(&vaddr)
        })?;
        let start = usize::try_from(ph.p_offset.checked_add(vaddr - ph.p_vaddr)?).ok()?;
        let end = usize::try_from(ph.p_offset.checked_add(ph.p_filesz)?).ok()?;
        self.bytes.get(start..end)
    }
}

/// A cursor over bytes that sit at link-time address `base`.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8], base: u64) -> Self {
        Cursor { data, pos: 0, base }
    }

    fn addr(&self) -> u64 {
        self.base.wrapping_add(self.pos as u64)
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.data.get(self.pos..self.pos + N)?.try_into().ok()?;
        self.pos += N;
        Some(b)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.bytes::<1>()?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes()?))
    }

    fn cstr(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.pos..)?;
        let len = rest.iter().position(|&b| b == 0)?;
        self.pos += len + 1;
        Some(&rest[..len])
    }

    fn uleb(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
    }

    fn sleb(&mut self) -> Option<i64> {
        let (mut v, mut shift) = (0i64, 0);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= i64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                if shift < 64 && b & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return Some(v);
            }
        }
    }

    /// A `DW_EH_PE_*` encoded pointer; `datarel` is the base of data-relative values.
    fn encoded(&mut self, enc: u8, datarel: u64) -> Option<u64> {
        if enc == DW_EH_PE_OMIT {
            return None;
        }
        let field = self.addr();
        let value = match enc & 0x0f {
            0x00 => u64::from_le_bytes(self.bytes()?),
            0x01 => self.uleb()?,
            0x02 => u64::from(u16::from_le_bytes(self.bytes()?)),
            0x03 => u64::from(u32::from_le_bytes(self.bytes()?)),
            0x04 => u64::from_le_bytes(self.bytes()?),
            0x09 => self.sleb()? as u64,
            0x0a => i16::from_le_bytes(self.bytes()?) as u64,
            0x0b => i32::from_le_bytes(self.bytes()?) as u64,
            0x0c => i64::from_le_bytes(self.bytes()?) as u64,
            _ => return None,
        };
        let base = match enc & 0x70 {
            0x00 => 0,
            DW_EH_PE_PCREL => field,
            DW_EH_PE_DATAREL => datarel,
            _ => return None, // text/func-relative, aligned: not used by x86-64 toolchains
        };
        // Indirect pointers (0x80) only appear for personality routines, never for pc_begin.
        (enc & 0x80 == 0).then(|| base.wrapping_add(value))
    }
}

/// The search table of `.eh_frame_hdr`: one entry per FDE, each then read for its range.
fn eh_frame_hdr_ranges(image: &Image) -> Option<Vec<(u64, u64)>> {
    let hdr = image.elf.program_headers.iter().find(|ph| ph.p_type == program_header::PT_GNU_EH_FRAME)?;
    let mut c = Cursor::new(image.at(hdr.p_vaddr)?, hdr.p_vaddr);
    let hdr_addr = hdr.p_vaddr;
    let [version, frame_ptr_enc, count_enc, table_enc] = c.bytes::<4>()?;
    if version != 1 {
        return None;
    }
    c.encoded(frame_ptr_enc, hdr_addr)?;
    let count = c.encoded(count_enc, hdr_addr)?;
    let mut fde_encodings: HashMap<u64, u8> = HashMap::default();
    let mut ranges = Vec::new();
    for _ in 0..count {
        let _initial_location = c.encoded(table_enc, hdr_addr)?;
        let fde = c.encoded(table_enc, hdr_addr)?;
        if let Some(r) = fde_range(image, fde, &mut fde_encodings) {
            ranges.push(r);
        }
    }
    Some(ranges)
}

/// `[pc_begin, pc_begin + pc_range)` of the FDE at `fde`.
fn fde_range(image: &Image, fde: u64, cie_encodings: &mut HashMap<u64, u8>) -> Option<(u64, u64)> {
    let mut c = Cursor::new(image.at(fde)?, fde);
    let length = c.u32()?;
    if length == 0 || length == u32::MAX {
        return None; // terminator, or 64-bit DWARF (not produced for .eh_frame)
    }
    let cie_pointer_at = c.addr();
    let cie = cie_pointer_at.checked_sub(u64::from(c.u32()?))?;
    let enc = match cie_encodings.get(&cie) {
        Some(&e) => e,
        None => {
            let e = cie_fde_encoding(image, cie)?;
            cie_encodings.insert(cie, e);
            e
        }
    };
    let begin = c.encoded(enc, 0)?;
    // The range has the pointer's size and format but is never relative.
    let range = c.encoded(enc & 0x0f, 0)?;
    (range > 0).then(|| (begin, begin.saturating_add(range)))
}

/// The pointer encoding a CIE sets for its FDEs (its augmentation's `R`).
fn cie_fde_encoding(image: &Image, cie: u64) -> Option<u8> {
    let mut c = Cursor::new(image.at(cie)?, cie);
    let length = c.u32()?;
    if length == 0 || length == u32::MAX || c.u32()? != 0 {
        return None;
    }
    let version = c.u8()?;
    let augmentation = c.cstr()?;
    c.uleb()?; // code alignment
    c.sleb()?; // data alignment
    if version == 1 {
        c.u8()?; // return address register
    } else {
        c.uleb()?;
    }
    let Some(rest) = augmentation.strip_prefix(b"z") else {
        return Some(0); // no augmentation data: absolute pointers
    };
    c.uleb()?; // augmentation data length
    for &a in rest {
        match a {
            b'R' => return c.u8(),
            b'L' => {
                c.u8()?;
            }
            b'P' => {
                let enc = c.u8()?;
                c.encoded(enc & 0x7f, 0)?;
            }
            b'S' | b'B' | b'G' => {}
            _ => return None,
        }
    }
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128() {
        let mut c = Cursor::new(&[0xe5, 0x8e, 0x26, 0x7f, 0x80, 0x7f], 0);
        assert_eq!(c.uleb(), Some(624485));
        assert_eq!(c.sleb(), Some(-1));
        assert_eq!(c.sleb(), Some(-128));
        assert_eq!(c.u8(), None);
    }

    #[test]
    fn pointer_encodings() {
        // pcrel|sdata4 of -0x10 at address 0x1000 -> 0xff0; datarel|udata2 0x20 from 0x500.
        let mut c = Cursor::new(&[0xf0, 0xff, 0xff, 0xff, 0x20, 0x00], 0x1000);
        assert_eq!(c.encoded(0x1b, 0), Some(0xff0));
        assert_eq!(c.encoded(0x32, 0x500), Some(0x520));
        assert_eq!(c.encoded(DW_EH_PE_OMIT, 0), None);
    }

    #[test]
    fn pc_relative_pointers_wrap_at_the_top_of_the_address_space() {
        let mut c = Cursor::new(&[0, 0x10, 0, 0, 0], u64::MAX);
        c.u8();
        assert_eq!(c.encoded(0x1b, 0), Some(0x10));
    }

    /// Segments placed at the top of the address space (malformed files) are read, not
    /// wrapped around: `p_vaddr + p_filesz` and `p_offset + ...` overflowed.
    #[test]
    fn segments_at_the_top_of_the_address_space() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut elf = Elf::parse(&bytes).unwrap();
        let expected = function_ranges(&elf, &bytes).len();
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
