//! Off-CPU probes without privilege (`--off-cpu`): why and where the program's threads wait.
//!
//! The kernel's context-switch event that would give a stack at each block is refused at
//! paranoid 2 (and its switch records cost the program two records a switch). So a thread of
//! ours looks at each of the program's threads at the sampling rate, through
//! `/proc/PID/task/TID/syscall`: for a blocked thread the kernel gives the system call, its
//! arguments and the user SP and PC at it (for a running or runnable one, `running`). The user
//! stack is then copied with `process_vm_readv` and unwound by the same DWARF unwinder as
//! `-g`'s samples. Both need only the ptrace access a user has to their own processes.
//!
//! Each look also reads the thread's scheduler statistics (`/proc/PID/task/TID/schedstat`:
//! its time on a CPU and waiting for one, exact): the ledger's account of the thread comes
//! from them, and its blocked time is split over the sites by the looks that found it there
//! (each look weighing the time since the previous one). A look that
//! finds a thread blocked exactly as at the previous look (same call, arguments, SP and PC) is
//! sent without copying the stack again, so a long wait costs two `pread`s per period.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::unwind::UserRegs;

/// What one look at a thread found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// On a CPU, or runnable.
    Running,
    /// Blocked as at this thread's previous look.
    Same,
    Blocked { call: String, target: Option<String>, regs: UserRegs, stack: Vec<u8> },
}

/// One look at thread `tid` between `from` and `to` (ns, CLOCK_MONOTONIC), with its
/// scheduler statistics where they could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawProbe {
    /// The process (the program, or a child it started, with `--children`) and its thread.
    pub pid: u32,
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub sched: Option<prof_core::ledger::Sched>,
    pub reading: Reading,
}

/// The probing thread of one session.
pub struct Prober {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    rx: Receiver<RawProbe>,
    /// Every probe whose `to` is before this time has been sent.
    watermark: Arc<AtomicU64>,
    problem: Arc<std::sync::Mutex<Option<String>>>,
    /// Processes to look at besides the program (`--children`), as they start.
    followed: Arc<std::sync::Mutex<Vec<u32>>>,
}

impl Prober {
    /// Look at every thread of process `pid` every `period_ns`, copying `stack_size` bytes of
    /// a blocked thread's stack.
    pub fn start(pid: u32, period_ns: u64, stack_size: usize) -> io::Result<Prober> {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let watermark = Arc::new(AtomicU64::new(0));
        let problem = Arc::new(std::sync::Mutex::new(None));
        let followed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut looker = Looker {
            pid,
            others: Default::default(),
            followed: followed.clone(),
            stack_size,
            threads: BTreeMap::new(),
            tx,
            problem: problem.clone(),
            buf: vec![0; 512],
        };
        let (stop2, watermark2) = (stop.clone(), watermark.clone());
        let period = Duration::from_nanos(period_ns.max(100_000));
        let handle = std::thread::Builder::new().name("profil-off-cpu".into()).spawn(move || {
            let mut round = 0u64;
            let mut next = std::time::Instant::now();
            while !stop2.load(Ordering::Relaxed) {
                // New threads are found every 16 periods, and at once at the start and when a
                // process to follow came (a child is looked at from its next period).
                let follow = looker.followed.lock().is_ok_and(|f| !f.is_empty());
                if (round.is_multiple_of(16) || follow) && !looker.find_threads() {
                    break;
                }
                round += 1;
                let done = looker.look();
                watermark2.store(done, Ordering::Release);
                next += period;
                let now = std::time::Instant::now();
                match next.checked_duration_since(now) {
                    Some(wait) => std::thread::sleep(wait),
                    // Late (the machine is busy): start again from now, no catching up.
                    None => next = now,
                }
            }
            watermark2.store(u64::MAX, Ordering::Release);
        })?;
        Ok(Prober { stop, handle: Some(handle), rx, watermark, problem, followed })
    }

    /// Look at process `pid` too from now on (a child of the program's, `--children`).
    pub fn follow(&self, pid: u32) {
        if let Ok(mut f) = self.followed.lock() {
            f.push(pid);
        }
    }

