//! DWARF unwinding of copied user stacks ([`CallGraph::Dwarf`](prof_core::sampler::CallGraph::Dwarf)).
//!
//! Each executable mapping of the process becomes a `framehop` module built from its file's
//! `.eh_frame_hdr` / `.eh_frame` / `.debug_frame` (the vdso's from our own copy of it); a
//! sample's registers and stack bytes are then unwound frame by frame, as samply does. It
//! runs while the program runs, so no stack copy is kept: memory stays bounded however long
//! the run.

use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use prof_objects::elf_headers;
use prof_objects::file_bytes::FileBytes;
use prof_core::image::LoadSegment;
use prof_core::sampler::Mapping;
use prof_core::sample::CallStack;

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
    /// Their address ranges (where return addresses can be), each with its code to read.
    code: Vec<(Range<u64>, Code)>,
    /// The process whose stacks these are, where its memory may be read (its GOT, to see
    /// where a call through it goes).
    pub process: Option<u32>,
    /// GOT slots read from it, and what they held.
    got: std::cell::RefCell<std::collections::BTreeMap<u64, Option<u64>>>,
    /// Time spent unwinding (and loading modules), for the benchmark's account.
    pub busy: std::time::Duration,
}

impl Default for StackUnwinder {
    fn default() -> Self {
        StackUnwinder {
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            starts: Vec::new(),
            code: Vec::new(),
            process: None,
            got: Default::default(),
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
            ("[vdso]", _) => match prof_objects::vdso::image() {
                Some(image) => FileBytes::Static(image),
                None => return,
            },
            (_, Some(path)) => match FileBytes::open(path) {
                Ok(bytes) => bytes,
                Err(_) => return,
            },
            _ => return,
        };
        let file = Arc::new(file);
        let Some((module, bias)) = module_for(m, file.clone()) else { return };
        if self.starts.contains(&m.start) {
            self.unwinder.remove_module(m.start);
            self.code.retain(|c| c.0.start != m.start);
        } else {
            self.starts.push(m.start);
        }
        let function_starts = function_starts(&file);
        self.code.push((m.start..m.start.saturating_add(m.len), Code { file: file.clone(), pgoff: m.pgoff, bias, function_starts }));
        self.unwinder.add_module(module);
    }

    /// Unwind one sample: `stack` holds the bytes at `regs.sp` and up.
    pub fn unwind(&mut self, regs: UserRegs, stack: &[u8]) -> CallStack {
        let t = std::time::Instant::now();
        let s = self.unwind_stack(regs, stack);
        self.busy += t.elapsed();
        s
    }

    /// Unwind a stack whose frame-pointer register is not known (`regs.bp` unused): a blocked
    /// thread's, whose SP and PC `/proc` gives but not its RBP. Frames unwound by the stack
    /// pointer need none; the first caller that keeps its frame in RBP (std, code built with
    /// frame pointers) does, and framehop ends a walk with RBP 0 there as at the root. RBP
    /// then still holds that caller's frame record (the frames below it, unwound by SP, left
    /// RBP alone or restored it), which lies in its frame, above the SP it had: the lowest
    /// address from there whose words look like a record (a saved RBP that is 0 or higher on
    /// the stack, then an address in code) is taken for it, and the walk goes on. Only the
    /// first such frame is guessed: after it, RBP comes from the records themselves.
    pub fn unwind_without_bp(&mut self, regs: UserRegs, stack: &[u8]) -> CallStack {
        let t = std::time::Instant::now();
        let s = self.unwind_guessing_bp(regs, stack);
        self.busy += t.elapsed();
        s
    }

