//! A kernel double for tests and fuzzing: the real `kprof::Profiler` — the code the kernel
//! patch compiles, its control path included (`Profiler::ctl`, `data`, `exited`) — plus a
//! context table, answering `sys:prof_ctl`, `sys:prof_data` and `sys:context` the way the
//! patch's glue (`src/scheme/sys/prof.rs`) does. With it the
//! `prof:` scheme runs on the host from timer tick to `/scheme/prof/bins`.

use std::io;

use crate::redox_kernel::KernelFiles;

/// The rate the fake kernel's timer source reports (the PIT's, on x86).
pub const FAKE_TIMER_RATE: u64 = 246;

/// The fake kernel. Drive it with [`FakeKernel::tick`], [`FakeKernel::exec`] and
/// [`FakeKernel::exit`].
pub struct FakeKernel {
    pub prof: kprof::Profiler,
    /// Live processes: (pid, euid, start of the lowest executable mapping of its image).
    pub contexts: Vec<(u32, u32, u64)>,
    /// Make `sys:prof_data` reads fail (EIO), as a kernel that does not answer.
    pub fail_data: bool,
    /// Process names (`sys:context`'s NAME column) other than `/usr/bin/fib`.
    pub names: Vec<(u32, String)>,
    /// The monotonic clock the control path reads (ns); `None`: [`fake_now`].
    pub clock: Option<u64>,
}

fn os(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

impl FakeKernel {
    /// A kernel whose counters stop at `limit`, running `contexts`.
    pub fn new(limit: u64, contexts: Vec<(u32, u32, u64)>) -> FakeKernel {
        FakeKernel { prof: kprof::Profiler::new(limit), contexts, fail_data: false, names: Vec::new(), clock: None }
    }

    /// One sample of the session's source (the timer tick or an NMI) on CPU 0 while `pid`
    /// runs at `pc`, in user mode if `user`.
    pub fn tick(&self, pid: u32, user: bool, pc: u64) {
        self.runs(pid, 0);
        self.prof.sample_from(self.prof.sampling().source, 0, user, pc, None);
    }

    /// As [`FakeKernel::tick`], with the call stack the kernel's frame-pointer walk found:
    /// `frames` innermost first (`pc` then return addresses); a kernel sample where the first
    /// frame is a kernel address.
    pub fn tick_stack(&self, pid: u32, frames: &[u64], truncated: bool) {
        let mut stack = kprof::StackBuf::new();
        stack.frames[..frames.len()].copy_from_slice(frames);
        stack.len = frames.len();
        stack.truncated = truncated;
        self.runs(pid, 0);
        let user = frames[0] < kprof::KERNEL_SPACE_START;
        self.prof.sample_from(self.prof.sampling().source, 0, user, frames[0], Some(&stack));
    }

    /// As [`FakeKernel::tick_stack`], in context `tid` of `pid` (the scheduler's hooks have
    /// written both for the CPU): a user sample of that thread.
    pub fn tick_thread(&self, pid: u32, tid: u32, frames: &[u64]) {
        let mut stack = kprof::StackBuf::new();
        stack.frames[..frames.len()].copy_from_slice(frames);
        stack.len = frames.len();
        self.runs(pid, tid);
        self.prof.sample_from(self.prof.sampling().source, 0, true, frames[0], Some(&stack));
    }

    /// CPU 0 switches to context `tid` of `pid` (0: a context the tests do not name), as the
    /// scheduler's hooks say it.
    fn runs(&self, pid: u32, tid: u32) {
        self.prof.note_switch_begin(0);
        self.prof.note_switch_to(0, pid as usize, tid);
        self.prof.note_switch_end(0);
    }

    /// Context `tid` of `pid` begins at `now` (ns): at the exec of `pid` (call it before
    /// [`FakeKernel::exec`]), running or not, or as a new thread.
    pub fn begin_thread(&self, pid: u32, tid: usize, running: bool, now: u64) {
        self.prof.note_context_begins(pid as usize, tid, running, now);
    }

    /// Context `tid` of `pid` leaves the CPU at `now`; a block's stack walked from the switch:
    /// `frames` innermost first (kernel frames, then the user's).
    pub fn switch_out(&self, pid: u32, tid: usize, now: u64, leaving: kprof::Leaving, frames: &[u64]) {
        let mut stack = kprof::StackBuf::new();
        stack.frames[..frames.len()].copy_from_slice(frames);
        stack.len = frames.len();
        self.prof.note_switch_out(pid as usize, tid, now, leaving, Some(&stack));
    }

    /// Context `tid` of `pid` gets a CPU at `now`.
    pub fn switch_in(&self, pid: u32, tid: usize, now: u64) {
        self.prof.note_switch_in(pid as usize, tid, now);
    }

    /// Context `tid` of `pid` blocks in a call to scheme `scheme`, its request `tag` (its
    /// next switch out).
    pub fn call(&self, pid: u32, tid: usize, scheme: u64, tag: u64) {
        self.prof.note_call(pid as usize, tid, scheme, tag);
    }

    /// Daemon `server` takes request `tag` of `scheme` from `client` (the user scheme's read).
    pub fn take_request(&self, server: u32, client: u32, scheme: u64, tag: u64) {
        self.prof.note_request_taken(server as usize, 0, client as usize, scheme, tag);
    }

    /// Daemon `server` answers request `tag` of `scheme`.
    pub fn answer(&self, server: u32, scheme: u64, tag: u64) {
        self.prof.note_request_answered(server as usize, 0, scheme, tag);
    }

    /// `parent` forks `child`, owned by `euid`: as relibc does, the parent gives the new
    /// context (which procmgr has given the child's pid) a copy of its own address space.
    pub fn fork(&mut self, parent: u32, child: u32, euid: u32) {
        let base = self.contexts.iter().find(|c| c.0 == parent).map_or(0, |c| c.2);
        self.contexts.push((child, euid, base));
        self.prof.note_new_image(child as usize, Some(parent as usize));
    }

    /// The process manager names `pid`'s contexts `name` (relibc's exec renames the process
    /// to the program's path before it switches address space).
    pub fn rename(&mut self, pid: u32, name: &str) {
        self.prof.note_name(pid as usize, name.as_bytes());
    }

    /// `pid` execs an image whose text the kernel maps at `exec_base`.
    pub fn exec(&mut self, pid: u32, exec_base: u64) {
        self.contexts.iter_mut().filter(|c| c.0 == pid).for_each(|c| c.2 = exec_base);
        self.prof.note_new_image(pid as usize, None);
        // Its stacks come already walked (`push_stack`), so the entry point is not needed.
        self.prof.note_addr_space_switch(pid as usize, exec_base, 0);
    }

    /// The last context of `pid` exits.
    pub fn exit(&mut self, pid: u32) {
        self.contexts.retain(|c| c.0 != pid);
        self.prof.exited(pid as usize, &mut Ops { contexts: &self.contexts, clock: self.clock });
    }
}

/// The kernel's side of the control path (`kprof::KernelOps`): the live processes, and an NMI
/// source as on a PC with an HPET, which gives every rate asked.
struct Ops<'a> {
    contexts: &'a [(u32, u32, u64)],
    clock: Option<u64>,
}