    /// The probes sent so far, and the time up to which every probe has come.
    pub fn take(&self) -> (Vec<RawProbe>, u64) {
        // The watermark first: every probe before it is in the channel when it is read.
        let until = self.watermark.load(Ordering::Acquire);
        (self.rx.try_iter().collect(), until)
    }

    /// Why probing stopped or saw less than it should, if it did.
    pub fn problem(&self) -> Option<String> {
        self.problem.lock().ok().and_then(|p| p.clone())
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

struct Watched {
    /// Its process.
    pid: u32,
    syscall: File,
    /// `/proc/PID/task/TID/schedstat`, where the kernel keeps it.
    schedstat: Option<File>,
    /// The previous look's text, where it found the thread blocked.
    last: Option<Vec<u8>>,
}

struct Looker {
    /// The program: looking ends with it.
    pid: u32,
    /// Processes it started that are looked at too (their threads are found every 16 looks).
    others: std::collections::BTreeSet<u32>,
    followed: Arc<std::sync::Mutex<Vec<u32>>>,
    stack_size: usize,
    threads: BTreeMap<u32, Watched>,
    tx: Sender<RawProbe>,
    problem: Arc<std::sync::Mutex<Option<String>>>,
    buf: Vec<u8>,
}

impl Looker {
    fn say(&self, what: String) {
        if let Ok(mut p) = self.problem.lock() {
            p.get_or_insert(what);
        }
    }

    /// Open the `syscall` file of every thread not watched yet, of the program and of the
    /// processes followed. False when the program is gone.
    fn find_threads(&mut self) -> bool {
        if let Ok(mut f) = self.followed.lock() {
            for pid in f.drain(..) {
                self.others.insert(pid);
            }
        }
        if !self.find_threads_of(self.pid) {
            return false;
        }
        let others: Vec<u32> = self.others.iter().copied().collect();
        for pid in others {
            if !self.find_threads_of(pid) {
                self.others.remove(&pid);
            }
        }
        true
    }

    /// Open the `syscall` file of every thread of `pid` not watched yet. False when the
    /// process is gone.
    fn find_threads_of(&mut self, pid: u32) -> bool {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
            if self.threads.contains_key(&tid) {
                continue;
            }
            match File::open(format!("/proc/{pid}/task/{tid}/syscall")) {
                Ok(syscall) => {
                    let schedstat = File::open(format!("/proc/{pid}/task/{tid}/schedstat")).ok();
                    self.threads.insert(tid, Watched { pid, syscall, schedstat, last: None });
                }
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    self.say(format!("cannot read /proc/{pid}/task/{tid}/syscall: {e} (ptrace access to the process is needed); its waits are not named"));
                }
                Err(_) => {}
            }
        }
        true
    }

    /// Look at every watched thread once; returns the time the last look ended.
    fn look(&mut self) -> u64 {
        let mut gone = Vec::new();
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        for tid in tids {
            let from = monotonic_ns();
            let Some(w) = self.threads.get_mut(&tid) else { continue };
            let pid = w.pid;
            let sched = w.schedstat.as_ref().and_then(|f| {
                let mut b = [0u8; 96];
                let n = f.read_at(&mut b, 0).ok()?;
                parse_schedstat(&b[..n])
            });
            let n = match w.syscall.read_at(&mut self.buf, 0) {
                Ok(n) => n,
                // The kernel checks ptrace access at each read (Yama, another user's process).
                Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                    gone.push(tid);
                    let what = format!("cannot read /proc/{pid}/task/{tid}/syscall: {e} (ptrace access to the process is needed); its waits are not named");
                    if let Ok(mut p) = self.problem.lock() {
                        p.get_or_insert(what);
                    }
                    continue;
                }
                // The thread has ended (ESRCH).
                Err(_) => {
                    gone.push(tid);
                    continue;
                }
            };
            let to = monotonic_ns();
            let text = &self.buf[..n];
            let Some(state) = parse_syscall(text) else {
                w.last = None;
                let _ = self.tx.send(RawProbe { pid, tid, from, to, sched, reading: Reading::Running });
                continue;
            };
            if w.last.as_deref() == Some(text) {
                let _ = self.tx.send(RawProbe { pid, tid, from, to, sched, reading: Reading::Same });
                continue;
            }
            w.last = Some(text.to_vec());
            let stack = read_stack(pid, state.sp, self.stack_size);
            let target = state.nr.and_then(|nr| target_of(pid, nr, &state.args));
            let call = match state.nr {
                Some(nr) => syscall_name(nr).map_or_else(|| format!("syscall {nr}"), str::to_string),
                None => "not in a system call".to_string(),
            };
            let regs = UserRegs { ip: state.pc, sp: state.sp, bp: 0 };
            let _ = self.tx.send(RawProbe { pid, tid, from, to, sched, reading: Reading::Blocked { call, target, regs, stack } });
        }
        for tid in gone {
            self.threads.remove(&tid);
        }
        monotonic_ns()
    }
}

