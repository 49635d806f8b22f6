//! The Redox backend: the kernel's prof table, through `sys:prof_ctl` and `sys:prof_data`
//! (added by our kernel patch) and `sys:context` (who owns which pid).
//!
//! The kernel keeps exact user instruction pointers with cumulative counts; this sampler reads
//! a snapshot (decoded with the `kprof` crate, the same code the kernel encodes with) and hands
//! the session the increase since the previous one. The load base comes from the kernel's
//! record of the lowest executable mapping after exec (`kprof::Snapshot::image_load_base`).
//!
//! The kernel files are behind [`KernelFiles`], so the host tests run this sampler (and the
//! scheme handler over it) against a fake kernel built on the real `kprof::Profiler`.

use std::collections::BTreeMap;
use std::io;

use prof_core::error::ProfError;
use prof_core::image::ImageLayout;
use prof_core::sampler::{Account, CallStack, ChildBatch, CountFrom, SampleBatch, Sampler, Sampling};
use prof_core::session::StopReason;

/// Slots of the kernel's exact-PC table for one session.
pub const TABLE_CAPACITY: usize = 16384;

/// Seconds of samples the kernel's stack table holds even if every sample is a stack of its
/// own (a deep recursion's are): a 60 s `-g` run at 4 kHz loses none.
pub const STACK_SECONDS: usize = 64;

/// Samples per second assumed of the timer source (the PIT's 246 on x86), for sizing.
const TIMER_RATE_FOR_SIZING: usize = 250;

/// Distinct stacks the kernel's stack table is asked to hold (`stacks=`) for a session at
/// `rate` (`None`: the timer): [`STACK_SECONDS`] of samples, at most the kernel's limit
/// (about 25 MiB of kernel memory, 65 s at 4 kHz).
pub fn stack_table_size(rate: Option<u64>) -> usize {
    let rate = rate.map_or(TIMER_RATE_FOR_SIZING, |hz| usize::try_from(hz).unwrap_or(usize::MAX));
    rate.saturating_mul(STACK_SECONDS).min(kprof::MAX_STACKS)
}

/// The kernel files the sampler uses.
pub trait KernelFiles {
    /// Write one command to `sys:prof_ctl`.
    fn ctl(&mut self, command: &str) -> io::Result<()>;
    /// Read a fresh `sys:prof_data` snapshot.
    fn data(&mut self) -> io::Result<Vec<u8>>;
    /// Read the `sys:context` table.
    fn contexts(&mut self) -> io::Result<String>;
    /// Read `sys:prof_clock`, the threads by the clock (a kernel before the clock patch has
    /// none: ENOENT).
    fn clock(&mut self) -> io::Result<Vec<u8>> {
        Err(io::Error::from_raw_os_error(libc::ENOENT))
    }
}

/// The name of pid 0's samples in a session on all: the user contexts that have no pid.
pub const BOOTSTRAP: &str = "[bootstrap]";

/// A [`Sampler`] over the kernel's prof table.
pub struct KernelSampler<K: KernelFiles> {
    kernel: K,
    session: Option<KernelSession>,
}

/// What was already handed over, to report only increases.
struct KernelSession {
    pid: u32,
    image: ImageLayout,
    counts: BTreeMap<u64, u64>,
    /// Ticks of each call stack of each thread seen so far (the kernel's counts are
    /// cumulative).
    stack_counts: BTreeMap<(u64, CallStack), u64>,
    stacks_dropped: u64,
    kernel_ticks: u64,
    dropped: u64,
    /// Server stacks seen so far, by owner (a daemon's pid; a followed process's pid and
    /// image, `kprof::owner_key`), and the account's cumulative counters.
    server_counts: BTreeMap<(u64, CallStack), u64>,
    /// The processes the kernel follows (`children`), as handed over so far.
    followed: BTreeMap<u32, FollowedSeen>,
    account: Account,
    /// Daemons whose executable was looked up.
    named: BTreeMap<u32, String>,
    ended: bool,
}

/// What was handed over of a followed process (its parent, when it was first seen).
#[derive(Default)]
struct FollowedSeen {
    /// Its execs.
    execs: u32,
    exited: bool,
}