    /// How `ra` could be a return address out of the function at `pc`: it follows a call
    /// instruction. A direct call must call the function `pc` is in (by the module's function
    /// starts; where it has none, an address at most 64 KiB before `pc`): [`Call::Direct`],
    /// as good as proof. A call through the GOT goes to another object. A call through a
    /// register or other memory could be to anything: [`Call::Indirect`]. A stale frame record
    /// left by an earlier call returns into a function that called another.
    fn call_before(&self, ra: u64, pc: u64) -> Call {
        let Some((range, code)) = self.code.iter().find(|c| c.0.contains(&ra)) else { return Call::None };
        let Some(off) = (ra - range.start).checked_add(code.pgoff).and_then(|o| usize::try_from(o).ok()) else {
            return Call::None;
        };
        let Some(before) = off.checked_sub(7).and_then(|b| code.file.get(b..off)) else { return Call::None };
        let callee = self.code.iter().find(|c| c.0.contains(&pc)).map(|c| &c.1);
        let calls_it = |target: u64| match callee.filter(|c| !c.function_starts.is_empty()) {
            Some(c) => {
                let link = pc.wrapping_sub(c.bias);
                let i = c.function_starts.partition_point(|&f| f <= link);
                i > 0 && c.function_starts[i - 1] == target.wrapping_sub(c.bias)
            }
            None => target <= pc && pc - target < 64 * 1024,
        };
        // e8 rel32: a direct call; its target must be where `pc`'s function begins.
        if before[2] == 0xe8 {
            let rel = i32::from_le_bytes([before[3], before[4], before[5], before[6]]);
            return if calls_it(ra.wrapping_add_signed(i64::from(rel))) { Call::Direct } else { Call::None };
        }
        // ff 15 disp32: a call through a GOT slot (Rust calls std this way), whose content
        // the process's memory says.
        if before[1] == 0xff && before[2] == 0x15 {
            let rel = i32::from_le_bytes([before[3], before[4], before[5], before[6]]);
            let slot = ra.wrapping_add_signed(i64::from(rel));
            let target = *self.got.borrow_mut().entry(slot).or_insert_with(|| self.process.and_then(|pid| read_word(pid, slot)));
            return match target {
                Some(target) if calls_it(target) => Call::Direct,
                Some(_) => Call::None,
                None => Call::Indirect,
            };
        }
        // ff /2: an indirect call through a register (2 or 3 bytes) or memory (up to 7).
        let ff2 = |i: usize| before[i] == 0xff && (before[i + 1] >> 3) & 7 == 2;
        if ff2(5) || ff2(4) || ff2(1) || ff2(0) {
            Call::Indirect
        } else {
            Call::None
        }
    }

    fn unwind_guessing_bp(&mut self, regs: UserRegs, stack: &[u8]) -> CallStack {
        let start = UnwindRegsX86_64::new(regs.ip, regs.sp, 0);
        self.walk(regs.sp, stack, start, FrameAddress::from_instruction_pointer(regs.ip), vec![regs.ip], true)
    }

    /// Go on unwinding from `r` at `address`, `out` the frames so far; where RBP is wanted
    /// and unknown (and `guess`), try the frame records of the stack copy (`stack`, from
    /// `base`) lowest first: the first whose walk ends cleanly wins, else the first that
    /// goes on at all, else the walk ends there.
    fn walk(
        &mut self,
        base: u64,
        stack: &[u8],
        mut r: UnwindRegsX86_64,
        mut address: FrameAddress,
        mut out: Vec<u64>,
        mut guess: bool,
    ) -> CallStack {
        const TRIES: usize = 32;
        let end = base.saturating_add(stack.len() as u64);
        let word = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(base).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let mut read_stack = word;
        loop {
            if out.len() >= MAX_FRAMES {
                return CallStack { frames: out, truncated: true };
            }
            let before = r;
            let step = self.unwinder.unwind_frame(address, &mut r, &mut self.cache, &mut read_stack);
            if guess && before.bp() == 0 && matches!(step, Ok(None) | Err(_)) {
                // The lowest record a direct call proves; else the lowest an indirect call
                // allows whose walk is consistent (every later return address follows a
                // call) and ends cleanly; else the first consistent one.
                let (mut indirect_clean, mut indirect_any) = (None, None);
                let (mut at, mut tried) = (before.sp(), 0);
                while tried < TRIES && at.saturating_add(16) <= end {
                    let ra = word(at + 8).unwrap_or(0);
                    let call = self.call_before(ra, address.address());
                    if call != Call::None {
                        tried += 1;
                        let mut candidate = before;
                        candidate.set_bp(at);
                        let s = self.walk(base, stack, candidate, address, out.clone(), false);
                        if s.frames.len() > out.len() {
                            if call == Call::Direct {
                                return s;
                            }
                            // Every return address after the guessed one follows a call.
                            let consistent = (out.len() + 1..s.frames.len())
                                .all(|i| self.call_before(s.frames[i], s.frames[i - 1]) != Call::None);
                            if consistent && !s.truncated && indirect_clean.is_none() {
                                indirect_clean = Some(s);
                            } else if consistent && indirect_any.is_none() {
                                indirect_any = Some(s);
                            }
                        }
                    }
                    at += 8;
                }
                if let Some(s) = indirect_clean.or(indirect_any) {
                    return s;
                }
            }
            if r.bp() != 0 {
                guess = false;
            }
            match step {
                Ok(Some(next)) => {
                    out.push(next);
                    match FrameAddress::from_return_address(next) {
                        Some(a) => address = a,
                        None => return CallStack { frames: out, truncated: false },
                    }
                }
                Ok(None) => return CallStack { frames: out, truncated: false },
                Err(_) => return CallStack { frames: out, truncated: true },
            }
        }
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

/// A word of process `pid`'s memory.
fn read_word(pid: u32, addr: u64) -> Option<u64> {
    let mut word = [0u8; 8];
    let local = libc::iovec { iov_base: word.as_mut_ptr().cast(), iov_len: 8 };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: 8 };
    // SAFETY: `local` covers `word`; the kernel checks the remote range.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    (n == 8).then(|| u64::from_le_bytes(word))
}

/// What precedes a possible return address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// A direct call of the function returned from.
    Direct,
    /// A call through a register or memory.
    Indirect,
    None,
}

