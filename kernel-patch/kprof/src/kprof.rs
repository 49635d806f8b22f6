//! Per-process profiling: the prof table, the session state and the `sys:prof_*` ABI.
//!
//! This file is compiled twice, byte for byte: as the module `kprof` of the Redox kernel (the
//! kernel patch adds it as `src/kprof.rs`) and as the body of the host crate `kprof`, which
//! tests it and gives userspace the `sys:prof_data` layout. So it uses `core` and `alloc` only
//! and knows nothing of kernel types; the kernel glue (`src/scheme/sys/prof.rs`) feeds it CPU
//! numbers, pids and interrupted instruction pointers.
//!
//! It owns:
//! - [`Profiler`] (one global instance, [`PROFILER`]): one session at a time, its state, pid,
//!   counters and the exact-PC table. The timer hook calls [`Profiler::sample`], which is
//!   lock-free and allocation-free; with no session the hook costs one relaxed atomic load
//!   ([`Profiler::is_on`]). A session started [`CountFrom::Exec`] counts nothing until its
//!   process execs, so a launcher's exec code (userspace on Redox) never lands in the profile.
//! - The call-stack table: each counted user tick's frame-pointer chain ([`walk_frame_pointers`],
//!   given a reader of user memory by the glue), hashed into a second lock-free table
//!   ([`Profiler::sample_stack`]).
//! - Server labels: a scheme daemon that takes a request from the profiled process (or from a
//!   daemon already working for it) is labelled as working for the session until it answers
//!   ([`Profiler::note_request_taken`], [`Profiler::note_request_answered`]); its ticks are
//!   server samples, kept apart from the program's own. Ticks of idle and of other processes
//!   are counted too, so the session accounts for every tick of the run.
//! - [`parse_command`]: the text commands written to `sys:prof_ctl`.
//! - [`Snapshot`]: what `sys:prof_data` returns, its encoder and [`decode`].

// The kernel uses the encoder and the hot path, userspace the decoder: each leaves some unused.
#![allow(dead_code)]

use alloc::{boxed::Box, vec::Vec};
use core::{
    fmt,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
};

/// CPUs the per-CPU pid cache can hold (the kernel's `MAX_CPU_COUNT` on x86_64). A CPU
/// number at or above it never matches.
pub const MAX_CPUS: usize = 128;

/// Table capacity when `start` names none.
pub const DEFAULT_CAPACITY: usize = 8192;

/// Largest table a session may ask for (16 bytes a slot: 16 MiB of kernel heap).
pub const MAX_CAPACITY: usize = 1 << 20;

/// Counter limit of the kernel's profiler: a count that would go past it stops the session.
pub const COUNTER_LIMIT: u64 = u64::MAX;

/// Most frames of a recorded call stack (the sampled PC included; a kernel sample's kernel
/// frames and its user frames together); deeper chains are cut there and marked truncated.
pub const MAX_STACK_DEPTH: usize = 64;

/// Distinct call stacks a session's stack table holds when `start` names no `stacks=`.
pub const DEFAULT_STACKS: usize = 8192;

/// Most distinct call stacks a session may ask for (`stacks=`): 64 s of samples at 4 kHz even
/// if every one is a stack of its own, as a deep recursion's are; about 25 MiB of kernel heap
/// ([`StackStore`]).
pub const MAX_STACKS: usize = 1 << 18;

/// Bytes of packed stacks a stack table keeps per stack it is sized for. A stack packs into
/// 2–3 bytes a frame, a recursion's repeated return addresses into one ([`PackedStack`]): fib's
/// 32-frame stacks take 45.
pub const STACK_BYTES: usize = 64;

/// Entry points a session remembers: where its process's contexts started after a switch of
/// address space (the image's entry at exec, then new threads'), the first ones kept.
pub const MAX_ROOTS: usize = 4;

/// A return address at most this many bytes past a remembered entry point returns into that
/// entry's stub (`_start`: a few instructions and one call), which has no caller: the walk
/// ends there, complete, whatever the stub left in the frame-pointer register.
pub const ENTRY_STUB_LEN: u64 = 64;

/// Daemon contexts (by pid) that can be labelled at once as working for the session.
pub const MAX_SERVERS: usize = 16;

/// Distinct stacks of the server table: each server sample is its daemon's pid and stack (or
/// PC).
pub const SERVER_STACK_CAPACITY: usize = 1024;

/// Sampling rates a session may ask of an NMI source, per CPU and second.
pub const MIN_RATE: usize = 100;
pub const MAX_RATE: usize = 10_000;

/// First address of the kernel's half of the address space: the kernel's own end of user
/// space, `USER_END_OFFSET`, mirrored (x86_64, aarch64 and riscv64 map user space up to 2^47
/// and the kernel from -2^47, `0xFFFF_8000_0000_0000`; 32-bit x86 splits at 2 GiB, where the
/// mirror is 2 GiB again). A frame at or above it is the kernel's: profd and profil tell
/// kernel samples and frames from user ones by it. (The host crate's root gives x86_64's
/// value, or 32-bit x86's on a 32-bit host.)
pub const KERNEL_SPACE_START: u64 = crate::USER_END_OFFSET.wrapping_neg() as u64;

/// Bit of a CPU's word in the per-CPU pid cache: the CPU is switching contexts. Its samples
/// go to the pid in the word (the previous context's until the switch is on the next one's
/// stack), but the glue walks no stack then: the kernel stack, the TSS and the address space
/// change under the sample.
const SWITCHING: usize = 1 << (usize::BITS - 1);

/// How long a sampler waits for another CPU to finish writing the stack it claimed (that CPU
/// is inside its own timer interrupt, so it is a few stores away).
const STACK_READY_SPINS: u32 = 10_000;

/// The profiler the kernel uses.
pub static PROFILER: Profiler = Profiler::new(COUNTER_LIMIT);

/// Where a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum State {
    /// No session since boot.
    Idle = 0,
    /// Counting.
    Running = 1,
    /// Ended; its data stays readable until the next start.
    Stopped = 2,
}

impl State {
    pub fn from_u32(raw: u32) -> Option<State> {
        match raw {
            0 => Some(State::Idle),
            1 => Some(State::Running),
            2 => Some(State::Stopped),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Running => "running",
            State::Stopped => "stopped",
        }
    }
}

/// Why a session stopped (`None` while idle or running).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum StopReason {
    None = 0,
    /// `stop` was written to `sys:prof_ctl`.
    Request = 1,
    /// The last context of the profiled process exited.
    Exit = 2,
    /// A counter would have passed the limit; that tick was not counted.
    Overflow = 3,
}

impl StopReason {
    pub fn from_u32(raw: u32) -> Option<StopReason> {
        match raw {
            0 => Some(StopReason::None),
            1 => Some(StopReason::Request),
            2 => Some(StopReason::Exit),
            3 => Some(StopReason::Overflow),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::None => "none",
            StopReason::Request => "request",
            StopReason::Exit => "exit",
            StopReason::Overflow => "overflow",
        }
    }
}

/// When a session starts counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountFrom {
    /// At once: attaching to a running process.
    Now,
    /// From the process's next exec (its next address-space switch): a launcher starts the
    /// session on its child before the child execs the program, as perf's `enable_on_exec`.
    Exec,
}

/// What interrupts the CPUs for a session's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Source {
    /// The scheduler's timer interrupt (the PIT, or the HPET replacing it): about 246 a
    /// second per CPU on x86. It is masked while the kernel runs, so it sees user mode only,
    /// and a tick that falls in a system call is taken as the call returns, on the
    /// instruction after it.
    Timer = 0,
    /// An NMI from an HPET comparator at the session's rate, sent to every CPU: it interrupts
    /// the kernel too, so kernel samples are real.
    NmiHpet = 1,
}

impl Source {
    pub fn from_u32(raw: u32) -> Option<Source> {
        match raw {
            0 => Some(Source::Timer),
            1 => Some(Source::NmiHpet),
            _ => None,
        }
    }

    /// The name `profd`'s `status` shows (`source=nmi-hpet`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Timer => "timer",
            Source::NmiHpet => "nmi-hpet",
        }
    }
}

/// A session's sampling: its source and that source's rate (samples per second and CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    pub source: Source,
    pub rate: u64,
}

/// Why a control operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlError {
    /// The command is malformed (EINVAL).
    Malformed(ParseError),
    /// No live context has the pid (ESRCH).
    NoSuchProcess,
    /// A session is running (EBUSY).
    Busy,
    /// The tables could not be allocated (ENOMEM).
    NoMemory,
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlError::Malformed(e) => write!(f, "malformed command: {e}"),
            CtlError::NoSuchProcess => f.write_str("no such process"),
            CtlError::Busy => f.write_str("a profiling session is running"),
            CtlError::NoMemory => f.write_str("no memory for the prof table"),
        }
    }
}

