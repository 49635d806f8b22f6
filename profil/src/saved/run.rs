//! The run as a saved file holds it (`run`, versions 1 to 3): a type of the format's own, not the
//! model's, so that a field added to the model changes no saved file until it is added here
//! (with the format's `VERSION`; the golden file `saved_run.json` holds the whole). The model's
//! value types (a stack, a mapping, a thread's time, a wait site) keep their serde forms, which
//! are the format's too.

use prof_core::ledger::ThreadTime;
use prof_core::sampler::{Mapping, RecordSpan, Sampling};
use prof_core::{ProfData, StopReason};
use rustc_hash::FxHashMap;

use crate::profile::{ChildProfile, Clock, ExitKind, OffCpu, Outcome, Parts, Profile, ServedStack, Source, Stack, ThreadSamples, WaitSite};

#[derive(serde::Serialize, serde::Deserialize)]
pub struct SavedOutcome {
    program: String,
    arguments: Vec<String>,
    frequency_hz: u64,
    profile: SavedProfile,
    exit: ExitKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    interpreters: Vec<String>,
}

/// A profile as saved, without its stacks and samples in time order (saved beside the run:
/// `saved::stacks`, `timeline::rows`); each field as `Profile`'s says.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct SavedProfile {
    data: ProfData,
    image_samples: Vec<(u64, u64)>,
    foreign_samples: Vec<(u64, u64)>,
    kernel_samples: Vec<(u64, u64)>,
    sampling: Option<Sampling>,
    children: (u64, u64),
    mappings: Vec<Mapping>,
    user_ticks: u64,
    kernel_ticks: Option<u64>,
    lost: u64,
    #[serde(with = "prof_core::formats::reason_name")]
    stop_reason: Option<StopReason>,
    later_execs: Vec<String>,
    /// Absent in runs saved before typed records: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    typed_records: bool,
    stacks_recorded: bool,
    /// Versions 1 and 2 kept the stacks here; version 3 keeps them beside the run.
    #[serde(default, skip_serializing)]
    stacks: Vec<Stack>,
    servers: Option<prof_core::formats::ServersReport>,
    pid: u32,
    processes: Vec<SavedChild>,
    elapsed: Option<std::time::Duration>,
    cpus: Option<u64>,
    threads: Vec<ThreadTime>,
    wait_sites: Vec<WaitSite>,
    off_cpu: Option<OffCpu>,
    #[serde(default)]
    served: Vec<ServedStack>,
    #[serde(default)]
    by_thread: Vec<ThreadSamples>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle_ticks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record_span: Option<RecordSpan>,
    /// The CPUs the kernel sampled (Redox, a profd that says): absent before, and elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rings: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    daemons: Vec<SavedChild>,
    /// The kernel the run was recorded on (Linux; absent in older files, and a process's):
    /// its kernel samples are named by default only on that boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kernel: Option<crate::kernel::KernelId>,
    /// The requests and their latencies (`--requests`; absent in older files, and where not
    /// recorded): each key's figures and values as the aggregator keeps them, bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requests: Option<prof_core::requests::RequestLog>,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct SavedChild {
    pid: u32,
    parent: Option<u32>,
    program: String,
    profile: SavedProfile,
    running: bool,
}

/// The build-id of each object mapped, read from its file once however many processes map it.
#[derive(Default)]
struct BuildIds(FxHashMap<String, Option<String>>);

impl BuildIds {
    /// `m` with its object's build-id, read from the file now (a mapping that records one
    /// already keeps it: a loaded run saved again).
    fn of(&mut self, m: &Mapping) -> Mapping {
        let mut m = m.clone();
        if m.build_id.is_none() {
            let key = m.source().map_or_else(|| m.path.clone(), |p| p.display().to_string());
            m.build_id = self.0.entry(key).or_insert_with(|| prof_objects::symbolize::build_id_of(&m)).clone();
        }
        m
    }
}

impl SavedOutcome {
    /// `run` as saved, each object mapped into the program and its processes with its
    /// build-id (the daemons' as recorded).
    pub fn of(run: &Outcome) -> SavedOutcome {
        let Outcome { program, arguments, frequency_hz, profile, exit, interpreters } = run;
        SavedOutcome {
            program: program.clone(),
            arguments: arguments.clone(),
            frequency_hz: *frequency_hz,
            profile: SavedProfile::of(profile, Some(&mut BuildIds::default())),
            exit: *exit,
            interpreters: interpreters.clone(),
        }
    }