/// A blocked thread's state as `/proc/PID/task/TID/syscall` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The system call, `None` when blocked outside one (`-1`).
    pub nr: Option<u64>,
    pub args: [u64; 6],
    pub sp: u64,
    pub pc: u64,
}

/// `ON_CPU_NS RUNQ_NS SLICES`.
pub fn parse_schedstat(text: &[u8]) -> Option<prof_core::ledger::Sched> {
    let text = std::str::from_utf8(text).ok()?;
    let mut w = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    Some(prof_core::ledger::Sched { on_cpu: w.next()??, runq: w.next()??, slices: w.next()?? })
}

/// `nr a1 … a6 sp pc` (hex but `nr`), `-1 sp pc`, or `running` (`None`).
pub fn parse_syscall(text: &[u8]) -> Option<Blocked> {
    let text = std::str::from_utf8(text).ok()?;
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let hex = |w: Option<&str>| w.and_then(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok());
    if first == "-1" {
        let sp = hex(words.next())?;
        let pc = hex(words.next())?;
        return Some(Blocked { nr: None, args: [0; 6], sp, pc });
    }
    let nr: u64 = first.parse().ok()?;
    let mut args = [0u64; 6];
    for a in &mut args {
        *a = hex(words.next())?;
    }
    let sp = hex(words.next())?;
    let pc = hex(words.next())?;
    Some(Blocked { nr: Some(nr), args, sp, pc })
}

/// Up to `size` bytes of process `pid`'s memory from `sp` up, a page at a time so that a
/// stack whose top is nearer than `size` is read up to it.
fn read_stack(pid: u32, sp: u64, size: usize) -> Vec<u8> {
    const PAGE: u64 = 4096;
    let mut out = vec![0u8; size];
    let mut remote = Vec::new();
    let (mut at, end) = (sp, sp.saturating_add(size as u64));
    while at < end {
        let next = ((at / PAGE) + 1).saturating_mul(PAGE).min(end);
        remote.push(libc::iovec { iov_base: at as *mut libc::c_void, iov_len: (next - at) as usize });
        at = next;
    }
    let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: out.len() };
    // SAFETY: `local` covers `out`, which lives across the call; the remote ranges are the
    // other process's and read by the kernel, which checks them.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, remote.as_ptr(), remote.len() as libc::c_ulong, 0) };
    out.truncate(usize::try_from(n).unwrap_or(0));
    out
}

/// What a blocking call waits on, where the arguments say: the file an fd names, the child
/// waited for.
fn target_of(pid: u32, nr: u64, args: &[u64; 6]) -> Option<String> {
    let nr = i64::try_from(nr).ok()?;
    if FD_CALLS.contains(&nr) {
        let fd = args[0] as i32;
        return std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok().map(|p| p.to_string_lossy().into_owned());
    }
    if nr == libc::SYS_wait4 || nr == libc::SYS_waitid {
        let who = if nr == libc::SYS_waitid { args[1] as i32 } else { args[0] as i32 };
        return Some(match who {
            -1 | 0 if nr == libc::SYS_wait4 => "any child".to_string(),
            p => format!("pid {p}"),
        });
    }
    None
}

/// Calls whose first argument is the file descriptor they wait on.
const FD_CALLS: [i64; 21] = [
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_preadv,
    libc::SYS_pwritev,
    libc::SYS_recvfrom,
    libc::SYS_sendto,
    libc::SYS_recvmsg,
    libc::SYS_sendmsg,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_connect,
    libc::SYS_fsync,
    libc::SYS_fdatasync,
    libc::SYS_flock,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_sync_file_range,
];