/// What the control path needs from the kernel: the NMI source, the processes, and how to
/// wait. The profiler calls it only from its control operations ([`Profiler::ctl`],
/// [`Profiler::data`], [`Profiler::exited`]), each of which holds the control lock throughout:
/// starting a session, arming its source, stopping it and disarming the source are one
/// critical section, so two starts never arm the source twice and a read never disarms a
/// session being started.
pub trait KernelOps {
    /// Start the NMI source at `rate` samples a second per CPU. The rate the hardware gives,
    /// or `None` where there is no NMI source (the session then samples on the timer).
    fn arm_nmi(&mut self, rate: u64) -> Option<u64>;
    /// Stop the NMI source; nothing armed, nothing to do.
    fn disarm_nmi(&mut self);
    /// Samples a second per CPU of the timer tick (0: not known).
    fn timer_rate(&self) -> u64;
    /// The start of the lowest executable user mapping of a live context of `pid` (0: it
    /// has none); `None` if `pid` has no live context.
    fn exec_base(&mut self, pid: usize) -> Option<u64>;
    /// Called in the loop that waits for the control lock while another CPU holds it (the
    /// kernel answers TLB shootdowns there, as its own spinning locks do).
    fn wait(&self);
    /// Bytes of memory the kernel can spare for a session's tables: `start` refuses bigger
    /// ones (ENOMEM) rather than run the kernel short.
    fn spare_memory(&self) -> usize;
}

/// One slot of the prof table: `key` is the user PC plus one (0 marks an empty slot, so a
/// zeroed table is empty), `count` its ticks.
pub struct Slot {
    key: AtomicU64,
    count: AtomicU64,
}

impl Slot {
    const fn empty() -> Slot {
        Slot {
            key: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

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
    fn push(&mut self, frame: u64) -> bool {
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

/// Bytes of a packed stack at most: the owner, the flag, then a varint per frame.
const MAX_PACKED: usize = 10 + 1 + 10 * MAX_STACK_DEPTH;

/// A call stack packed as a stack table keeps it: the owner (LEB128), the truncated flag (one
/// byte), the first frame (LEB128), then each further frame as the zigzag LEB128 of its
/// difference from the frame before. Return addresses in one program are near each other, so
/// a frame takes 2–3 bytes, and a recursion's repeated return address one. Built on the
/// sampler's stack (in interrupt context: no allocation).
pub struct PackedStack {
    bytes: [u8; MAX_PACKED],
    len: usize,
}

impl PackedStack {
    pub fn new(owner: u64, stack: &StackBuf) -> PackedStack {
        let mut packed = PackedStack {
            bytes: [0; MAX_PACKED],
            len: 0,
        };
        packed.push_varint(owner);
        packed.push_byte(u8::from(stack.truncated));
        let mut previous = 0u64;
        for (i, &frame) in stack.frames().iter().enumerate() {
            if i == 0 {
                packed.push_varint(frame);
            } else {
                let delta = frame.wrapping_sub(previous) as i64;
                packed.push_varint(((delta << 1) ^ (delta >> 63)) as u64);
            }
            previous = frame;
        }
        packed
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push_byte(&mut self, byte: u8) {
        if let Some(to) = self.bytes.get_mut(self.len) {
            *to = byte;
            self.len += 1;
        }
    }

    fn push_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.push_byte(value as u8 | 0x80);
            value >>= 7;
        }
        self.push_byte(value as u8);
    }

    /// 64-bit FNV-1a of the bytes, never 0 (0 marks an empty slot).
    fn hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &byte in self.as_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        hash | 1
    }

    /// Unpack `bytes` (a packed stack, as [`PackedStack::as_bytes`]): owner and stack. Control
    /// path: the frames' vector is the one allocation, and it is fallible.
    pub fn unpack(bytes: impl Iterator<Item = u8> + Clone) -> Result<(u64, StackEntry), CtlError> {
        let mut bytes = bytes;
        let owner = read_varint(&mut bytes).unwrap_or(0);
        let truncated = bytes.next() == Some(1);
        // One frame per byte without the continuation bit.
        let depth = bytes.clone().filter(|byte| byte & 0x80 == 0).count();
        let mut frames = Vec::new();
        frames
            .try_reserve_exact(depth)
            .map_err(|_| CtlError::NoMemory)?;
        let mut previous = 0u64;
        while let Some(value) = read_varint(&mut bytes) {
            let frame = if frames.is_empty() {
                value
            } else {
                let delta = ((value >> 1) as i64) ^ -((value & 1) as i64);
                previous.wrapping_add(delta as u64)
            };
            if frames.len() == depth {
                break;
            }
            frames.push(frame);
            previous = frame;
        }
        Ok((
            owner,
            StackEntry {
                count: 0,
                truncated,
                frames,
            },
        ))
    }
}

/// The next LEB128 value of `bytes` (`None` at the end).
fn read_varint(bytes: &mut impl Iterator<Item = u8>) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes.next()?;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
}

/// One slot of a stack table: `key` the packed stack's hash (0: empty), `loc` where its bytes
/// are in the arena once written (offset << 16 | length; 0: not yet; [`LOC_NONE`]: the arena
/// was full, the slot holds no stack), `count` its samples.
pub struct StackSlot {
    key: AtomicU64,
    loc: AtomicU64,
    count: AtomicU64,
}

/// A claimed slot that holds no stack (the arena was full).
const LOC_NONE: u64 = u64::MAX;

impl StackSlot {
    const fn empty() -> StackSlot {
        StackSlot {
            key: AtomicU64::new(0),
            loc: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

/// The memory of a stack table, allocated by `start` (control path, fallibly) and owned by
/// the [`StackStore`] while its session may sample.
pub struct StackTables {
    slots: Box<[StackSlot]>,
    arena: Box<[AtomicU8]>,
    stacks: usize,
}

impl StackTables {
    /// Tables for `stacks` distinct stacks: `stacks + stacks / 4` slots (a hash table never
    /// more than 80 % full) and [`STACK_BYTES`] of arena a stack. Out of memory: `NoMemory`.
    fn try_new(stacks: usize) -> Result<StackTables, CtlError> {
        let mut slots = Vec::new();
        let slot_count = stacks + stacks / 4;
        slots
            .try_reserve_exact(slot_count)
            .map_err(|_| CtlError::NoMemory)?;
        slots.resize_with(slot_count, StackSlot::empty);
        let mut arena = Vec::new();
        let arena_len = stacks.saturating_mul(STACK_BYTES);
        arena
            .try_reserve_exact(arena_len)
            .map_err(|_| CtlError::NoMemory)?;
        arena.resize_with(arena_len, || AtomicU8::new(0));
        Ok(StackTables {
            slots: slots.into_boxed_slice(),
            arena: arena.into_boxed_slice(),
            stacks,
        })
    }

    /// Bytes [`StackTables::try_new`] allocates for `stacks`.
    fn bytes_for(stacks: usize) -> usize {
        (stacks + stacks / 4)
            .saturating_mul(size_of::<StackSlot>())
            .saturating_add(stacks.saturating_mul(STACK_BYTES))
    }

    fn none() -> StackTables {
        StackTables {
            slots: Box::new([]),
            arena: Box::new([]),
            stacks: 0,
        }
    }
}

/// A table of distinct call stacks and their counts, lock-free for the samplers: slots in
/// open addressing keyed by the hash of the packed stack, its bytes in an arena filled from the
/// front. At most `stacks` distinct stacks (the session's `stacks=`), as long as the arena
/// holds them; a stack that finds no room is dropped, and counted so by the caller.
pub struct StackStore {
    slots: AtomicPtr<StackSlot>,
    slot_count: AtomicUsize,
    arena: AtomicPtr<AtomicU8>,
    arena_len: AtomicUsize,
    /// Arena bytes handed out (may pass `arena_len`: the overflowing claim got nothing).
    arena_used: AtomicUsize,
    /// Most distinct stacks, and how many slots hold one (or are being filled).
    stacks: AtomicUsize,
    stored: AtomicUsize,
}

impl StackStore {
    const fn new() -> StackStore {
        StackStore {
            slots: AtomicPtr::new(core::ptr::null_mut()),
            slot_count: AtomicUsize::new(0),
            arena: AtomicPtr::new(core::ptr::null_mut()),
            arena_len: AtomicUsize::new(0),
            arena_used: AtomicUsize::new(0),
            stacks: AtomicUsize::new(0),
            stored: AtomicUsize::new(0),
        }
    }

    /// The most distinct stacks it holds.
    fn capacity(&self) -> usize {
        self.stacks.load(Ordering::Acquire)
    }

    /// Put `new` in place and hand back the tables it had.
    ///
    /// # Safety
    /// No sampler is in the store (the session is off and quiesced) and no reader holds it
    /// (the caller has the control lock).
    unsafe fn replace(&self, new: StackTables) -> StackTables {
        let slot_count = new.slots.len();
        let arena_len = new.arena.len();
        let slots = Box::into_raw(new.slots).cast::<StackSlot>();
        let arena = Box::into_raw(new.arena).cast::<AtomicU8>();
        let old_slots = self.slots.swap(slots, Ordering::AcqRel);
        let old_slot_count = self.slot_count.swap(slot_count, Ordering::AcqRel);
        let old_arena = self.arena.swap(arena, Ordering::AcqRel);
        let old_arena_len = self.arena_len.swap(arena_len, Ordering::AcqRel);
        let old_stacks = self.stacks.swap(new.stacks, Ordering::AcqRel);
        self.arena_used.store(0, Ordering::Relaxed);
        self.stored.store(0, Ordering::Relaxed);
        if old_slots.is_null() {
            return StackTables::none();
        }
        // SAFETY: these came from `Box::into_raw` of slices of these lengths (above, by the
        // previous `replace`), and by the caller nobody uses them any more.
        unsafe {
            StackTables {
                slots: Box::from_raw(core::ptr::slice_from_raw_parts_mut(
                    old_slots,
                    old_slot_count,
                )),
                arena: Box::from_raw(core::ptr::slice_from_raw_parts_mut(
                    old_arena,
                    old_arena_len,
                )),
                stacks: old_stacks,
            }
        }
    }

    /// The slots and the arena.
    ///
    /// # Safety
    /// The tables are not replaced meanwhile: the caller is a sampler in flight with the
    /// session on (see `quiesce`), or holds the control lock.
    unsafe fn tables(&self) -> (&[StackSlot], &[AtomicU8]) {
        let slots = self.slots.load(Ordering::Acquire);
        let arena = self.arena.load(Ordering::Acquire);
        if slots.is_null() || arena.is_null() {
            return (&[], &[]);
        }
        // SAFETY: by the caller, they hold these lengths (set with the pointers by `replace`).
        unsafe {
            (
                core::slice::from_raw_parts(slots, self.slot_count.load(Ordering::Acquire)),
                core::slice::from_raw_parts(arena, self.arena_len.load(Ordering::Acquire)),
            )
        }
    }

    /// The slot of `packed`: found, or claimed and written. `None` if the table or the arena
    /// is full, or another CPU is still writing the same stack's slot. Interrupt context:
    /// lock-free and allocation-free; a claimer writes the bytes, then publishes them with
    /// `loc` (Release); a CPU finding the same key waits for `loc` (the claimer is inside its
    /// own interrupt, a few stores away; bounded spin) and takes the slot only if the bytes
    /// match (another stack with that hash probes on).
    ///
    /// # Safety
    /// As for [`StackStore::tables`].
    unsafe fn slot_of(&self, packed: &PackedStack) -> Option<&StackSlot> {
        // SAFETY: by the caller.
        let (slots, arena) = unsafe { self.tables() };
        if slots.is_empty() {
            return None;
        }
        let bytes = packed.as_bytes();
        let key = packed.hash();
        let mut index = probe_start(key, slots.len());
        for _ in 0..slots.len() {
            let slot = slots.get(index)?;
            let mut found = slot.key.load(Ordering::Acquire);
            if found == 0 {
                // A new stack: only while the table has room for one more.
                if self.stored.fetch_add(1, Ordering::AcqRel) >= self.capacity() {
                    self.stored.fetch_sub(1, Ordering::AcqRel);
                    return None;
                }
                match slot
                    .key
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => {
                        let at = self.arena_used.fetch_add(bytes.len(), Ordering::Relaxed);
                        let Some(to) = at
                            .checked_add(bytes.len())
                            .and_then(|end| arena.get(at..end))
                        else {
                            slot.loc.store(LOC_NONE, Ordering::Release);
                            return None;
                        };
                        for (to, &byte) in to.iter().zip(bytes) {
                            to.store(byte, Ordering::Relaxed);
                        }
                        slot.loc
                            .store(((at as u64) << 16) | bytes.len() as u64, Ordering::Release);
                        return Some(slot);
                    }
                    Err(actual) => {
                        self.stored.fetch_sub(1, Ordering::AcqRel);
                        found = actual;
                    }
                }
            }
            if found == key {
                let mut loc = slot.loc.load(Ordering::Acquire);
                let mut spins = 0;
                while loc == 0 && spins < STACK_READY_SPINS {
                    core::hint::spin_loop();
                    spins += 1;
                    loc = slot.loc.load(Ordering::Acquire);
                }
                if loc == 0 {
                    return None;
                }
                if loc != LOC_NONE && stored_bytes(arena, loc).eq(bytes.iter().copied()) {
                    return Some(slot);
                }
            }
            index += 1;
            if index == slots.len() {
                index = 0;
            }
        }
        None
    }
}

/// The bytes a published `loc` names in `arena` (none if it names bytes outside it).
fn stored_bytes(arena: &[AtomicU8], loc: u64) -> impl Iterator<Item = u8> + Clone + '_ {
    let at = (loc >> 16) as usize;
    let len = (loc & 0xffff) as usize;
    arena
        .get(at..at.saturating_add(len))
        .unwrap_or(&[])
        .iter()
        .map(|byte| byte.load(Ordering::Relaxed))
}

/// A daemon working for the session: its pid (0: free slot), the request it took last,
/// (scheme, tag), and whether it has answered it. Written by the daemon's own context and by
/// the tick on the CPU that runs it.
pub struct ServerLabel {
    pid: AtomicUsize,
    scheme: AtomicU64,
    tag: AtomicU64,
    answered: AtomicBool,
}

impl ServerLabel {
    const fn free() -> ServerLabel {
        ServerLabel {
            pid: AtomicUsize::new(0),
            scheme: AtomicU64::new(0),
            tag: AtomicU64::new(0),
            answered: AtomicBool::new(false),
        }
    }

