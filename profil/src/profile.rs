//! The result of one profiled run, whichever OS backend produced it.

use prof_core::formats::{parse_samples, parse_status, reason_from_str, StackFrame};
use prof_core::prof_data::DecodeError;
use prof_core::sampler::{Mapping, Sampling};
use std::collections::BTreeMap;

use prof_core::session::{ChildProcess, Session};
use prof_core::system::SystemRecord;
use prof_core::{ProfData, StopReason};


pub use crate::frame::Frame;

/// A recorded call stack and how many samples had it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stack {
    /// Innermost first: the sampled function, then its callers.
    pub frames: Vec<Frame>,
    /// The outermost callers are missing (the unwind stopped early).
    pub truncated: bool,
    pub count: u64,
}

impl Stack {
    /// A stack of placed frames (`Session::stack_frames`, `/scheme/prof/stacks`): each caller
    /// is named by its return address minus one.
    pub(crate) fn new(frames: Vec<StackFrame>, truncated: bool, count: u64) -> Stack {
        let frame = |(i, f): (usize, StackFrame)| {
            let back = u64::from(i > 0);
            match f {
                StackFrame::Text(a) => Frame::Program(a.wrapping_sub(back)),
                StackFrame::Other(a) => Frame::Foreign(a.wrapping_sub(back)),
                StackFrame::Kernel(a) => Frame::Kernel(a.wrapping_sub(back)),
            }
        };
        Stack { frames: frames.into_iter().enumerate().map(frame).collect(), truncated, count }
    }
}

/// Everything the reports are made from. A saved run (`--save`) is a type of its own
/// (`saved::run`), made from this one.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// The Minix bins.
    pub data: ProfData,
    /// Exact samples inside the program's text, link-time address -> ticks.
    pub image_samples: Vec<(u64, u64)>,
    /// Exact samples elsewhere (shared objects, vdso), runtime address -> ticks.
    pub foreign_samples: Vec<(u64, u64)>,
    /// Exact samples in the kernel, where the backend takes them (Redox with an NMI source).
    pub kernel_samples: Vec<(u64, u64)>,
    /// How the samples were taken, where the backend says (Redox: the kernel's source).
    pub sampling: Option<Sampling>,
    /// Samples of processes the program started, which the profile leaves out: (processes,
    /// samples).
    pub children: (u64, u64),
    /// Executable mappings of the process, to name foreign samples.
    pub mappings: Vec<Mapping>,
    pub user_ticks: u64,
    /// `None` where the OS did not let us count kernel-mode ticks.
    pub kernel_ticks: Option<u64>,
    /// Samples the sampler had to drop.
    pub lost: u64,
    pub stop_reason: Option<StopReason>,
    /// Programs the process exec'd after the profiled one (the bins are of the first): their
    /// files where known, else "another program".
    pub later_execs: Vec<String>,
    /// The kernel's records name each sample's process (Redox, upstream's profiler with typed
    /// records): the clock, the daemons' work, a system-wide run by process.
    pub typed_records: bool,
    /// Whether call stacks were recorded (`-g`), and they.
    pub stacks_recorded: bool,
    pub stacks: Vec<Stack>,
    /// The daemons that worked for the program and the account of the run's ticks, where the
    /// backend labels servers (Redox: `/scheme/prof/servers`).
    pub servers: Option<prof_core::formats::ServersReport>,
    /// The profiled process (0 where the backend does not say).
    pub pid: u32,
    /// The processes the program started, each profiled on its own (`--children`), by pid.
    pub processes: Vec<ChildProfile>,
    /// The session's wall time, as profil measured it (from the program's start, or the
    /// attach, to its end).
    pub elapsed: Option<std::time::Duration>,
    /// CPUs the source samples, where that matters (Redox: its NMIs reach every CPU).
    pub cpus: Option<u64>,
    /// Each thread's time by the clock: on a CPU, preempted, blocked (Linux), by tid.
    pub threads: Vec<prof_core::ledger::ThreadTime>,
    /// The wait sites the off-CPU probes found, numbered as the threads' waits name them.
    pub wait_sites: Vec<WaitSite>,
    /// `--off-cpu` was on: how its probes looked, and what kept them from seeing, if anything.
    pub off_cpu: Option<OffCpu>,
    /// Redox: daemons' samples while they served a wait of the program, each under the wait
    /// site it served (the kernel's stitching, `served` lines of `/scheme/prof/clock`).
    pub served: Vec<ServedStack>,
    /// The program's samples by thread (Linux), by tid.
    pub by_thread: Vec<ThreadSamples>,
    /// A system-wide run (`-a`): idle CPUs' samples. The run has no program then: its
    /// processes are every process that ran.
    pub idle_ticks: Option<u64>,
    /// The session as the kernel's records time it (Redox, upstream's profiler): the rate its
    /// source sent and the span the records cover.
    pub record_span: Option<prof_core::sampler::RecordSpan>,
    /// The daemons that worked for the program (Redox), each a process of its own with its
    /// samples in time order, for the exports over time (the Firefox Profiler's tracks); the
    /// reports take the daemons from `servers`.
    pub daemons: Vec<ChildProfile>,
    /// The program's samples in time order, where the backend times them (Linux): a window
    /// of the run (`--time`), its phases (`--timeline`).
    pub timeline: crate::timeline::Timeline,
}

