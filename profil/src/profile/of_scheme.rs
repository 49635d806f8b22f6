//! How the `prof:` scheme's files fill the run's model (Redox: profil reads back what profd
//! made of the kernel's records): the program's status, bins, samples and stacks, its
//! threads, the daemons that worked for it, its children, and a system-wide run's processes.

use std::collections::BTreeMap;

use prof_core::formats::{parse_samples, parse_status, reason_from_str, StackFrame};
use prof_core::prof_data::DecodeError;
use prof_core::sampler::Mapping;
use prof_core::session::ChildProcess;
use prof_core::ProfData;

use super::of_session::process_profiles;
use super::{ChildProfile, Frame, Profile, Stack, ThreadSamples, ANOTHER_PROGRAM};
use super::Parts;

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
        c.profile.parts.timeline = crate::timeline::Timeline { span: *span, samples, ..Default::default() };
    }
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
                let profile = Profile::from(Parts {
                    pid: s.pid,
                    user_ticks: user.values().sum(),
                    foreign_samples: user.into_iter().collect(),
                    kernel_ticks: Some(kernel_ticks),
                    stacks: placed,
                    stacks_recorded: stacks,
                    ..Default::default()
                });
                ChildProfile { pid: s.pid, parent: None, program: s.path.clone(), profile, running: true }
            })
            .collect();
        Profile::from(Parts {
            processes,
            kernel_samples: kernel.into_iter().collect(),
            kernel_ticks: Some(0),
            lost: r.account.servers_dropped,
            stacks_recorded: stacks,
            idle_ticks: Some(r.account.idle),
            ..Default::default()
        })
    }

    /// A system-wide run's processes (made by [`Profile::from_system_servers`] of `r`) with
    /// their samples in time order, as profd's `timeline` has them: by pid, each stack by its
    /// line among the process's in `servers` (a line of no frames, or every line without
    /// stacks, is no stack of the profile).
    fn with_scheme_process_timelines(mut self, r: &prof_core::formats::ServersReport, timed: &[(u32, u64, Vec<prof_core::session::PlacedSample>)]) -> Profile {
        let stacks = self.parts.stacks_recorded;
        server_timelines(&mut self.parts.processes, r, timed, stacks);
        self
    }

    /// A program's run with the daemons that worked for it (its `servers`) as processes of their
    /// own, each with its samples in time order as profd's `timeline` has them (`process`
    /// sections) and its work on the program's requests (`served`, placed at the program's wait
    /// sites); a daemon without either is left out. `mappings_of` maps a daemon's executable.
    fn with_scheme_daemons(
        mut self,
        timed: &[(u32, u64, Vec<prof_core::session::PlacedSample>)],
        served: &[(u32, crate::timeline::TimedServed)],
        mappings_of: impl Fn(&str) -> Vec<Mapping>,
    ) -> Profile {
        let Some(r) = self.parts.servers.clone() else { return self };
        let mut daemons = Profile::from_system_servers(&r, self.parts.stacks_recorded).parts.processes;
        server_timelines(&mut daemons, &r, timed, self.parts.stacks_recorded);
        for d in &mut daemons {
            d.profile.parts.timeline.served = served.iter().filter(|s| s.0 == d.pid).map(|s| s.1).collect();
        }
        daemons.retain(|d| !d.profile.parts.timeline.is_empty() || !d.profile.parts.timeline.served.is_empty());
        for d in &mut daemons {
            d.profile.parts.mappings = mappings_of(&d.program);
        }
        self.parts.daemons = daemons;
        self
    }

    /// A system-wide run's processes completed from procmgr's process table (Redox's
    /// `/scheme/proc/ps`, read while the run went on, its last look at each process kept):
    /// each one's parent, and its name as procmgr last had it (after its exec: the program it
    /// ran, where profd may have named it before, as the shell it was forked from, or not at
    /// all, gone before profd looked).
    pub fn with_process_table(mut self, table: &BTreeMap<u32, PsEntry>) -> Profile {
        for c in &mut self.parts.processes {
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
        self.parts.by_thread = by_tid.into_iter().map(|(tid, samples)| ThreadSamples { tid, name: String::new(), samples }).collect();
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
        self.parts.processes = process_profiles(&children, self.parts.pid, &mappings_of(program), program);
        for c in &mut self.parts.processes {
            c.profile.parts.stacks_recorded = self.parts.stacks_recorded;
        }
        self
    }
}