    fn set(&self, scheme: u64, tag: u64) {
        self.scheme.store(scheme, Ordering::Relaxed);
        self.tag.store(tag, Ordering::Relaxed);
        self.answered.store(false, Ordering::Relaxed);
    }
}

/// A session's state and counters, plus the per-CPU cache of the running pid.
///
/// Concurrency: the sampling hooks ([`Profiler::sample_from`]) run on every CPU at once and
/// only use atomics. The control operations ([`Profiler::ctl`], [`Profiler::data`],
/// [`Profiler::exited`]) hold the control lock, a spin lock taken only outside interrupts,
/// while they run, hardware included ([`KernelOps`]). The sampler's own stop (an overflow)
/// is one CAS on the state word, as every stop is, so the first stop keeps its reason. A table
/// is freed only by `start` after the session is off and no sampler is inside
/// (`in_flight == 0`).
pub struct Profiler {
    /// The one flag the tick reads while no session runs.
    on: AtomicBool,
    /// [`State`] in bits 0..8, [`StopReason`] in bits 8..16: changed together by one CAS so
    /// the first stop wins and its reason sticks.
    status: AtomicU32,
    pid: AtomicUsize,
    /// A [`CountFrom::Exec`] session whose process has not exec'd yet: ticks are not counted.
    awaiting_exec: AtomicBool,
    /// The session's [`Source`] (only its samples count) and rate.
    source: AtomicU32,
    rate: AtomicU64,
    exec_base: AtomicU64,
    addr_space_switches: AtomicU64,
    /// Entry points of the process's address-space switches (0: unused), the walk's roots.
    roots: [AtomicU64; MAX_ROOTS],
    user_ticks: AtomicU64,
    kernel_ticks: AtomicU64,
    dropped: AtomicU64,
    table: AtomicPtr<Slot>,
    capacity: AtomicUsize,
    /// The call-stack table and the stacks that found it full.
    stacks: StackStore,
    stacks_dropped: AtomicU64,
    /// Daemons working for the session now.
    labels: [ServerLabel; MAX_SERVERS],
    /// Server samples (owner = the daemon's pid) and the ones that found the table full.
    server_stacks: StackStore,
    server_user_ticks: AtomicU64,
    server_kernel_ticks: AtomicU64,
    servers_dropped: AtomicU64,
    /// Ticks of the idle contexts and kernel threads (pid 0), and of every other process.
    idle_ticks: AtomicU64,
    other_ticks: AtomicU64,
    /// Samplers that saw `on` and may be touching the table.
    in_flight: AtomicUsize,
    /// The control lock.
    ctl_busy: AtomicBool,
    /// Pid of the context running on each CPU, written at context switch (0: none/kernel),
    /// with [`SWITCHING`] while a switch is under way.
    cpu_pid: [AtomicUsize; MAX_CPUS],
    limit: u64,
}

impl Profiler {
    /// An idle profiler whose counters stop the session rather than pass `limit`.
    pub const fn new(limit: u64) -> Profiler {
        Profiler {
            on: AtomicBool::new(false),
            status: AtomicU32::new(State::Idle as u32),
            pid: AtomicUsize::new(0),
            awaiting_exec: AtomicBool::new(false),
            source: AtomicU32::new(Source::Timer as u32),
            rate: AtomicU64::new(0),
            exec_base: AtomicU64::new(0),
            addr_space_switches: AtomicU64::new(0),
            roots: [const { AtomicU64::new(0) }; MAX_ROOTS],
            user_ticks: AtomicU64::new(0),
            kernel_ticks: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            table: AtomicPtr::new(core::ptr::null_mut()),
            capacity: AtomicUsize::new(0),
            stacks: StackStore::new(),
            stacks_dropped: AtomicU64::new(0),
            labels: [const { ServerLabel::free() }; MAX_SERVERS],
            server_stacks: StackStore::new(),
            server_user_ticks: AtomicU64::new(0),
            server_kernel_ticks: AtomicU64::new(0),
            servers_dropped: AtomicU64::new(0),
            idle_ticks: AtomicU64::new(0),
            other_ticks: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            ctl_busy: AtomicBool::new(false),
            cpu_pid: [const { AtomicUsize::new(0) }; MAX_CPUS],
            limit,
        }
    }