impl KernelSession {
    fn new(pid: u32, image: ImageLayout) -> KernelSession {
        KernelSession {
            pid,
            image,
            counts: BTreeMap::new(),
            stack_counts: BTreeMap::new(),
            stacks_dropped: 0,
            kernel_ticks: 0,
            dropped: 0,
            server_counts: BTreeMap::new(),
            followed: BTreeMap::new(),
            account: Account::default(),
            named: BTreeMap::new(),
            ended: false,
        }
    }
}

impl<K: KernelFiles> KernelSampler<K> {
    pub fn new(kernel: K) -> Self {
        KernelSampler { kernel, session: None }
    }

    pub fn kernel(&mut self) -> &mut K {
        &mut self.kernel
    }
}

/// The kernel's counts are cumulative: the ticks of `key` since `seen` last recorded it.
fn new_ticks<K: Ord>(seen: &mut BTreeMap<K, u64>, key: K, count: u64) -> Option<u64> {
    let last = seen.entry(key).or_insert(0);
    let new = count.checked_sub(*last).filter(|&n| n > 0)?;
    *last = count;
    Some(new)
}

fn errno(operation: &'static str, e: &io::Error) -> ProfError {
    ProfError::from_io(operation, e)
}

/// The name (the executable's path, as procmgr sets it) of `pid` in a `sys:context` table,
/// whose last column is `NAME`: the text from that column's place in the header (the memory
/// columns hold spaces, "1.95 MB"), or the row's last word where a wide field pushed it on.
pub fn name_in_context_table(table: &str, pid: u32) -> Option<String> {
    let mut lines = table.lines();
    let at = lines.next()?.find("NAME")?;
    lines.find_map(|line| {
        let p: u32 = line.split_ascii_whitespace().next()?.parse().ok()?;
        if p != pid {
            return None;
        }
        let in_column = line
            .get(at..)
            .filter(|_| line[..at].ends_with(|c: char| c.is_ascii_whitespace()))
            .map(str::trim)
            .filter(|n| !n.is_empty());
        in_column.or_else(|| line.split_ascii_whitespace().last()).map(str::to_string)
    })
}

/// The owner (euid) of `pid` in a `sys:context` table (`PID EUID EGID …` columns).
pub fn owner_in_context_table(table: &str, pid: u32) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let mut w = line.split_ascii_whitespace();
        let p: u32 = w.next()?.parse().ok()?;
        let euid: u32 = w.next()?.parse().ok()?;
        (p == pid).then_some(euid)
    })
}

impl<K: KernelFiles> Sampler for KernelSampler<K> {
    fn process_owner(&mut self, pid: u32) -> Result<u32, ProfError> {
        let table = self.kernel.contexts().map_err(|e| errno("reading sys:context", &e))?;
        owner_in_context_table(&table, pid).ok_or(ProfError::NoProcess)
    }

    fn start(&mut self, pid: u32, image: &ImageLayout, from: CountFrom, rate: Option<u64>, children: bool) -> Result<(), ProfError> {
        // On Redox exec runs in userspace (relibc), in the launched child: `exec` keeps that
        // code, linked like every static program at 0x401000, out of the program's bins.
        let when = prof_core::ctl::count_from_suffix(from);
        // The kernel follows the process tree: each process's samples under its pid and image.
        let children = if children { " children" } else { "" };
        // A rate asks the kernel for its NMI source (it falls back to the timer tick).
        let stacks = stack_table_size(rate);
        let rate = prof_core::ctl::rate_suffix(rate);
        let command = format!("start {pid} {TABLE_CAPACITY}{when}{children}{rate} stacks={stacks}\n");
        self.kernel.ctl(&command).map_err(|e| errno("writing sys:prof_ctl", &e))?;
        self.session = Some(KernelSession::new(pid, image.clone()));
        Ok(())
    }

    fn start_all(&mut self, rate: Option<u64>) -> Result<(), ProfError> {
        // Every process's samples go to the kernel's server stacks, sized as the stack table.
        let stacks = stack_table_size(rate);
        let rate = prof_core::ctl::rate_suffix(rate);
        let command = format!("start all{rate} stacks={stacks}\n");
        self.kernel.ctl(&command).map_err(|e| errno("writing sys:prof_ctl", &e))?;
        // The kernel's session on all has pid 0.
        self.session = Some(KernelSession::new(0, ImageLayout::unknown()));
        Ok(())
    }