/// The `prof:` scheme's files of a finished session as profil read them back (Redox); `None`:
/// a file not asked for, or one a profd of an older version does not serve.
#[derive(Debug, Clone, Default)]
pub struct SchemeFiles {
    pub status: String,
    pub data: Vec<u8>,
    pub samples: String,
    /// Read where call stacks were asked for (`-g`).
    pub stacks: Option<String>,
    pub threads: Option<String>,
    pub timeline: Option<String>,
    pub servers: Option<String>,
    pub clock: Option<String>,
    /// The processes of the tree (`children`): with `--children`, and where the program exec'd
    /// again, the image it became (its own pid's line).
    pub children: Option<String>,
    /// The requests to schemes (`requests`): read with `--requests`.
    pub requests: Option<String>,
    /// The schemes' names by the kernel's numbers for them, as profil found them (the
    /// `st_dev` of each `/scheme/NAME`); a number without one is `scheme N`.
    pub scheme_names: BTreeMap<u64, String>,
}

/// A request's key as the Requests section shows it: the scheme by its name (`tmp:`), else its
/// number, and the daemon that took it by its executable's name and pid (`ramfs [pid 7]`;
/// the bootstrap's managers, which have none, `[bootstrap]`).
pub fn scheme_request_key(names: &BTreeMap<u64, String>, scheme: u64, daemon: u32, path: Option<&str>) -> prof_core::requests::RequestKey {
    let to = match names.get(&scheme) {
        Some(name) => format!("{name}:"),
        None => format!("scheme {scheme}"),
    };
    let server = match (daemon, path) {
        (0, _) => "[bootstrap]".to_string(),
        (pid, path) => {
            let path = path.unwrap_or("[exited]");
            super::process_label(path.rsplit('/').next().unwrap_or(path), pid)
        }
    };
    prof_core::requests::RequestKey { to: to.into(), server: Some(server) }
}

/// profd's `requests` file as the run's log, each key named ([`scheme_request_key`]), with
/// its call sites where the run asked for stacks (`-g`, as on Linux); `None` where it is not
/// this version's (or empty: a kernel that writes no request records).
fn requests_log(text: &str, scheme_names: &BTreeMap<u64, String>, stacks: bool) -> Option<prof_core::requests::RequestLog> {
    let file = prof_core::requests_file::parse_requests(text)?;
    let log = file.log(|scheme, daemon, path| scheme_request_key(scheme_names, scheme, daemon, path));
    Some(if stacks { log } else { log.without_sites() })
}