    /// Is a session counting? The whole cost of the timer hook when none is.
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Does the running session count the samples of `source`? What the hook of each source
    /// checks first: one more relaxed load only while a session runs.
    #[inline(always)]
    pub fn takes(&self, source: Source) -> bool {
        self.is_on() && self.source.load(Ordering::Relaxed) == source as u32
    }

    /// Is `pid` the process of the running session?
    #[inline]
    pub fn is_profiling(&self, pid: usize) -> bool {
        self.is_on() && pid != 0 && self.pid.load(Ordering::Relaxed) == pid
    }

    /// `pid` runs on `cpu` (0 for kernel threads and idle): the `attrs` hook, when a running
    /// context is given its pid.
    #[inline]
    pub fn note_switch(&self, cpu: usize, pid: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.store(pid, Ordering::Relaxed);
        }
    }

    /// Scheduler hook, when `cpu` has chosen the next context: a switch begins. Until
    /// [`Profiler::note_switch_to`] the CPU runs the switch on the previous context's stack,
    /// and its samples stay that context's.
    #[inline]
    pub fn note_switch_begin(&self, cpu: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.fetch_or(SWITCHING, Ordering::Relaxed);
        }
    }

    /// Scheduler hook, on the next context's stack (the switch's finish hook): its samples are
    /// `pid`'s from here, still without a walk until [`Profiler::note_switch_end`].
    #[inline]
    pub fn note_switch_to(&self, cpu: usize, pid: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.store(pid | SWITCHING, Ordering::Relaxed);
        }
    }

    /// Scheduler hook, once the next context's address space is the CPU's: the switch is over.
    #[inline]
    pub fn note_switch_end(&self, cpu: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.fetch_and(!SWITCHING, Ordering::Relaxed);
        }
    }

    /// Would a user tick on `cpu` be counted with its stack now, as the program's or as a
    /// server's? The glue walks the user stack only then.
    #[inline]
    pub fn wants_stack(&self, cpu: usize) -> bool {
        if !self.is_on() || self.awaiting_exec.load(Ordering::Relaxed) {
            return false;
        }
        let Some(pid) = self
            .cpu_pid
            .get(cpu)
            .map(|slot| slot.load(Ordering::Relaxed))
        else {
            return false;
        };
        // No walk while the CPU switches contexts (see `SWITCHING`).
        pid & SWITCHING == 0
            && pid != 0
            && ((pid == self.pid.load(Ordering::Relaxed) && self.stacks.capacity() > 0)
                || self.is_serving(pid))
    }

    /// Is `pid` a daemon labelled as working for the running session?
    #[inline]
    pub fn is_serving(&self, pid: usize) -> bool {
        self.is_on() && self.label_of(pid).is_some()
    }

    fn label_of(&self, pid: usize) -> Option<&ServerLabel> {
        if pid == 0 {
            return None;
        }
        self.labels
            .iter()
            .find(|l| l.pid.load(Ordering::Relaxed) == pid)
    }

    /// Scheme hook, in the daemon's context: daemon `server` took request `tag` of `scheme`,
    /// made by `client`. If the client is the profiled process, or a daemon working for it
    /// (so chains are followed), `server` now works for the session until it has answered
    /// that request ([`Profiler::note_request_answered`]); a request from anyone else ends its
    /// label. A daemon that takes several requests before answering is labelled by the last
    /// one it took. With all [`MAX_SERVERS`] labels in use, a further daemon is not labelled.
    pub fn note_request_taken(&self, server: usize, client: usize, scheme: u64, tag: u64) {
        if !self.is_on() || server == 0 || server == self.pid.load(Ordering::Relaxed) {
            return;
        }
        let for_session =
            client != 0 && (client == self.pid.load(Ordering::Relaxed) || self.is_serving(client));
        let existing = self
            .labels
            .iter()
            .find(|l| l.pid.load(Ordering::Relaxed) == server);
        match (for_session, existing) {
            (true, Some(label)) => label.set(scheme, tag),
            (true, None) => {
                if let Some(label) = self.labels.iter().find(|l| {
                    l.pid
                        .compare_exchange(0, server, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                }) {
                    label.set(scheme, tag);
                }
            }
            (false, Some(label)) => label.pid.store(0, Ordering::Release),
            (false, None) => {}
        }
    }

    /// Scheme hook, in the daemon's context: daemon `server` is answering request `tag` of
    /// `scheme`. If that is the request it was labelled by, its label ends with the next tick
    /// that finds it running, which still counts for the session: system calls run with
    /// interrupts masked, so a tick that fell in the answering call itself is delivered as
    /// the daemon returns from it.
    pub fn note_request_answered(&self, server: usize, scheme: u64, tag: u64) {
        if let Some(label) = self.label_of(server)
            && label.scheme.load(Ordering::Relaxed) == scheme
            && label.tag.load(Ordering::Relaxed) == tag
        {
            label.answered.store(true, Ordering::Relaxed);
        }
    }

    /// Timer hook: `cpu` was interrupted at `pc`, in user mode if `user`.
    ///
    /// Interrupt context: lock-free and allocation-free (atomic loads, CAS and bounded probing
    /// only). Counts only if the context on `cpu` belongs to the profiled pid.
    pub fn sample(&self, cpu: usize, user: bool, pc: u64) {
        self.sample_stack(cpu, user, pc, None);
    }

    /// [`Profiler::sample`] with the call stack (whose first frame is `pc`), from the timer.
    pub fn sample_stack(&self, cpu: usize, user: bool, pc: u64, stack: Option<&StackBuf>) {
        self.sample_from(Source::Timer, cpu, user, pc, stack);
    }

    /// The hook of `source` (the timer tick, or an NMI): counts the sample if the session
    /// samples with that source, its PC into the exact-PC table (user or kernel address) and
    /// its call stack, where the glue walked one, into the stack table.
    ///
    /// Every sample of a running session (once its process has exec'd) lands in exactly one
    /// account: the program's (user or kernel), a labelled daemon's (server samples, user or
    /// kernel), idle (pid 0: idle contexts, kernel threads), or another process's. Runs in
    /// interrupt or NMI context: lock-free and allocation-free; the two sources never count
    /// in the same session, so a sampler never nests inside another on its own CPU.
    pub fn sample_from(
        &self,
        source: Source,
        cpu: usize,
        user: bool,
        pc: u64,
        stack: Option<&StackBuf>,
    ) {
        if self.source.load(Ordering::Relaxed) != source as u32 {
            return;
        }
        let Some(slot) = self.cpu_pid.get(cpu) else {
            return;
        };
        let pid = slot.load(Ordering::Relaxed) & !SWITCHING;
        // Announce ourselves before re-checking `on` (SeqCst pairs with `quiesce`), so a
        // table is never freed under us.
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if self.on.load(Ordering::SeqCst) && !self.awaiting_exec.load(Ordering::Acquire) {
            if pid != 0 && pid == self.pid.load(Ordering::Relaxed) {
                if self.bump(if user {
                    &self.user_ticks
                } else {
                    &self.kernel_ticks
                }) {
                    self.insert(pc);
                    if let Some(stack) = stack {
                        self.insert_stack(&self.stacks, &self.stacks_dropped, 0, stack);
                    }
                }
            } else if pid == 0 {
                self.bump(&self.idle_ticks);
            } else if let Some(label) = self.label_of(pid) {
                if label.answered.load(Ordering::Relaxed) {
                    // The answer's tick: the last of this label.
                    let _ = label
                        .pid
                        .compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Relaxed);
                }
                if self.bump(if user {
                    &self.server_user_ticks
                } else {
                    &self.server_kernel_ticks
                }) {
                    // Without a walk the sample is its PC alone, cut there.
                    let mut alone = StackBuf::new();
                    let stack = stack.unwrap_or_else(|| {
                        alone.push(pc);
                        alone.truncated = true;
                        &alone
                    });
                    self.insert_stack(
                        &self.server_stacks,
                        &self.servers_dropped,
                        pid as u64,
                        stack,
                    );
                }
            } else {
                self.bump(&self.other_ticks);
            }
        }
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Add one to `counter` unless that would pass the limit; then stop the session instead
    /// (reason overflow) and leave the tick uncounted.
    fn bump(&self, counter: &AtomicU64) -> bool {
        let mut current = counter.load(Ordering::Relaxed);
        loop {
            if current >= self.limit {
                self.stop_with(StopReason::Overflow);
                return false;
            }
            match counter.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Count one tick at `pc`: open addressing with linear probing; a free slot is claimed by
    /// CAS on its key. A full table (or the one PC that has no key) counts as dropped.
    fn insert(&self, pc: u64) {
        let key = pc.wrapping_add(1);
        let table = self.table.load(Ordering::Acquire);
        let capacity = self.capacity.load(Ordering::Acquire);
        if key == 0 || table.is_null() || capacity == 0 {
            self.bump(&self.dropped);
            return;
        }
        // SAFETY: `table` holds `capacity` slots and is not freed while we are in flight
        // with `on` seen set (see `quiesce`).
        let slots = unsafe { core::slice::from_raw_parts(table, capacity) };
        let mut index = probe_start(pc, capacity);
        for _ in 0..capacity {
            if let Some(slot) = slots.get(index) {
                let mut found = slot.key.load(Ordering::Acquire);
                if found == 0 {
                    found =
                        match slot
                            .key
                            .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                        {
                            Ok(_) => key,
                            Err(actual) => actual,
                        };
                }
                if found == key {
                    self.bump(&slot.count);
                    return;
                }
            }
            index += 1;
            if index == capacity {
                index = 0;
            }
        }
        self.bump(&self.dropped);
    }

    /// Count one call stack of `owner` in a stack table (the program's, `owner` 0, or the
    /// servers'), packed ([`PackedStack`]) and found or added by [`StackStore`]. A stack that
    /// finds no room is counted in `dropped`.
    fn insert_stack(&self, store: &StackStore, dropped: &AtomicU64, owner: u64, stack: &StackBuf) {
        if stack.len == 0 {
            self.bump(dropped);
            return;
        }
        let packed = PackedStack::new(owner, stack);
        // SAFETY: the tables are replaced only by `start` after `quiesce`, and we are in
        // flight with the session seen on.
        match unsafe { store.slot_of(&packed) } {
            Some(slot) => self.bump(&slot.count),
            None => self.bump(dropped),
        };
    }

    /// `sys:prof_ctl`: carry out one command ([`parse_command`]), holding the control lock
    /// throughout, so a command and the NMI source it arms or disarms are one step for every
    /// other control operation.
    ///
    /// `start`: the previous session's data is discarded. Refused if `pid` has no live context
    /// (checked first), or a session is running (its source is left alone). With `rate=` the
    /// NMI source is armed at that rate, or the session samples on the timer where there is
    /// none. Counting starts now, or with `exec` at the process's next exec.
    /// `stop`: stops the running session (reason request) and the NMI source; never fails.
    pub fn ctl(&self, input: &[u8], kernel: &mut impl KernelOps) -> Result<(), CtlError> {
        let command = parse_command(input).map_err(CtlError::Malformed)?;
        let _ctl = self.lock_ctl(kernel);
        match command {
            Command::Stop => {
                self.stop_with(StopReason::Request);
                // Also the source of a session an overflow ended (in the sampler).
                kernel.disarm_nmi();
                Ok(())
            }
            Command::Start {
                pid,
                capacity,
                from,
                rate,
                stacks,
            } => self.start_locked(pid, capacity, from, rate, stacks, kernel),
        }
    }

    /// `start`, under the control lock; the arguments are checked by [`parse_command`].
    fn start_locked(
        &self,
        pid: usize,
        capacity: usize,
        from: CountFrom,
        rate: Option<usize>,
        stacks: usize,
        kernel: &mut impl KernelOps,
    ) -> Result<(), CtlError> {
        if kernel.exec_base(pid).is_none() {
            return Err(CtlError::NoSuchProcess);
        }
        if self.state() == State::Running {
            return Err(CtlError::Busy);
        }
        // Tables the kernel cannot spare the memory for are refused, not tried: its heap
        // grows on demand and cannot fail softly.
        let bytes = capacity
            .saturating_mul(size_of::<Slot>())
            .saturating_add(StackTables::bytes_for(stacks))
            .saturating_add(StackTables::bytes_for(SERVER_STACK_CAPACITY));
        if bytes > kernel.spare_memory() {
            return Err(CtlError::NoMemory);
        }
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(capacity)
            .map_err(|_| CtlError::NoMemory)?;
        slots.resize_with(capacity, Slot::empty);
        let stack_tables = StackTables::try_new(stacks)?;
        let server_tables = StackTables::try_new(SERVER_STACK_CAPACITY)?;
        let new_table = Box::into_raw(slots.into_boxed_slice()).cast::<Slot>();
        // The last session's source, if an overflow ended it; then this session's.
        kernel.disarm_nmi();
        let sampling = match rate.and_then(|hz| kernel.arm_nmi(hz as u64)) {
            Some(hz) => Sampling {
                source: Source::NmiHpet,
                rate: hz,
            },
            None => Sampling {
                source: Source::Timer,
                rate: kernel.timer_rate(),
            },
        };

        self.quiesce();
        let old_table = self.table.swap(new_table, Ordering::AcqRel);
        let old_capacity = self.capacity.swap(capacity, Ordering::AcqRel);
        // SAFETY: the session is off and no sampler is in flight, and we hold the control
        // lock, so nobody else holds the old tables; they are freed here.
        unsafe {
            free_table(old_table, old_capacity);
            drop(self.stacks.replace(stack_tables));
            drop(self.server_stacks.replace(server_tables));
        }

        for counter in [
            &self.exec_base,
            &self.addr_space_switches,
            &self.user_ticks,
            &self.kernel_ticks,
            &self.dropped,
            &self.stacks_dropped,
            &self.server_user_ticks,
            &self.server_kernel_ticks,
            &self.servers_dropped,
            &self.idle_ticks,
            &self.other_ticks,
        ]
        .into_iter()
        .chain(&self.roots)
        {
            counter.store(0, Ordering::Relaxed);
        }
        // The last session's daemons work for nobody now.
        for label in &self.labels {
            label.pid.store(0, Ordering::Relaxed);
        }
        self.pid.store(pid, Ordering::Relaxed);
        self.source.store(sampling.source as u32, Ordering::Relaxed);
        self.rate.store(sampling.rate, Ordering::Relaxed);
        self.awaiting_exec
            .store(from == CountFrom::Exec, Ordering::Release);
        self.status.store(
            status_word(State::Running, StopReason::None),
            Ordering::Release,
        );
        self.on.store(true, Ordering::SeqCst);
        // The process may have exited since the check above, before the exit hook could see
        // the session; else its text's place is known now if it has exec'd (the exec hook
        // updates it).
        match kernel.exec_base(pid) {
            Some(base) => self.exec_base.store(base, Ordering::Relaxed),
            None => {
                self.stop_with(StopReason::Exit);
                kernel.disarm_nmi();
            }
        }
        Ok(())
    }

    /// Exit hook: a context of `pid` has left the context list. If it was the last one of the
    /// session's process, the session ends (reason exit) and its NMI source stops.
    pub fn exited(&self, pid: usize, kernel: &mut impl KernelOps) {
        if !self.is_profiling(pid) || kernel.exec_base(pid).is_some() {
            return;
        }
        let _ctl = self.lock_ctl(kernel);
        if self.pid.load(Ordering::Relaxed) == pid && self.stop_with(StopReason::Exit) {
            kernel.disarm_nmi();
        }
    }

    /// A context of `pid` switched to a new address space (exec, or a new thread being given
    /// its process's space) whose lowest executable user mapping starts at `exec_base`, and
    /// starts at `entry`. A session waiting for the exec counts from here on; the entry
    /// becomes a root of the stack walk (the first [`MAX_ROOTS`] distinct ones are kept).
    pub fn note_addr_space_switch(&self, pid: usize, exec_base: u64, entry: u64) {
        if self.is_profiling(pid) {
            self.exec_base.store(exec_base, Ordering::Relaxed);
            self.addr_space_switches.fetch_add(1, Ordering::Relaxed);
            // Control path, not the tick: a free slot is claimed with a CAS; a racing twin
            // may take a second slot, which costs nothing but the slot.
            if entry != 0 && !self.roots().contains(&entry) {
                let _ = self.roots.iter().find(|slot| {
                    slot.compare_exchange(0, entry, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                });
            }
            self.awaiting_exec.store(false, Ordering::Release);
        }
    }

    /// The entry points the stack walk stops at (0: none), see [`walk_frame_pointers`].
    #[inline]
    pub fn roots(&self) -> [u64; MAX_ROOTS] {
        core::array::from_fn(|i| self.roots[i].load(Ordering::Relaxed))
    }

    /// Is the running session still waiting for its process to exec?
    pub fn is_awaiting_exec(&self) -> bool {
        self.is_on() && self.awaiting_exec.load(Ordering::Acquire)
    }

    /// Session state and stop reason.
    pub fn status(&self) -> (State, StopReason) {
        let word = self.status.load(Ordering::Acquire);
        (
            State::from_u32(word & 0xff).unwrap_or(State::Idle),
            StopReason::from_u32(word >> 8).unwrap_or(StopReason::None),
        )
    }

    pub fn state(&self) -> State {
        self.status().0
    }

    /// The sampling of the running (or last) session.
    pub fn sampling(&self) -> Sampling {
        Sampling {
            source: Source::from_u32(self.source.load(Ordering::Relaxed)).unwrap_or(Source::Timer),
            rate: self.rate.load(Ordering::Relaxed),
        }
    }

    /// `sys:prof_data`: copy out the session, counters and the non-empty slots sorted by
    /// address, under the control lock. After the session has stopped the numbers are final
    /// and `user_ticks + kernel_ticks == sum(counts) + dropped`, and its NMI source is
    /// stopped here if nothing stopped it yet (an overflow ends a session in the sampler,
    /// which cannot touch the hardware); while it runs they are a moment's view. Allocates;
    /// never call from interrupt context.
    pub fn data(&self, kernel: &mut impl KernelOps) -> Result<Snapshot, CtlError> {
        let _ctl = self.lock_ctl(kernel);
        let (state, stop_reason) = self.status();
        if state != State::Running {
            kernel.disarm_nmi();
            self.quiesce();
        }
        let table = self.table.load(Ordering::Acquire);
        let capacity = self.capacity.load(Ordering::Acquire);
        let slots: &[Slot] = if table.is_null() {
            &[]
        } else {
            // SAFETY: only `start` frees the table and it needs the control lock we hold.
            unsafe { core::slice::from_raw_parts(table, capacity) }
        };
        let used = slots
            .iter()
            .filter(|slot| slot.key.load(Ordering::Acquire) != 0)
            .count();
        let mut entries = Vec::new();
        entries
            .try_reserve_exact(used)
            .map_err(|_| CtlError::NoMemory)?;
        for slot in slots {
            // Slots claimed after the count above wait for the next snapshot.
            if entries.len() == used {
                break;
            }
            let key = slot.key.load(Ordering::Acquire);
            if key != 0 {
                entries.push(Entry {
                    addr: key - 1,
                    count: slot.count.load(Ordering::Relaxed),
                });
            }
        }
        entries.sort_unstable_by_key(|entry| entry.addr);
        // SAFETY (both): only `start` frees the tables, and it needs the control lock we hold.
        let mut stacks = unsafe { read_stack_table(&self.stacks, |_, stack| stack) }?;
        stacks.sort_unstable_by(|a, b| (&a.frames, a.truncated).cmp(&(&b.frames, b.truncated)));
        let mut server_stacks = unsafe {
            read_stack_table(&self.server_stacks, |pid, stack| ServerStack { pid, stack })
        }?;
        server_stacks.sort_unstable_by(|a, b| {
            (a.pid, &a.stack.frames, a.stack.truncated).cmp(&(
                b.pid,
                &b.stack.frames,
                b.stack.truncated,
            ))
        });
        let sampling = self.sampling();
        Ok(Snapshot {
            state,
            stop_reason,
            source: sampling.source,
            rate: sampling.rate,
            pid: self.pid.load(Ordering::Relaxed) as u64,
            exec_base: self.exec_base.load(Ordering::Relaxed),
            addr_space_switches: self.addr_space_switches.load(Ordering::Relaxed),
            user_ticks: self.user_ticks.load(Ordering::Relaxed),
            kernel_ticks: self.kernel_ticks.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            capacity: capacity as u64,
            entries,
            stacks_dropped: self.stacks_dropped.load(Ordering::Relaxed),
            stack_capacity: self.stacks.capacity() as u64,
            stacks,
            idle_ticks: self.idle_ticks.load(Ordering::Relaxed),
            other_ticks: self.other_ticks.load(Ordering::Relaxed),
            server_user_ticks: self.server_user_ticks.load(Ordering::Relaxed),
            server_kernel_ticks: self.server_kernel_ticks.load(Ordering::Relaxed),
            servers_dropped: self.servers_dropped.load(Ordering::Relaxed),
            server_stack_capacity: self.server_stacks.capacity() as u64,
            server_stacks,
        })
    }

    /// Running -> stopped with `reason`; the first stop wins.
    fn stop_with(&self, reason: StopReason) -> bool {
        let stopped = self
            .status
            .compare_exchange(
                status_word(State::Running, StopReason::None),
                status_word(State::Stopped, reason),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if stopped {
            self.on.store(false, Ordering::SeqCst);
        }
        stopped
    }

    /// Wait for samplers that saw the session on to leave. They never block, so this is
    /// short; called with `on` clear (SeqCst pairs with `sample`).
    fn quiesce(&self) {
        while self.in_flight.load(Ordering::SeqCst) != 0 {
            core::hint::spin_loop();
        }
    }

    /// Take the control lock, waiting for it (control path only, never in an interrupt: the
    /// holder runs with interrupts masked, as the kernel does outside user mode, and never
    /// blocks, so the wait is short).
    fn lock_ctl(&self, kernel: &impl KernelOps) -> CtlGuard<'_> {
        while self
            .ctl_busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            kernel.wait();
            core::hint::spin_loop();
        }
        CtlGuard(&self.ctl_busy)
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let table = *self.table.get_mut();
        let capacity = *self.capacity.get_mut();
        // SAFETY: `&mut self`: no sampler or control operation can be running.
        unsafe {
            free_table(table, capacity);
            drop(self.stacks.replace(StackTables::none()));
            drop(self.server_stacks.replace(StackTables::none()));
        }
    }
}

struct CtlGuard<'a>(&'a AtomicBool);

impl Drop for CtlGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn status_word(state: State, reason: StopReason) -> u32 {
    state as u32 | (reason as u32) << 8
}

/// The stacks of a stack table, each made by `make` from its owner and its stack, in table
/// order. Every allocation is fallible: out of memory is [`CtlError::NoMemory`].
///
/// # Safety
/// The tables are not replaced meanwhile (the caller holds the control lock).
unsafe fn read_stack_table<T>(
    store: &StackStore,
    make: impl Fn(u64, StackEntry) -> T,
) -> Result<Vec<T>, CtlError> {
    // SAFETY: by the caller.
    let (slots, arena) = unsafe { store.tables() };
    let published = |slot: &StackSlot| {
        let loc = slot.loc.load(Ordering::Acquire);
        (loc != 0 && loc != LOC_NONE).then_some(loc)
    };
    let written = slots
        .iter()
        .filter(|slot| published(slot).is_some())
        .count();
    let mut stacks = Vec::new();
    stacks
        .try_reserve_exact(written)
        .map_err(|_| CtlError::NoMemory)?;
    for slot in slots {
        // A slot written after the count above, or still being written by a sampler, waits
        // for the next snapshot.
        if stacks.len() == written {
            break;
        }
        let Some(loc) = published(slot) else {
            continue;
        };
        let (owner, mut stack) = PackedStack::unpack(stored_bytes(arena, loc))?;
        stack.count = slot.count.load(Ordering::Relaxed);
        stacks.push(make(owner, stack));
    }
    Ok(stacks)
}

/// Fibonacci hashing of the PC, mapped onto `0..capacity` by a multiply (no division).
fn probe_start(pc: u64, capacity: usize) -> usize {
    let hash = pc.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((hash as u128 * capacity as u128) >> 64) as usize
}

/// # Safety
/// `table` is null or came from `start` with `capacity` slots, and nobody else uses it.
unsafe fn free_table<T>(table: *mut T, capacity: usize) {
    if !table.is_null() {
        drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(table, capacity)) });
    }
}

