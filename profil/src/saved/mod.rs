//! A run saved to a file (`--save FILE`) and reported from it (`--load FILE`): the run's
//! recorded model — the Minix layout and bins, samples and stacks as unsymbolized addresses,
//! every mapping with its object's path, the processes (`--children`), the daemons and the
//! account (Redox), the threads by the clock and the waits (`--off-cpu`), how the run ended,
//! its command line and sampling rate — as versioned JSON, gzipped (docs/exports.md). Names are made
//! when a report is, from the program file and the mapped objects as they are then: a report
//! or export of a loaded run is the live run's, byte for byte, where they are the same files.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use prof_core::sampler::CallGraph;

mod run;
mod stacks;

use crate::profile::Outcome;
use crate::timeline::rows::SavedTimeline;
use crate::timeline::Timeline;
use run::SavedOutcome;
use stacks::SavedStacks;

/// The `format` of a saved run.
pub const FORMAT: &str = "profil-run";
/// The version this profil writes. Version 2 added the samples in time order (`timeline`);
/// a version 1 file reads as a run without them. Version 3 keeps the call stacks beside the
/// run as rows (`call_stacks`), not as the profile's `stacks` objects, which it still reads.
/// The kernel a run was recorded on (`run.profile.kernel`) came later, optional as the
/// build-ids are: a file without it reads as a run on a kernel not known (its kernel samples
/// unnamed by default), and an older profil reads the rest of a file with it.
pub const VERSION: u32 = 3;
/// The oldest version it reads.
pub const OLDEST_VERSION: u32 = 1;

/// How the run's stacks were recorded, as saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stacks {
    None,
    Fp,
    Dwarf,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    format: String,
    version: u32,
    /// The program file its samples are named from (absolute).
    file: PathBuf,
    /// The program file's GNU build-id (hex), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build_id: Option<String>,
    stacks: Stacks,
    /// With `--children`: the processes it started were followed.
    children: bool,
    run: SavedOutcome,
    /// The program's call stacks (version 3; before, the profile's `stacks`).
    #[serde(default, skip_serializing_if = "SavedStacks::is_empty")]
    call_stacks: SavedStacks,
    /// Each followed process's call stacks (`--children`, `-a`), by pid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    child_stacks: Vec<(u32, SavedStacks)>,
    /// Each daemon's that worked for the program (Redox), by pid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    daemon_stacks: Vec<(u32, SavedStacks)>,
    /// The program's samples in time order (version 2), beside the run's stacks.
    #[serde(default, skip_serializing_if = "SavedTimeline::is_empty")]
    timeline: SavedTimeline,
    /// Each followed process's samples in time order (`--children`), by pid, beside its
    /// stacks; a reader that does not know them reads the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    child_timelines: Vec<(u32, SavedTimeline)>,
    /// Each daemon's that worked for the program (Redox), by pid, beside its stacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    daemon_timelines: Vec<(u32, SavedTimeline)>,
}

/// The first frame of each of the run's stacks: a sample in time order with its stack saved is
/// saved without its address, which is this.
fn first_frames(stacks: &[crate::profile::Stack]) -> Vec<Option<crate::frame::Frame>> {
    stacks.iter().map(|s| s.frames.first().copied()).collect()
}

/// A saved run, read back.
#[derive(Debug, Clone)]
pub struct SavedRun {
    pub file: PathBuf,
    /// The program file's build-id (hex), where the run recorded one.
    pub build_id: Option<String>,
    /// How stacks were recorded (`-g`'s kind; a dwarf stack size of 0: not known any more).
    pub call_graph: CallGraph,
    pub children: bool,
    pub run: Outcome,
}

