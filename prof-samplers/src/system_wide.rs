//! System-wide sampling on Linux (`profil -a`), as `perf record -a`: a `cpu-clock` event on
//! every CPU over every task (`perf_event_open` with pid -1), so each sample names the process
//! and thread it interrupted, or the idle task (pid 0). The kernel allows this to root, to a
//! process with `CAP_PERFMON`, and to anyone where `kernel.perf_event_paranoid` is 0 or less.
//!
//! * The processes running at the start are read from `/proc` (their parent, name and
//!   executable mappings: no record will announce those); the events are opened first, so a
//!   process started in between is seen by its records.
//! * Processes started later are seen by their fork, exec and mmap records, and their ends by
//!   the exit records: a process that ran between two samples is still counted as a run.
//! * Every process is a [`ChildBatch`] of the batch, named as the `--children` ones are;
//!   kernel-mode samples are counted to their process and, by address, to the kernel; samples
//!   of the idle task are the account's `idle`.
//! * The session lock is held as for a session on one program: a system-wide run is the one
//!   session of the machine.
//! * With `--requests`, every process's system calls from the `raw_syscalls` tracepoints on
//!   every CPU ([`crate::syscalls::SyscallTracer::system_wide`], as `perf trace -a`), profil's
//!   own left out. Every event is opened before the session lock is taken, so a run seen to
//!   hold the lock records every process and call from then on.

use std::io;
use std::path::Path;
use std::os::unix::net::UnixListener;

use prof_core::error::ProfError;
use prof_core::sample::Sample;
use prof_core::sampler::{CallGraph, ChildBatch, Mapping, SampleBatch, MAX_STACK_SIZE};

use crate::off_cpu::monotonic_ns;
use crate::proc_maps::executable_mapping;
use crate::perf_event::{
    child_part, in_taking_order, lock_session, mapping_file, open_event, os_error, page_size,
    poll_readable, record_format, Children, EventSpec, Record, RequestRings, Ring, DATA_PAGES, STACK_SAMPLES_PER_RING,
};
use crate::syscalls::SyscallTracer;

/// How to sample the whole system.
#[derive(Debug, Clone, Copy)]
pub struct SystemConfig {
    /// Samples per second and CPU.
    pub frequency_hz: u64,
    pub call_graph: CallGraph,
    /// Every process's system calls with their latencies (`--requests`).
    pub requests: bool,
}

/// The system-wide sampler. See the module's doc.
pub struct SystemSampler {
    rings: Vec<Ring>,
    /// The processes running at the start, for the first batch.
    pending: SampleBatch,
    /// Every process's mappings, where it came from, and (copied stacks) its unwinder.
    processes: Children,
    /// Unwinding time of processes gone.
    unwound: std::time::Duration,
    /// `--requests`: the system calls' tracepoints.
    syscalls: Option<SyscallTracer>,
    _lock: Option<UnixListener>,
}

impl SystemSampler {
    /// Take the session and start sampling every CPU.
    pub fn start(config: SystemConfig) -> Result<SystemSampler, ProfError> {
        if config.frequency_hz == 0 || config.frequency_hz > 100_000 {
            return Err(ProfError::failed("-F", &io::Error::new(io::ErrorKind::InvalidInput, "sampling frequency must be 1..=100000 Hz")));
        }
        if let CallGraph::Dwarf { stack_size } = config.call_graph {
            if !prof_core::sampler::is_valid_stack_size(u64::from(stack_size)) {
                let why = format!("stack size must be a multiple of 8 from 8 to {MAX_STACK_SIZE} bytes");
                return Err(ProfError::failed("--stack-size", &io::Error::new(io::ErrorKind::InvalidInput, why)));
            }
        }
        // Every event before the lock: once it is seen held, every process started and every
        // call made is recorded (a process that starts and ends before the rings are open is
        // seen by no record, nor by /proc).
        let syscalls = match config.requests {
            true => Some(SyscallTracer::system_wide(std::process::id(), config.call_graph != CallGraph::None).map_err(|e| os_error("the raw_syscalls tracepoints", &e))?),
            false => None,
        };
        let mut data_pages = match config.call_graph {
            CallGraph::Dwarf { stack_size } => {
                (STACK_SAMPLES_PER_RING * (stack_size as usize + 64) / page_size()).next_power_of_two().max(DATA_PAGES)
            }
            _ => DATA_PAGES,
        };
        let rings = loop {
            let spec = EventSpec {
                period_ns: cpu_wide_period(config.frequency_hz),
                call_graph: config.call_graph,
                count_kernel: true,
                at_exec: false,
                inherit: false,
                data_pages,
            };
            match open_rings(&spec) {
                // The memory-lock limit refuses a large ring: a smaller one (samples may then be
                // lost, and are counted).
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && data_pages > DATA_PAGES => data_pages /= 2,
                Err(e) => return Err(os_error("perf_event_open", &e)),
                Ok(rings) => break rings,
            }
        };
        let lock = lock_session()?;
        // Opened first: a process started from here on is seen by its records.
        let mut pending = SampleBatch { clock: vec![monotonic_ns()], ..Default::default() };
        let mut processes = Children::default();
        for c in running_processes() {
            let f = processes.followed.entry(c.pid).or_default();
            (f.parent, f.exec, f.mappings) = (c.parent, true, c.mappings.clone());
            pending.child_processes.push(c);
        }
        Ok(SystemSampler {
            rings,
            pending,
            processes,
            unwound: std::time::Duration::ZERO,
            syscalls,
            _lock: lock,
        })
    }