impl Profile {
    /// The program's profile `files` describe: its status, bins and samples, its stacks
    /// (where read), by thread, in time order (their stacks where read), the daemons that
    /// worked for it (each daemon's executable mapped by `mappings_of`, its work over time at
    /// the program's wait sites), its threads by the kernel's clock, and with `off_cpu` its
    /// waits. Also the `timeline` file as read, whose children's parts `--children` places.
    /// Only `data` must be valid: the other files, where malformed, say nothing.
    pub fn from_scheme(
        files: &SchemeFiles,
        off_cpu: bool,
        mappings_of: impl Fn(&str) -> Vec<Mapping>,
    ) -> Result<(Profile, prof_core::formats::TimelineFile), DecodeError> {
        let mut profile = Profile::from_scheme_files(&files.status, &files.data, &files.samples)?;
        if let Some(stacks) = &files.stacks {
            profile = profile.with_scheme_stacks(stacks);
        }
        if let Some(threads) = &files.threads {
            profile = profile.with_scheme_threads(&prof_core::formats::parse_threads(threads));
        }
        // A timeline of a newer version is not read.
        let timeline = files.timeline.as_deref().and_then(prof_core::formats::parse_timeline).unwrap_or_default();
        let mut samples: Vec<_> = timeline.samples.iter().map(crate::timeline::TimedSample::of_placed).collect();
        if files.stacks.is_none() {
            samples.iter_mut().for_each(|s| s.stack = None);
        }
        profile.parts.timeline = crate::timeline::Timeline { span: timeline.span, samples, ..Default::default() };
        profile.parts.servers = files.servers.as_deref().and_then(prof_core::formats::parse_servers);
        let clock = files.clock.as_deref().and_then(prof_core::kernel_clock::parse);
        if let Some(clock) = &clock {
            profile = profile.with_kernel_clock(clock);
            // The whole waits, each at its site as the clock names it.
            profile.parts.timeline.waits = crate::profile::redox_clock::timed_waits(clock, &timeline.waits);
        }
        // The daemons over time, with the requests each worked on at the program's wait sites.
        let served = clock.as_ref().map(|c| crate::profile::redox_clock::timed_served(c, &timeline.served)).unwrap_or_default();
        profile = profile.with_scheme_daemons(&timeline.processes, &served, &mappings_of);
        // What the program became by a later exec, named by that image.
        let children = files.children.as_deref().and_then(prof_core::formats::parse_children);
        if let Some(became) = children.as_ref().and_then(|c| c.processes.get(&profile.parts.pid)).filter(|c| c.parent.is_none()) {
            let part = timeline.children.iter().find(|c| c.0 == profile.parts.pid).map(|c| (c.1, c.2.as_slice()));
            profile = profile.with_later_image(became, part, &mappings_of);
        }
        // The requests to schemes, named (where asked: a file of a newer version is not read).
        profile.parts.requests = files.requests.as_deref().and_then(|text| requests_log(text, &files.scheme_names, files.stacks.is_some()));
        profile.parts.clock.off_cpu = off_cpu.then(|| super::OffCpu {
            rate: 0,
            problem: match &clock {
                Some(clock) => crate::profile::redox_clock::problem(clock),
                None => Some("this kernel keeps no clock (no /scheme/prof/clock): no wait is known".into()),
            },
            kernel: true,
        });
        Ok((profile, timeline))
    }
}

impl Profile {
    /// The image the program became by an exec after the profiled one (Redox: `children`'s
    /// line of its own pid, `placed` its part of `timeline`): its samples are the program's
    /// at their run addresses in that image's file (`mappings_of` it), named by it, not read
    /// in the first image the bins cover (Redox's static programs share their link
    /// addresses); its stacks, samples in time order and threads join the program's.
    pub fn with_later_image(mut self, became: &ChildProcess, placed: Option<(u64, &[prof_core::session::PlacedSample])>, mappings_of: impl Fn(&str) -> Vec<Mapping>) -> Profile {
        let name = became.exec.clone().unwrap_or_else(|| ANOTHER_PROGRAM.to_string());
        self.parts.mappings.extend(mappings_of(&name));
        let mut foreign: BTreeMap<u64, u64> = self.parts.foreign_samples.iter().copied().collect();
        for (&a, &n) in &became.samples.user {
            *foreign.entry(a).or_insert(0) += n;
        }
        self.parts.foreign_samples = foreign.into_iter().collect();
        self.parts.user_ticks += became.samples.user_ticks;
        self.parts.kernel_ticks = self.parts.kernel_ticks.map(|k| k + became.samples.kernel_ticks);
        // Its stacks after the program's: its samples' stack numbers move by as many.
        let offset = u32::try_from(self.parts.stacks.len()).unwrap_or(u32::MAX);
        if self.parts.stacks_recorded {
            let stack = |(st, count): (&prof_core::sample::CallStack, u64)| {
                let frames = st.frames.iter().map(|&a| match a >= prof_core::sampler::KERNEL_SPACE_START {
                    true => StackFrame::Kernel(a),
                    false => StackFrame::Other(a),
                });
                Stack::new(frames.collect(), st.truncated, count)
            };
            self.parts.stacks.extend(became.samples.stack_ticks().map(stack));
        }
        if let Some((span, placed)) = placed {
            let keep = self.parts.stacks_recorded;
            let later = crate::timeline::Timeline::of_placed(span, placed);
            for t in &later.samples {
                if let (crate::timeline::At::Cpu(frame), false) = (t.at, self.parts.by_thread.is_empty()) {
                    let thread = match self.parts.by_thread.iter_mut().position(|th| th.tid == t.tid) {
                        Some(i) => &mut self.parts.by_thread[i],
                        None => {
                            self.parts.by_thread.push(ThreadSamples { tid: t.tid, name: String::new(), samples: Vec::new() });
                            self.parts.by_thread.last_mut().expect("just pushed")
                        }
                    };
                    match thread.samples.iter_mut().find(|s| s.0 == frame) {
                        Some(s) => s.1 += 1,
                        None => thread.samples.push((frame, 1)),
                    }
                }
            }
            let moved = later.samples.into_iter().map(|mut t| {
                t.stack = t.stack.filter(|_| keep).map(|i| i.saturating_add(offset));
                t
            });
            self.parts.timeline.samples.extend(moved);
            self.parts.timeline.samples.sort_by_key(|t| t.time);
            self.parts.timeline.span = self.parts.timeline.span.max(span);
        }
        // The exec the status counted last is this one.
        match self.parts.later_execs.last_mut() {
            Some(last) => *last = name,
            None => self.parts.later_execs.push(name),
        }
        self
    }