/// One thread's samples: its tid, its name (`comm`, as the kernel had it when first
/// sampled), and its samples by address (placed as the flat profile's are).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadSamples {
    pub tid: u32,
    pub name: String,
    pub samples: Vec<(Frame, u64)>,
}

/// A daemon's samples at one stack (its own addresses) while it worked on the request a
/// thread of the program was blocked on at wait site `site` (an index of `wait_sites`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServedStack {
    pub site: u32,
    pub pid: u32,
    pub frames: Vec<u64>,
    pub truncated: bool,
    pub count: u64,
}

/// Where a thread of the program was blocked: the system call, what it waited on where known,
/// and its user stack there (`count` unused).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WaitSite {
    /// The process whose thread waited (the program's pid, or a child's with `--children`:
    /// its frames are then the child's runtime addresses, all `Frame::Foreign`).
    pub pid: u32,
    pub call: String,
    pub target: Option<String>,
    pub stack: Stack,
}

/// How the program's waits were found: looks at its blocked threads (Linux), or the kernel
/// timing every block (Redox, `kernel`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OffCpu {
    /// Looks a second at each thread: a wait shorter than `1 / rate` may be seen by none.
    pub rate: u64,
    /// Why they saw less than they should (no access to a thread), if they did.
    pub problem: Option<String>,
    /// The kernel timed every block at its user stack (Redox): no look, so every wait's count
    /// and mean are exact.
    #[serde(default)]
    pub kernel: bool,
}

/// A process the program started (directly or not), followed with `--children`.
#[derive(Debug, Clone)]
pub struct ChildProfile {
    pub pid: u32,
    /// The process that started it, where that was seen.
    pub parent: Option<u32>,
    /// Its program: the file it exec'd (as mapped), else its parent's (a forked copy).
    pub program: String,
    /// Its own profile: no bins, every sample a runtime address among its `mappings`.
    pub profile: Profile,
    /// It was still running when the session ended (the program exited before it): what it
    /// did after that is not in its profile.
    pub running: bool,
}

/// Each of `processes` (made by [`Profile::from_system_servers`] of `r`) with its samples in
/// time order, as profd's `timeline` has them: by pid, each stack by its line among the
/// process's in `servers` (a line of no frames, or every line without `stacks`, is no stack of
/// the profile).
fn server_timelines(processes: &mut [ChildProfile], r: &prof_core::formats::ServersReport, timed: &[(u32, u64, Vec<prof_core::session::PlacedSample>)], stacks: bool) {
    for (pid, span, placed) in timed {
        let (Some(server), Some(c)) = (r.servers.iter().find(|s| s.pid == *pid), processes.iter_mut().find(|c| c.pid == *pid)) else { continue };
        // Line i of the file is stack places[i] of the profile, as from_system_servers kept them.
        let mut kept = 0u32;
        let places: Vec<Option<u32>> = server
            .stacks
            .iter()
            .map(|(frames, _, _)| {
                let place = (!frames.is_empty() && stacks).then_some(kept);
                kept += u32::from(place.is_some());
                place
            })
            .collect();
        let samples = placed
            .iter()
            .map(|p| {
                let mut t = crate::timeline::TimedSample::of_placed(p);
                t.stack = t.stack.and_then(|i| places.get(i as usize).copied().flatten());
                t
            })
            .collect();
        c.profile.timeline = crate::timeline::Timeline { span: *span, samples, ..Default::default() };
    }
}

/// The executable a process that exec'd runs: among its mappings, the one whose file name is
/// the name the kernel gave it at the exec (`comm`; where `comm` was cut to 15 bytes, one that
/// begins with it), else its first mapping, which the kernel maps before the dynamic loader.
/// (A prefix alone would take `ld-linux-x86-64.so.2` for `ld`, whose file is `ld.bfd`.)
fn exec_image(comm: &str, mappings: &[Mapping]) -> Option<String> {
    const COMM_LEN: usize = 15;
    let base = |m: &Mapping| m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
    let named = |m: &&Mapping| !comm.is_empty() && (base(m) == comm || (comm.len() >= COMM_LEN && base(m).starts_with(comm)));
    let real = |m: &&Mapping| !m.path.starts_with('[');
    mappings.iter().find(named).or_else(|| mappings.iter().find(real)).map(|m| m.path.clone())
}

/// The followed children of a session, as profiles, by pid. `program` names the session's.
fn child_profiles(s: &Session, program: &str) -> Vec<ChildProfile> {
    let mut children = process_profiles(&s.processes, s.pid, &s.mappings, program);
    // Each in time order from the program's start (found once), its stacks as its profile
    // lists them.
    let origin = s.origin().unwrap_or(0);
    for c in &mut children {
        let Some(process) = s.processes.get(&c.pid) else { continue };
        let (span, placed) = process.placed_timeline(origin, process.samples.stacks.values());
        c.profile.timeline = crate::timeline::Timeline::of_placed(span, &placed);
    }
    children
}

