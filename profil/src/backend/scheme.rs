//! Redox: talk to the profd daemon through the `prof:` scheme (its contract is
//! docs/prof-scheme.md).

use std::io::{self, Write};
use std::path::Path;

use prof_core::sampler::CallGraph;
use prof_core::{ImageLayout, ProfError, StartRequest};

use crate::profile::of_scheme::SchemeFiles;
use crate::profile::Profile;

const CTL: &str = "/scheme/prof/ctl";
const STATUS: &str = "/scheme/prof/status";
const DATA: &str = "/scheme/prof/data";
const SAMPLES: &str = "/scheme/prof/samples";
const STACKS: &str = "/scheme/prof/stacks";
const SERVERS: &str = "/scheme/prof/servers";
const CLOCK: &str = "/scheme/prof/clock";
const CHILDREN: &str = "/scheme/prof/children";
const THREADS: &str = "/scheme/prof/threads";
const TIMELINE: &str = "/scheme/prof/timeline";
const REQUESTS: &str = "/scheme/prof/requests";
/// Where the schemes are: a directory of their names.
const SCHEMES: &str = "/scheme";
/// procmgr's process table (pid, parent, name), for `-a`.
const PS: &str = "/scheme/proc/ps";
/// The kernel's CPU report: std has no CPU count on Redox, this has a `CPUs: 2` line.
const SYS_CPU: &str = "/scheme/sys/cpu";

/// Whether to read back the call stacks (the kernel records them in every session), and to
/// report the waits (`--off-cpu`; the kernel times them in every session); with `--children`,
/// procmgr's process table as a thread reads it while the program runs.
pub struct Profiler {
    stacks: bool,
    off_cpu: bool,
    /// `--requests`: read them back, and name the schemes.
    requests: bool,
    children: Option<ProcessTable>,
    /// The program's file: where a child that has not exec'd finds its code.
    program: std::path::PathBuf,
    /// Where the children's files are read.
    objects: prof_objects::Options,
}