/// The saved form of `run`, of the program file `file`, recorded with `call_graph` and
/// (`children`) `--children`.
pub fn render(run: &Outcome, file: &Path, call_graph: CallGraph, children: bool) -> Vec<u8> {
    let stacks = match call_graph {
        CallGraph::None => Stacks::None,
        CallGraph::FramePointers => Stacks::Fp,
        CallGraph::Dwarf { .. } => Stacks::Dwarf,
    };
    // Where the file is, absolute and without links (as platform::real_path finds it, past
    // Redox's initfs). A system-wide run (-a) has no program file.
    let system = run.profile.is_system_wide();
    let file = if system { Path::new("") } else { file };
    let file = crate::platform::real_path(file).or_else(|| std::path::absolute(file).ok()).unwrap_or_else(|| file.to_path_buf());
    let build_id = (!system).then(|| prof_objects::elf::build_id(&file)).flatten().map(|id| prof_objects::sysroot::hex(&id));
    // A daemon's work for the program can be all its timeline has (a request no tick fell in).
    let timeline_of = |p: &crate::profile::Profile| Some(p.timeline().saved(&first_frames(p.stacks()))).filter(|t| !t.is_empty());
    let stacks_of = |p: &crate::profile::Profile| (!p.stacks().is_empty()).then(|| SavedStacks::of(p.stacks()));
    let (processes, daemons) = (run.profile.processes(), run.profile.daemons());
    // The program's whole, a process's where it has samples in time order or stacks.
    let timeline = run.profile.timeline().saved(&first_frames(run.profile.stacks()));
    let (child_timelines, daemon_timelines) = (by_pid(processes, timeline_of), by_pid(daemons, timeline_of));
    let call_stacks = SavedStacks::of(run.profile.stacks());
    let (child_stacks, daemon_stacks) = (by_pid(processes, stacks_of), by_pid(daemons, stacks_of));
    let run = SavedOutcome::of(run);
    let saved = Saved {
        format: FORMAT.into(),
        version: VERSION,
        file,
        build_id,
        stacks,
        children,
        run,
        call_stacks,
        child_stacks,
        daemon_stacks,
        timeline,
        child_timelines,
        daemon_timelines,
    };
    let mut json = serde_json::to_vec(&saved).expect("a run is plain data: it always serializes");
    json.push(b'\n');
    // Gzipped: a long -g run's stacks repeat their frames (a 50 s fib run: 19 MB of JSON,
    // 0.7 MB gzipped); `zcat FILE | jq` reads it.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

/// The largest saved run read: a 50 s `-g` run is under a MiB.
pub const MAX_FILE: u64 = 256 << 20;

/// The most a saved run may unpack to: far above any run's, far below a gzip bomb's.
const MAX_UNPACKED: u64 = 1 << 30;

/// Read a saved run back. The error says why the bytes are not one: not JSON, not a profil
/// run, a version this profil does not read, or a run that does not hold together.
pub fn parse(bytes: &[u8]) -> Result<SavedRun, String> {
    if bytes.is_empty() {
        return Err("the file is empty".into());
    }
    // Gzipped as saved, or its JSON unpacked.
    let unpacked;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .take(MAX_UNPACKED + 1)
            .read_to_end(&mut json)
            .map_err(|e| format!("not a saved run (its gzip stream: {e})"))?;
        if json.len() as u64 > MAX_UNPACKED {
            return Err(format!("not a saved run (it unpacks to more than {} GiB)", MAX_UNPACKED >> 30));
        }
        unpacked = json;
        &unpacked[..]
    } else {
        bytes
    };
    // The header first, so a run of another version is named as one.
    #[derive(serde::Deserialize)]
    struct Header {
        format: Option<String>,
        version: Option<u32>,
    }
    let header: Header = serde_json::from_slice(bytes).map_err(|e| format!("not a saved run ({e})"))?;
    match (header.format.as_deref(), header.version) {
        (Some(FORMAT), Some(OLDEST_VERSION..=VERSION)) => {}
        (Some(FORMAT), Some(v)) => {
            return Err(format!("a saved run of version {v}; this profil reads versions {OLDEST_VERSION} to {VERSION}"))
        }
        _ => return Err(format!("not a saved run (no \"format\": \"{FORMAT}\")")),
    }
    let mut saved: Saved = serde_json::from_slice(bytes).map_err(|e| format!("a damaged saved run ({e})"))?;
    let damaged = |e: String| format!("a damaged saved run ({e})");
    let mut run = saved.run.into_outcome();
    let profile = &mut run.profile;
    // Version 3's stacks, beside the run (older files have them inside it).
    if !saved.call_stacks.is_empty() {
        profile.parts_mut().stacks = std::mem::take(&mut saved.call_stacks).stacks().map_err(damaged)?;
    }
    each_process(profile, saved.child_stacks, saved.daemon_stacks, "the stacks", |p, stacks| {
        p.parts_mut().stacks = stacks.stacks()?;
        Ok(())
    })
    .map_err(damaged)?;
    counts_that_can_be(profile)?;
    profile.parts_mut().timeline = Timeline::from_saved(saved.timeline, &first_frames(profile.stacks())).map_err(damaged)?;
    each_process(profile, saved.child_timelines, saved.daemon_timelines, "a timeline", |p, timeline| {
        p.parts_mut().timeline = Timeline::from_saved(timeline, &first_frames(p.stacks()))?;
        Ok(())
    })
    .map_err(damaged)?;
    let call_graph = match saved.stacks {
        Stacks::None => CallGraph::None,
        Stacks::Fp => CallGraph::FramePointers,
        Stacks::Dwarf => CallGraph::Dwarf { stack_size: 0 },
    };
    Ok(SavedRun { file: saved.file, build_id: saved.build_id, call_graph, children: saved.children, run })
}