/// `processes` as profiles, by pid: the processes program `main_pid` (which had `main_mappings`
/// and is named `program`) started, or (`main_pid` 0) every process of a system-wide run.
fn process_profiles(
    processes: &BTreeMap<u32, ChildProcess>,
    main_pid: u32,
    main_mappings: &[Mapping],
    program: &str,
) -> Vec<ChildProfile> {
    // The program of the process whose exec made `pid`'s address space, else the profiled one.
    let program_of = |pid: u32| -> String {
        let chain = prof_core::sampler::lineage(pid, main_pid, |p| processes.get(&p).map(|c| (c.parent, c.exec.is_some())));
        match chain.last().and_then(|p| processes.get(p)).and_then(|c| Some((c.exec.as_ref()?, c))) {
            Some((comm, c)) => exec_image(comm, &c.mappings).unwrap_or_else(|| comm.clone()),
            None => program.to_string(),
        }
    };
    let mappings_of = |pid: u32| {
        prof_core::sampler::process_mappings(pid, main_pid, main_mappings, |p| {
            processes.get(&p).map(|c| (c.parent, c.exec.is_some(), c.mappings.as_slice()))
        })
    };
    processes
        .iter()
        .map(|(&pid, c)| {
            let stack = |(st, count): (&prof_core::sample::CallStack, u64)| {
                let frames = st.frames.iter().map(|&a| match a >= prof_core::sampler::KERNEL_SPACE_START {
                    true => StackFrame::Kernel(a),
                    false => StackFrame::Other(a),
                });
                Stack::new(frames.collect(), st.truncated, count)
            };
            let profile = Profile {
                foreign_samples: c.samples.user.iter().map(|(&a, &n)| (a, n)).collect(),
                mappings: mappings_of(pid),
                user_ticks: c.samples.user_ticks,
                kernel_ticks: Some(c.samples.kernel_ticks),
                stacks: c.samples.stack_ticks().map(stack).collect(),
                pid,
                ..Default::default()
            };
            ChildProfile { pid, parent: c.parent, program: program_of(pid), profile, running: !c.exited }
        })
        .collect()
}

/// One process of procmgr's table (Redox's `/scheme/proc/ps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PsEntry {
    pub ppid: u32,
    pub name: String,
}

/// Procmgr's process table (`/scheme/proc/ps`: a header, then `PID PGID PPID SID RUID RGID EUID
/// EGID NTHRD STATUS NAME` a line), by pid; lines that do not parse are skipped.
pub fn parse_ps(text: &str) -> BTreeMap<u32, PsEntry> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (pid, ppid) = (w.first()?.parse().ok()?, w.get(2)?.parse().ok()?);
            Some((pid, PsEntry { ppid, name: w.get(10..)?.join(" ") }))
        })
        .collect()
}

/// The number on the `CPUs:` line of Redox's `/scheme/sys/cpu` (std has no CPU count there).
pub fn cpus_in_sys_cpu(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("CPUs:")).and_then(|n| n.trim().parse().ok()).filter(|&n| n > 0)
}

impl Profile {
    /// Its exact samples, as the symbolizer locates them.
    pub fn samples(&self) -> prof_objects::Samples<'_> {
        prof_objects::Samples {
            program: &self.image_samples,
            foreign: &self.foreign_samples,
            mappings: &self.mappings,
            kernel: &self.kernel_samples,
        }
    }
}

impl Profile {
    /// The samples a second and CPU the source delivered: every tick of the run (the
    /// program's, the daemons', idle's and other processes': the account closes over them) over
    /// the session's wall time and CPUs. Where the backend accounts the whole run (Redox).
    pub fn achieved_rate(&self) -> Option<f64> {
        // Upstream's profiler samples every CPU but the one that sends its NMIs.
        let cpus = match self.sampling.is_some_and(|s| s.is_upstreams()) {
            true => self.cpus?.saturating_sub(1),
            false => self.cpus?,
        };
        // Over the span the records cover, where they have times: profil's wall time also
        // holds the fork before the program and the reap after it, the session not.
        let span = match self.record_span {
            Some(r) if r.rate_sent > 0 => r.span_ns as f64 / 1e9,
            // Too few records to time the source (a program of a few ms): no rate to tell.
            Some(_) => return None,
            None => self.elapsed?.as_secs_f64(),
        };
        let seconds = span * cpus as f64;
        let ticks = |p: &Profile| p.user_ticks.saturating_add(p.kernel_ticks.unwrap_or(0));
        // The processes it started (`--children`), or every process of a system-wide run.
        let processes = self.processes.iter().fold(0u64, |n, c| n.saturating_add(ticks(&c.profile)));
        let all = match self.idle_ticks {
            Some(idle) => [processes, idle].into_iter().fold(0u64, u64::saturating_add),
            None => {
                let a = &self.servers.as_ref()?.account;
                [ticks(self), a.servers(), a.idle, a.other, processes].into_iter().fold(0u64, u64::saturating_add)
            }
        };
        (seconds > 0.0).then(|| all as f64 / seconds)
    }