    fn collect(&mut self) -> Result<SampleBatch, ProfError> {
        let mut batch = SampleBatch::default();
        let Some(s) = self.session.as_mut() else { return Ok(batch) };
        if s.ended {
            return Ok(batch);
        }
        let bytes = self.kernel.data().map_err(|e| errno("reading sys:prof_data", &e))?;
        let mut snap = kprof::decode(&bytes).map_err(|_| ProfError::failed_at("decoding sys:prof_data"))?;
        if snap.pid != u64::from(s.pid) {
            // Someone started another session through sys:prof_ctl directly.
            s.ended = true;
            batch.ended = Some(StopReason::Request);
            return Ok(batch);
        }
        // One table of exact PCs: the user ones, then the kernel's (above KERNEL_SPACE_START).
        for e in &snap.entries {
            if let Some(n) = new_ticks(&mut s.counts, e.addr, e.count) {
                let to = if e.addr >= kprof::KERNEL_SPACE_START { &mut batch.kernel } else { &mut batch.user };
                to.push((e.addr, n));
            }
        }
        batch.sampling = Some(Sampling { source: snap.source.as_str(), rate: snap.rate });
        for st in std::mem::take(&mut snap.stacks) {
            let stack = CallStack { frames: st.frames, truncated: st.truncated };
            if let Some(n) = new_ticks(&mut s.stack_counts, (st.thread, stack.clone()), st.count) {
                // By thread (the kernel's context id, the clock's tid), where it is known.
                if let (Ok(tid @ 1..), Some(&leaf)) = (u32::try_from(st.thread), stack.frames.first()) {
                    batch.thread_samples.push((tid, leaf, n));
                }
                batch.stacks.push((stack, n));
            }
        }
        // Ticks whose stack found the kernel's stack table full (deep recursion makes many
        // distinct stacks): kept as truncated stacks of their sampled address alone, so every
        // tick has a stack, in the right function. Those are the PC-table ticks of this batch
        // that no recorded stack accounts for, up to the kernel's count of them.
        let mut full = snap.stacks_dropped.saturating_sub(s.stacks_dropped);
        s.stacks_dropped = snap.stacks_dropped;
        if full > 0 {
            let mut with_stack: BTreeMap<u64, u64> = BTreeMap::new();
            for (st, n) in &batch.stacks {
                if let Some(&pc) = st.frames.first() {
                    *with_stack.entry(pc).or_insert(0) += n;
                }
            }
            for &(pc, n) in batch.user.iter().chain(&batch.kernel) {
                let without = n.saturating_sub(with_stack.get(&pc).copied().unwrap_or(0)).min(full);
                if without > 0 {
                    batch.stacks.push((CallStack { frames: vec![pc], truncated: true }, without));
                    full -= without;
                }
            }
            if full > 0 {
                batch.stacks.push((CallStack { frames: Vec::new(), truncated: true }, full));
            }
        }
        // Daemons working for the program, the processes it started (`children`), and the
        // rest of the run's ticks.
        let followed: BTreeMap<u32, kprof::FollowedProcess> =
            snap.followed.iter().filter_map(|f| Some((u32::try_from(f.pid).ok()?, *f))).collect();
        let mut children: BTreeMap<u32, ChildBatch> = BTreeMap::new();
        for server in std::mem::take(&mut snap.server_stacks) {
            let pid = u32::try_from(server.pid).unwrap_or(u32::MAX);
            let owner = kprof::owner_key(pid as usize, server.image);
            let stack = CallStack { frames: server.stack.frames, truncated: server.stack.truncated };
            let Some(n) = new_ticks(&mut s.server_counts, (owner, stack.clone()), server.stack.count) else { continue };
            match followed.get(&pid) {
                Some(f) => {
                    let c = children.entry(pid).or_insert_with(|| ChildBatch { pid, ..Default::default() });
                    // An image before the one it runs now (the forked copy, up to and in its
                    // exec) is not the program it runs: no addresses.
                    let stack = match server.image < f.execs {
                        true => CallStack { frames: Vec::new(), truncated: true },
                        false => stack,
                    };
                    match stack.frames.first() {
                        Some(&leaf) if leaf >= kprof::KERNEL_SPACE_START => c.kernel_ticks += n,
                        leaf => c.user.push((leaf.copied().unwrap_or(0), n)),
                    }
                    c.stacks.push((stack, n));
                }
                None => batch.servers.push((pid, stack, n)),
            }
        }
        // Each followed process as it now is: started by whom, exec'd (its program: the name
        // the kernel kept, else its context's while it lives), exited.
        let unnamed = followed
            .iter()
            .any(|(pid, f)| s.followed.get(pid).map_or(0, |seen| seen.execs) < f.execs && f.name_text().is_none());
        let names = if unnamed { self.kernel.contexts().unwrap_or_default() } else { String::new() };
        for (&pid, f) in &followed {
            let c = children.entry(pid).or_insert_with(|| ChildBatch { pid, ..Default::default() });
            if !s.followed.contains_key(&pid) {
                c.parent = u32::try_from(f.parent & 0xffff_ffff).ok().filter(|&p| p != 0);
            }
            let seen = s.followed.entry(pid).or_default();
            if f.execs > seen.execs {
                seen.execs = f.execs;
                // Its program, while it runs it (procmgr names a process by its executable).
                c.exec = Some(
                    f.name_text().or_else(|| name_in_context_table(&names, pid)).unwrap_or_else(|| "[exited]".into()),
                );
            }
            if f.flags & kprof::FOLLOWED_EXITED != 0 && !seen.exited {
                seen.exited = true;
                c.exited = true;
            }
        }
        batch.child_processes = children.into_values().collect();
        if !followed.is_empty() || snap.followed_missed > 0 {
            batch.children_missed = Some(snap.followed_missed);
        }
        let now = Account {
            server_user: snap.server_user_ticks,
            server_kernel: snap.server_kernel_ticks,
            servers_dropped: snap.servers_dropped,
            idle: snap.idle_ticks,
            other: snap.other_ticks,
        };
        batch.account = Account {
            server_user: now.server_user.saturating_sub(s.account.server_user),
            server_kernel: now.server_kernel.saturating_sub(s.account.server_kernel),
            servers_dropped: now.servers_dropped.saturating_sub(s.account.servers_dropped),
            idle: now.idle.saturating_sub(s.account.idle),
            other: now.other.saturating_sub(s.account.other),
        };
        s.account = now;
        // Name each new daemon while it is alive (it may have exited by the end of the run).
        let unnamed: Vec<u32> =
            batch.servers.iter().map(|b| b.0).filter(|pid| !s.named.contains_key(pid)).collect();
        // The threads by the clock, read after the data, so final when the data was.
        let clock = self
            .kernel
            .clock()
            .ok()
            .and_then(|b| prof_core::kernel_clock::parse(&String::from_utf8_lossy(&b)))
            .filter(|c| c.pid == u64::from(s.pid));
        // New daemons and each scheme's daemon named while they are alive, from one read of
        // the context table.
        let wanted = !unnamed.is_empty() || clock.as_ref().is_some_and(|c| !c.schemes.is_empty());
        let table = if wanted { self.kernel.contexts().unwrap_or_default() } else { String::new() };
        for pid in unnamed {
            if let std::collections::btree_map::Entry::Vacant(e) = s.named.entry(pid) {
                // Pid 0 (a session on all): the user contexts without a pid, the bootstrap's
                // process and namespace managers.
                let name = match pid {
                    0 => BOOTSTRAP.to_string(),
                    _ => name_in_context_table(&table, pid).unwrap_or_else(|| "[exited]".into()),
                };
                e.insert(name.clone());
                batch.server_names.push((pid, name));
            }
        }
        if let Some(mut clock) = clock {
            for d in &mut clock.schemes {
                d.name = match d.daemon {
                    // A daemon without a pid: the bootstrap's process or namespace manager.
                    0 => Some(BOOTSTRAP.to_string()),
                    daemon => u32::try_from(daemon).ok().and_then(|pid| name_in_context_table(&table, pid)),
                };
            }
            batch.kernel_clock = Some(clock);
        }
        batch.kernel_ticks = snap.kernel_ticks.saturating_sub(s.kernel_ticks);
        batch.lost = snap.dropped.saturating_sub(s.dropped);
        s.kernel_ticks = snap.kernel_ticks;
        s.dropped = snap.dropped;
        batch.load_base = if s.image.is_unknown() { Some(0) } else { snap.image_load_base(s.image.text.start) };
        if snap.state == kprof::State::Stopped {
            s.ended = true;
            // A stopped session has its reason (the decoder checks it).
            batch.ended = Some(snap.stop_reason.unwrap_or(StopReason::Request));
        }
        Ok(batch)
    }