    /// Block until a ring has samples past its watermark, or `timeout_ms` passes.
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        let calls = self.syscalls.iter().flat_map(|t| t.rings());
        poll_readable(self.rings.iter().map(|r| &r.fd).chain(calls), timeout_ms)
    }

    /// Time spent unwinding copied stacks so far.
    pub fn unwind_time(&self) -> std::time::Duration {
        self.unwound + self.processes.busy()
    }

    /// What the CPUs did since the last batch; `last`: the run's end (the calls still under
    /// way are unfinished).
    pub fn collect(&mut self, last: bool) -> SampleBatch {
        let mut batch = std::mem::take(&mut self.pending);
        let now = monotonic_ns();
        batch.clock.push(now);
        let mut records: Vec<Record> = self.rings.iter_mut().flat_map(Ring::drain).collect();
        in_taking_order(&mut records);
        for rec in records {
            // A process first seen here that no record introduced (it started while /proc
            // was read): /proc says what it is.
            match &rec {
                Record::Sample { pid, .. } | Record::Mmap2 { pid, .. } if *pid != 0 => self.know(*pid, &mut batch),
                _ => {}
            }
            match rec {
                // The idle task.
                Record::Sample { pid: 0, .. } => batch.servers.account.idle += 1,
                Record::Sample { pid, tid, time, kernel: true, ip, .. } => {
                    child_part(&mut batch, pid).samples.push(Sample::kernel(Some(time), tid, ip, false, None));
                }
                Record::Sample { pid, tid, time, ip, stack, .. } => {
                    let stack = stack.and_then(|raw| raw.call_stack(ip, || Some(self.processes.unwinder(0, pid))));
                    child_part(&mut batch, pid).samples.push(Sample::user(Some(time), tid, ip, stack));
                }
                Record::Lost(n) => batch.lost += n,
                Record::Exec { pid, comm, .. } => {
                    let f = self.processes.followed.entry(pid).or_default();
                    // What it had is gone; its unwinder is made again from its new mappings.
                    (f.exec, f.unwinder) = (true, None);
                    f.mappings.clear();
                    child_part(&mut batch, pid).exec = Some(comm);
                }
                // A new process (a new thread of one is not: `pid == ppid`).
                Record::Fork { pid, ppid, .. } if pid != ppid => {
                    self.processes.followed.entry(pid).or_default().parent = Some(ppid);
                    child_part(&mut batch, pid).parent = Some(ppid);
                }
                Record::Exit { pid, tid, .. } if pid == tid => {
                    self.unwound += self.processes.ended(pid);
                    child_part(&mut batch, pid).exited = true;
                }
                Record::Mmap2 { pid, addr, len, pgoff, raw, .. } => {
                    let path = String::from_utf8_lossy(&raw).into_owned();
                    let file = mapping_file(pid, Some(&raw), addr, len, false);
                    let m = Mapping { start: addr, len, pgoff, path, file, build_id: None };
                    self.processes.mapped(pid, &m);
                    child_part(&mut batch, pid).mappings.push(m);
                }
                Record::Fork { .. } | Record::Exit { .. } | Record::Switch { .. } | Record::Syscall { .. } => {}
            }
        }
        // After the records: the processes' mappings, to unwind their calls' stack tops (-g).
        if let Some(t) = self.syscalls.as_mut() {
            let processes = &mut self.processes;
            t.collect(now, last, &mut batch.requests, &mut |pid, regs, bytes| Some(processes.unwinder(0, pid).unwind(regs, bytes)));
        }
        batch
    }
}