/// The part `part_of` saves of each of `processes` that has one, by pid ([`each_process`]
/// puts them back).
fn by_pid<T>(processes: &[crate::profile::ChildProfile], part_of: impl Fn(&crate::profile::Profile) -> Option<T>) -> Vec<(u32, T)> {
    processes.iter().filter_map(|c| Some((c.pid, part_of(&c.profile)?))).collect()
}

/// Each `(pid, part)` of a saved run's followed processes (`children`) and daemons
/// (`daemons`) put into that process's profile; `what` names a part of a process the run does
/// not have, which makes the file a damaged one.
fn each_process<T>(
    profile: &mut crate::profile::Profile,
    children: Vec<(u32, T)>,
    daemons: Vec<(u32, T)>,
    what: &str,
    mut put: impl FnMut(&mut crate::profile::Profile, T) -> Result<(), String>,
) -> Result<(), String> {
    let whole = profile.parts_mut();
    for (processes, parts) in [(&mut whole.processes, children), (&mut whole.daemons, daemons)] {
        for (pid, part) in parts {
            let Some(c) = processes.iter_mut().find(|c| c.pid == pid) else {
                return Err(format!("{what} of process {pid}, which it does not have"));
            };
            put(&mut c.profile, part)?;
        }
    }
    Ok(())
}

/// The most samples a run can hold, the program's and its processes' together: 2^50 is
/// 350 years at 100 kHz. More is a damaged file (2^64 - 1 samples read as a report of
/// nonsense before).
const MAX_SAMPLES: u64 = 1 << 50;