// ---------------------------------------------------------------------------------------------
// sys:prof_ctl commands

/// A command written to `sys:prof_ctl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `start <pid> [capacity] [exec] [rate=HZ] [stacks=N]`
    Start {
        pid: usize,
        capacity: usize,
        from: CountFrom,
        /// Samples per second and CPU from an NMI source; `None`: the timer tick.
        rate: Option<usize>,
        /// Distinct call stacks the session's stack table holds (0: no stacks are walked).
        stacks: usize,
    },
    /// `stop`
    Stop,
}

/// Why a `sys:prof_ctl` write is malformed (the kernel answers EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Nothing but whitespace.
    Empty,
    /// The first word is not `start` or `stop`.
    UnknownCommand,
    /// `start` without a pid.
    MissingPid,
    /// Not a decimal or `0x`-hex number, or too large.
    BadNumber,
    /// Pid 0 ("no pid assigned") never matches a sample.
    ZeroPid,
    /// Capacity 0 or above [`MAX_CAPACITY`].
    BadCapacity,
    /// Words after the last argument.
    TrailingWords,
    /// `rate=` not a number in [`MIN_RATE`]..=[`MAX_RATE`].
    BadRate,
    /// `stacks=` not a number in 0..=[`MAX_STACKS`].
    BadStacks,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::Empty => "empty command",
            ParseError::UnknownCommand => "unknown command (expected start or stop)",
            ParseError::MissingPid => "start needs a pid",
            ParseError::BadNumber => "not a decimal or 0x-hex number",
            ParseError::ZeroPid => "pid 0 cannot be profiled",
            ParseError::BadCapacity => "capacity out of range",
            ParseError::TrailingWords => "too many words",
            ParseError::BadRate => "rate out of range",
            ParseError::BadStacks => "stacks out of range",
        })
    }
}

