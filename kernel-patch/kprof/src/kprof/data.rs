//! `sys:prof_data`: the session as bytes, and its encoder. (Userspace decodes it with the
//! host crate's `decode`, which the kernel does not carry.)

use alloc::vec::Vec;

use super::{CtlError, Source, State, StopReason};

/// First 8 bytes of `sys:prof_data`.
pub const MAGIC: [u8; 8] = *b"KPROFDAT";

/// Layout version this file writes (the host crate's decoder also reads versions 1 to 4).
pub const VERSION: u32 = 5;

/// Bytes of the version-5 header; entries start at the header's `header_len`.
pub const HEADER_LEN: usize = 216;

/// Bytes of one entry.
pub const ENTRY_LEN: usize = 16;

/// Bytes of a stack record before its frames: its owner (a program stack's thread, a server
/// stack's pid), count, depth and flags.
pub const SERVER_STACK_HEADER_LEN: usize = 24;

/// Bytes of a followed-process record.
pub const FOLLOWED_LEN: usize = 24 + super::FOLLOWED_NAME_LEN;

/// A process a `children` session follows: its pid, the image it was started as (its
/// parent's [`owner_key`](super::owner_key) then), its execs since, its flags
/// ([`FOLLOWED_EXITED`](super::FOLLOWED_EXITED)) and its name as the process manager last set
/// it while it was followed (NUL padded; empty if never).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowedProcess {
    pub pid: u64,
    pub parent: u64,
    pub execs: u32,
    pub flags: u32,
    pub name: [u8; super::FOLLOWED_NAME_LEN],
}

/// One exact PC (user, or kernel at or above [`KERNEL_SPACE_START`](super::KERNEL_SPACE_START)) and its ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub addr: u64,
    pub count: u64,
}

/// One call stack of a [`FlatSnapshot`]: its owner (for a server stack the daemon's pid, or a
/// followed process's [`owner_key`](super::owner_key); for the session's, the thread: its
/// context's id, 0 where not known), ticks, and where its frames are in the snapshot's one frames array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackRef {
    pub owner: u64,
    pub count: u64,
    /// The walk stopped before the root.
    pub truncated: bool,
    /// Its frames are `frames[start..start + depth]` of the snapshot.
    pub start: usize,
    pub depth: usize,
}

/// A session as `sys:prof_data` returns it, made of a constant number of allocations (the
/// entries, the two stack indexes and one frames array for all stacks), never one a stack:
/// freeing 230,000 small allocations in the kernel's list allocator took minutes with
/// interrupts off. Userspace reads the bytes back as the host crate's `decode` does.
///
/// Binary layout, version 5, all integers little endian, no padding:
///
/// | offset | type | field |
/// |-------:|------|-------|
/// | 0  | `[u8; 8]` | magic `KPROFDAT` |
/// | 8  | u32 | version (5) |
/// | 12 | u32 | `header_len`: offset of the first entry (216; a reader skips any extra) |
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
/// | 112 | u64 | `idle_ticks`: ticks of idle contexts and kernel threads (pid 0 in kernel mode) |
/// | 120 | u64 | `other_ticks`: ticks of other processes |
/// | 128 | u64 | `server_user_ticks`: user ticks of daemons working for the session |
/// | 136 | u64 | `server_kernel_ticks`: their kernel-mode ticks (user + kernel = Σ server-stack counts + `servers_dropped`) |
/// | 144 | u64 | `servers_dropped`: server ticks that found the server-stack table full |
/// | 152 | u64 | `server_stack_capacity`: distinct stacks the server table holds |
/// | 160 | u64 | `s`: number of server stacks |
/// | 168 | u64 | `source`: 0 timer, 1 nmi-hpet ([`Source`]) |
/// | 176 | u64 | `rate`: the source's samples per second and CPU (0: not known) |
/// | 184 | u64 | `children_user_ticks`: user ticks of the processes a `children` session follows |
/// | 192 | u64 | `children_kernel_ticks`: their kernel-mode ticks (in the server stacks, under their keys) |
/// | 200 | u64 | `followed_missed`: processes started in the tree that found the table of followed ones full |
/// | 208 | u64 | `f`: number of followed processes |
/// | 216 | `n` × (u64 addr, u64 count) | exact PCs, ascending (kernel ones from [`KERNEL_SPACE_START`](super::KERNEL_SPACE_START)) |
/// | then | `m` × (u64 thread, u64 count, u32 depth, u32 flags, `depth` × u64 frame) | call stacks: the thread (its context's id); flags bit 0 truncated; frames innermost first |
/// | then | `s` × (u64 owner, u64 count, u32 depth, u32 flags, `depth` × u64 frame) | server stacks, by owner (a pid; a followed process's pid and image, [`owner_key`](super::owner_key)), then frames |
/// | then | `f` × (u64 pid, u64 parent, u32 execs, u32 flags, `[u8; 32]` name) | followed processes, in the order they were started ([`FollowedProcess`]) |
///
/// The total length is exactly `header_len + 16 n + Σ (24 + 8 depth) + Σ (24 + 8 depth) + 56 f`.
/// A stack's frames are kernel addresses first where the sample was taken in the kernel,
/// then the user frames below the system call or interrupt. Version 4 is the first 184 bytes
/// of this header, has no followed processes and no thread in the call stacks' records
/// (16 + 8 depth bytes each), version 3 the first 168 bytes
/// of this header (a timer session; user PCs only), version 2 the first 112 and the entries
/// and stacks, version 1 the first 88 and the entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatSnapshot {
    pub state: State,
    pub stop_reason: Option<StopReason>,
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
    /// The session's stacks, by frames then truncated flag.
    pub stacks: Vec<StackRef>,
    pub idle_ticks: u64,
    pub other_ticks: u64,
    pub server_user_ticks: u64,
    pub server_kernel_ticks: u64,
    pub servers_dropped: u64,
    pub server_stack_capacity: u64,
    /// The server stacks, by pid (`owner`), then frames, then truncated flag.
    pub server_stacks: Vec<StackRef>,
    /// The frames of every stack, innermost first, where each [`StackRef`] says.
    pub frames: Vec<u64>,
    pub children_user_ticks: u64,
    pub children_kernel_ticks: u64,
    pub followed_missed: u64,
    pub followed: Vec<FollowedProcess>,
}