    pub fn into_outcome(self) -> Outcome {
        let SavedOutcome { program, arguments, frequency_hz, profile, exit, interpreters } = self;
        Outcome { program, arguments, frequency_hz, profile: profile.into_profile(), exit, interpreters }
    }
}

impl SavedProfile {
    /// `p` as saved; `ids`: its mappings and its processes' with their build-ids.
    fn of(p: &Profile, mut ids: Option<&mut BuildIds>) -> SavedProfile {
        // Every field named: one the model gains is a decision about this format.
        let Parts {
            pid,
            data,
            image_samples,
            foreign_samples,
            kernel_samples,
            mappings,
            user_ticks,
            kernel_ticks,
            lost,
            stacks_recorded,
            stacks: _,
            by_thread,
            timeline: _,
            stop_reason,
            later_execs,
            children,
            processes,
            idle_ticks,
            servers,
            daemons,
            source: Source { sampling, cpus, rings, record_span, typed_records, kernel },
            clock: Clock { elapsed, threads, wait_sites, off_cpu, served },
            requests,
        } = p.parts();
        let mappings = match ids.as_deref_mut() {
            Some(ids) => mappings.iter().map(|m| ids.of(m)).collect(),
            None => mappings.clone(),
        };
        SavedProfile {
            data: data.clone(),
            image_samples: image_samples.clone(),
            foreign_samples: foreign_samples.clone(),
            kernel_samples: kernel_samples.clone(),
            sampling: *sampling,
            children: *children,
            mappings,
            user_ticks: *user_ticks,
            kernel_ticks: *kernel_ticks,
            lost: *lost,
            stop_reason: *stop_reason,
            later_execs: later_execs.clone(),
            typed_records: *typed_records,
            stacks_recorded: *stacks_recorded,
            stacks: Vec::new(),
            servers: servers.clone(),
            pid: *pid,
            processes: processes.iter().map(|c| SavedChild::of(c, ids.as_deref_mut())).collect(),
            elapsed: *elapsed,
            cpus: *cpus,
            rings: *rings,
            threads: threads.clone(),
            wait_sites: wait_sites.clone(),
            off_cpu: off_cpu.clone(),
            served: served.clone(),
            by_thread: by_thread.clone(),
            idle_ticks: *idle_ticks,
            record_span: *record_span,
            daemons: daemons.iter().map(|c| SavedChild::of(c, None)).collect(),
            kernel: kernel.clone(),
            requests: requests.clone(),
        }
    }

    /// The profile, its stacks (where a version 1 or 2 file had them here) and no samples in
    /// time order (`saved::parse` puts them back).
    fn into_profile(self) -> Profile {
        let s = self;
        Profile::from(Parts {
            pid: s.pid,
            data: s.data,
            image_samples: s.image_samples,
            foreign_samples: s.foreign_samples,
            kernel_samples: s.kernel_samples,
            mappings: s.mappings,
            user_ticks: s.user_ticks,
            kernel_ticks: s.kernel_ticks,
            lost: s.lost,
            stacks_recorded: s.stacks_recorded,
            stacks: s.stacks,
            by_thread: s.by_thread,
            timeline: Default::default(),
            stop_reason: s.stop_reason,
            later_execs: s.later_execs,
            children: s.children,
            processes: s.processes.into_iter().map(SavedChild::into_child).collect(),
            idle_ticks: s.idle_ticks,
            servers: s.servers,
            daemons: s.daemons.into_iter().map(SavedChild::into_child).collect(),
            source: Source { sampling: s.sampling, cpus: s.cpus, rings: s.rings, record_span: s.record_span, typed_records: s.typed_records, kernel: s.kernel },
            clock: Clock { elapsed: s.elapsed, threads: s.threads, wait_sites: s.wait_sites, off_cpu: s.off_cpu, served: s.served },
            requests: s.requests,
        })
    }
}

impl SavedChild {
    fn of(c: &ChildProfile, ids: Option<&mut BuildIds>) -> SavedChild {
        let ChildProfile { pid, parent, program, profile, running } = c;
        SavedChild { pid: *pid, parent: *parent, program: program.clone(), profile: SavedProfile::of(profile, ids), running: *running }
    }

    fn into_child(self) -> ChildProfile {
        let SavedChild { pid, parent, program, profile, running } = self;
        ChildProfile { pid, parent, program, profile: profile.into_profile(), running }
    }
}