    /// The profile of a system-wide run (`-a`): every process as one of `processes`, the
    /// kernel's samples of all of them, idle's ticks; no program.
    pub fn from_system(r: &SystemRecord, stacks_recorded: bool) -> Profile {
        let mut processes = process_profiles(&r.processes, 0, &[], "[unknown]");
        // Times from the run's start (its clock's first reading, else its first sample).
        let first = || r.processes.values().flat_map(|c| c.samples.timeline.entries.iter().map(|e| e.time)).min();
        let origin = r.clock.map(|c| c.0).or_else(first).unwrap_or(0);
        for c in &mut processes {
            c.profile.stacks_recorded = stacks_recorded;
            if let Some(process) = r.processes.get(&c.pid) {
                let (span, placed) = process.placed_timeline(origin, process.samples.stacks.values());
                c.profile.timeline = crate::timeline::Timeline::of_placed(span, &placed);
            }
        }
        Profile {
            processes,
            kernel_samples: r.kernel_samples.iter().map(|(&a, &n)| (a, n)).collect(),
            kernel_ticks: Some(0),
            lost: r.lost,
            stacks_recorded,
            idle_ticks: Some(r.idle_ticks),
            ..Default::default()
        }
    }

    /// Is this a system-wide run's (`-a`): no program, every process among `processes`?
    pub fn is_system_wide(&self) -> bool {
        self.idle_ticks.is_some()
    }

    /// A system-wide run's profile from the `prof:` scheme's `servers` (Redox, `start all`):
    /// each process as the kernel kept it, by pid and executable: its user samples (its
    /// stacks' leaves, and the stacks with `stacks`), its kernel ones counted, and kept by
    /// address for the kernel's functions; idle's ticks. Samples the kernel's table had no room
    /// for are lost.
    pub fn from_system_servers(r: &prof_core::formats::ServersReport, stacks: bool) -> Profile {
        let in_kernel = |a: u64| a >= prof_core::sampler::KERNEL_SPACE_START;
        let mut kernel: BTreeMap<u64, u64> = BTreeMap::new();
        let processes = r
            .servers
            .iter()
            .map(|s| {
                let (mut user, mut kernel_ticks, mut placed) = (BTreeMap::<u64, u64>::new(), 0u64, Vec::new());
                for (frames, truncated, count) in &s.stacks {
                    let Some(&leaf) = frames.first() else { continue };
                    let to = if in_kernel(leaf) { &mut kernel } else { &mut user };
                    *to.entry(leaf).or_insert(0) += count;
                    if in_kernel(leaf) {
                        kernel_ticks += count;
                    }
                    if stacks {
                        let frames = frames.iter().map(|&a| if in_kernel(a) { StackFrame::Kernel(a) } else { StackFrame::Other(a) });
                        placed.push(Stack::new(frames.collect(), *truncated, *count));
                    }
                }
                let profile = Profile {
                    pid: s.pid,
                    user_ticks: user.values().sum(),
                    foreign_samples: user.into_iter().collect(),
                    kernel_ticks: Some(kernel_ticks),
                    stacks: placed,
                    stacks_recorded: stacks,
                    ..Default::default()
                };
                ChildProfile { pid: s.pid, parent: None, program: s.path.clone(), profile, running: true }
            })
            .collect();
        Profile {
            processes,
            kernel_samples: kernel.into_iter().collect(),
            kernel_ticks: Some(0),
            lost: r.account.servers_dropped,
            stacks_recorded: stacks,
            idle_ticks: Some(r.account.idle),
            ..Default::default()
        }
    }

    /// A system-wide run's processes (made by [`Profile::from_system_servers`] of `r`) with
    /// their samples in time order, as profd's `timeline` has them: by pid, each stack by its
    /// line among the process's in `servers` (a line of no frames, or every line without
    /// stacks, is no stack of the profile).
    pub fn with_scheme_process_timelines(mut self, r: &prof_core::formats::ServersReport, timed: &[(u32, u64, Vec<prof_core::session::PlacedSample>)]) -> Profile {
        let stacks = self.stacks_recorded;
        server_timelines(&mut self.processes, r, timed, stacks);
        self
    }

    /// A program's run with the daemons that worked for it (its `servers`) as processes of their
    /// own, each with its samples in time order as profd's `timeline` has them (`process`
    /// sections) and its work on the program's requests (`served`, placed at the program's wait
    /// sites); a daemon without either is left out. `mappings_of` maps a daemon's executable.
    pub fn with_scheme_daemons(
        mut self,
        timed: &[(u32, u64, Vec<prof_core::session::PlacedSample>)],
        served: &[(u32, crate::timeline::TimedServed)],
        mappings_of: impl Fn(&str) -> Vec<Mapping>,
    ) -> Profile {
        let Some(r) = self.servers.clone() else { return self };
        let mut daemons = Profile::from_system_servers(&r, self.stacks_recorded).processes;
        server_timelines(&mut daemons, &r, timed, self.stacks_recorded);
        for d in &mut daemons {
            d.profile.timeline.served = served.iter().filter(|s| s.0 == d.pid).map(|s| s.1).collect();
        }
        daemons.retain(|d| !d.profile.timeline.is_empty() || !d.profile.timeline.served.is_empty());
        for d in &mut daemons {
            d.profile.mappings = mappings_of(&d.program);
        }
        self.daemons = daemons;
        self
    }