    fn stop(&mut self) {
        if let Some(s) = self.session.as_mut() {
            if !s.ended {
                // A session the kernel already ended answers "not running": nothing to do.
                let _ = self.kernel.ctl("stop\n");
                s.ended = true;
            }
        }
    }
}

#[cfg(target_os = "redox")]
pub use sys_files::SysFiles;

/// The real kernel files. The `sys:` root is opened once, before the daemon enters the null
/// namespace; each read opens its entry afresh relative to that capability, because a `sys:`
/// file's content is generated once per open.
#[cfg(target_os = "redox")]
pub(crate) mod sys_files {
    use std::io;

    use libredox::flag::{O_DIRECTORY, O_RDONLY, O_WRONLY};
    use libredox::Fd;

    use super::KernelFiles;

    pub struct SysFiles {
        root: Fd,
        ctl: Fd,
    }

    pub(crate) fn io_err(e: libredox::error::Error) -> io::Error {
        io::Error::from_raw_os_error(e.errno())
    }

    /// The whole of entry `name` of the scheme whose root is `root` (a `sys:` file's content
    /// is made once per open, so each read opens it afresh).
    pub(crate) fn read_entry(root: &Fd, name: &str) -> io::Result<Vec<u8>> {
        let fd = root.openat(name, O_RDONLY, 0).map_err(io_err)?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match fd.read(&mut buf).map_err(io_err)? {
                0 => return Ok(out),
                n => out.extend_from_slice(&buf[..n]),
            }
        }
    }

    impl SysFiles {
        /// Open `/scheme/sys` and its `prof_ctl` (root only).
        pub fn open() -> io::Result<SysFiles> {
            let root = Fd::open("/scheme/sys", O_RDONLY | O_DIRECTORY, 0).map_err(io_err)?;
            let ctl = root.openat("prof_ctl", O_WRONLY, 0).map_err(io_err)?;
            Ok(SysFiles { root, ctl })
        }

        fn read_entry(&self, name: &str) -> io::Result<Vec<u8>> {
            read_entry(&self.root, name)
        }
    }

    impl KernelFiles for SysFiles {
        fn ctl(&mut self, command: &str) -> io::Result<()> {
            self.ctl.write(command.as_bytes()).map(|_| ()).map_err(io_err)
        }

        fn data(&mut self) -> io::Result<Vec<u8>> {
            self.read_entry("prof_data")
        }

        fn contexts(&mut self) -> io::Result<String> {
            Ok(String::from_utf8_lossy(&self.read_entry("context")?).into_owned())
        }

        fn clock(&mut self) -> io::Result<Vec<u8>> {
            self.read_entry("prof_clock")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_from_the_kernel_context_table() {
        let table = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
                     1     0     0     UR    0     #0         00:00:00.01 12 KB   0 B     /bin/init\n\
                     42    1000  1000  S     ?     #0         00:00:01.20 2 MB    0 B     /usr/bin/fib 38\n";
        assert_eq!(owner_in_context_table(table, 42), Some(1000));
        assert_eq!(owner_in_context_table(table, 1), Some(0));
        assert_eq!(owner_in_context_table(table, 4), None);
        assert_eq!(owner_in_context_table("", 1), None);
    }

    /// Rows as the kernel at 663e6641 prints them (the memory columns hold spaces).
    #[test]
    fn names_from_the_kernel_context_table() {
        let table = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
                     0     0     0     RR    #0    1          00:00:00.00 1.12 KB 0 B     [kmain]\n\
                     7     0     0     UB    #0    1          00:00:00.70 1.95 MB 4.00 KB /scheme/initfs/bin/ramfs\n\
                     9     0     0     UB    #0    1          00:00:00.03 1.82 MB 4.00 KB /scheme/initfs/bin/profd\n\
                     12    0     0     UB    #0    1          100:00:00.03 100.5 MB 4.00 KB /usr/bin/wide\n";
        assert_eq!(name_in_context_table(table, 7).as_deref(), Some("/scheme/initfs/bin/ramfs"));
        assert_eq!(name_in_context_table(table, 9).as_deref(), Some("/scheme/initfs/bin/profd"));
        assert_eq!(name_in_context_table(table, 0).as_deref(), Some("[kmain]"));
        // Fields wider than their columns push the name on: its last word.
        assert_eq!(name_in_context_table(table, 12).as_deref(), Some("/usr/bin/wide"));
        assert_eq!(name_in_context_table(table, 4), None);
        assert_eq!(name_in_context_table("", 7), None);
    }
}