/// The name of system call `nr`: every call on x86_64 ([`crate::syscall_names`]); elsewhere
/// the ones a thread commonly blocks in (others by number).
pub fn syscall_name(nr: u64) -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    if let Some(name) = crate::syscall_names::NAMES.get(usize::try_from(nr).ok()?).filter(|n| !n.is_empty()) {
        return Some(name);
    }
    let nr = i64::try_from(nr).ok()?;
    const NAMES: [(i64, &str); 60] = [
        (libc::SYS_read, "read"),
        (libc::SYS_write, "write"),
        (libc::SYS_pread64, "pread64"),
        (libc::SYS_pwrite64, "pwrite64"),
        (libc::SYS_readv, "readv"),
        (libc::SYS_writev, "writev"),
        (libc::SYS_preadv, "preadv"),
        (libc::SYS_pwritev, "pwritev"),
        (libc::SYS_open, "open"),
        (libc::SYS_openat, "openat"),
        (libc::SYS_close, "close"),
        (libc::SYS_poll, "poll"),
        (libc::SYS_ppoll, "ppoll"),
        (libc::SYS_select, "select"),
        (libc::SYS_pselect6, "pselect6"),
        (libc::SYS_epoll_wait, "epoll_wait"),
        (libc::SYS_epoll_pwait, "epoll_pwait"),
        (libc::SYS_epoll_pwait2, "epoll_pwait2"),
        (libc::SYS_futex, "futex"),
        (libc::SYS_futex_waitv, "futex_waitv"),
        (libc::SYS_nanosleep, "nanosleep"),
        (libc::SYS_clock_nanosleep, "clock_nanosleep"),
        (libc::SYS_pause, "pause"),
        (libc::SYS_rt_sigsuspend, "rt_sigsuspend"),
        (libc::SYS_rt_sigtimedwait, "rt_sigtimedwait"),
        (libc::SYS_wait4, "wait4"),
        (libc::SYS_waitid, "waitid"),
        (libc::SYS_accept, "accept"),
        (libc::SYS_accept4, "accept4"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_recvfrom, "recvfrom"),
        (libc::SYS_sendto, "sendto"),
        (libc::SYS_recvmsg, "recvmsg"),
        (libc::SYS_sendmsg, "sendmsg"),
        (libc::SYS_fsync, "fsync"),
        (libc::SYS_fdatasync, "fdatasync"),
        (libc::SYS_sync, "sync"),
        (libc::SYS_syncfs, "syncfs"),
        (libc::SYS_sync_file_range, "sync_file_range"),
        (libc::SYS_flock, "flock"),
        (libc::SYS_fcntl, "fcntl"),
        (libc::SYS_ioctl, "ioctl"),
        (libc::SYS_msgrcv, "msgrcv"),
        (libc::SYS_semop, "semop"),
        (libc::SYS_io_getevents, "io_getevents"),
        (libc::SYS_unlink, "unlink"),
        (libc::SYS_unlinkat, "unlinkat"),
        (libc::SYS_rename, "rename"),
        (libc::SYS_renameat2, "renameat2"),
        (libc::SYS_mkdir, "mkdir"),
        (libc::SYS_ftruncate, "ftruncate"),
        (libc::SYS_fallocate, "fallocate"),
        (libc::SYS_newfstatat, "newfstatat"),
        (libc::SYS_statx, "statx"),
        (libc::SYS_getdents64, "getdents64"),
        (libc::SYS_mmap, "mmap"),
        (libc::SYS_munmap, "munmap"),
        (libc::SYS_madvise, "madvise"),
        (libc::SYS_sendfile, "sendfile"),
        (libc::SYS_splice, "splice"),
    ];
    NAMES.iter().find(|n| n.0 == nr).map(|n| n.1)
}