/// The code of a module, to check a return address guessed from the stack.
struct Code {
    file: Arc<FileBytes>,
    /// File offset of the mapping's start, and the load bias (runtime minus link address).
    pgoff: u64,
    bias: u64,
    /// Link-time start addresses of its functions, sorted (`.eh_frame_hdr`'s table).
    function_starts: Vec<u64>,
}

/// The functions' start addresses in `.eh_frame_hdr`'s search table, sorted; empty when it has
/// none or encodes it other than as linkers do (4-byte offsets from the section).
fn function_starts(file: &FileBytes) -> Vec<u64> {
    let Some((elf, _)) = elf_headers::parse(file) else { return Vec::new() };
    let Some(hdr) = elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".eh_frame_hdr")) else {
        return Vec::new();
    };
    let Some(bytes) = elf_headers::section_range(hdr, file.len()).and_then(|r| file.get(r)) else { return Vec::new() };
    // version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4.
    if bytes.len() < 12 || bytes[0] != 1 || bytes[2] != 0x03 || bytes[3] != 0x3b {
        return Vec::new();
    }
    let word = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let Some(count) = word(8) else { return Vec::new() };
    let mut starts: Vec<u64> = (0..count as usize)
        .map_while(|i| word(12 + 8 * i))
        .map(|rel| hdr.sh_addr.wrapping_add_signed(i64::from(rel as i32)))
        .collect();
    starts.sort_unstable();
    starts
}

/// The framehop module of mapping `m` of the object in `file`, and its load bias.
fn module_for(m: &Mapping, file: Arc<FileBytes>) -> Option<(Module<SectionBytes>, u64)> {
    let (elf, _) = elf_headers::parse(&file)?;
    // The load bias (where link-time address 0 is at run time), from the executable segment
    // the mapping starts with.
    let exec_segments: Vec<LoadSegment> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable())
        .map(|p| LoadSegment { vaddr: p.p_vaddr, memsz: p.p_memsz, offset: p.p_offset })
        .collect();
    let bias = prof_core::image::load_base(&exec_segments, m.start, m.pgoff)?;
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
    Some((Module::new(m.path.clone(), m.start..m.start + m.len, bias, info), bias))
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
        // As an attached process's mappings are read (proc_maps::executable_mapping).
        for (start, len, pgoff, _, _, path) in maps.lines().filter_map(crate::proc_maps::executable_mapping) {
            u.add_mapping(&Mapping { start, len, pgoff, path, file: None, build_id: None });
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
