//! Call stacks from frame-pointer chains, walked in interrupt context: the user's, and the
//! kernel's joined to the user's at the system call or interrupt. The glue gives the walks
//! readers of memory that never fault.

/// Most frames of a recorded call stack (the sampled PC included; a kernel sample's kernel
/// frames and its user frames together); deeper chains are cut there and marked truncated.
pub const MAX_STACK_DEPTH: usize = 64;

/// Entry points a session remembers: where its process's contexts started after a switch of
/// address space (the image's entry at exec, then new threads'), the first ones kept.
pub const MAX_ROOTS: usize = 4;

/// A return address at most this many bytes past a remembered entry point returns into that
/// entry's stub (`_start`: a few instructions and one call), which has no caller: the walk
/// ends there, complete, whatever the stub left in the frame-pointer register.
pub const ENTRY_STUB_LEN: u64 = 64;

/// First address of the kernel's half of the address space: the kernel's own end of user
/// space, `USER_END_OFFSET`, mirrored (x86_64, aarch64 and riscv64 map user space up to 2^47
/// and the kernel from -2^47, `0xFFFF_8000_0000_0000`; 32-bit x86 splits at 2 GiB, where the
/// mirror is 2 GiB again). A frame at or above it is the kernel's: profd and profil tell
/// kernel samples and frames from user ones by it. (The host crate's root gives x86_64's
/// value, or 32-bit x86's on a 32-bit host.)
pub const KERNEL_SPACE_START: u64 = crate::USER_END_OFFSET.wrapping_neg() as u64;

/// A user call stack as the timer hook sees it: the sampled PC, then return addresses,
/// innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackBuf {
    pub frames: [u64; MAX_STACK_DEPTH],
    pub len: usize,
    /// The walk stopped before the stack's root (unreadable memory, a broken chain, depth).
    pub truncated: bool,
}

impl StackBuf {
    pub const fn new() -> StackBuf {
        StackBuf {
            frames: [0; MAX_STACK_DEPTH],
            len: 0,
            truncated: false,
        }
    }

    pub fn frames(&self) -> &[u64] {
        &self.frames[..self.len.min(MAX_STACK_DEPTH)]
    }

    /// Append a frame; false (and truncated) if the buffer is full.
    pub(super) fn push(&mut self, frame: u64) -> bool {
        if self.len >= MAX_STACK_DEPTH {
            self.truncated = true;
            return false;
        }
        self.frames[self.len] = frame;
        self.len += 1;
        true
    }
}

impl Default for StackBuf {
    fn default() -> Self {
        StackBuf::new()
    }
}

/// Walk the user frame-pointer chain of an interrupted context: `pc` and its frame pointer
/// `fp`; `read` returns the user word at an address, or `None` where it is not mapped for
/// user access (the glue checks the page tables; it must never fault). The chain ends,
/// complete, at a zero frame pointer or return address, or at a return into the stub of one
/// of the entry points `roots` (0s are ignored; see [`ENTRY_STUB_LEN`]); it is cut, marked
/// truncated, at an unreadable or misaligned frame, one that does not move up the stack, or
/// the depth bound.
pub fn walk_frame_pointers(
    pc: u64,
    fp: u64,
    roots: &[u64],
    read: impl FnMut(u64) -> Option<u64>,
) -> StackBuf {
    let mut stack = StackBuf::new();
    stack.push(pc);
    walk_user_frames(&mut stack, fp, roots, read);
    stack
}

/// Go on with the user frame-pointer chain at `fp`, appending to `stack` (see
/// [`walk_frame_pointers`]).
fn walk_user_frames(
    stack: &mut StackBuf,
    mut fp: u64,
    roots: &[u64],
    mut read: impl FnMut(u64) -> Option<u64>,
) {
    loop {
        if fp == 0 {
            return;
        }
        if fp % 8 != 0 {
            stack.truncated = true;
            return;
        }
        let (Some(next), Some(ret)) = (read(fp), fp.checked_add(8).and_then(&mut read)) else {
            stack.truncated = true;
            return;
        };
        if ret == 0 || !stack.push(ret) || returns_into_entry_stub(ret, roots) {
            return;
        }
        if next != 0 && next <= fp {
            stack.truncated = true;
            return;
        }
        fp = next;
    }
}

