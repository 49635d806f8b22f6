//! The profiler's records: the words the kernel writes into each CPU's ring, and
//! `debug:profiling-N` gives userspace, 8 bytes each, little endian.
//!
//! Every record begins with a header word:
//!
//! | bits | what |
//! |---|---|
//! | 0..8 | the record's length in words, the header included |
//! | 8..32 | the marker, `0xfedfac` |
//! | 32..40 | its [`Kind`] |
//! | 40..48 | flags, by kind |
//! | 48..64 | a number, by kind (the "aux" field) |
//!
//! Kind 0 is the record the profiler wrote before kinds existed, which its readers
//! (`profiled`) still expect when a session is started with `1`: its header is the marker and
//! the length alone, then the interrupted IP, the TSC, the running context's debug id, and
//! the walked frames. Every other kind has the time (the records' clock: the TSC on x86) in
//! its second word and is written only in a typed session, one started with `2` or with `3`
//! (`3` adds a [`Kind::Syscall`] record at the end of every system call); a reader that knows
//! only kind 0 sees their headers as no marker at all. A record is written whole or not at all; the
//! records a full ring refused are counted, and said by a [`Kind::Lost`] record once the ring
//! has room.
//!
//! A session's first record on each CPU's ring is a [`Kind::Start`]: the layout's
//! [`VERSION`], the clock's rate and the CPU, so a reader that keys records by ring knows the
//! CPU of every record after it.
//!
//! "ids" below is one word: the context's debug id in bits 0..32, its process id in 32..64.
//!
//! This module is the whole ABI, with no dependency but `core`: the kernel writes it and
//! userspace reads it (`redox_syscall::profiling`; the kernel carries the same text as
//! `src/profiling/record.rs` until `redox_syscall` has it).

/// Bits 8..32 of every header.
pub const MARKER: u64 = 0xfedf_ac00;
/// The longest record, in words.
pub const MAX_WORDS: usize = 64;

/// The layout's version, in a [`Kind::Start`] record: the major version in bits 32..64, the
/// minor in 0..32. A minor version only adds (kinds, flags, reasons, words after the ones a
/// record has), which a reader of an earlier minor skips; a reader refuses a major version
/// newer than its own. What no version changes: the header word, and a `Start` record's kind
/// and its words up to the CPU.
/// 1.1 added [`Kind::Syscall`] (and the sessions started with `3` that write it).
pub const VERSION: u64 = (1 << 32) | 1;

/// What a record is, and the words after its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `[ip, tsc, debug id, frames...]`: the session was started with `1`.
    Upstream = 0,
    /// `[time, ids, ip, kernel frames..., user frames...]`: a sample. Flags: [`SAMPLE_KERNEL`]
    /// and the source ([`Source`] in bits 1..3); aux: how many kernel frames. For a kernel
    /// sample taken in a system call the user frames begin with the call's user IP.
    Sample = 1,
    /// `[time, ids left, ids entered, detail]`: a context switch. Aux: why the context left
    /// ([`Reason`]; a context's end is its switch with [`Reason::Exit`]); detail: by reason (a
    /// scheme call's scheme and tag, [`scheme_call`]; the futex's address). Where it blocked is
    /// the sample of source [`Source::Block`] it wrote when it blocked.
    Switch = 2,
    /// `[time, count]`: records the ring had no room for since the last record.
    Lost = 3,
    /// `[time, ids, name...]`: a context was named, or given its pid. Aux: the name's length
    /// in bytes; the name follows, 8 bytes a word, little endian, the last word padded with 0.
    Context = 4,
    /// `[time, ids, entry]`: the context's process began a new image (exec), at `entry`.
    Exec = 5,
    /// `[time, ids, ids of the giver]`: a new context, given the address space of another.
    NewContext = 6,
    // 7 is not assigned (a draft of this layout had an exit record: a context's end is its
    // switch).
    /// `[time, ids of the daemon, ids of the caller, scheme id, tag]`: a scheme request was
    /// taken by its daemon (flags 0), or answered (flags [`REQUEST_ANSWERED`]). The caller's
    /// ids hold its pid alone (its context is the one whose switch has the same scheme and
    /// tag); an answer's, none.
    Request = 8,
    /// `[time, version, clock rate, cpu, session]`: a typed session's first record on a CPU's
    /// ring, before that session's first other record there. The [`VERSION`] of this layout;
    /// the rate of the records' clock in counts a second where the kernel knows it (0: it does
    /// not); the CPU whose ring it is; the session, a number the kernel counts up (every CPU's
    /// `Start` of one session has the same, a later session a larger one).
    Start = 9,
    /// `[time, ids, entered, number, result]`: a system call returned (at `time`), in a session
    /// started with `3`. `entered`: when the call began (the same clock); `number`: the call's
    /// (`SYS_*`); `result`: what it returns to the caller (an error as the negated errno). A
    /// scheme request the caller made in it (its switch's [`scheme_call`], the daemon's
    /// [`Kind::Request`] records) lies between the two times.
    Syscall = 10,
}

/// A sample's IP is the kernel's.
pub const SAMPLE_KERNEL: u8 = 1;
/// A request record is the answer.
pub const REQUEST_ANSWERED: u8 = 1;

/// What took a sample (a sample's flags, bits 1..3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Source {
    /// The NMI the profiling CPU sends the others.
    NmiIpi = 0,
    /// The CPU's own timer tick.
    Tick = 1,
    /// The context blocking, in a system call: its user IP and stack where it called.
    Block = 2,
}

/// Why a context left its CPU (a switch's aux).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Reason {
    /// Still runnable: its time was up, or it yielded.
    Preempted = 0,
    /// Blocked where the kernel gave no reason.
    Blocked = 1,
    /// A futex wait (detail: the futex's address).
    Futex = 2,
    /// A sleep (nanosleep).
    Sleep = 3,
    /// A call to a scheme, waiting for its daemon's answer (detail: the scheme's id and the
    /// request's tag, [`scheme_call`]).
    Scheme = 4,
    /// A pipe, empty or full.
    Pipe = 5,
    // 6 is not assigned (a draft of this layout had waitpid: the kernel has no such wait, a
    // process waits for a child in a call to procmgr).
    /// Waiting on an event queue.
    Event = 7,
    /// Stopped (a signal, a tracer).
    Stopped = 8,
    /// It exited.
    Exit = 9,
    /// A daemon waiting for its scheme's next request.
    SchemeIdle = 10,
}

/// A header word. `len` counts the header; it must be at most [`MAX_WORDS`].
pub const fn header(kind: Kind, len: usize, flags: u8, aux: u16) -> u64 {
    (len as u64 & 0xff)
        | MARKER
        | ((kind as u64) << 32)
        | ((flags as u64) << 40)
        | ((aux as u64) << 48)
}

/// The "ids" word of a context.
pub const fn ids(pid: usize, debug_id: u32) -> u64 {
    debug_id as u64 | ((pid as u64) << 32)
}

/// A scheme call's detail in a switch record: the scheme's id (bits 0..32) and the request's
/// tag (32..64), which the daemon's request records carry too.
pub const fn scheme_call(scheme: usize, tag: u32) -> u64 {
    (scheme as u64 & 0xffff_ffff) | ((tag as u64) << 32)
}