    /// A system-wide run's profile (`-a` on Redox) from the session's `status` line, its
    /// `servers` report, its `timeline` file (where served; every process's samples in time
    /// order, their stacks where `stacks`) and procmgr's `table` as read during the run (each
    /// process's parent and name, where the rows are processes: not a stock kernel's contexts).
    pub fn from_scheme_system(
        status: &str,
        report: &prof_core::formats::ServersReport,
        timeline: Option<&str>,
        table: &BTreeMap<u32, PsEntry>,
        stacks: bool,
    ) -> Profile {
        let mut profile = Profile::from_system_servers(report, stacks);
        if let Some(file) = timeline.and_then(prof_core::formats::parse_timeline) {
            profile = profile.with_scheme_process_timelines(report, &file.processes);
        }
        // On upstream's profiler the rows are contexts by debug_id (a stock kernel's records),
        // for which procmgr's table of pids says nothing, or processes by pid (typed records).
        let status = parse_status(status);
        let value = |key: &str| status.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let upstream = value("source") == Some(prof_core::sampler::UPSTREAM_SOURCE);
        let typed = value("records") == Some("typed");
        // Upstream's profiler: its NMIs, or with kernel-patch/events on one CPU its tick (typed
        // records); the rate the kernel took, else its own (0).
        if upstream || typed {
            profile.parts.source.sampling = prof_core::formats::sampling(&status);
        }
        profile.parts.source.typed_records = typed;
        profile.parts.source.record_span = prof_core::formats::record_span(&status);
        profile.parts.source.rings = prof_core::formats::rings(&status);
        if !upstream || typed {
            profile = profile.with_process_table(table);
        }
        profile
    }

    /// `-a --requests` (Redox, typed records): every process's requests from profd's
    /// `requests` file, named as a program's are, but those of `own` (profil's: its looks at
    /// the session and at procmgr's table while it waits).
    pub fn with_system_requests(mut self, requests: &str, scheme_names: &BTreeMap<u64, String>, own: u32, stacks: bool) -> Profile {
        self.parts.requests = requests_log(requests, scheme_names, stacks).map(|mut log| {
            log.retain(|pid| pid != own);
            log
        });
        self
    }
}