impl FlatSnapshot {
    /// Length of the encoding.
    pub fn encoded_len(&self) -> usize {
        let records = |stacks: &[StackRef], header: usize| {
            stacks.iter().fold(0usize, |sum, s| {
                sum.saturating_add(
                    self.frames_of(s)
                        .len()
                        .saturating_mul(8)
                        .saturating_add(header),
                )
            })
        };
        let stacks = records(&self.stacks, SERVER_STACK_HEADER_LEN);
        let server_stacks = records(&self.server_stacks, SERVER_STACK_HEADER_LEN);
        self.entries
            .len()
            .saturating_mul(ENTRY_LEN)
            .saturating_add(HEADER_LEN)
            .saturating_add(stacks)
            .saturating_add(server_stacks)
            .saturating_add(self.followed.len().saturating_mul(FOLLOWED_LEN))
    }

    /// The whole encoding, in one allocation of [`FlatSnapshot::encoded_len`] bytes made with
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
            bytes.extend_from_slice(&stack.owner.to_le_bytes());
            self.encode_stack(stack, &mut bytes);
        }
        for server in &self.server_stacks {
            bytes.extend_from_slice(&server.owner.to_le_bytes());
            self.encode_stack(server, &mut bytes);
        }
        for f in &self.followed {
            bytes.extend_from_slice(&f.pid.to_le_bytes());
            bytes.extend_from_slice(&f.parent.to_le_bytes());
            bytes.extend_from_slice(&f.execs.to_le_bytes());
            bytes.extend_from_slice(&f.flags.to_le_bytes());
            bytes.extend_from_slice(&f.name);
        }
        Ok(bytes)
    }

    fn header_bytes(&self) -> [u8; HEADER_LEN] {
        let mut header = [0; HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        header[16..20].copy_from_slice(&(self.state as u32).to_le_bytes());
        header[20..24].copy_from_slice(&StopReason::code(self.stop_reason).to_le_bytes());
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
            self.children_user_ticks,
            self.children_kernel_ticks,
            self.followed_missed,
            self.followed.len() as u64,
        ];
        for (i, word) in words.iter().enumerate() {
            header[24 + 8 * i..32 + 8 * i].copy_from_slice(&word.to_le_bytes());
        }
        header
    }

    /// The frames of `stack`, innermost first (none if it names frames outside the array).
    pub fn frames_of(&self, stack: &StackRef) -> &[u64] {
        self.frames
            .get(stack.start..stack.start.saturating_add(stack.depth))
            .unwrap_or(&[])
    }

    /// (u64 count, u32 depth, u32 flags, frames), as the layout has it after the owner.
    fn encode_stack(&self, stack: &StackRef, bytes: &mut Vec<u8>) {
        let frames = self.frames_of(stack);
        bytes.extend_from_slice(&stack.count.to_le_bytes());
        bytes.extend_from_slice(&(frames.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&u32::from(stack.truncated).to_le_bytes());
        for frame in frames {
            bytes.extend_from_slice(&frame.to_le_bytes());
        }
    }
}