/// Walk an interrupted context that was in the kernel: `pc` and its frame pointer `fp`. The
/// kernel's frame records are read only inside its kernel stack `[kernel_stack.0,
/// kernel_stack.1)` (`read_kernel`; the interrupted code was using that stack, so it is
/// mapped), and each return address must be in the kernel's text (`is_kernel_text`).
///
/// The chain leaves the kernel stack at the frame of the kernel's entry from user mode: the
/// entry code leaves the user's frame pointer in place, so the outermost kernel frame saved
/// it. If the context entered the kernel from user mode at `user_pc` (the return frame the
/// CPU pushed at the top of the kernel stack), the walk goes on there in user memory as
/// [`walk_frame_pointers`] does: one stack, the system call or interrupt joining the
/// kernel's frames to the program's. Without `user_pc` (a kernel thread) a chain that leaves
/// the stack is cut there, truncated; one ending at a zero return address is complete.
#[allow(clippy::too_many_arguments)]
pub fn walk_kernel_frame_pointers(
    pc: u64,
    mut fp: u64,
    kernel_stack: (u64, u64),
    is_kernel_text: impl Fn(u64) -> bool,
    mut read_kernel: impl FnMut(u64) -> Option<u64>,
    user_pc: Option<u64>,
    roots: &[u64],
    read_user: impl FnMut(u64) -> Option<u64>,
) -> StackBuf {
    let (lo, hi) = kernel_stack;
    let mut stack = StackBuf::new();
    stack.push(pc);
    while fp >= lo && fp < hi {
        if fp % 8 != 0 || hi - fp < 16 {
            stack.truncated = true;
            return stack;
        }
        let (Some(next), Some(ret)) = (read_kernel(fp), read_kernel(fp + 8)) else {
            stack.truncated = true;
            return stack;
        };
        if ret == 0 {
            return stack;
        }
        if !is_kernel_text(ret) {
            stack.truncated = true;
            return stack;
        }
        if !stack.push(ret) {
            return stack;
        }
        if next >= lo && next <= fp {
            stack.truncated = true;
            return stack;
        }
        fp = next;
    }
    match user_pc {
        Some(user_pc) if fp < KERNEL_SPACE_START => {
            if stack.push(user_pc) {
                walk_user_frames(&mut stack, fp, roots, read_user);
            }
        }
        _ => stack.truncated = true,
    }
    stack
}

/// Is `ret` a return into the stub at one of the entry points `roots`?
fn returns_into_entry_stub(ret: u64, roots: &[u64]) -> bool {
    roots
        .iter()
        .any(|&entry| entry != 0 && ret > entry && ret - entry <= ENTRY_STUB_LEN)
}

/// What the interrupted address space's page tables say of a user address: the physical
/// address of its page's frame, and the entry's present and user bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPage {
    pub frame: u64,
    pub present: bool,
    pub user: bool,
}

/// One aligned word of user memory at `addr`, for the walks in interrupt context: read only
/// from a present, user-accessible page whose word lies wholly inside one of `ram`, the
/// kernel's areas of RAM (`(base, size)`, physical), so never from device memory (a user
/// mapping of MMIO: a read with side effects) nor from a frame outside RAM (not in the
/// kernel's physical map: a fault in IRQ/NMI context). `translate` walks the page tables for
/// `addr` and gives its page's frame (`page_size`, a power of two); `read_phys` reads the word
/// at a physical address and is called only when every check passed.
pub fn read_user_word_checked(
    addr: u64,
    page_size: u64,
    translate: impl FnOnce(u64) -> Option<UserPage>,
    ram: impl IntoIterator<Item = (u64, u64)>,
    read_phys: impl FnOnce(u64) -> u64,
) -> Option<u64> {
    // Aligned, so the word never crosses into the next page.
    if addr % 8 != 0 || addr >= crate::USER_END_OFFSET as u64 {
        return None;
    }
    let page = translate(addr)?;
    if !page.present || !page.user {
        return None;
    }
    let phys = page.frame.checked_add(addr & (page_size - 1))?;
    let end = phys.checked_add(8)?;
    ram.into_iter()
        .any(|(base, size)| base <= phys && base.checked_add(size).is_some_and(|e| end <= e))
        .then(|| read_phys(phys))
}