/// Parse one `sys:prof_ctl` command: `start <pid> [capacity] [exec] [rate=HZ] [stacks=N]` or
/// `stop`. Words are separated by ASCII whitespace (a trailing newline is fine); numbers are
/// decimal or `0x`-hex. `exec` makes the session count from the process's next exec
/// ([`CountFrom::Exec`]); `rate=HZ` asks for HZ samples a second per CPU from an NMI source
/// (the kernel falls back to the timer tick where it has none); `stacks=N` sizes the stack
/// table for N distinct stacks (0..=[`MAX_STACKS`]; default [`DEFAULT_STACKS`]; 0: no call
/// stacks). After the capacity, `exec`, `rate=` and `stacks=` come in any order, each at most
/// once.
pub fn parse_command(input: &[u8]) -> Result<Command, ParseError> {
    let mut words = input
        .split(|byte| byte.is_ascii_whitespace())
        .filter(|word| !word.is_empty());
    let command = match words.next().ok_or(ParseError::Empty)? {
        b"stop" => Command::Stop,
        b"start" => {
            let pid = parse_number(words.next().ok_or(ParseError::MissingPid)?)?;
            if pid == 0 {
                return Err(ParseError::ZeroPid);
            }
            let mut next = words.next();
            let capacity = match next {
                Some(word)
                    if word != b"exec"
                        && !word.starts_with(b"rate=")
                        && !word.starts_with(b"stacks=") =>
                {
                    next = words.next();
                    parse_number(word)?
                }
                _ => DEFAULT_CAPACITY,
            };
            if capacity == 0 || capacity > MAX_CAPACITY {
                return Err(ParseError::BadCapacity);
            }
            let (mut from, mut rate, mut stacks) = (None, None, None);
            while let Some(word) = next {
                if word == b"exec" && from.is_none() {
                    from = Some(CountFrom::Exec);
                } else if let (Some(hz), None) = (word.strip_prefix(b"rate="), rate) {
                    let hz = parse_number(hz).map_err(|_| ParseError::BadRate)?;
                    if !(MIN_RATE..=MAX_RATE).contains(&hz) {
                        return Err(ParseError::BadRate);
                    }
                    rate = Some(hz);
                } else if let (Some(n), None) = (word.strip_prefix(b"stacks="), stacks) {
                    let n = parse_number(n).map_err(|_| ParseError::BadStacks)?;
                    if n > MAX_STACKS {
                        return Err(ParseError::BadStacks);
                    }
                    stacks = Some(n);
                } else {
                    return Err(ParseError::TrailingWords);
                }
                next = words.next();
            }
            Command::Start {
                pid,
                capacity,
                from: from.unwrap_or(CountFrom::Now),
                rate,
                stacks: stacks.unwrap_or(DEFAULT_STACKS),
            }
        }
        _ => return Err(ParseError::UnknownCommand),
    };
    match words.next() {
        Some(_) => Err(ParseError::TrailingWords),
        None => Ok(command),
    }
}