    /// A system-wide run's processes completed from procmgr's process table (Redox's
    /// `/scheme/proc/ps`, read while the run went on, its last look at each process kept):
    /// each one's parent, and its name as procmgr last had it (after its exec: the program it
    /// ran, where profd may have named it before, as the shell it was forked from, or not at
    /// all, gone before profd looked).
    pub fn with_process_table(mut self, table: &BTreeMap<u32, PsEntry>) -> Profile {
        for c in &mut self.processes {
            let Some(e) = table.get(&c.pid) else { continue };
            c.parent = c.parent.or((e.ppid != 0).then_some(e.ppid));
            if !e.name.is_empty() {
                c.program = e.name.clone();
            }
        }
        self
    }

    /// The program's samples by thread, as the `prof:` scheme's `threads` has them (Redox):
    /// (tid, placed address, count) lines.
    pub fn with_scheme_threads(mut self, lines: &[(u32, StackFrame, u64)]) -> Profile {
        let mut by_tid: BTreeMap<u32, Vec<(Frame, u64)>> = BTreeMap::new();
        for &(tid, frame, n) in lines {
            by_tid.entry(tid).or_default().push((Frame::placed(frame), n));
        }
        self.by_thread = by_tid.into_iter().map(|(tid, samples)| ThreadSamples { tid, name: String::new(), samples }).collect();
        self
    }

    /// The processes the program started, as the `prof:` scheme's `children` has them (Redox,
    /// `--children`): each placed in the static executables it ran (`mappings_of` a file: its
    /// exec's, else its parent's and so on up to `program`), and named, where profd could not
    /// look before it exited, by procmgr's table as profil last read it, unless that look
    /// still had its parent's name (the forked copy, before its exec).
    pub fn with_children(
        mut self,
        mut children: BTreeMap<u32, ChildProcess>,
        program: &str,
        table: &BTreeMap<u32, PsEntry>,
        mappings_of: impl Fn(&str) -> Vec<Mapping>,
    ) -> Profile {
        for (pid, c) in &mut children {
            let parents_name = c.parent.and_then(|p| table.get(&p)).map(|e| e.name.as_str());
            if let Some(exec) = &mut c.exec {
                let named = table.get(pid).filter(|e| !e.name.is_empty() && Some(e.name.as_str()) != parents_name);
                if let Some(e) = named.filter(|_| exec.as_str() == "[exited]") {
                    *exec = e.name.clone();
                }
                c.mappings = mappings_of(exec);
            }
        }
        self.processes = process_profiles(&children, self.pid, &mappings_of(program), program);
        for c in &mut self.processes {
            c.profile.stacks_recorded = self.stacks_recorded;
        }
        self
    }