impl kprof::KernelOps for Ops<'_> {
    fn arm_nmi(&mut self, rate: u64) -> Option<u64> {
        Some(rate)
    }

    fn disarm_nmi(&mut self) {}

    fn timer_rate(&self) -> u64 {
        FAKE_TIMER_RATE
    }

    fn exec_base(&mut self, pid: usize) -> Option<u64> {
        self.contexts.iter().find(|c| c.0 as usize == pid).map(|c| c.2)
    }

    fn wait(&self) {
        std::thread::yield_now();
    }

    fn spare_memory(&self) -> usize {
        usize::MAX
    }

    /// The fake kernel's clock: the one set, else the tests' monotonic time, ns.
    fn now(&mut self) -> u64 {
        self.clock.unwrap_or_else(fake_now)
    }
}

/// ns of a monotonic clock common to the fake kernel and its tests.
pub fn fake_now() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64 + 1
}

fn errno(e: kprof::CtlError) -> io::Error {
    os(match e {
        kprof::CtlError::Malformed(_) => libc::EINVAL,
        kprof::CtlError::NoSuchProcess => libc::ESRCH,
        kprof::CtlError::Busy => libc::EBUSY,
        kprof::CtlError::NoMemory => libc::ENOMEM,
    })
}

impl KernelFiles for FakeKernel {
    fn ctl(&mut self, command: &str) -> io::Result<()> {
        self.prof.ctl(command.as_bytes(), &mut Ops { contexts: &self.contexts, clock: self.clock }).map_err(errno)
    }

    fn data(&mut self) -> io::Result<Vec<u8>> {
        if self.fail_data {
            return Err(os(libc::EIO));
        }
        self.prof.data(&mut Ops { contexts: &self.contexts, clock: self.clock }).and_then(|s| s.to_bytes()).map_err(errno)
    }

    fn clock(&mut self) -> io::Result<Vec<u8>> {
        self.prof.clock(&mut Ops { contexts: &self.contexts, clock: self.clock }).and_then(|c| c.to_text()).map_err(errno)
    }

    fn contexts(&mut self) -> io::Result<String> {
        // The columns of the kernel's sys:context that the sampler reads.
        let mut t = format!("{:<6}{:<6}{:<6}{:<6}{}\n", "PID", "EUID", "EGID", "STAT", "NAME");
        for (pid, uid, _) in &self.contexts {
            let name = self.names.iter().find(|n| n.0 == *pid).map_or("/usr/bin/fib", |n| n.1.as_str());
            t.push_str(&format!("{pid:<6}{uid:<6}{uid:<6}{:<6}{name}\n", "R"));
        }
        Ok(t)
    }
}