fn parse_number(word: &[u8]) -> Result<usize, ParseError> {
    let (digits, radix) = match word {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        _ => (word, 10),
    };
    if digits.is_empty() {
        return Err(ParseError::BadNumber);
    }
    let mut value: usize = 0;
    for &byte in digits {
        let digit = (byte as char)
            .to_digit(radix)
            .ok_or(ParseError::BadNumber)?;
        value = value
            .checked_mul(radix as usize)
            .and_then(|value| value.checked_add(digit as usize))
            .ok_or(ParseError::BadNumber)?;
    }
    Ok(value)
}

// ---------------------------------------------------------------------------------------------
// sys:prof_data layout

/// First 8 bytes of `sys:prof_data`.
pub const MAGIC: [u8; 8] = *b"KPROFDAT";
/// Layout version this file writes; [`decode`] reads it and versions 1 (no stacks), 2 (no
/// servers, idle or other ticks) and 3 (no source or rate; user PCs only).
pub const VERSION: u32 = 4;
/// Bytes of the version-4 header; entries start at the header's `header_len`.
pub const HEADER_LEN: usize = 184;
/// Bytes of the version-3 header.
pub const HEADER_LEN_V3: usize = 168;
/// Bytes of the version-2 header.
pub const HEADER_LEN_V2: usize = 112;
/// Bytes of the version-1 header.
pub const HEADER_LEN_V1: usize = 88;
/// Bytes of one entry.
pub const ENTRY_LEN: usize = 16;
/// Bytes of a stack record before its frames.
pub const STACK_HEADER_LEN: usize = 16;
/// Bytes of a server-stack record before its frames (the pid, then a stack record's header).
pub const SERVER_STACK_HEADER_LEN: usize = 24;

/// One exact PC (user, or kernel at or above [`KERNEL_SPACE_START`]) and its ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub addr: u64,
    pub count: u64,
}

/// One recorded call stack and its ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackEntry {
    pub count: u64,
    /// The walk stopped before the root.
    pub truncated: bool,
    /// The sampled PC, then return addresses, innermost first (at most [`MAX_STACK_DEPTH`]).
    pub frames: Vec<u64>,
}

/// Server samples of one daemon working for the session: its pid and one stack (or its PC
/// alone, as a truncated one-frame stack, where no walk was made).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStack {
    pub pid: u64,
    pub stack: StackEntry,
}

/// A session as `sys:prof_data` returns it.
///
/// Binary layout, version 4, all integers little endian, no padding:
///
/// | offset | type | field |
/// |-------:|------|-------|
/// | 0  | `[u8; 8]` | magic `KPROFDAT` |
/// | 8  | u32 | version (4) |
/// | 12 | u32 | `header_len`: offset of the first entry (184; a reader skips any extra) |
/// | 16 | u32 | state: 0 idle, 1 running, 2 stopped |
/// | 20 | u32 | stop reason: 0 none, 1 request, 2 exit, 3 overflow |
/// | 24 | u64 | pid |
/// | 32 | u64 | `exec_base`: start of the pid's lowest executable user mapping (0: none) |
/// | 40 | u64 | `addr_space_switches`: the pid's contexts switching address space (exec) |
/// | 48 | u64 | `user_ticks`: user-mode ticks of the pid |
/// | 56 | u64 | `kernel_ticks`: kernel-mode ticks of the pid (`user_ticks + kernel_ticks` = sum of counts + dropped) |
/// | 64 | u64 | `dropped`: ticks not in the table (table full) |
/// | 72 | u64 | `capacity`: slots in the table |
/// | 80 | u64 | `n`: number of entries |
/// | 88 | u64 | `stacks_dropped`: counted ticks whose stack is not in the stack table |
/// | 96 | u64 | `stack_capacity`: distinct stacks the stack table holds (`stacks=`) |
/// | 104 | u64 | `m`: number of stacks |
/// | 112 | u64 | `idle_ticks`: ticks of idle contexts and kernel threads (pid 0) |
/// | 120 | u64 | `other_ticks`: ticks of other processes |
/// | 128 | u64 | `server_user_ticks`: user ticks of daemons working for the session |
/// | 136 | u64 | `server_kernel_ticks`: their kernel-mode ticks (user + kernel = Σ server-stack counts + `servers_dropped`) |
/// | 144 | u64 | `servers_dropped`: server ticks that found the server-stack table full |
/// | 152 | u64 | `server_stack_capacity`: distinct stacks the server table holds |
/// | 160 | u64 | `s`: number of server stacks |
/// | 168 | u64 | `source`: 0 timer, 1 nmi-hpet ([`Source`]) |
/// | 176 | u64 | `rate`: the source's samples per second and CPU (0: not known) |
/// | 184 | `n` × (u64 addr, u64 count) | exact PCs, ascending (kernel ones from [`KERNEL_SPACE_START`]) |
/// | then | `m` × (u64 count, u32 depth, u32 flags, `depth` × u64 frame) | call stacks: flags bit 0 truncated; frames innermost first |
/// | then | `s` × (u64 pid, u64 count, u32 depth, u32 flags, `depth` × u64 frame) | server stacks, by pid, then frames |
///
/// The total length is exactly `header_len + 16 n + Σ (16 + 8 depth) + Σ (24 + 8 depth)`.
/// A stack's frames are kernel addresses first where the sample was taken in the kernel,
/// then the user frames below the system call or interrupt. Version 3 is the first 168 bytes
/// of this header (a timer session; user PCs only), version 2 the first 112 and the entries
/// and stacks, version 1 the first 88 and the entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub state: State,
    pub stop_reason: StopReason,
    pub source: Source,
    pub rate: u64,
    pub pid: u64,
    pub exec_base: u64,
    pub addr_space_switches: u64,
    pub user_ticks: u64,
    pub kernel_ticks: u64,
    pub dropped: u64,
    pub capacity: u64,
    pub entries: Vec<Entry>,
    pub stacks_dropped: u64,
    pub stack_capacity: u64,
    pub stacks: Vec<StackEntry>,
    pub idle_ticks: u64,
    pub other_ticks: u64,
    pub server_user_ticks: u64,
    pub server_kernel_ticks: u64,
    pub servers_dropped: u64,
    pub server_stack_capacity: u64,
    pub server_stacks: Vec<ServerStack>,
}

impl Snapshot {
    /// Length of the encoding.
    pub fn encoded_len(&self) -> usize {
        let stacks = self.stacks.iter().fold(0usize, |sum, s| {
            sum.saturating_add(
                s.frames
                    .len()
                    .saturating_mul(8)
                    .saturating_add(STACK_HEADER_LEN),
            )
        });
        let server_stacks = self.server_stacks.iter().fold(0usize, |sum, s| {
            sum.saturating_add(
                s.stack
                    .frames
                    .len()
                    .saturating_mul(8)
                    .saturating_add(SERVER_STACK_HEADER_LEN),
            )
        });
        self.entries
            .len()
            .saturating_mul(ENTRY_LEN)
            .saturating_add(HEADER_LEN)
            .saturating_add(stacks)
            .saturating_add(server_stacks)
    }