/// Procmgr's process table read every 20 ms until dropped, each look added: the names of the
/// programs the processes exec'd, for those gone before profd could look.
struct ProcessTable {
    table: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<u32, crate::profile::of_scheme::PsEntry>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ProcessTable {
    fn start() -> ProcessTable {
        use std::sync::atomic::Ordering;
        let table = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (into, until) = (table.clone(), stop.clone());
        let reader = std::thread::spawn(move || {
            while !until.load(Ordering::Relaxed) {
                if let Ok(ps) = read_scheme_text(PS) {
                    let looked = crate::profile::of_scheme::parse_ps(&ps);
                    into.lock().unwrap_or_else(|e| e.into_inner()).extend(looked);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        ProcessTable { table, stop, reader: Some(reader) }
    }

    /// Stop reading; the table as last read.
    fn finish(&mut self) -> std::collections::BTreeMap<u32, crate::profile::of_scheme::PsEntry> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        std::mem::take(&mut *self.table.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The schemes' names by the kernel's numbers for them: the kernel gives a file's scheme
/// number as its `st_dev`, so a `stat` of each `/scheme/NAME` says it (a scheme whose root
/// cannot be stat'd is left out, and its requests keep their number).
fn scheme_names() -> std::collections::BTreeMap<u64, String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir(SCHEMES) else { return Default::default() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = e.file_name().to_string_lossy().into_owned();
        Some((std::fs::metadata(e.path()).ok()?.dev(), name))
    })
    .collect()
}

fn errno(e: io::Error) -> ProfError {
    ProfError::from_io("the prof: scheme", &e)
}

/// The most a `prof:` file, procmgr's table or `sys:cpu` can hold here: far above what
/// they hold (a `prof:` file of a busy `-a` run is a few MiB).
const SCHEME_FILE_LIMIT: u64 = 256 << 20;

/// A scheme's file, read to its end within [`SCHEME_FILE_LIMIT`].
fn read_scheme_file(path: &str) -> io::Result<Vec<u8>> {
    prof_objects::bounded::read_at_most(std::fs::File::open(path)?, SCHEME_FILE_LIMIT)
}

/// [`read_scheme_file`], as text.
fn read_scheme_text(path: &str) -> io::Result<String> {
    read_scheme_file(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn read_file(path: &str) -> Result<Vec<u8>, ProfError> {
    read_scheme_file(path).map_err(errno)
}

/// Does a `status` line say a session is running?
fn is_running(status: &str) -> bool {
    status.starts_with("state=running ")
}

fn ctl(line: &str) -> Result<(), ProfError> {
    ctl_file()?.write_all(line.as_bytes()).map_err(errno)
}

/// `/scheme/prof/ctl`, open for writing.
fn ctl_file() -> Result<std::fs::File, ProfError> {
    std::fs::OpenOptions::new().write(true).open(CTL).map_err(errno)
}

impl Profiler {
    /// `-F` goes to the kernel as the session's rate (`start` sends it); a kernel without an
    /// NMI source samples on its timer tick. Call stacks on Redox are always the kernel's
    /// frame-pointer walks, whatever `-g` mode.
    /// With `--children` the kernel's session follows the processes the program starts; the
    /// kernel's NMI source keeps kernel samples whenever it samples the kernel (`--kernel` only
    /// names them).
    pub fn new(program: &Path, args: &crate::cli::Args) -> io::Result<Profiler> {
        let call_graph = args.call_graph;
        // Fail with a clear word before anything runs if the daemon is not there.
        std::fs::File::open(STATUS).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open {STATUS}: {} (is profd running?)", prof_objects::os_message(&e)))
        })?;
        Ok(Profiler { stacks: call_graph != CallGraph::None, off_cpu: args.off_cpu, requests: args.requests, children: None, program: program.to_path_buf(), objects: args.objects.clone() })
    }

    /// `profile(pid, start, end, interval)`: one line to `/scheme/prof/ctl`, with the text
    /// bounds from the ELF so the daemon can check the range and bin by link-time address.
    pub fn start(&mut self, req: StartRequest, image: &ImageLayout) -> Result<(), ProfError> {
        ctl(&prof_core::ctl::format_start(&req, &image.text))?;
        if req.children {
            self.children = Some(ProcessTable::start());
        }
        Ok(())
    }

    /// A launched program: the kernel ends the session when it exits, and profil waits for
    /// the child itself (`deadline` is `None`). An attached process: poll the status until the
    /// session ends, Ctrl-C, or the `deadline`; then stop it.
    pub fn wait_for_end(&mut self, attached: bool, deadline: Option<std::time::Instant>) -> Result<(), ProfError> {
        if !attached {
            return Ok(());
        }
        while deadline.is_none_or(|d| std::time::Instant::now() < d) && crate::interrupt::caught().is_none() {
            if !is_running(&String::from_utf8_lossy(&read_file(STATUS)?)) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        ctl("stop\n")
    }

    /// Stacks are the kernel's: profil unwinds nothing.
    pub fn unwind_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Read back the status, the bins and the exact samples (after the child was reaped), and
    /// with `--children` the processes it started.
    pub fn profile(&mut self, program: &str) -> Result<Profile, ProfError> {
        let text = |path: &str| -> Result<String, ProfError> { Ok(String::from_utf8_lossy(&read_file(path)?).into_owned()) };
        let mut status = text(STATUS)?;
        if is_running(&status) {
            // The program is gone but the session has not noticed yet (e.g. a child of it
            // still runs): end it now so the data is final.
            ctl("stop\n")?;
            status = text(STATUS)?;
        }
        // A file a profd from before it does not serve (threads, timeline, servers, clock) is
        // none: no section then.
        let files = SchemeFiles {
            status,
            data: read_file(DATA)?,
            samples: text(SAMPLES)?,
            stacks: if self.stacks { Some(text(STACKS)?) } else { None },
            threads: text(THREADS).ok(),
            timeline: text(TIMELINE).ok(),
            servers: text(SERVERS).ok(),
            clock: text(CLOCK).ok(),
            children: text(CHILDREN).ok(),
            requests: if self.requests { text(REQUESTS).ok() } else { None },
            scheme_names: if self.requests { scheme_names() } else { Default::default() },
        };
        let objects = &self.objects;
        let (mut profile, timeline) =
            Profile::from_scheme(&files, self.off_cpu, |path| prof_objects::elf::static_mappings(path, objects))
                .map_err(|_| ProfError::failed_at("decoding /scheme/prof/data"))?;
        if let Some(mut table) = self.children.take() {
            let table = table.finish();
            let mut report = files
                .children
                .as_deref()
                .and_then(prof_core::formats::parse_children)
                .ok_or(ProfError::failed_at("reading /scheme/prof/children"))?;
            // The program's own line is the image it became by a later exec: the program's.
            report.processes.retain(|&pid, c| pid != profile.pid() || c.parent.is_some());
            if report.missed > 0 {
                eprintln!(
                    "profil: warning: {} processes the program started were not followed: their samples are other processes'",
                    report.missed
                );
            }
            // A child that has not exec'd runs the program's file, named as the report names it.
            let file = self.program.to_string_lossy().into_owned();
            let mappings_of = |path: &str| match path == program {
                true => prof_objects::elf::static_mappings(&file, &self.objects),
                false => prof_objects::elf::static_mappings(path, &self.objects),
            };
            profile = profile.with_children(report.processes, program, &table, mappings_of);
            // Each in time order, its stacks numbered as its profile keeps them (in order).
            for (pid, span, placed) in &timeline.children {
                let Some(c) = profile.parts_mut().processes.iter_mut().find(|c| c.pid == *pid) else { continue };
                c.profile.parts_mut().timeline = crate::timeline::Timeline::of_placed(*span, placed);
            }
        }
        // The NMI source samples every CPU: the rate it achieved is per CPU.
        profile.parts_mut().source.cpus = std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u64)
            .or_else(|| crate::profile::of_scheme::cpus_in_sys_cpu(&read_scheme_text(SYS_CPU).ok()?));
        Ok(profile)
    }
}

/// `-a`: a session on every process (`start all`, root only) until `args.duration` passes or
/// a signal comes, then its `servers` as the run's processes. Meanwhile procmgr's process
/// table is read every 20 ms, for each process's parent and name, and `status` every second.
pub fn record_system(args: &crate::cli::Args) -> Result<(Profile, std::time::Duration), ProfError> {
    std::fs::File::open(STATUS).map_err(errno)?;
    // Installed before counting starts, so Ctrl-C ends the run rather than profil.
    crate::interrupt::install();
    // The file that starts the session stays open until it stops it: profd ends a session on
    // every process when that file closes, so a profil killed outright leaves none behind.
    let mut starter = ctl_file()?;
    // The session's span holds the writes that start and stop it: the kernel records from
    // within the one to within the other, and the rate delivered is over that span.
    let started = std::time::Instant::now();
    starter.write_all(format!("start all{}\n", prof_core::ctl::rate_suffix(Some(args.frequency_hz))).as_bytes()).map_err(errno)?;
    let deadline = args.duration.map(|d| started + d);
    // procmgr's process table, every look added: who started whom, and the names of processes
    // gone before profd named them.
    let mut table = std::collections::BTreeMap::new();
    let mut looks = 0u32;
    while deadline.is_none_or(|d| std::time::Instant::now() < d) && crate::interrupt::caught().is_none() {
        // procmgr's table every 20 ms (a short process is seen, by its name after its exec);
        // the session's status every second: each read makes profd fold the kernel's whole
        // table into its own, which at 10 a second cost a busy run 3 to 6 % (procmgr's table
        // names the processes profd did not see live).
        if looks.is_multiple_of(50) && !is_running(&String::from_utf8_lossy(&read_file(STATUS)?)) {
            // Someone stopped it underneath us: what it counted is the run.
            break;
        }
        looks = looks.wrapping_add(1);
        if let Ok(ps) = read_scheme_text(PS) {
            table.extend(crate::profile::of_scheme::parse_ps(&ps));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    starter.write_all(b"stop\n").map_err(errno)?;
    let elapsed = started.elapsed();
    drop(starter);
    let servers = String::from_utf8_lossy(&read_file(SERVERS)?).into_owned();
    let report = prof_core::formats::parse_servers(&servers).ok_or(ProfError::failed_at("reading /scheme/prof/servers"))?;
    let status = String::from_utf8_lossy(&read_file(STATUS)?).into_owned();
    // Every process in time order (the exports over time); a profd from before has no file.
    let timeline = read_file(TIMELINE).ok().map(|t| String::from_utf8_lossy(&t).into_owned());
    let stacks = args.call_graph != CallGraph::None;
    let mut profile = Profile::from_scheme_system(&status, &report, timeline.as_deref(), &table, stacks);
    if args.requests {
        // Empty where the kernel writes no request records (a stock kernel): none recorded.
        let requests = read_scheme_text(REQUESTS).unwrap_or_default();
        profile = profile.with_system_requests(&requests, &scheme_names(), std::process::id(), stacks);
    }
    profile.parts_mut().clock.elapsed = Some(elapsed);
    profile.parts_mut().source.cpus = crate::profile::of_scheme::cpus_in_sys_cpu(&read_scheme_text(SYS_CPU).unwrap_or_default());
    Ok((profile, elapsed))
}
