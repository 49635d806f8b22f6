//! A sample: the one event of a process's time on a CPU that every backend hands over (Linux's
//! perf records, Redox's typed records and upstream's). A session's aggregates (the Minix bins,
//! the exact samples, the stacks, the threads, the timeline) are sums of these, folded in as
//! they come, since the rules (a bin's overflow, live `prof:` reads) need them during the run.

/// One sample's call stack: its instruction pointer, then the return address of each caller,
/// innermost first (runtime addresses).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallStack {
    pub frames: Vec<u64>,
    /// The walk stopped before the stack's root (unreadable memory, no unwind information,
    /// the depth bound): the outermost callers are missing.
    pub truncated: bool,
}

/// Where a sample found its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {
    /// On a CPU, in user mode, at this runtime address.
    User(u64),
    /// On a CPU, in the kernel, at `ip`; `named`: the backend takes kernel addresses to name
    /// them (else the sample counts only as the kernel's).
    Kernel { ip: u64, named: bool },
    /// Off the CPU, blocked at this wait site (numbered as the session numbers them).
    Blocked(u32),
}

impl Sampled {
    /// The address of a sample on a CPU.
    pub fn ip(self) -> Option<u64> {
        match self {
            Sampled::User(ip) | Sampled::Kernel { ip, .. } => Some(ip),
            Sampled::Blocked(_) => None,
        }
    }

    /// Counted by its address and stack: a user sample, or a kernel one the backend names.
    pub fn is_named(self) -> bool {
        matches!(self, Sampled::User(_) | Sampled::Kernel { named: true, .. })
    }
}

/// One sample of a thread, with its call stack where recorded, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// ns of the backend's clock; `None` where its records cannot be read as a clock
    /// (upstream's kernel when its TSC's rate could not be measured): counted, not in time.
    pub time: Option<u64>,
    pub tid: u32,
    pub at: Sampled,
    pub stack: Option<CallStack>,
}

impl Sample {
    /// A user-mode sample of thread `tid` at runtime address `ip`.
    pub fn user(time: Option<u64>, tid: u32, ip: u64, stack: Option<CallStack>) -> Sample {
        Sample { time, tid, at: Sampled::User(ip), stack }
    }

    /// A kernel-mode sample of thread `tid` at `ip`, named where the backend names kernel
    /// addresses (else only a tick of the kernel's).
    pub fn kernel(time: Option<u64>, tid: u32, ip: u64, named: bool, stack: Option<CallStack>) -> Sample {
        Sample { time, tid, at: Sampled::Kernel { ip, named }, stack }
    }
}

/// Untimed user samples of thread 1, `n` at each `(ip, n)` in turn (tests' batches).
#[cfg(test)]
pub(crate) fn user_runs(runs: &[(u64, u64)]) -> Vec<Sample> {
    runs.iter().flat_map(|&(ip, n)| (0..n).map(move |_| Sample::user(None, 1, ip, None))).collect()
}
