//! DWARF unwinding of copied user stacks ([`CallGraph::Dwarf`](super::CallGraph::Dwarf)).
//!
//! Each executable mapping of the process becomes a `framehop` module built from its file's
//! `.eh_frame_hdr` / `.eh_frame` / `.debug_frame` (the vdso's from our own copy of it); a
//! sample's registers and stack bytes are then unwound frame by frame, as samply does. It
//! runs while the program runs, so no stack copy is kept: memory stays bounded however long
//! the run.

use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};
use crate::elf_headers;
use crate::file_bytes::FileBytes;
use crate::image::LoadSegment;
use crate::sampler::{CallStack, Mapping};

/// The deepest stack kept; deeper ones are cut there and marked truncated.
pub const MAX_FRAMES: usize = 512;

/// The bytes of one section of an object file.
#[derive(Clone)]
pub struct SectionBytes {
    file: Arc<FileBytes>,
    range: Range<usize>,
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.file[self.range.clone()]
    }
}

/// Registers of the interrupted user context that unwinding starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

/// The modules of one process and the unwinder's rule cache.
pub struct StackUnwinder {
    unwinder: UnwinderX86_64<SectionBytes>,
    cache: CacheX86_64,
    /// Start addresses of the modules added, to replace a mapping that is mapped again.
    starts: Vec<u64>,
    /// Time spent unwinding (and loading modules), for the benchmark's account.
    pub busy: std::time::Duration,
}

impl Default for StackUnwinder {
    fn default() -> Self {
        StackUnwinder {
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            starts: Vec::new(),
            busy: std::time::Duration::ZERO,
        }
    }
}

impl StackUnwinder {
    /// Learn the unwind information of an executable mapping. Objects that cannot be read
    /// are skipped: stacks through them end there, marked truncated.
    pub fn add_mapping(&mut self, m: &Mapping) {
        let t = std::time::Instant::now();
        self.add_module(m);
        self.busy += t.elapsed();
    }

    fn add_module(&mut self, m: &Mapping) {
        let file = match (m.path.as_str(), m.source()) {
            ("[vdso]", _) => match crate::vdso::image() {
                Some(image) => FileBytes::Static(image),
                None => return,
            },
            (_, Some(path)) => match FileBytes::open(path) {
                Ok(bytes) => bytes,
                Err(_) => return,
            },
            _ => return,
        };
        let Some(module) = module_for(m, Arc::new(file)) else { return };
        if self.starts.contains(&m.start) {
            self.unwinder.remove_module(m.start);
        } else {
            self.starts.push(m.start);
        }
        self.unwinder.add_module(module);
    }

    /// Unwind one sample: `stack` holds the bytes at `regs.sp` and up.
    pub fn unwind(&mut self, regs: UserRegs, stack: &[u8]) -> CallStack {
        let t = std::time::Instant::now();
        let s = self.unwind_stack(regs, stack);
        self.busy += t.elapsed();
        s
    }

    fn unwind_stack(&mut self, regs: UserRegs, stack: &[u8]) -> CallStack {
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(regs.sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let start = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
        let mut frames = self.unwinder.iter_frames(regs.ip, start, &mut self.cache, &mut read_stack);
        let mut out = Vec::new();
        loop {
            match frames.next() {
                Ok(Some(f)) if out.len() < MAX_FRAMES => out.push(f.address()),
                Ok(Some(_)) => return CallStack { frames: out, truncated: true },
                Ok(None) => return CallStack { frames: out, truncated: false },
                Err(_) => {
                    if out.is_empty() {
                        out.push(regs.ip);
                    }
                    return CallStack { frames: out, truncated: true };
                }
            }
        }
    }
}

/// The framehop module of mapping `m` of the object in `file`.
fn module_for(m: &Mapping, file: Arc<FileBytes>) -> Option<Module<SectionBytes>> {
    let (elf, _) = elf_headers::parse(&file)?;
    // The load bias (where link-time address 0 is at run time), from the executable segment
    // the mapping starts with.
    let exec_segments: Vec<LoadSegment> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable())
        .map(|p| LoadSegment { vaddr: p.p_vaddr, memsz: p.p_memsz, offset: p.p_offset })
        .collect();
    let bias = crate::image::load_base(&exec_segments, m.start, m.pgoff)?;
    let section = |name: &str| {
        elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name)).map(|s| {
            let svma = s.sh_addr..s.sh_addr + s.sh_size;
            let bytes = (s.sh_type != goblin::elf::section_header::SHT_NOBITS)
                .then(|| elf_headers::section_range(s, file.len()))
                .flatten()
                .map(|range| SectionBytes { file: file.clone(), range });
            (svma, bytes)
        })
    };
    let (text_svma, text) = section(".text").unzip();
    let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
    let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text: text.flatten(),
        got_svma: section(".got").map(|s| s.0),
        eh_frame_svma,
        eh_frame: eh_frame.flatten(),
        eh_frame_hdr_svma,
        eh_frame_hdr: eh_frame_hdr.flatten(),
        debug_frame: section(".debug_frame").and_then(|s| s.1),
        // Mach-O only.
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        text_segment_svma: None,
        text_segment: None,
    };
    Some(Module::new(m.path.clone(), m.start..m.start + m.len, bias, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our own stack, unwound from a copy: the frames must reach this test function and
    /// beyond it, through std's test harness, to the thread's root.
    #[test]
    #[inline(never)]
    fn unwinds_a_copy_of_our_own_stack() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut u = StackUnwinder::default();
        // As an attached process's mappings are read (perf_event::executable_mapping).
        for (start, len, pgoff, _, _, path) in maps.lines().filter_map(crate::sampler::perf_event::executable_mapping) {
            u.add_mapping(&Mapping { start, len, pgoff, path, file: None });
        }
        let (regs, stack) = capture();
        let s = u.unwind(regs, &stack);
        let here = unwinds_a_copy_of_our_own_stack as fn() as usize as u64;
        assert!(s.frames.len() >= 4, "{s:x?}");
        // Some return address lies in this function (within 4 KiB of its start).
        assert!(s.frames[1..].iter().any(|&a| a > here && a - here < 4096), "{s:x?} here {here:#x}");
    }

    /// Registers and the stack above them, as perf would copy them at a sample.
    #[inline(never)]
    fn capture() -> (UserRegs, Vec<u8>) {
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers; no memory is touched.
        unsafe {
            std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp", ip = out(reg) ip, sp = out(reg) sp, bp = out(reg) bp);
        }
        // The copy ends where the mapping holding the stack pointer ends (perf's copy also
        // stops at the end of the stack).
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let top = maps
            .lines()
            .filter_map(|l| {
                let (lo, hi) = l.split_whitespace().next()?.split_once('-')?;
                Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?))
            })
            .find(|&(lo, hi)| lo <= sp && sp < hi)
            .unwrap()
            .1;
        let len = (top - sp).min(64 * 1024) as usize;
        // SAFETY: [sp, sp + len) is inside this thread's mapped stack, read while the frames
        // are live.
        let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, len) }.to_vec();
        (UserRegs { ip, sp, bp }, stack)
    }
}
