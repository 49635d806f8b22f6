//! The reader of `sys:prof_data`: userspace's half of the ABI whose writer is the kernel's
//! (`kprof/data.rs`). It is not in the kernel patch: the kernel only encodes. `profd` and
//! the selftest decode with it; it reads every layout version the kernel has written (1 to
//! 5) and never panics on any input (fuzzed: `fuzz/fuzz_targets/kprof_decode.rs`).

use alloc::vec::Vec;
use core::fmt;

use crate::{
    CtlError, ENTRY_LEN, Entry, FOLLOWED_LEN, FlatSnapshot, FollowedProcess, HEADER_LEN, MAGIC,
    MAX_STACK_DEPTH, Source, StackRef, State, StopReason, owner_key,
};

/// Bytes of a stack record after its owner: count, depth, flags (up to version 4, a program
/// stack's whole header: it had no owner, its thread).
pub const STACK_HEADER_LEN: usize = 16;

/// One recorded call stack and its ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackEntry {
    /// A program stack's thread: its context's id (the kernel's `debug_id`, the clock's tid);
    /// 0 where not known (a kernel before version 5) and in a [`ServerStack`].
    pub thread: u64,
    pub count: u64,
    /// The walk stopped before the root.
    pub truncated: bool,
    /// The sampled PC, then return addresses, innermost first (at most [`MAX_STACK_DEPTH`]).
    pub frames: Vec<u64>,
}

/// Server samples of one daemon working for the session (or, in a session on all, of any
/// process; in a `children` session, of a followed process): its pid and one stack (or its PC
/// alone, as a truncated one-frame stack, where no walk was made). A followed process's
/// samples are also by `image`: its execs since it was started when they were taken (0: the
/// copy of its parent's image it started as); 0 for any other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStack {
    pub pid: u64,
    pub image: u32,
    pub stack: StackEntry,
}

/// A session as `sys:prof_data` returns it, decoded: the kernel's [`FlatSnapshot`] (whose
/// documentation has the binary layout) with a vector of frames a stack, as userspace reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
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
    pub stacks: Vec<StackEntry>,
    pub idle_ticks: u64,
    pub other_ticks: u64,
    pub server_user_ticks: u64,
    pub server_kernel_ticks: u64,
    pub servers_dropped: u64,
    pub server_stack_capacity: u64,
    pub server_stacks: Vec<ServerStack>,
    pub children_user_ticks: u64,
    pub children_kernel_ticks: u64,
    pub followed_missed: u64,
    pub followed: Vec<FollowedProcess>,
}

impl Snapshot {
    /// The kernel's form of it: one frames array, stacks as indexes into it.
    pub fn to_flat(&self) -> FlatSnapshot {
        let mut frames = Vec::new();
        let mut flat = |owner: u64, stack: &StackEntry| {
            let start = frames.len();
            frames.extend_from_slice(&stack.frames);
            StackRef {
                owner,
                count: stack.count,
                truncated: stack.truncated,
                start,
                depth: stack.frames.len(),
            }
        };
        let stacks = self.stacks.iter().map(|s| flat(s.thread, s)).collect();
        let server_stacks = self
            .server_stacks
            .iter()
            .map(|s| flat(owner_key(s.pid as usize, s.image), &s.stack))
            .collect();
        FlatSnapshot {
            state: self.state,
            stop_reason: self.stop_reason,
            source: self.source,
            rate: self.rate,
            pid: self.pid,
            exec_base: self.exec_base,
            addr_space_switches: self.addr_space_switches,
            user_ticks: self.user_ticks,
            kernel_ticks: self.kernel_ticks,
            dropped: self.dropped,
            capacity: self.capacity,
            entries: self.entries.clone(),
            stacks_dropped: self.stacks_dropped,
            stack_capacity: self.stack_capacity,
            stacks,
            idle_ticks: self.idle_ticks,
            other_ticks: self.other_ticks,
            server_user_ticks: self.server_user_ticks,
            server_kernel_ticks: self.server_kernel_ticks,
            servers_dropped: self.servers_dropped,
            server_stack_capacity: self.server_stack_capacity,
            server_stacks,
            frames,
            children_user_ticks: self.children_user_ticks,
            children_kernel_ticks: self.children_kernel_ticks,
            followed_missed: self.followed_missed,
            followed: self.followed.clone(),
        }
    }

    /// Length of the encoding (the kernel's encoder's: [`FlatSnapshot::encoded_len`]).
    pub fn encoded_len(&self) -> usize {
        self.to_flat().encoded_len()
    }

