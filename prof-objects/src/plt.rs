//! PLT stubs named as objdump and perf name them (`puts@plt`): no symbol covers them, so
//! without this a program's stubs are one unnamed range per section.
//!
//! Every x86-64 stub jumps through its GOT slot, `jmp *disp(%rip)` (`ff 25 disp32`, perhaps
//! after `endbr64` and a `bnd` prefix), in `.plt` (lazy binding; the first entry, PLT0, jumps
//! through a slot no relocation names), `.plt.sec` (with IBT, where `.plt` holds only the lazy
//! trampolines) and `.plt.got` (functions bound at load). The relocation of that slot
//! (`.rela.plt`, `.rela.dyn`) names the dynamic symbol the stub calls.

use rustc_hash::FxHashMap as HashMap;

use goblin::elf::{header, section_header, Elf};
use crate::elf_headers::section_range;

/// Sections that hold stubs.
const STUB_SECTIONS: [&str; 3] = [".plt", ".plt.sec", ".plt.got"];

/// An `Elf64_Rela`: `r_offset`, `r_info`, `r_addend`.
const RELA_SIZE: usize = 24;

const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// One stub: `[addr, addr + size)` calls dynamic symbol `symbol` (its index in `.dynsym`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stub {
    pub addr: u64,
    pub size: u64,
    pub symbol: usize,
}

/// The stubs of an x86-64 ELF object (`bytes` is its file), sorted by address; none for other
/// machines.
pub fn stubs(elf: &Elf, bytes: &[u8]) -> Vec<Stub> {
    if elf.header.e_machine != header::EM_X86_64 || !elf.is_64 || !elf.little_endian {
        return Vec::new();
    }
    let slots = relocated_slots(elf, bytes);
    if slots.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for sh in &elf.section_headers {
        if !STUB_SECTIONS.contains(&elf.shdr_strtab.get_at(sh.sh_name).unwrap_or_default()) {
            continue;
        }
        let Some(code) = section_range(sh, bytes.len()).map(|r| &bytes[r]) else { continue };
        let entry = match sh.sh_entsize {
            8 | 16 => sh.sh_entsize as usize,
            _ => 16,
        };
        for (i, stub) in code.chunks_exact(entry).enumerate() {
            let addr = sh.sh_addr.wrapping_add((i * entry) as u64);
            if let Some(&symbol) = got_slot(stub, addr).and_then(|slot| slots.get(&slot)) {
                found.push(Stub { addr, size: entry as u64, symbol });
            }
        }
    }
    found.sort_unstable_by_key(|s| s.addr);
    found
}

/// The GOT slot a stub at `addr` jumps through: the target of its `jmp *disp(%rip)`.
fn got_slot(stub: &[u8], addr: u64) -> Option<u64> {
    // The prefixes allowed before the jump: none, bnd, endbr64, endbr64 and bnd.
    const PREFIXES: [&[u8]; 4] = [&[], &[0xf2], &ENDBR64, &[0xf3, 0x0f, 0x1e, 0xfa, 0xf2]];
    let at = PREFIXES
        .iter()
        .find(|p| stub.starts_with(p) && stub.get(p.len()..p.len() + 2) == Some(&[0xff, 0x25]))?
        .len();
    let disp = i32::from_le_bytes(stub.get(at + 2..at + 6)?.try_into().ok()?);
    let next = addr.wrapping_add(at as u64 + 6);
    Some(next.wrapping_add(disp as i64 as u64))
}

/// Every slot a relocation with a symbol fills: slot address -> `.dynsym` index.
fn relocated_slots(elf: &Elf, bytes: &[u8]) -> HashMap<u64, usize> {
    let mut slots = HashMap::default();
    for sh in elf.section_headers.iter().filter(|sh| sh.sh_type == section_header::SHT_RELA) {
        let Some(table) = section_range(sh, bytes.len()).map(|r| &bytes[r]) else { continue };
        for rela in table.chunks_exact(RELA_SIZE) {
            let offset = u64::from_le_bytes(rela[..8].try_into().unwrap_or_default());
            let info = u64::from_le_bytes(rela[8..16].try_into().unwrap_or_default());
            let symbol = (info >> 32) as usize;
            if symbol != 0 {
                slots.insert(offset, symbol);
            }
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_jump_through_their_slot() {
        // jmp *0x2fe2(%rip) at 0x1030: the slot is 0x1036 + 0x2fe2.
        assert_eq!(got_slot(&[0xff, 0x25, 0xe2, 0x2f, 0, 0, 0x68, 0], 0x1030), Some(0x4018));
        // endbr64; bnd jmp *-0x10(%rip) (.plt.sec with IBT).
        let sec = [0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf0, 0xff, 0xff, 0xff, 0x0f, 0x1f, 0x44, 0, 0];
        assert_eq!(got_slot(&sec, 0x2000), Some(0x2000 + 11 - 0x10));
        // A lazy trampoline (endbr64; push; bnd jmp PLT0) jumps through no slot.
        let lazy = [0xf3, 0x0f, 0x1e, 0xfa, 0x68, 0, 0, 0, 0, 0xf2, 0xe9, 0xe1, 0xff, 0xff, 0xff, 0x90];
        assert_eq!(got_slot(&lazy, 0x1000), None);
        assert_eq!(got_slot(&[0xff], 0), None);
    }
}
