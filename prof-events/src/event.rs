//! The events, as both systems give them.

use crate::layout::{Reason, Source};
use std::fmt;

/// Who: a process and one of its threads. On Redox the thread is a context's debug id, and
/// the process id is unknown in the records of upstream's profiler (kind 0); on Linux they
/// are the pid and the tid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ids {
    pub pid: Option<u32>,
    pub thread: u32,
}

impl Ids {
    /// From a record's "ids" word (the debug id below, the pid above).
    pub fn from_word(word: u64) -> Ids {
        Ids { pid: Some((word >> 32) as u32), thread: word as u32 }
    }
}

/// A sample: where a thread was when the profiler looked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub cpu: u32,
    /// The kernel's clock (the TSC on x86), not yet in seconds.
    pub time: u64,
    pub who: Ids,
    /// Was the CPU in the kernel (the IP is the kernel's)?
    pub kernel: bool,
    /// What took it, where the record says.
    pub source: Option<Source>,
    pub ip: u64,
    /// The kernel's return addresses, innermost first (kernel samples only).
    pub kernel_frames: Vec<u64>,
    /// The user call stack, innermost first, after `ip` (for a kernel sample taken in a
    /// system call, starting with the call's user IP).
    pub user_frames: Vec<u64>,
}

/// A context switch on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    pub cpu: u32,
    pub time: u64,
    pub left: Ids,
    pub entered: Ids,
    /// Why `left` left (or `None`: a reason this reader does not know).
    pub reason: Option<Reason>,
    /// By reason: the scheme's id, the futex's address, the pid waited for.
    pub detail: u64,
    /// Words after the record's own (none from a kernel of this layout: where a thread
    /// blocked is its [`Source::Block`](crate::layout::Source::Block) sample).
    pub stack: Vec<u64>,
}

/// What happened, in the order one CPU saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Sample(Sample),
    Switch(Switch),
    /// `count` records the ring had no room for, before `time`.
    Lost { cpu: u32, time: u64, count: u64 },
    /// A thread was named, or given its process id.
    Name { cpu: u32, time: u64, who: Ids, name: String },
    /// `who`'s process began a new image, entered at `entry`.
    Exec { cpu: u32, time: u64, who: Ids, entry: u64 },
    /// A new thread, given `giver`'s address space.
    NewThread { cpu: u32, time: u64, who: Ids, giver: Ids },
    /// A scheme request taken by `daemon` for `caller`, or (`answered`) its answer.
    Request { cpu: u32, time: u64, daemon: Ids, caller: Ids, scheme: u64, tag: u64, answered: bool },
    /// A typed session's first record on `cpu`'s ring (Redox, a kernel that versions its
    /// layout): what the records after it are.
    Start(Start),
    /// A system call of `who`'s that began at `entered` and returned `result` at `time`
    /// (layout 1.1, a session started with `3`).
    Syscall { cpu: u32, time: u64, who: Ids, entered: u64, number: u64, result: u64 },
}

/// A layout's version: a reader reads its own major version and older ones, of any minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// The layout this crate reads and writes ([`layout::VERSION`](crate::layout::VERSION)).
    pub const OURS: Version = Version::from_word(crate::layout::VERSION);

    /// From a `Start` record's version word (the major version above, the minor below).
    pub const fn from_word(word: u64) -> Version {
        Version { major: (word >> 32) as u32, minor: word as u32 }
    }

    pub const fn word(self) -> u64 {
        ((self.major as u64) << 32) | self.minor as u64
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A session's first record on a CPU's ring: the layout's version, the clock's rate, the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The CPU whose ring it is (the kernel's number): every record after it is that CPU's.
    pub cpu: u32,
    pub time: u64,
    pub version: Version,
    /// The records' clock's counts a second, where the kernel knows them (`CNTFRQ_EL0` on
    /// aarch64, the device tree's timebase on riscv64, the TSC's rate where x86_64 measured it
    /// against the HPET).
    pub clock_hz: Option<u64>,
    /// The session's number: the same in every CPU's `Start` of one session, larger later.
    pub session: u64,
}

impl Event {
    pub fn time(&self) -> u64 {
        match self {
            Event::Sample(s) => s.time,
            Event::Switch(s) => s.time,
            Event::Lost { time, .. }
            | Event::Name { time, .. }
            | Event::Exec { time, .. }
            | Event::NewThread { time, .. }
            | Event::Request { time, .. }
            | Event::Syscall { time, .. } => *time,
            Event::Start(s) => s.time,
        }
    }
}