    /// The encoding, by the kernel's encoder ([`FlatSnapshot::to_bytes`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CtlError> {
        self.to_flat().to_bytes()
    }
}

impl FollowedProcess {
    /// Its name up to the first NUL, as text (`None`: the kernel kept none).
    pub fn name_text(&self) -> Option<alloc::string::String> {
        let len = self.name.iter().position(|&b| b == 0).unwrap_or(self.name.len());
        let text = alloc::string::String::from_utf8_lossy(&self.name[..len]).into_owned();
        (!text.is_empty()).then_some(text)
    }
}

impl State {
    /// The name `profd`'s `status` shows (`state=running`).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Running => "running",
            State::Stopped => "stopped",
        }
    }
}

impl StopReason {
    /// The name `profd`'s `status` shows (`reason=exit`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Request => "request",
            StopReason::Exit => "exit",
            StopReason::Overflow => "overflow",
        }
    }
}

impl Source {
    /// The name `profd`'s `status` shows (`source=nmi-hpet`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Timer => "timer",
            Source::NmiHpet => "nmi-hpet",
        }
    }
}

impl Snapshot {
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
}

/// Bytes of the version-4 header.
pub const HEADER_LEN_V4: usize = 184;

/// Bytes of the version-3 header.
pub const HEADER_LEN_V3: usize = 168;

/// Bytes of the version-2 header.
pub const HEADER_LEN_V2: usize = 112;

/// Bytes of the version-1 header.
pub const HEADER_LEN_V1: usize = 88;

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
        4 => HEADER_LEN_V4,
        5 => HEADER_LEN,
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
    let reason_code = u32_at(20)?;
    let stop_reason = StopReason::from_u32(reason_code);
    if reason_code != StopReason::code(stop_reason) {
        return Err(DecodeError::BadState);
    }
    if (state == State::Stopped) != stop_reason.is_some() {
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
    // Version 5: the children's user and kernel ticks, processes missed, followed ones.
    let tree = if version >= 5 {
        [u64_at(184)?, u64_at(192)?, u64_at(200)?, u64_at(208)?]
    } else {
        [0; 4]
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
        // Version 5: each program stack's record begins with its thread.
        let thread = match version >= 5 {
            true => {
                let raw = rest.get(..8).ok_or(DecodeError::LengthMismatch)?;
                rest = &rest[8..];
                u64::from_le_bytes(raw.try_into().map_err(|_| DecodeError::LengthMismatch)?)
            }
            false => 0,
        };
        let (stack, after) = stack_from(rest)?;
        stacks.push(StackEntry { thread, ..stack });
        rest = after;
    }
    let mut server_stacks = Vec::new();
    for _ in 0..servers[6] {
        let pid = rest.get(..8).ok_or(DecodeError::LengthMismatch)?;
        let mut word = [0; 8];
        word.copy_from_slice(pid);
        let (stack, after) = stack_from(&rest[8..])?;
        let owner = u64::from_le_bytes(word);
        server_stacks.push(ServerStack {
            pid: owner & 0xffff_ffff,
            image: (owner >> 32) as u32,
            stack,
        });
        rest = after;
    }
    let mut followed = Vec::new();
    for _ in 0..tree[3] {
        let record = rest.get(..FOLLOWED_LEN).ok_or(DecodeError::LengthMismatch)?;
        let word = |at: usize| {
            let mut w = [0; 8];
            w.copy_from_slice(&record[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let half = |at: usize| {
            u32::from_le_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]])
        };
        let mut name = [0; crate::FOLLOWED_NAME_LEN];
        name.copy_from_slice(&record[24..FOLLOWED_LEN]);
        followed.push(FollowedProcess {
            pid: word(0),
            parent: word(8),
            execs: half(16),
            flags: half(20),
            name,
        });
        rest = &rest[FOLLOWED_LEN..];
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
        children_user_ticks: tree[0],
        children_kernel_ticks: tree[1],
        followed_missed: tree[2],
        followed,
    })
}

/// Read one stack record from the front of `rest`; the rest after it.
fn stack_from(rest: &[u8]) -> Result<(StackEntry, &[u8]), DecodeError> {
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
        thread: 0,
        count: u64::from_le_bytes(word),
        truncated: flags == 1,
        frames,
    };
    Ok((stack, &rest[STACK_HEADER_LEN + 8 * depth..]))
}