impl Profile {
    /// The profile the `prof:` scheme's files describe: its `status` line, binary `data` and
    /// `samples` text (what profil on Redox reads back from profd). Malformed text fields read
    /// as zero / absent; only `data` must be a valid `prof_data`.
    pub fn from_scheme_files(status: &str, data: &[u8], samples: &str) -> Result<Profile, DecodeError> {
        let st = parse_status(status);
        let get = |k: &str| st.iter().find(|kv| kv.0 == k).map_or("", |kv| kv.1.as_str());
        let num = |k: &str| prof_core::ctl::number(get(k)).unwrap_or(0);
        let samples = parse_samples(samples);
        let source = super::Source {
            sampling: prof_core::formats::sampling(&st),
            typed_records: get("records") == "typed",
            record_span: prof_core::formats::record_span(&st),
            cpus: None,
            kernel: None,
            rings: prof_core::formats::rings(&st),
        };
        Ok(Profile::from(Parts {
            pid: num("pid") as u32,
            data: ProfData::from_bytes(data)?,
            image_samples: samples.text,
            foreign_samples: samples.other,
            kernel_samples: samples.kernel,
            user_ticks: num("ticks_user"),
            kernel_ticks: Some(num("ticks_kernel")),
            lost: num("dropped"),
            stop_reason: reason_from_str(get("reason")),
            // What the program became is not in the scheme's files: said as another program.
            later_execs: vec![ANOTHER_PROGRAM.to_string(); num("later_execs").min(16) as usize],
            source,
            ..Default::default()
        }))
    }
}

impl Profile {
    /// The call stacks of `/scheme/prof/stacks` (the kernel's frame-pointer walks) added to a
    /// profile read from the scheme. Malformed lines are skipped.
    pub fn with_scheme_stacks(mut self, stacks: &str) -> Profile {
        self.parts.stacks_recorded = true;
        self.parts.stacks = prof_core::formats::parse_stacks(stacks)
            .into_iter()
            .map(|(frames, truncated, count)| Stack::new(frames, truncated, count))
            .collect();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_core::image::TextSegment;
    use prof_core::{BinLayout, StopReason};

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
        let p = Profile::from(Parts { processes: vec![child(14, "/usr/bin/dash"), child(15, "/usr/bin/dash"), child(99, "[exited]")], ..Default::default() });
        let p = p.with_process_table(&table);
        let seen: Vec<(u32, Option<u32>, &str)> = p.parts.processes.iter().map(|c| (c.pid, c.parent, c.program.as_str())).collect();
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
        let p = Profile::from(Parts { pid: 10, ..Default::default() }).with_children(children, "/bin/sh", &table, mapped);
        let seen: Vec<(u32, &str, &str)> =
            p.parts.processes.iter().map(|c| (c.pid, c.program.as_str(), c.profile.parts.mappings[0].path.as_str())).collect();
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

    #[test]
    fn profile_from_the_scheme_files() {
        let layout = BinLayout::new(TextSegment { start: 0x1000, end: 0x2000 }, 0, 0, 0x400).unwrap();
        let mut d = ProfData::new(&layout);
        d.bin[1] = 4;
        let status = "state=stopped pid=42 reason=exit ticks_in_bins=4 ticks_user=6 ticks_kernel=2 dropped=1 \
                      start=0x1000 end=0x2000 bin_sz=1024 nr_bins=4 load_base=0x0\n";
        let p = Profile::from_scheme_files(status, &d.to_bytes(), "0x1400 4 text\n0x7f0000000010 2 other\n").unwrap();
        assert_eq!(p.parts.data, d);
        assert_eq!((p.parts.image_samples, p.parts.foreign_samples), (vec![(0x1400, 4)], vec![(0x7f00_0000_0010, 2)]));
        assert_eq!((p.parts.user_ticks, p.parts.kernel_ticks, p.parts.lost, p.parts.stop_reason), (6, Some(2), 1, Some(StopReason::Exit)));
        assert!(p.parts.later_execs.is_empty(), "a profd from before later_execs");
        let execd = Profile::from_scheme_files(&status.replace('\n', " later_execs=2\n"), &d.to_bytes(), "").unwrap();
        assert_eq!(execd.parts.later_execs, ["another program", "another program"]);
        assert!(Profile::from_scheme_files(status, &[0; 10], "").is_err());
        let empty = Profile::from_scheme_files("garbage", &ProfData::default().to_bytes(), "junk").unwrap();
        assert_eq!((empty.parts.user_ticks, empty.parts.stop_reason), (0, None));
        assert!(!empty.parts.stacks_recorded);
        let p = empty.with_scheme_stacks("3 complete text:0x1400 text:0x1205 other:0x7f0000001000\n1 truncated\njunk line\n");
        assert!(p.parts.stacks_recorded);
        assert_eq!(
            p.parts.stacks,
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