impl SystemSampler {
    /// Make process `pid` known, from `/proc` if no record has introduced it.
    fn know(&mut self, pid: u32, batch: &mut SampleBatch) {
        if self.processes.followed.contains_key(&pid) {
            return;
        }
        let f = self.processes.followed.entry(pid).or_default();
        if let Some(c) = process_now(pid) {
            (f.parent, f.exec, f.mappings) = (c.parent, true, c.mappings.clone());
            batch.child_processes.push(c);
        }
    }
}

/// The sampling period (ns) at `frequency_hz`, a little short of the round one: a CPU-wide
/// timer whose period is a multiple or a divisor of the scheduler's tick locks onto its phase
/// and samples the task switched in at the tick more often than its share (three busy
/// processes of 0.9, 0.6 and 0.3 s of CPU time, two more spinning, 1 kHz: 3 to 8 % too many
/// samples each at 1 ms; within 1 % at 0.3 % less).
fn cpu_wide_period(frequency_hz: u64) -> u64 {
    let round = 1_000_000_000 / frequency_hz.max(1);
    round - round / 350
}

/// A CPU-wide event with its ring on every CPU.
fn open_rings(spec: &EventSpec) -> io::Result<Vec<Ring>> {
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as i32;
    let mut rings = Vec::new();
    for cpu in 0..cpus {
        match open_event(spec, -1, cpu) {
            Ok(fd) => rings.push(Ring::map(fd, spec.data_pages, record_format(spec))?),
            // An offline CPU.
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {}
            Err(e) => return Err(e),
        }
    }
    if rings.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    Ok(rings)
}

/// The processes running now, from `/proc`: each one's parent, name and executable mappings.
/// A kernel thread (no program, no mappings) is named as `ps` names it, `[kthreadd]`.
fn running_processes() -> Vec<ChildBatch> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    pids.sort_unstable();
    pids.into_iter().filter_map(process_now).collect()
}

/// Process `pid` as `/proc` shows it now; `None` if it is gone.
fn process_now(pid: u32) -> Option<ChildBatch> {
    use prof_objects::bounded::{self, proc_limits};
    let stat = bounded::read_to_string(Path::new(&format!("/proc/{pid}/stat")), proc_limits::SMALL).ok()?;
    let (comm, ppid) = stat_comm_and_parent(&stat)?;
    let maps = bounded::read(Path::new(&format!("/proc/{pid}/maps")), proc_limits::MAPS).unwrap_or_default();
    let maps = String::from_utf8_lossy(&maps);
    let mappings: Vec<Mapping> = maps
        .lines()
        .filter_map(executable_mapping)
        .map(|(start, len, pgoff, _, _, path)| {
            let raw = (!path.contains(char::REPLACEMENT_CHARACTER)).then(|| path.as_bytes().to_vec());
            let file = mapping_file(pid, raw.as_deref(), start, len, false);
            Mapping { start, len, pgoff, path, file, build_id: None }
        })
        .collect();
    // A kernel thread has no program file (its exe link is empty).
    let kernel_thread = mappings.is_empty() && std::fs::read_link(format!("/proc/{pid}/exe")).is_err();
    let name = if kernel_thread { format!("[{comm}]") } else { comm };
    Some(ChildBatch { pid, parent: (ppid != 0).then_some(ppid), exec: Some(name), mappings, ..Default::default() })
}

/// The name and the parent's pid in a `/proc/PID/stat` line: `pid (comm) state ppid ...`,
/// where `comm` may hold spaces and parentheses (the last `)` ends it).
fn stat_comm_and_parent(stat: &str) -> Option<(String, u32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_ascii_whitespace();
    let _state = rest.next()?;
    Some((comm, rest.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_name_and_parent() {
        assert_eq!(stat_comm_and_parent("42 (bash) S 1 42 42 0"), Some(("bash".into(), 1)));
        assert_eq!(stat_comm_and_parent("7 (a) b) (c) R 6 7"), Some(("a) b) (c".into(), 6)));
        assert_eq!(stat_comm_and_parent("2 (kthreadd) S 0 0"), Some(("kthreadd".into(), 0)));
        assert_eq!(stat_comm_and_parent("garbage"), None);
    }

    #[test]
    fn this_process_is_among_the_running_ones() {
        let me = std::process::id();
        let all = running_processes();
        let own = all.iter().find(|c| c.pid == me).expect("this process is running");
        assert!(own.mappings.iter().any(|m| m.path.ends_with(".so.6") || m.path.contains("system_wide")), "{:?}", own.mappings);
        // The kernel's thread creator, where this system lets us see it, is a kernel thread.
        if let Some(k) = all.iter().find(|c| c.exec.as_deref() == Some("[kthreadd]")) {
            assert!(k.mappings.is_empty() && k.parent.is_none());
        }
    }
}