/// CLOCK_MONOTONIC in ns: the clock of the switch records (`use_clockid`) and of the looks.
pub(crate) fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_call_is_named_by_its_number() {
        assert_eq!(syscall_name(libc::SYS_read as u64), Some("read"));
        assert_eq!(syscall_name(libc::SYS_futex as u64), Some("futex"));
        #[cfg(target_arch = "x86_64")]
        {
            // Once shown as "syscall 58" and "syscall 10".
            assert_eq!(syscall_name(libc::SYS_vfork as u64), Some("vfork"));
            assert_eq!(syscall_name(libc::SYS_mprotect as u64), Some("mprotect"));
            assert_eq!(syscall_name(libc::SYS_clone3 as u64), Some("clone3"));
            // Numbers no call has: 335 to 423 are unused on x86_64.
            assert_eq!(syscall_name(400), None);
            assert_eq!(syscall_name(u64::MAX), None);
        }
    }

    #[test]
    fn reads_the_kernels_syscall_file() {
        let b = parse_syscall(b"230 0x1 0x0 0x7ffd3c0 0x0 0x0 0x0 0x7ffd3b8 0x7f12a0e4\n").unwrap();
        assert_eq!(b, Blocked { nr: Some(230), args: [1, 0, 0x7ffd3c0, 0, 0, 0], sp: 0x7ffd3b8, pc: 0x7f12a0e4 });
        assert_eq!(parse_syscall(b"-1 0x7ffd3b8 0x401000\n").unwrap().nr, None);
        assert_eq!(parse_syscall(b"running\n"), None);
        assert_eq!(parse_syscall(b"230 0x1\n"), None);
        let s = parse_schedstat(b"328206871 2928945 100\n").unwrap();
        assert_eq!((s.on_cpu, s.runq, s.slices), (328206871, 2928945, 100));
        assert_eq!(parse_schedstat(b"1 2\n"), None);
        assert_eq!(syscall_name(libc::SYS_clock_nanosleep as u64), Some("clock_nanosleep"));
        assert_eq!(syscall_name(451), None);
    }

    /// Our own thread, blocked in read on a pipe: seen in `read`, on the pipe, with a stack.
    #[test]
    fn sees_a_thread_blocked_on_a_pipe() {
        let mut fds = [0i32; 2];
        // SAFETY: pipe writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments.
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let mut b = [0u8; 1];
            // SAFETY: reads one byte into `b`.
            unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) };
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let pid = std::process::id();
        let text = std::fs::read(format!("/proc/{pid}/task/{tid}/syscall")).unwrap();
        let b = parse_syscall(&text).expect("blocked");
        assert_eq!(b.nr, Some(libc::SYS_read as u64));
        let target = target_of(pid, libc::SYS_read as u64, &b.args).unwrap();
        assert!(target.starts_with("pipe:["), "{target}");
        assert!(read_stack(pid, b.sp, 16384).len() >= 8);
        // SAFETY: writes one byte from a valid buffer.
        unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) };
        reader.join().unwrap();
    }
}

#[cfg(test)]
mod unwind_tests {
    use super::*;
    use crate::unwind::StackUnwinder;
    use prof_core::sampler::Mapping;

    #[inline(never)]
    fn sleeper(tx: mpsc::Sender<u32>) {
        // SAFETY: gettid has no arguments.
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        std::hint::black_box(());
    }

    /// A thread blocked in `thread::sleep` (std keeps its frames in RBP, which /proc does not
    /// give): the walk reaches the function that called sleep.
    #[test]
    fn a_blocked_threads_stack_reaches_its_caller() {
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || sleeper(tx));
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let pid = std::process::id();
        let text = std::fs::read(format!("/proc/{pid}/task/{tid}/syscall")).unwrap();
        let b = parse_syscall(&text).expect("blocked");
        let stack = read_stack(pid, b.sp, 16384);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut u = StackUnwinder::default();
        for (start, len, pgoff, _, _, path) in maps.lines().filter_map(crate::proc_maps::executable_mapping) {
            u.add_mapping(&Mapping { start, len, pgoff, path, file: None, build_id: None });
        }
        let s = u.unwind_without_bp(UserRegs { ip: b.pc, sp: b.sp, bp: 0 }, &stack);
        let here = sleeper as fn(mpsc::Sender<u32>) as usize as u64;
        t.join().unwrap();
        assert!(s.frames[1..].iter().any(|&a| a > here && a - here < 4096), "{s:x?} sleeper at {here:#x}");
    }
}