    /// The whole encoding, in one allocation of [`Snapshot::encoded_len`] bytes made with
    /// `try_reserve_exact` (up to ~17 MiB for a full table): out of memory is
    /// [`CtlError::NoMemory`] (ENOMEM for `sys:prof_data`), never a panic.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CtlError> {
        let len = self.encoded_len();
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|_| CtlError::NoMemory)?;
        // Never grows past `len`, which is exact: no further allocation.
        bytes.extend_from_slice(&self.header_bytes());
        for entry in &self.entries {
            bytes.extend_from_slice(&entry.addr.to_le_bytes());
            bytes.extend_from_slice(&entry.count.to_le_bytes());
        }
        for stack in &self.stacks {
            stack.encode_into(&mut bytes);
        }
        for server in &self.server_stacks {
            bytes.extend_from_slice(&server.pid.to_le_bytes());
            server.stack.encode_into(&mut bytes);
        }
        Ok(bytes)
    }

    /// The runtime load base of the profiled image, given the link-time address of its first
    /// executable `PT_LOAD` segment: the mapping holding that segment starts at the segment's
    /// page, so base = `exec_base - page_down(text_vaddr)`. 0 for a non-PIE image (its text is
    /// mapped at its link address); `None` while `exec_base` is unknown or inconsistent.
    pub fn image_load_base(&self, text_vaddr: u64) -> Option<u64> {
        if self.exec_base == 0 {
            return None;
        }
        self.exec_base.checked_sub(text_vaddr & !0xfff)
    }

    fn header_bytes(&self) -> [u8; HEADER_LEN] {
        let mut header = [0; HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        header[16..20].copy_from_slice(&(self.state as u32).to_le_bytes());
        header[20..24].copy_from_slice(&(self.stop_reason as u32).to_le_bytes());
        let words = [
            self.pid,
            self.exec_base,
            self.addr_space_switches,
            self.user_ticks,
            self.kernel_ticks,
            self.dropped,
            self.capacity,
            self.entries.len() as u64,
            self.stacks_dropped,
            self.stack_capacity,
            self.stacks.len() as u64,
            self.idle_ticks,
            self.other_ticks,
            self.server_user_ticks,
            self.server_kernel_ticks,
            self.servers_dropped,
            self.server_stack_capacity,
            self.server_stacks.len() as u64,
            self.source as u64,
            self.rate,
        ];
        for (i, word) in words.iter().enumerate() {
            header[24 + 8 * i..32 + 8 * i].copy_from_slice(&word.to_le_bytes());
        }
        header
    }
}

impl StackEntry {
    /// (u64 count, u32 depth, u32 flags, frames), as the layout has it.
    fn encode_into(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.count.to_le_bytes());
        bytes.extend_from_slice(&(self.frames.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&u32::from(self.truncated).to_le_bytes());
        for frame in &self.frames {
            bytes.extend_from_slice(&frame.to_le_bytes());
        }
    }

    /// Read one stack record from the front of `rest`; the rest after it.
    fn decode_from(rest: &[u8]) -> Result<(StackEntry, &[u8]), DecodeError> {
        let head = rest
            .get(..STACK_HEADER_LEN)
            .ok_or(DecodeError::LengthMismatch)?;
        let mut word = [0; 8];
        word.copy_from_slice(&head[..8]);
        let depth = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
        let flags = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
        if depth > MAX_STACK_DEPTH || flags > 1 {
            return Err(DecodeError::LengthMismatch);
        }
        let frame_bytes = rest
            .get(STACK_HEADER_LEN..STACK_HEADER_LEN + 8 * depth)
            .ok_or(DecodeError::LengthMismatch)?;
        let frames = frame_bytes
            .chunks_exact(8)
            .map(|raw| {
                let mut frame = [0; 8];
                frame.copy_from_slice(raw);
                u64::from_le_bytes(frame)
            })
            .collect();
        let stack = StackEntry {
            count: u64::from_le_bytes(word),
            truncated: flags == 1,
            frames,
        };
        Ok((stack, &rest[STACK_HEADER_LEN + 8 * depth..]))
    }
}

/// Why bytes are not a [`Snapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than the header.
    Truncated,
    /// The first 8 bytes are not [`MAGIC`].
    BadMagic,
    /// A version this reader does not know.
    UnsupportedVersion(u32),
    /// `header_len` below [`HEADER_LEN`] or past the end.
    BadHeaderLen(u32),
    /// Unknown state or stop reason, or a reason that does not fit the state.
    BadState,
    /// The length is not `header_len + 16 n` plus the stacks' records.
    LengthMismatch,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("prof data shorter than its header"),
            DecodeError::BadMagic => f.write_str("not prof data (bad magic)"),
            DecodeError::UnsupportedVersion(v) => write!(f, "unsupported prof data version {v}"),
            DecodeError::BadHeaderLen(n) => write!(f, "bad prof data header length {n}"),
            DecodeError::BadState => f.write_str("bad prof data state or stop reason"),
            DecodeError::LengthMismatch => f.write_str("prof data length disagrees with entries"),
        }
    }
}

/// Parse `sys:prof_data` bytes. Never panics; any malformed input is an `Err`.
pub fn decode(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    let u32_at = |at: usize| -> Result<u32, DecodeError> {
        let raw = bytes.get(at..at + 4).ok_or(DecodeError::Truncated)?;
        Ok(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
    };
    let u64_at = |at: usize| -> Result<u64, DecodeError> {
        let raw = bytes.get(at..at + 8).ok_or(DecodeError::Truncated)?;
        let mut word = [0; 8];
        word.copy_from_slice(raw);
        Ok(u64::from_le_bytes(word))
    };

    if bytes.len() < HEADER_LEN_V1 {
        return Err(DecodeError::Truncated);
    }
    if bytes[..8] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    let version = u32_at(8)?;
    let min_header = match version {
        1 => HEADER_LEN_V1,
        2 => HEADER_LEN_V2,
        3 => HEADER_LEN_V3,
        4 => HEADER_LEN,
        _ => return Err(DecodeError::UnsupportedVersion(version)),
    };
    if bytes.len() < min_header {
        return Err(DecodeError::Truncated);
    }
    let header_len = u32_at(12)?;
    if (header_len as usize) < min_header || header_len as usize > bytes.len() {
        return Err(DecodeError::BadHeaderLen(header_len));
    }
    let state = State::from_u32(u32_at(16)?).ok_or(DecodeError::BadState)?;
    let stop_reason = StopReason::from_u32(u32_at(20)?).ok_or(DecodeError::BadState)?;
    if (state == State::Stopped) != (stop_reason != StopReason::None) {
        return Err(DecodeError::BadState);
    }
    let count = u64_at(80)?;
    let (stacks_dropped, stack_capacity, stack_count) = if version >= 2 {
        (u64_at(88)?, u64_at(96)?, u64_at(104)?)
    } else {
        (0, 0, 0)
    };
    // Version 3: idle, other, server user and kernel ticks, servers dropped, capacity, count.
    let servers = if version >= 3 {
        [
            u64_at(112)?,
            u64_at(120)?,
            u64_at(128)?,
            u64_at(136)?,
            u64_at(144)?,
            u64_at(152)?,
            u64_at(160)?,
        ]
    } else {
        [0; 7]
    };
    let (source, rate) = if version >= 4 {
        let source = u32::try_from(u64_at(168)?)
            .ok()
            .and_then(Source::from_u32)
            .ok_or(DecodeError::BadState)?;
        (source, u64_at(176)?)
    } else {
        (Source::Timer, 0)
    };
    let body = &bytes[header_len as usize..];
    let entries_len = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(ENTRY_LEN))
        .filter(|&len| len <= body.len())
        .ok_or(DecodeError::LengthMismatch)?;
    let (entry_bytes, mut rest) = body.split_at(entries_len);
    // Counts come from the input: stop at the bytes there are, never trust them for capacity.
    let mut stacks = Vec::new();
    for _ in 0..stack_count {
        let (stack, after) = StackEntry::decode_from(rest)?;
        stacks.push(stack);
        rest = after;
    }
    let mut server_stacks = Vec::new();
    for _ in 0..servers[6] {
        let pid = rest.get(..8).ok_or(DecodeError::LengthMismatch)?;
        let mut word = [0; 8];
        word.copy_from_slice(pid);
        let (stack, after) = StackEntry::decode_from(&rest[8..])?;
        server_stacks.push(ServerStack {
            pid: u64::from_le_bytes(word),
            stack,
        });
        rest = after;
    }
    if !rest.is_empty() {
        return Err(DecodeError::LengthMismatch);
    }
    let entries = entry_bytes
        .chunks_exact(ENTRY_LEN)
        .map(|raw| {
            let mut addr = [0; 8];
            let mut count = [0; 8];
            addr.copy_from_slice(&raw[..8]);
            count.copy_from_slice(&raw[8..]);
            Entry {
                addr: u64::from_le_bytes(addr),
                count: u64::from_le_bytes(count),
            }
        })
        .collect();
    Ok(Snapshot {
        state,
        stop_reason,
        source,
        rate,
        pid: u64_at(24)?,
        exec_base: u64_at(32)?,
        addr_space_switches: u64_at(40)?,
        user_ticks: u64_at(48)?,
        kernel_ticks: u64_at(56)?,
        dropped: u64_at(64)?,
        capacity: u64_at(72)?,
        entries,
        stacks_dropped,
        stack_capacity,
        stacks,
        idle_ticks: servers[0],
        other_ticks: servers[1],
        server_user_ticks: servers[2],
        server_kernel_ticks: servers[3],
        servers_dropped: servers[4],
        server_stack_capacity: servers[5],
        server_stacks,
    })
}
