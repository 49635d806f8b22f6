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
//! the walked frames. Every other kind has the time (the TSC on x86) in its second word and
//! is written only in a session started with `2`; a reader that knows only kind 0 sees their
//! headers as no marker at all. A record is written whole or not at all; the records a full
//! ring refused are counted, and said by a [`Kind::Lost`] record once the ring has room.
//!
//! "ids" below is one word: the context's debug id in bits 0..32, its process id in 32..64.
//!
//! This module is the whole ABI, with no dependency but `core`, so that it can move into
//! `redox_syscall` as it is.

/// Bits 8..32 of every header.
pub const MARKER: u64 = 0xfedf_ac00;
/// What of a header word is the marker.
pub const MARKER_MASK: u64 = 0xffff_ff00;
/// The longest record, in words.
pub const MAX_WORDS: usize = 64;

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
    /// ([`Reason`]); detail: by reason (a scheme call's scheme and tag, [`scheme_call`]; the
    /// futex's address). Where it blocked is the sample of source [`Source::Block`] it wrote
    /// when it blocked.
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
    /// `[time, ids]`: a context ended.
    Exit = 7,
    /// `[time, ids of the daemon, ids of the caller, scheme id, tag]`: a scheme request was
    /// taken by its daemon (flags 0), or answered (flags [`REQUEST_ANSWERED`]). The caller's
    /// ids hold its pid alone (its context is the one whose switch has the same scheme and
    /// tag); an answer's, none.
    Request = 8,
}

impl Kind {
    pub const fn from_u8(kind: u8) -> Option<Kind> {
        Some(match kind {
            0 => Kind::Upstream,
            1 => Kind::Sample,
            2 => Kind::Switch,
            3 => Kind::Lost,
            4 => Kind::Context,
            5 => Kind::Exec,
            6 => Kind::NewContext,
            7 => Kind::Exit,
            8 => Kind::Request,
            _ => return None,
        })
    }

    /// The fewest words a record of this kind has, its header included.
    pub const fn min_words(self) -> usize {
        match self {
            Kind::Upstream => 4,
            Kind::Sample => 4,
            Kind::Switch => 5,
            Kind::Lost => 3,
            Kind::Context => 3,
            Kind::Exec => 4,
            Kind::NewContext => 4,
            Kind::Exit => 3,
            Kind::Request => 6,
        }
    }
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
    /// A call to a scheme, waiting for its daemon's answer (detail: the scheme's id).
    Scheme = 4,
    /// A pipe, empty or full.
    Pipe = 5,
    /// Waiting for a child (detail: the pid waited for, 0 for any).
    Waitpid = 6,
    /// Waiting on an event queue.
    Event = 7,
    /// Stopped (a signal, a tracer).
    Stopped = 8,
    /// It exited.
    Exit = 9,
    /// A daemon waiting for its scheme's next request.
    SchemeIdle = 10,
}

impl Reason {
    pub const fn from_u16(reason: u16) -> Option<Reason> {
        Some(match reason {
            0 => Reason::Preempted,
            1 => Reason::Blocked,
            2 => Reason::Futex,
            3 => Reason::Sleep,
            4 => Reason::Scheme,
            5 => Reason::Pipe,
            6 => Reason::Waitpid,
            7 => Reason::Event,
            8 => Reason::Stopped,
            9 => Reason::Exit,
            10 => Reason::SchemeIdle,
            _ => return None,
        })
    }
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

/// A header word's fields, if it is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub aux: u16,
}

impl Header {
    /// The fields of `word`, if its marker is there (its kind and length are the reader's to
    /// check).
    pub const fn parse(word: u64) -> Option<Header> {
        if word & MARKER_MASK != MARKER {
            return None;
        }
        Some(Header {
            len: (word & 0xff) as usize,
            kind: (word >> 32) as u8,
            flags: (word >> 40) as u8,
            aux: (word >> 48) as u16,
        })
    }
}