/// Are the run's sample counts ones a run can have?
fn counts_that_can_be(p: &crate::profile::Profile) -> Result<(), String> {
    fn total(p: &crate::profile::Profile) -> Option<u64> {
        let pairs = p.image_samples().iter().chain(p.foreign_samples()).chain(p.kernel_samples()).map(|s| s.1);
        let stacks = p.stacks().iter().map(|s| s.count);
        let ticks = [p.user_ticks(), p.kernel_ticks().unwrap_or(0), p.lost(), p.idle_ticks().unwrap_or(0)];
        let own = pairs.chain(stacks).chain(ticks).try_fold(0u64, u64::checked_add)?;
        p.processes().iter().try_fold(own, |n, c| n.checked_add(total(&c.profile)?))
    }
    match total(p) {
        Some(n) if n <= MAX_SAMPLES => Ok(()),
        _ => Err("a damaged saved run (its sample counts are more than any run can hold)".into()),
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use crate::report::ExitKind;

    #[test]
    fn counts_no_run_can_have_are_a_damaged_file() {
        let mut run = outcome();
        run.profile.parts_mut().user_ticks = u64::MAX;
        let bytes = render(&run, Path::new("/bin/fib"), CallGraph::None, false);
        assert_eq!(parse(&bytes).unwrap_err(), "a damaged saved run (its sample counts are more than any run can hold)");
        // Two counts that overflow together.
        let mut run = outcome();
        run.profile.parts_mut().image_samples = vec![(0x1000, u64::MAX / 2 + 1), (0x1010, u64::MAX / 2 + 1)];
        assert!(parse(&render(&run, Path::new("/bin/fib"), CallGraph::None, false)).is_err());
        // A long run's counts are fine.
        let mut run = outcome();
        run.profile.parts_mut().user_ticks = 3_600_000_000;
        assert!(parse(&render(&run, Path::new("/bin/fib"), CallGraph::None, false)).is_ok());
    }

    fn outcome() -> Outcome {
        let profile = crate::profile::Profile::from(Parts {
            image_samples: vec![(0x1000, 5), (0x1010, 2)],
            stop_reason: Some(prof_core::StopReason::Exit),
            clock: crate::profile::Clock { elapsed: Some(std::time::Duration::from_millis(1250)), ..Default::default() },
            ..Default::default()
        });
        Outcome { program: "./fib".into(), arguments: vec!["30".into()], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: Vec::new() }
    }

    /// A run with every part a saved run keeps: the program's (bins, samples in it, a library
    /// and the kernel, stacks, threads, waits, daemons' work, samples in time order), a child's
    /// and a daemon's, an attach's end.
    fn everything() -> Outcome {
        use crate::frame::Frame;
        use crate::profile::{ChildProfile, Profile, ServedStack, Stack, ThreadSamples};
        use crate::timeline::{At, TimedSample, TimedServed, Timeline};
        use prof_core::timeline::WaitSpan;
        let mut p = crate::profile::example();
        p.parts_mut().kernel_samples = vec![(0xffff_8000_0010_0000, 2)];
        p.parts_mut().source.sampling = Some(prof_core::sampler::Sampling { source: "nmi-hpet", rate: 997 });
        p.parts_mut().children = (1, 3);
        p.parts_mut().mappings[0].build_id = Some("0123abcd".into());
        p.parts_mut().later_execs = vec!["/bin/true".into()];
        p.parts_mut().source.typed_records = true;
        p.parts_mut().source.cpus = Some(2);
        p.parts_mut().source.kernel = Some(crate::kernel::KernelId { boot_id: "5d1f7a4e-0c2b-4b8e-9a61-3f0e2d7c8b19".into(), stext: Some(0xffff_ffff_8100_0000) });
        p.parts_mut().clock.served = vec![ServedStack { site: 0, pid: 7, frames: vec![0x40_2010, 0x40_3005], truncated: false, count: 2 }];
        p.parts_mut().by_thread = vec![ThreadSamples { tid: 42, name: "fib".into(), samples: vec![(Frame::Program(0x1000), 6)] }];
        p.parts_mut().source.record_span = Some(prof_core::sampler::RecordSpan { rate_sent: 998, span_ns: 1_200_000_000 });
        let at = |time, at, stack| TimedSample { time, tid: 42, at, stack };
        p.parts_mut().timeline = Timeline {
            span: 1_250_000_000,
            samples: vec![at(1000, At::Cpu(Frame::Program(0x1000)), Some(0)), at(2000, At::Kernel(0xffff_8000_0010_0000), None), at(3000, At::Blocked(0), None)],
            waits: vec![WaitSpan { tid: 42, from: 3000, to: 903_000, site: 0 }],
            served: Vec::new(),
        };
        let sh = Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010)], truncated: true, count: 3 };
        let child = Profile::from(Parts {
            foreign_samples: vec![(0x7f00_0000_1010, 3)],
            mappings: p.mappings().to_vec(),
            user_ticks: 3,
            kernel_ticks: Some(0),
            stacks_recorded: true,
            stacks: vec![sh],
            pid: 43,
            timeline: Timeline { span: 5000, samples: vec![at(4000, At::Cpu(Frame::Foreign(0x7f00_0000_1010)), Some(0))], ..Default::default() },
            ..Default::default()
        });
        let served = TimedServed { tid: 8, from: 3500, to: 800_000, for_tid: 42, site: Some(0) };
        let daemon = Profile::from(Parts { timeline: Timeline { span: 900_000, samples: vec![at(4500, At::Kernel(0xffff_8000_0010_0000), None)], served: vec![served], ..Default::default() }, ..Default::default() });
        p.parts_mut().processes = vec![ChildProfile { pid: 43, parent: Some(42), program: "/bin/sh".into(), profile: child, running: true }];
        p.parts_mut().daemons = vec![ChildProfile { pid: 7, parent: None, program: "/no/such/ramfs".into(), profile: daemon, running: true }];
        let exit = ExitKind::Attached { pid: 42, exited: false };
        Outcome { program: "./fib".into(), arguments: vec!["30".into()], frequency_hz: 1000, profile: p, exit, interpreters: vec!["/bin/sh".into()] }
    }

    /// The saved format, whole (its JSON, keys sorted, as the golden file has it): a change of
    /// it is a change of the file every saved run is, to be made on purpose (`VERSION`).
    #[test]
    fn the_saved_format_matches_the_golden_file() {
        let bytes = render(&everything(), Path::new("/no/such/fib"), CallGraph::FramePointers, true);
        let mut json = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut json).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        // UPDATE_EXPECT=1 rewrites the file after a deliberate change (review the diff).
        expect_test::expect_file!["../../tests/golden/saved_run.json"].assert_eq(&(serde_json::to_string_pretty(&doc).unwrap() + "\n"));
        // Read back, it saves as the same bytes.
        let back = parse(&bytes).unwrap();
        assert_eq!(render(&back.run, &back.file, back.call_graph, back.children), bytes);
    }

    /// A daemon's requests served, without a sample among them, are kept too.
    #[test]
    fn a_daemons_work_without_samples_is_saved() {
        use crate::timeline::{TimedServed, Timeline};
        let mut run = outcome();
        let served = vec![TimedServed { tid: 8, from: 3000, to: 800_000, for_tid: 42, site: None }];
        let timeline = Timeline { span: 900_000, served, ..Default::default() };
        let daemon = crate::profile::Profile::from(Parts { timeline, ..Default::default() });
        run.profile.parts_mut().daemons = vec![crate::profile::ChildProfile { pid: 7, parent: None, program: "/bin/ramfs".into(), profile: daemon, running: true }];
        let back = parse(&render(&run, Path::new("/bin/fib"), CallGraph::None, false)).unwrap();
        assert_eq!(back.run.profile.daemons()[0].profile.timeline(), run.profile.daemons()[0].profile.timeline());
    }

    #[test]
    fn a_run_reads_back_as_it_was_saved() {
        let bytes = render(&outcome(), Path::new("/bin/fib"), CallGraph::FramePointers, true);
        let back = parse(&bytes).unwrap();
        assert_eq!((back.file.clone(), back.call_graph, back.children), (PathBuf::from("/bin/fib"), CallGraph::FramePointers, true));
        assert_eq!(back.run.profile.image_samples(), vec![(0x1000, 5), (0x1010, 2)]);
        assert_eq!(back.run.profile.clock().elapsed, Some(std::time::Duration::from_millis(1250)));
        assert_eq!(back.run.arguments, vec!["30"]);
        assert_eq!(back.run.profile.stop_reason(), Some(prof_core::StopReason::Exit));
        // Saving what was read gives the same bytes.
        assert_eq!(render(&back.run, &back.file, back.call_graph, back.children), bytes);
    }

    #[test]
    fn stacks_are_saved_beside_the_run_and_read_back_into_their_processes() {
        use crate::frame::Frame;
        use crate::profile::{ChildProfile, Profile, Stack};
        let stack = |a, count| Stack { frames: vec![Frame::Program(a), Frame::Foreign(0x7f00_0000_1000)], truncated: false, count };
        let mut run = outcome();
        run.profile.parts_mut().stacks = vec![stack(0x1000, 5), stack(0x1010, 2)];
        let child = Profile::from(Parts { stacks: vec![stack(0x2000, 3)], ..Default::default() });
        run.profile.parts_mut().processes = vec![ChildProfile { pid: 41, parent: None, program: "/bin/sh".into(), profile: child, running: false }];
        let bytes = render(&run, Path::new("/bin/fib"), CallGraph::FramePointers, true);
        let back = parse(&bytes).unwrap();
        assert_eq!(back.run.profile.stacks(), run.profile.stacks());
        assert_eq!(back.run.profile.processes()[0].profile.stacks(), vec![stack(0x2000, 3)]);
        let mut json = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut json).unwrap();
        assert!(json.contains("\"child_stacks\":[[41,[[3,false,[0,8192,1,139637976731648]]]]]"), "{json}");
        let bad = json.replace("\"child_stacks\":[[41,", "\"child_stacks\":[[42,");
        assert_eq!(parse(bad.as_bytes()).unwrap_err(), "a damaged saved run (the stacks of process 42, which it does not have)");
    }

    #[test]
    fn what_is_not_a_saved_run_is_named() {
        assert_eq!(parse(b"").unwrap_err(), "the file is empty");
        assert!(parse(b"\x7fELF").unwrap_err().starts_with("not a saved run ("));
        assert_eq!(parse(br#"{"format": "profil", "version": 7}"#).unwrap_err(), "not a saved run (no \"format\": \"profil-run\")");
        assert_eq!(parse(br#"{"format": "profil-run", "version": 9}"#).unwrap_err(), "a saved run of version 9; this profil reads versions 1 to 3");
        let good = render(&outcome(), Path::new("/bin/fib"), CallGraph::None, false);
        assert!(parse(&good[..good.len() / 2]).unwrap_err().starts_with("not a saved run (its gzip stream: "));
        // Unpacked, it reads too; damaged, it is refused.
        let mut json = String::new();
        flate2::read::GzDecoder::new(&good[..]).read_to_string(&mut json).unwrap();
        assert!(parse(json.as_bytes()).is_ok());
        assert!(parse(&json.as_bytes()[..json.len() / 2]).unwrap_err().starts_with("not a saved run ("));
        // The stop reason by its name.
        assert!(json.contains("\"stop_reason\":\"exit\""), "{json}");
        let bad = json.replace("\"stop_reason\":\"exit\"", "\"stop_reason\":\"tired\"");
        assert!(parse(bad.as_bytes()).unwrap_err().contains("unknown stop reason \"tired\""), "{bad}");
        let bad = json.replace("\"nr_bins\":0", "\"nr_bins\":3");
        assert!(parse(bad.as_bytes()).unwrap_err().starts_with("a damaged saved run ("), "{bad}");
    }
}