    /// The profile of a finished session of `program`.
    pub fn from_session(s: &Session, program: &str, counts_kernel: bool, stacks_recorded: bool) -> Profile {
        let mut processes = child_profiles(s, program);
        for c in &mut processes {
            c.profile.stacks_recorded = stacks_recorded;
            c.profile.kernel_ticks = c.profile.kernel_ticks.filter(|_| counts_kernel);
        }
        Profile {
            pid: s.pid,
            processes,
            data: s.data.clone(),
            image_samples: s.image_samples(),
            foreign_samples: s.foreign_samples(),
            kernel_samples: s.kernel_samples.iter().map(|(&a, &n)| (a, n)).collect(),
            sampling: s.sampling,
            children: (s.children.len() as u64, s.children.values().fold(0u64, |n, &c| n.saturating_add(c))),
            mappings: s.mappings.clone(),
            user_ticks: s.program.user_ticks,
            kernel_ticks: counts_kernel.then_some(s.program.kernel_ticks),
            lost: s.lost,
            stop_reason: match s.state {
                prof_core::SessionState::Stopped(r) => Some(r),
                _ => None,
            },
            later_execs: later_exec_images(s),
            typed_records: s.typed_records,
            stacks_recorded,
            stacks: s.program.stacks.iter().map(|(st, c)| Stack::new(s.stack_frames(st), st.truncated, c.ticks)).collect(),
            servers: None,
            elapsed: None,
            cpus: None,
            threads: s.clock.map(|(begin, end)| s.ledger.accounts(begin, end)).unwrap_or_default(),
            wait_sites: s
                .wait_sites
                .iter()
                .map(|w| WaitSite {
                    pid: w.pid,
                    call: w.call.clone(),
                    target: w.target.clone(),
                    stack: match w.pid == s.pid {
                        true => Stack::new(s.stack_frames(&w.stack), w.stack.truncated, 0),
                        false => Stack::new(w.stack.frames.iter().map(|&a| prof_core::formats::StackFrame::Other(a)).collect(), w.stack.truncated, 0),
                    },
                })
                .collect(),
            off_cpu: None,
            served: Vec::new(),
            idle_ticks: None,
            record_span: s.record_span,
            daemons: Vec::new(),
            timeline: crate::timeline::Timeline::of_session(s),
            by_thread: s
                .thread_samples
                .iter()
                .map(|(&tid, samples)| ThreadSamples {
                    tid,
                    name: s.thread_names.get(&tid).cloned().unwrap_or_default(),
                    samples: samples
                        .iter()
                        .map(|(&ip, &n)| (Frame::placed(prof_core::session::place_frames(&[ip], s.load_base, &s.text)[0]), n))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The files a process exec'd after the profiled program: among its mappings, the mapped
/// files that are programs themselves (`ET_EXEC`, or an interpreter and no soname), other than
/// the profiled one, busiest first; "another program" for each exec beyond them.
fn later_exec_images(s: &Session) -> Vec<String> {
    if s.later_execs == 0 {
        return Vec::new();
    }
    let first = s.mappings.iter().find(|m| s.link_address(m.start).is_some()).map(|m| m.path.as_str());
    let mut found: Vec<String> = Vec::new();
    for m in &s.mappings {
        if Some(m.path.as_str()) == first || found.contains(&m.path) || m.path.starts_with('[') {
            continue;
        }
        let is_program = prof_objects::file_bytes::FileBytes::open(std::path::Path::new(&m.path)).ok().is_some_and(|bytes| {
            goblin::elf::Elf::parse(&bytes).is_ok_and(|e| {
                // A PIE program has an interpreter and no soname (glibc's libc.so.6 has both).
                e.header.e_type == goblin::elf::header::ET_EXEC || (e.interpreter.is_some() && e.soname.is_none())
            })
        });
        if is_program {
            found.push(m.path.clone());
        }
    }
    // Busiest first: the program a chain of shims became is the one that did the work.
    let samples_in = |path: &String| -> u64 {
        s.mappings
            .iter()
            .filter(|m| &m.path == path)
            .map(|m| s.program.user.range(m.start..m.start.saturating_add(m.len)).map(|(_, n)| n).sum::<u64>())
            .sum()
    };
    found.sort_by_cached_key(|p| std::cmp::Reverse(samples_in(p)));
    found.resize(found.len().max(s.later_execs as usize), ANOTHER_PROGRAM.to_string());
    found
}

/// A later exec whose file is not among the mappings.
pub const ANOTHER_PROGRAM: &str = "another program";

impl Profile {
    /// The profile the `prof:` scheme's files describe: its `status` line, binary `data` and
    /// `samples` text (what profil on Redox reads back from profd). Malformed text fields read
    /// as zero / absent; only `data` must be a valid `prof_data`.
    pub fn from_scheme_files(status: &str, data: &[u8], samples: &str) -> Result<Profile, DecodeError> {
        let st = parse_status(status);
        let get = |k: &str| st.iter().find(|kv| kv.0 == k).map_or("", |kv| kv.1.as_str());
        let num = |k: &str| prof_core::ctl::number(get(k)).unwrap_or(0);
        let samples = parse_samples(samples);
        Ok(Profile {
            data: ProfData::from_bytes(data)?,
            image_samples: samples.text,
            foreign_samples: samples.other,
            kernel_samples: samples.kernel,
            sampling: prof_core::formats::sampling(&st),
            children: (0, 0),
            mappings: Vec::new(),
            user_ticks: num("ticks_user"),
            kernel_ticks: Some(num("ticks_kernel")),
            lost: num("dropped"),
            stop_reason: reason_from_str(get("reason")),
            // What the program became is not in the scheme's files: said as another program.
            later_execs: vec![ANOTHER_PROGRAM.to_string(); num("later_execs").min(16) as usize],
            typed_records: get("records") == "typed",
            stacks_recorded: false,
            stacks: Vec::new(),
            servers: None,
            pid: num("pid") as u32,
            processes: Vec::new(),
            elapsed: None,
            cpus: None,
            threads: Vec::new(),
            wait_sites: Vec::new(),
            off_cpu: None,
            served: Vec::new(),
            by_thread: Vec::new(),
            idle_ticks: None,
            record_span: prof_core::formats::record_span(&st),
            daemons: Vec::new(),
            timeline: Default::default(),
        })
    }
}

impl Profile {
    /// The call stacks of `/scheme/prof/stacks` (the kernel's frame-pointer walks) added to a
    /// profile read from the scheme. Malformed lines are skipped.
    pub fn with_scheme_stacks(mut self, stacks: &str) -> Profile {
        self.stacks_recorded = true;
        self.stacks = prof_core::formats::parse_stacks(stacks)
            .into_iter()
            .map(|(frames, truncated, count)| Stack::new(frames, truncated, count))
            .collect();
        self
    }
}

/// How the program ended, as `wait` reported it; or, for a process profil attached to (not
/// its child, so no status), whether it had exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExitKind {
    Exited(i32),
    Signaled(i32),
    Attached { pid: u32, exited: bool },
}

/// A finished run: the profile and what the reports and exports say about the run itself.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The program as named on the command line.
    pub program: String,
    /// Its arguments.
    pub arguments: Vec<String>,
    pub frequency_hz: u64,
    pub profile: Profile,
    pub exit: ExitKind,
    /// The program is a `#!` script, run by these (the last one's text gives the bins).
    pub interpreters: Vec<String>,
}

/// A run of fib with a little of everything a report shows: bins, samples in the program and
/// a library, stacks, a daemon that worked for it (Redox), a thread by the clock and a wait
/// (the golden files' run).
#[cfg(test)]
pub(crate) fn example() -> Profile {
    use prof_core::image::TextSegment;
    use prof_core::{BinLayout, StopReason};
    let text = TextSegment { start: 0x1000, end: 0x3000 };
    let mut data = ProfData::new(&BinLayout::new(text, 0x1000, 0x1400, 0x100).unwrap());
    data.bin[0] = 6;
    Profile {
        data,
        image_samples: vec![(0x1000, 5), (0x10ff, 1), (0x2010, 3)],
        foreign_samples: vec![(0x7f00_0000_1010, 2)],
        kernel_samples: Vec::new(),
        sampling: None,
        children: (0, 0),
        mappings: vec![Mapping {
            start: 0x7f00_0000_1000,
            len: 0x1000,
            pgoff: 0,
            path: "/no/such/libc.so.6".into(),
            file: None,
            build_id: None,
        }],
        user_ticks: 11,
        kernel_ticks: Some(4),
        lost: 0,
        stop_reason: Some(StopReason::Exit),
        later_execs: Vec::new(),
        typed_records: false,
        stacks_recorded: true,
        stacks: vec![
            Stack { frames: vec![Frame::Program(0x1000), Frame::Program(0x2010)], truncated: false, count: 6 },
            Stack { frames: vec![Frame::Program(0x2010)], truncated: true, count: 3 },
            Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x2010)], truncated: false, count: 2 },
        ],
        // A daemon that worked for it (Redox), whose executable cannot be read here.
        servers: Some(prof_core::formats::ServersReport {
            own_user: 11,
            own_kernel: 4,
            account: prof_core::sampler::Account { server_user: 7, server_kernel: 1, servers_dropped: 0, idle: 3, other: 2 },
            servers: vec![prof_core::formats::ServerEntry {
                pid: 7,
                ticks: 7,
                path: "/no/such/ramfs".into(),
                stacks: vec![(vec![0x40_2010, 0x40_3005], false, 5), (vec![0x40_2020], true, 2)],
            }],
        }),
        pid: 42,
        processes: Vec::new(),
        elapsed: Some(std::time::Duration::from_millis(1250)),
        cpus: None,
        threads: vec![prof_core::ledger::ThreadTime {
            tid: 42,
            wall: 1_250_000_000,
            preempted: 5_000_000,
            blocked: 1_000_000_000,
            waits: vec![
                prof_core::ledger::Wait { site: 0, ns: 900_000_000, count: 3 },
                prof_core::ledger::Wait { site: prof_core::ledger::UNSEEN, ns: 100_000_000, count: 40 },
            ],
            unknown: 0,
        }],
        // --off-cpu: three reads of a pipe, from fib by way of libc's read.
        wait_sites: vec![crate::profile::WaitSite {
            pid: 42,
            call: "read".into(),
            target: Some("pipe:[7]".into()),
            stack: Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x1010)], truncated: false, count: 0 },
        }],
        off_cpu: Some(crate::profile::OffCpu { rate: 1000, problem: None, kernel: false }),
        served: Vec::new(),
        by_thread: Vec::new(),
        idle_ticks: None,
        record_span: None,
        daemons: Vec::new(),
        timeline: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_is_named_by_the_file_it_exec_d_not_by_a_prefix() {
        use super::{exec_image, Mapping};
        let at = |path: &str| Mapping { start: 0, len: 1, pgoff: 0, path: path.into(), file: None, build_id: None };
        // `ld` runs ld.bfd (through a link), mapped before the dynamic loader.
        let ld = [at("/usr/bin/x86_64-linux-gnu-ld.bfd"), at("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), at("[vdso]")];
        assert_eq!(exec_image("ld", &ld).as_deref(), Some("/usr/bin/x86_64-linux-gnu-ld.bfd"));
        // The file of the name, wherever it was mapped.
        let make = [at("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), at("/usr/bin/make")];
        assert_eq!(exec_image("make", &make).as_deref(), Some("/usr/bin/make"));
        // A name the kernel cut to 15 bytes names the file it begins.
        let long = [at("/lib/ld-linux-x86-64.so.2"), at("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus-wrapper-x")];
        assert_eq!(exec_image("cc1plus-wrapper", &long).as_deref(), Some("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus-wrapper-x"));
        assert_eq!(exec_image("x", &[at("[vdso]")]), None);
    }

    use super::*;

    /// procmgr's table as it writes it, and a system-wide run completed from it: the parent of
    /// each process it lists, its name after its exec.
    #[test]
    fn procmgrs_table_gives_parents_and_names() {
        let ps = "PID   PGID  PPID  SID   RUID  RGID  EUID  EGID  NTHRD STATUS  NAME            \n\
                  1     1     0     1     0     0     0     0     1     R       [init]          \n\
                  14    14    1     14    0     0     0     0     1     R       /usr/bin/dash   \n\
                  15    14    14    14    0     0     0     0     1     X       /usr/bin/fib    \n\
                  garbage\n";
        let table = parse_ps(ps);
        assert_eq!(table.len(), 3);
        assert_eq!(table[&15], PsEntry { ppid: 14, name: "/usr/bin/fib".into() });
        let child = |pid: u32, program: &str| ChildProfile { pid, parent: None, program: program.into(), profile: Profile::default(), running: true };
        // 15 was named by profd as the shell it was forked from, before its exec.
        let p = Profile { processes: vec![child(14, "/usr/bin/dash"), child(15, "/usr/bin/dash"), child(99, "[exited]")], ..Default::default() };
        let p = p.with_process_table(&table);
        let seen: Vec<(u32, Option<u32>, &str)> = p.processes.iter().map(|c| (c.pid, c.parent, c.program.as_str())).collect();
        assert_eq!(seen, [(14, Some(1), "/usr/bin/dash"), (15, Some(14), "/usr/bin/fib"), (99, None, "[exited]")]);
    }

    /// `--children` on Redox: a process profd could not name (`[exited]`) takes procmgr's
    /// name for it, unless that was its parent's (a look at the forked copy before its exec);
    /// each is placed in the file it ran, a copy that never exec'd in its parent's.
    #[test]
    fn children_named_from_procmgrs_table_where_profd_could_not() {
        let ps = "PID PGID PPID SID RUID RGID EUID EGID NTHRD STATUS NAME\n\
                  10 10 1 10 0 0 0 0 1 R /bin/sh\n\
                  11 10 10 10 0 0 0 0 1 X /bin/ls\n\
                  12 10 10 10 0 0 0 0 1 X /bin/sh\n";
        let table = parse_ps(ps);
        let child = |exec: Option<&str>| ChildProcess { parent: Some(10), exec: exec.map(str::to_string), ..Default::default() };
        let children: BTreeMap<u32, ChildProcess> =
            [(11, child(Some("[exited]"))), (12, child(Some("[exited]"))), (13, child(Some("/bin/cat"))), (14, child(None))].into();
        let mapped = |path: &str| vec![Mapping { start: 0x40_1000, len: 0x1000, path: path.into(), ..Default::default() }];
        let p = Profile { pid: 10, ..Default::default() }.with_children(children, "/bin/sh", &table, mapped);
        let seen: Vec<(u32, &str, &str)> =
            p.processes.iter().map(|c| (c.pid, c.program.as_str(), c.profile.mappings[0].path.as_str())).collect();
        assert_eq!(
            seen,
            [(11, "/bin/ls", "/bin/ls"), (12, "[exited]", "[exited]"), (13, "/bin/cat", "/bin/cat"), (14, "/bin/sh", "/bin/sh")]
        );
    }

    #[test]
    fn the_cpu_count_of_redox_sys_cpu() {
        assert_eq!(cpus_in_sys_cpu("Vendor: AuthenticAMD\nCPUs: 2\nModel: x\n"), Some(2));
        assert_eq!(cpus_in_sys_cpu("CPUs: 0\n"), None);
        assert_eq!(cpus_in_sys_cpu("nothing\n"), None);
    }
    use prof_core::image::TextSegment;
    use prof_core::BinLayout;

    #[test]
    fn profile_from_the_scheme_files() {
        let layout = BinLayout::new(TextSegment { start: 0x1000, end: 0x2000 }, 0, 0, 0x400).unwrap();
        let mut d = ProfData::new(&layout);
        d.bin[1] = 4;
        let status = "state=stopped pid=42 reason=exit ticks_in_bins=4 ticks_user=6 ticks_kernel=2 dropped=1 \
                      start=0x1000 end=0x2000 bin_sz=1024 nr_bins=4 load_base=0x0\n";
        let p = Profile::from_scheme_files(status, &d.to_bytes(), "0x1400 4 text\n0x7f0000000010 2 other\n").unwrap();
        assert_eq!(p.data, d);
        assert_eq!((p.image_samples, p.foreign_samples), (vec![(0x1400, 4)], vec![(0x7f00_0000_0010, 2)]));
        assert_eq!((p.user_ticks, p.kernel_ticks, p.lost, p.stop_reason), (6, Some(2), 1, Some(StopReason::Exit)));
        assert!(p.later_execs.is_empty(), "a profd from before later_execs");
        let execd = Profile::from_scheme_files(&status.replace('\n', " later_execs=2\n"), &d.to_bytes(), "").unwrap();
        assert_eq!(execd.later_execs, ["another program", "another program"]);
        assert!(Profile::from_scheme_files(status, &[0; 10], "").is_err());
        let empty = Profile::from_scheme_files("garbage", &ProfData::default().to_bytes(), "junk").unwrap();
        assert_eq!((empty.user_ticks, empty.stop_reason), (0, None));
        assert!(!empty.stacks_recorded);
        let p = empty.with_scheme_stacks("3 complete text:0x1400 text:0x1205 other:0x7f0000001000\n1 truncated\njunk line\n");
        assert!(p.stacks_recorded);
        assert_eq!(
            p.stacks,
            vec![
                Stack {
                    frames: vec![Frame::Program(0x1400), Frame::Program(0x1204), Frame::Foreign(0x7f00_0000_0fff)],
                    truncated: false,
                    count: 3
                },
                Stack { frames: vec![], truncated: true, count: 1 },
            ]
        );
    }
}
