//! One model of a run, two ways to it: profil on Redox builds its `Profile` from the `prof:`
//! scheme's files (`Profile::from_scheme`, as its scheme backend calls it), profil on Linux
//! from profd's `Session` itself (`Profile::from_session`). Here one session, driven through the real `prof:` handler over the kernel's rings filled with typed
//! records as kernel-patch/events writes them, is read both ways: what both carry is the same
//! (the Minix bins, every sample, the counts, the stacks, the stop reason), and what only the
//! files carry (the daemons, the clock) is there. Then the profile made from the files is
//! saved and loaded back unchanged.

mod common;

use profd::scheme::{Access, ProfScheme};
use prof_core::Profd;
use prof_events::layout::{scheme_call, Reason, Source};
use prof_events::{Event, Ids, Sample, Switch};
use prof_samplers::fake_debug_files::FakeDebugFiles;
use prof_samplers::upstream_kernel::UpstreamSampler;
use profil::profile::of_scheme::SchemeFiles;
use profil::profile::{Frame, Profile};
use profil::timeline::{At, TimedServed, TimedWait, Timeline};

const ALICE: u32 = 1000;
const KERNEL: u64 = prof_core::sampler::KERNEL_SPACE_START;

type Scheme = ProfScheme<UpstreamSampler<FakeDebugFiles>>;

/// A kernel writing typed records, alice's pid 10 running `/usr/bin/fib`, its clocks 2 TSC
/// ticks a ns: TSC `t` is ns `(t - 1,000,000) / 2`; the calibration ends at ns 1,000,000, a
/// batch is read at ns 2,000,000 (TSC 5,000,000) and on.
fn scheme() -> Scheme {
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], typed_records: true, rates: true, ..Default::default() };
    files.contexts = format!(
        "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
         1     0     0     UB    0     0-1        00:00:00.01 1 MB    0 B     [kmain]\n\
         10    {ALICE}  {ALICE}  UR    0     0-1        00:00:00.00 1 MB    0 B     /usr/bin/fib\n\
         20    0     0     UB    0     0-1        00:00:00.00 1 MB    0 B     /scheme/initfs/bin/ramfs\n"
    );
    files.names.insert(1, "[kmain]".into());
    files.clocks_measured_up_to((3_000_000, 1_000_000), (2_000_000, 1_000_000));
    ProfScheme::new(Profd::new(UpstreamSampler::new(files)))
}

fn start(s: &mut Scheme, uid: u32, line: &str) {
    let ctl = s.open("ctl", Access::Write, uid).unwrap();
    s.write(ctl, line.as_bytes(), uid).unwrap();
    s.close(ctl);
}

/// The kernel writes `events` (times as the TSC) into CPU 0's ring.
fn record(s: &mut Scheme, events: impl IntoIterator<Item = Event>) {
    let files = s.profd_mut().sampler_mut().files();
    for e in events {
        files.record(0, e);
    }
}

/// Pid `pid` is gone from `sys:context`.
fn exit(s: &mut Scheme, pid: u32) {
    let files = s.profd_mut().sampler_mut().files();
    let row = format!("{pid}    ");
    files.contexts = files.contexts.lines().map(|l| if l.starts_with(&row) { l.replacen(" UR ", " UZ ", 1) } else { l.to_string() } + "\n").collect();
}

fn who(pid: u32, thread: u32) -> Ids {
    Ids { pid: Some(pid), thread }
}

/// A sample of `who` at TSC `time` taken by the NMIs: `frames[0]` the interrupted address,
/// then the kernel's frames (where it is the kernel's), then the user's.
fn sample(time: u64, who: Ids, frames: &[u64]) -> Event {
    let kernel = frames[0] >= KERNEL;
    let k = frames.iter().skip(1).take_while(|&&f| f >= KERNEL).count();
    Event::Sample(Sample {
        cpu: 0,
        time,
        who,
        kernel,
        source: Some(Source::NmiIpi),
        ip: frames[0],
        kernel_frames: frames[1..1 + k].to_vec(),
        user_frames: frames[1 + k..].to_vec(),
    })
}

/// `cat /scheme/prof/<file>` as `alice`.
fn read(s: &mut Scheme, path: &str) -> Vec<u8> {
    let id = s.open(path, Access::Read, ALICE).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(id, &mut buf, out.len() as u64).unwrap() {
            0 => break,
            n => out.extend_from_slice(&buf[..n]),
        }
    }
    s.close(id);
    out
}

fn text(s: &mut Scheme, path: &str) -> String {
    String::from_utf8(read(s, path)).unwrap()
}

/// A session of pid 10 (text 0x401000..0x403000): its exec, samples with stacks (user and
/// kernel, one outside its text), a read that blocks it on ramfs (pid 20), which works for
/// it, its thread by the clock, its exit.
fn a_finished_session() -> Scheme {
    a_finished_session_with(|_| {})
}

/// [`a_finished_session`], with `more` events after its read, before its exit.
fn a_finished_session_with(more: impl FnOnce(&mut Vec<Event>)) -> Scheme {
    a_finished_session_in(scheme(), more)
}

/// That session on the kernel of scheme `s`.
fn a_finished_session_in(mut s: Scheme, more: impl FnOnce(&mut Vec<Event>)) -> Scheme {
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n");
    let (fib, ramfs) = (who(10, 100), who(20, 200));
    let mut events = vec![Event::Exec { cpu: 0, time: 3_000_000, who: fib, entry: 0x40_1000 }];
    events.extend((0..5).map(|i| sample(3_100_000 + i, fib, &[0x40_1100, 0x40_1005])));
    events.push(sample(3_200_000, fib, &[0x40_1200, 0x40_2005]));
    events.push(sample(3_300_000, fib, &[KERNEL + 0x1000, 0x40_1300, 0x40_1005]));
    events.push(sample(3_400_000, fib, &[0x7f00_0000_1000]));
    // Its read: where it blocked, its switch to ramfs, which takes the request (scheme 3, tag
    // 1), works, answers; fib back a ms later (ns 1,000,000 to 1,500,000).
    let mut blocked = sample(3_500_000, fib, &[0x40_1300, 0x40_1005]);
    if let Event::Sample(b) = &mut blocked {
        b.source = Some(Source::Block);
    }
    events.push(blocked);
    let switch = |time, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    let request = |time, answered| Event::Request { cpu: 0, time, daemon: ramfs, caller: who(10, 0), scheme: 3, tag: 1, answered };
    events.extend([
        switch(3_500_000, fib, ramfs, Reason::Scheme, scheme_call(3, 1)),
        request(3_600_000, false),
        sample(3_700_000, ramfs, &[0x40_2200, 0x40_2105]),
        request(3_800_000, true),
        switch(4_500_000, ramfs, fib, Reason::SchemeIdle, 0),
    ]);
    more(&mut events);
    record(&mut s, events);
    exit(&mut s, 10);
    s
}

#[test]
fn the_scheme_files_and_the_session_give_one_profile() {
    let mut s = a_finished_session();
    // The Redox way: the files, read into one profile as profil's scheme backend reads them.
    let files = scheme_files(&mut s);
    let (from_files, file) = Profile::from_scheme(&files, true, |_| Vec::new()).unwrap();
    let clock = files.clock.clone().unwrap();
    // The Linux way: the session itself.
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, true);

    assert_eq!(from_files.pid(), from_session.pid());
    assert_eq!(from_files.data(), from_session.data());
    assert_eq!(from_files.image_samples(), from_session.image_samples());
    assert_eq!(from_files.foreign_samples(), from_session.foreign_samples());
    assert_eq!(from_files.kernel_samples(), from_session.kernel_samples());
    assert_eq!((from_files.user_ticks(), from_files.kernel_ticks()), (from_session.user_ticks(), from_session.kernel_ticks()));
    assert_eq!(from_files.lost(), from_session.lost());
    assert_eq!(from_files.stop_reason(), from_session.stop_reason());
    assert_eq!(from_files.source().sampling, from_session.source().sampling);
    let sorted = |p: &Profile| {
        let mut v: Vec<String> = p.stacks().iter().map(|st| format!("{:?} {} {}", st.frames, st.truncated, st.count)).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&from_files), sorted(&from_session));
    // 7 user ticks (one outside the text), 1 kernel; 4 distinct stacks.
    assert_eq!((from_files.user_ticks(), from_files.kernel_ticks(), from_files.stacks().len()), (7, Some(1), 4));
    // What only the files carry: the daemon working for it, and the kernel's clock.
    let servers = from_files.servers().unwrap();
    assert_eq!(servers.servers.iter().map(|d| (d.pid, d.ticks)).collect::<Vec<_>>(), [(20, 1)]);
    assert_eq!(from_files.clock().threads.len(), 1);
    let t = &from_files.clock().threads[0];
    // From the batch's first reading (ns 1,000,000) to its last (2,000,000); blocked from
    // TSC 3,500,000 to 4,500,000: ns 1,250,000 to 1,750,000.
    assert_eq!((t.tid, t.wall, t.blocked, t.on_cpu()), (100, 1_000_000, 500_000, 500_000));
    assert_eq!(from_files.clock().wait_sites.len(), 1);
    assert_eq!(from_files.clock().wait_sites[0].target.as_deref(), Some("ramfs [pid 20]"));
    assert_eq!(from_files.clock().served.len(), 1);

    // The waits, as the kernel timed them every one.
    assert!(from_files.clock().off_cpu.as_ref().is_some_and(|o| o.kernel), "{:?}", from_files.clock().off_cpu);
    // The samples in time order: the same from the file as from the session, each stack the
    // same frames (their places differ: the file numbers them as `stacks` lists them).
    // The read's wait, whole (its switch out at TSC 3,500,000 to its switch back at 4,500,000:
    // 250 to 750 µs after the exec), at the site the clock names.
    assert_eq!(from_files.timeline().waits, [TimedWait { tid: 100, from: 250_000, to: 750_000, site: 0 }]);
    assert_eq!(from_files.timeline().waits, from_session.timeline().waits);
    let resolved = |p: &Profile| -> Vec<_> {
        p.timeline().samples.iter().map(|t| (t.time, t.tid, t.at, t.stack.map(|i| p.stacks()[i as usize].frames.clone()))).collect()
    };
    assert_eq!(resolved(&from_files), resolved(&from_session));
    assert_eq!(from_files.timeline().span, from_session.timeline().span);
    // ramfs's work for it, in time order too: its one sample, 350 µs in.
    let ramfs: Vec<(u32, Vec<(u64, u32)>)> = file.processes.iter().map(|(pid, _, s)| (*pid, s.iter().map(|s| (s.time, s.tid)).collect())).collect();
    assert_eq!(ramfs, [(20, vec![(350_000, 200)])]);
    // ramfs as a process of its own (its track in the exports), its sample at its own stack.
    let served = profil::profile::redox_clock::timed_served(&prof_core::kernel_clock::parse(&clock).unwrap(), &file.served);
    // ramfs's thread took fib's read at TSC 3,600,000 and answered it at 3,800,000: 300 to
    // 400 µs after the exec, for thread 100, at its wait site.
    assert_eq!(served, [(20, TimedServed { tid: 200, from: 300_000, to: 400_000, for_tid: 100, site: Some(0) })]);
    assert_eq!(from_files.daemons()[0].profile.timeline().served, served.iter().map(|s| s.1).collect::<Vec<_>>());
    let daemon = from_files.daemons();
    assert_eq!(daemon.iter().map(|d| (d.pid, d.program.as_str())).collect::<Vec<_>>(), [(20, "/scheme/initfs/bin/ramfs")]);
    let t = &daemon[0].profile.timeline().samples;
    assert_eq!((t.len(), t[0].time, t[0].at), (1, 350_000, At::Cpu(Frame::Foreign(0x40_2200))));
    assert_eq!(daemon[0].profile.stacks()[t[0].stack.unwrap() as usize].frames, [Frame::Foreign(0x40_2200), Frame::Foreign(0x40_2104)]);
    // The program's 8 samples, by the TSC: 3,100,000 is ns 1,050,000, 50 µs after its exec
    // (3,000,000); the kernel sample at 3,300,000 is the kernel's, named; the last outside
    // the text (Redox programs run at their link addresses).
    let times: Vec<u64> = from_files.timeline().samples.iter().map(|t| t.time).collect();
    assert_eq!(times, [50_000, 50_000, 50_000, 50_000, 50_000, 100_000, 150_000, 200_000]);
    assert!(from_files.timeline().samples.iter().all(|t| t.tid == 100 && t.stack.is_some()));
    let at: Vec<At> = from_files.timeline().samples[5..].iter().map(|t| t.at).collect();
    assert_eq!(at, [At::Cpu(Frame::Program(0x40_1200)), At::Cpu(Frame::Kernel(KERNEL + 0x1000)), At::Cpu(Frame::Foreign(0x7f00_0000_1000))]);
}

#[test]
fn a_profile_from_the_scheme_files_saves_and_loads_unchanged() {
    let mut s = a_finished_session();
    let (p, _) = Profile::from_scheme(&scheme_files(&mut s), true, |_| Vec::new()).unwrap();
    assert_eq!(p.timeline().samples.len(), 8);
    assert_eq!(p.daemons()[0].profile.timeline().samples.len(), 1);
    let run = profil::profile::Outcome {
        program: "fib".into(),
        arguments: vec![],
        frequency_hz: 1000,
        profile: p,
        exit: profil::report::ExitKind::Exited(0),
        interpreters: Vec::new(),
    };
    let bytes = profil::saved::render(&run, std::path::Path::new("/usr/bin/fib"), prof_core::sampler::CallGraph::FramePointers, false);
    let back = profil::saved::parse(&bytes).unwrap();
    // The whole model, field for field (Debug shows every one of them), its time order too.
    assert_eq!(format!("{:?}", back.run.profile), format!("{:?}", run.profile));
    assert_eq!(back.run.profile.timeline(), run.profile.timeline());
    assert_eq!(back.run.profile.daemons()[0].profile.timeline(), run.profile.daemons()[0].profile.timeline());
}

/// `profil -f sh -c 'fib 26 100'` on Redox: dash execs fib in place, and fib, a static
/// program, runs at the link addresses sh's text has. Read through profd's real scheme
/// handler and back as profil reads it, the samples after that exec are named by fib's file
/// (`[fib]`), never by the first image's symbols; the bins and `samples` keep sh's own, and the
/// note names the program it became.
#[test]
fn a_later_exec_is_named_by_the_image_it_became() {
    use prof_objects::object_file::ObjectFile;
    let (first, became) = (profil_bin_dir().join("iowork"), profil_bin_dir().join("fib"));
    let file = ObjectFile::read(&became, &Default::default()).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let first_image = ObjectFile::read(&first, &Default::default()).unwrap();
    let text = prof_objects::elf::static_mappings(&first.display().to_string(), &Default::default())[0].clone();
    let mut s = scheme();
    let (lo, hi) = (text.start, text.start + text.len);
    start(&mut s, ALICE, &format!("start 10 0 0 0 {lo:#x} {hi:#x} exec\n"));
    let sh = who(10, 100);
    let mut events = vec![
        Event::Exec { cpu: 0, time: 3_000_000, who: sh, entry: lo },
        sample(3_100_000, sh, &[lo + 0x10]),
        // relibc renames the process to the new program's path before the exec.
        Event::Name { cpu: 0, time: 3_190_000, who: sh, name: became.display().to_string() },
        Event::Exec { cpu: 0, time: 3_200_000, who: sh, entry: lo },
    ];
    events.extend((0..4).map(|i| sample(3_300_000 + i, sh, &[work + 4, work + 0x20])));
    // A request (`-g`) of the first image's, at its `iowork::calls`, and one of the image it
    // became, which has no site.
    let calls = first_image.symbols.by_name("iowork::calls").expect("iowork's calls").addr;
    let ramfs = who(20, 200);
    for (at, tag, ip) in [(3_150_000, 1, calls + 4), (3_400_000, 2, work + 4)] {
        let mut blocked = sample(at - 1_000, sh, &[ip]);
        if let Event::Sample(b) = &mut blocked {
            b.source = Some(Source::Block);
        }
        let request = |time, answered| Event::Request { cpu: 0, time, daemon: ramfs, caller: who(10, 0), scheme: 3, tag, answered };
        events.extend([
            blocked,
            Event::Switch(Switch { cpu: 0, time: at, left: sh, entered: ramfs, reason: Some(Reason::Scheme), detail: scheme_call(3, tag as u32), stack: vec![] }),
            request(at + 100, false),
            request(at + 200, true),
            Event::Switch(Switch { cpu: 0, time: at + 300, left: ramfs, entered: sh, reason: Some(Reason::SchemeIdle), detail: 0, stack: vec![] }),
        ]);
    }
    events.sort_by_key(|e| e.time());
    record(&mut s, events);
    exit(&mut s, 10);
    let files = scheme_files(&mut s);
    let (p, _) = Profile::from_scheme(&files, false, |path| prof_objects::elf::static_mappings(path, &Default::default())).unwrap();
    assert_eq!((p.data().total(), p.image_samples().len(), p.user_ticks()), (1, 1, 5), "sh's one sample binned; all five the program's");
    assert_eq!(p.foreign_samples(), [(work + 4, 4)]);
    assert_eq!(p.later_execs(), [became.display().to_string()]);
    assert_eq!(p.timeline().samples.len(), 5);
    // Each of fib's samples in time order at its stack, the stacks fib's runtime addresses.
    for t in &p.timeline().samples[1..] {
        assert_eq!(t.at, At::Cpu(Frame::Foreign(work + 4)));
        assert_eq!(p.stacks()[t.stack.unwrap() as usize].frames[0], Frame::Foreign(work + 4));
    }
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(first_image, "sh", Default::default()), &p, Default::default());
    let (_, _, flat) = profil::flat::analyse(&p, &names);
    let out = flat.render(None);
    assert!(out.contains(" overflow [fib]\n"), "{out}");
    // The request's site is named by the first image (its link addresses), not by the
    // mappings of the image it became.
    let sites = profil::request_sites::sites(&p, &names);
    let read = &sites[&10].values().next().unwrap();
    assert_eq!((read.sites.iter().map(|s| (s.site.as_str(), s.count)).collect::<Vec<_>>(), read.count()), (vec![("iowork::calls", 1)], 1));
    let section = profil::requests::section(&p, "sh", true, None, &sites).unwrap();
    assert!(section.contains("         1        50.0%  iowork::calls\n") && section.contains("         1        50.0%  (no stack kept)\n"), "{section}");
}

/// A daemon that served the program's read whole but was never sampled doing it (ramfs, pid
/// 20), and the bootstrap's manager (no pid) that took a request of it: profd names both in
/// `servers` (ramfs as `sys:context` has it, the manager `[bootstrap]`), with 0 samples; the
/// report has a row for neither, and no section, where it had ` [pid 20] (), 0 samples`.
#[test]
fn a_daemon_that_served_unsampled_is_named_and_has_no_row() {
    let mut s = scheme();
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n");
    let (fib, ramfs, manager) = (who(10, 100), who(20, 200), Ids { pid: None, thread: 300 });
    let mut events = vec![Event::Exec { cpu: 0, time: 3_000_000, who: fib, entry: 0x40_1000 }];
    events.extend((0..3).map(|i| sample(3_100_000 + i, fib, &[0x40_1100, 0x40_1005])));
    let switch = |time, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    let request = |time, daemon, scheme, answered| Event::Request { cpu: 0, time, daemon, caller: who(10, 0), scheme, tag: 1, answered };
    events.extend([
        switch(3_500_000, fib, ramfs, Reason::Scheme, scheme_call(3, 1)),
        request(3_600_000, ramfs, 3, false),
        request(3_800_000, ramfs, 3, true),
        switch(4_500_000, ramfs, fib, Reason::SchemeIdle, 0),
        switch(4_600_000, fib, manager, Reason::Scheme, scheme_call(5, 1)),
        request(4_700_000, manager, 5, false),
        request(4_800_000, manager, 5, true),
        switch(4_900_000, manager, fib, Reason::SchemeIdle, 0),
    ]);
    record(&mut s, events);
    exit(&mut s, 10);
    let files = scheme_files(&mut s);
    let servers = files.servers.clone().unwrap();
    assert!(servers.contains("\nserver 0 0 [bootstrap]\n") && servers.contains("\nserver 20 0 /scheme/initfs/bin/ramfs\n"), "{servers}");
    let (p, _) = Profile::from_scheme(&files, true, |_| Vec::new()).unwrap();
    // The wait on ramfs is named by it.
    assert_eq!(p.clock().wait_sites[0].target.as_deref(), Some("ramfs [pid 20]"));
    let empty = prof_objects::object_file::ObjectFile::from_symbols(std::path::Path::new(""), prof_objects::symbols::SymbolTable::new(Vec::new()));
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(empty, "fib", Default::default()), &p, Default::default());
    let named = profil::servers::name_servers(p.servers().unwrap(), &names);
    let text = profil::servers::render("fib", &p, Some((p.servers().unwrap(), &named)));
    assert!(text.starts_with("Where the time went (3 ticks of the run, every CPU):\n"), "{text}");
    assert!(!text.contains("[pid") && !text.contains("()") && !text.contains(" 0 samples"), "{text}");
}

/// `profil --children sh -c 'fib …'` on Redox: sh runs 1 ms, waits for its child 37 ms,
/// runs 1 ms and exits; under a busy host the guest's monotonic clock runs 10 % slow against
/// the TSC the records are stamped by. Read back, sh's thread by the clock is 2 ms on a CPU,
/// as its switches say (it showed 0.000 s on a CPU, blocked 100 %: its wait, in the records'
/// clock, was longer than the session's span in the monotonic one), and its span is in the
/// records' clock too.
#[test]
fn a_thread_blocked_most_of_a_run_keeps_its_time_on_a_cpu() {
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], typed_records: true, rates: true, ..Default::default() };
    files.contexts = format!(
        "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
         10    {ALICE}  {ALICE}  UR    0     0-1        00:00:00.00 1 MB    0 B     /usr/bin/sh\n"
    );
    // Calibrated at 2 TSC ticks a ns; after it, the monotonic clock gains 36 ms for 40 ms of TSC.
    files.clocks_measured_up_to((3_000_000, 1_000_000), (80_000_000, 40_000_000));
    files.tick = (80_000_000, 36_000_000);
    let mut s: Scheme = ProfScheme::new(Profd::new(UpstreamSampler::new(files)));
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n");
    let sh = who(10, 100);
    let switch = |time, left, entered, reason| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail: 0, stack: vec![] });
    let other = who(20, 200);
    let mut events = vec![Event::Exec { cpu: 0, time: 3_000_000, who: sh, entry: 0x40_1000 }];
    events.extend((0..2).map(|i| sample(3_100_000 + i, sh, &[0x40_1100, 0x40_1005])));
    // ns 2.0 ms to 39.0 ms blocked (the TSC at 2 a ns, from 1.0 ms at TSC 3,000,000).
    // sh waits for its child: a call to procmgr (the kernel has no waitpid of its own).
    events.push(switch(5_000_000, sh, other, Reason::Scheme));
    events.push(switch(79_000_000, other, sh, Reason::Preempted));
    events.push(sample(80_000_000, sh, &[0x40_1100, 0x40_1005]));
    events.push(switch(81_000_000, sh, other, Reason::Exit));
    record(&mut s, events);
    exit(&mut s, 10);
    let files = scheme_files(&mut s);
    let (p, _) = Profile::from_scheme(&files, false, |_| Vec::new()).unwrap();
    let t = &p.clock().threads[0];
    assert_eq!((t.tid, t.wall, t.blocked, t.on_cpu()), (100, 39_000_000, 37_000_000, 2_000_000), "{:?}", p.clock().threads);
    let section = profil::report::clock_section(&p);
    assert!(section.contains("\n    0.002    5.13  on a CPU\n"), "{section}");
}

/// Every file of the program's that profil on Redox reads back after a session, `-g` asked.
fn scheme_files(s: &mut Scheme) -> SchemeFiles {
    SchemeFiles {
        status: text(s, "status"),
        data: read(s, "data"),
        samples: text(s, "samples"),
        stacks: Some(text(s, "stacks")),
        threads: Some(text(s, "threads")),
        timeline: Some(text(s, "timeline")),
        servers: Some(text(s, "servers")),
        clock: Some(text(s, "clock")),
        children: Some(text(s, "children")),
        requests: Some(text(s, "requests")),
        scheme_names: [(3, "tmp".to_string())].into(),
    }
}

/// A second read of fib's, after its first (`a_finished_session`): from ramfs (40 us from
/// taken to answered), which asks the disk's daemon (scheme 9) for 10 us of it, blocked in
/// that call 20 us by its switches, and is preempted 5 us.
fn a_read_through_a_chain(events: &mut Vec<Event>) {
    let (fib, ramfs, disk, other) = (who(10, 100), who(20, 200), who(21, 210), who(22, 220));
    let switch = |time, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    let request = |time, daemon, caller, scheme, tag, answered| Event::Request { cpu: 0, time, daemon, caller: who(caller, 0), scheme, tag, answered };
    events.extend([
        Event::Name { cpu: 0, time: 4_550_000, who: disk, name: "/scheme/initfs/bin/ahcid".into() },
        switch(4_600_000, fib, ramfs, Reason::Scheme, scheme_call(3, 2)),
        request(4_610_000, ramfs, 10, 3, 2, false),
        switch(4_620_000, ramfs, disk, Reason::Scheme, scheme_call(9, 1)),
        request(4_630_000, disk, 20, 9, 1, false),
        request(4_650_000, disk, 20, 9, 1, true),
        switch(4_660_000, disk, ramfs, Reason::SchemeIdle, 0),
        switch(4_670_000, ramfs, other, Reason::Preempted, 0),
        switch(4_680_000, other, ramfs, Reason::Preempted, 0),
        request(4_690_000, ramfs, 10, 3, 2, true),
        switch(4_700_000, ramfs, fib, Reason::SchemeIdle, 0),
    ]);
}

/// The Requests section of session `s` as profil on Redox reads its files back (no `-g`
/// sites).
fn requests_section(s: &mut Scheme) -> String {
    let files = scheme_files(s);
    let (p, _) = Profile::from_scheme(&files, false, |_| Vec::new()).unwrap();
    profil::requests::section(&p, "/usr/bin/fib", true, None, &Default::default()).unwrap()
}

/// `profil --requests` on Redox's path: profd times the program's requests from the kernel's
/// request records, serves them as `requests`, and profil reads the file into the run's
/// model, the schemes named by their numbers as it found them, the daemons by their
/// executables; the Requests section shows them by scheme and daemon, with the chain of a
/// request ramfs made of another scheme's daemon (whose scheme profil could not name) while it
/// served one of the program's; and the same requests from fib's side, from its switch into
/// each call to its switch back (500 us and 50 us); and how ramfs spent its 140 us on them: on
/// its CPU but for its 20 us blocked in its call to scheme 9 (its switch out to its switch
/// back) and 5 us preempted. (Saved runs keep them: the run of
/// `a_profile_from_the_scheme_files_saves_and_loads_unchanged` has its read.)
#[test]
fn requests_on_redox_s_path() {
    let section = requests_section(&mut a_finished_session_with(a_read_through_a_chain));
    let expected = "\
Requests (to schemes, of fib [pid 10], each timed from taken to answered by the kernel's request records):
  2 requests, 0.000140 s in them
  scheme (daemon)           count      total s       min    median       p90       p99       max
  tmp: (ramfs [pid 20])         2     0.000140   40.0 us   40.0 us  100.0 us  100.0 us  100.0 us
  From the callers' side (each from the caller's switch into the call to its switch back, by the kernel's switch records: what the caller's own clock sees of it but the system call's entry and exit):
  tmp: (ramfs [pid 20])         2     0.000550   50.0 us   50.0 us  500.0 us  500.0 us  500.0 us
  The daemons' time on them (from taking each to answering it, by their switch records): on a CPU, blocked in their own requests to other schemes, otherwise off a CPU (preempted, runnable, blocked on anything else):
  tmp: (ramfs [pid 20])  on a CPU 115.0 us (82.1 %), waiting on scheme 9 20.0 us (14.3 %), otherwise 5.0 us (3.6 %)
  Chains: what the daemons asked of other schemes while serving these requests (the request served, then the one made; each made request timed as above):
  served -> made while serving it                        count      total s       min    median       max
  tmp: (ramfs [pid 20]) -> scheme 9 (ahcid [pid 21])         1     0.000010   10.0 us   10.0 us   10.0 us
  tmp: (ramfs [pid 20]) latency, log2 buckets:
      32.8 us ..   65.5 us         1  ########################################
      65.5 us ..  131.1 us         1  ########################################

";
    assert_eq!(section, expected, "got:\n{section}");
}

/// On a kernel that records system calls (layout 1.1, told `3`), the callers' side is each
/// request's system call: fib's read entered its call at TSC 3,400,000 and returned at
/// 4,600,000 (600 us; its switches say 500 us), and the section says which clock it is.
#[test]
fn requests_on_redox_s_path_timed_by_system_calls() {
    let mut s = scheme();
    s.profd_mut().sampler_mut().files().syscall_records = true;
    let read = Event::Syscall { cpu: 0, time: 4_600_000, who: who(10, 100), entered: 3_400_000, number: 0x2000_0003, result: 1 };
    let section = requests_section(&mut a_finished_session_in(s, |events| events.push(read)));
    let expected = "\
Requests (to schemes, of fib [pid 10], each timed from taken to answered by the kernel's request records):
  1 request, 0.000100 s in them
  scheme (daemon)           count      total s       min    median       p90       p99       max
  tmp: (ramfs [pid 20])         1     0.000100  100.0 us  100.0 us  100.0 us  100.0 us  100.0 us
  From the callers' side (each from the entry of the system call that made it to its return, by the kernel's system call records: what the caller's own clock sees of it):
  tmp: (ramfs [pid 20])         1     0.000600  600.0 us  600.0 us  600.0 us  600.0 us  600.0 us
";
    assert!(section.starts_with(expected), "got:\n{section}");
}

/// `--requests -g` on Redox's path: a request's call site is the user stack its caller
/// blocked at in the call (the kernel's `Block` sample), at the static program's link
/// addresses, named by the program's own symbols: fib's read made in `overflow`, called from
/// `loop` (a caller by its return address minus one). Without `-g` (no `stacks` read) no site.
#[test]
fn redox_request_sites_are_named_by_the_program() {
    use prof_objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib, &Default::default()).unwrap();
    let at = |name: &str| file.symbols.by_name(name).unwrap_or_else(|| panic!("fib's {name}")).addr;
    let (overflow, in_loop) = (at("overflow"), at("loop"));
    let mut s = scheme();
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n");
    let (fib_thread, ramfs) = (who(10, 100), who(20, 200));
    let mut blocked = sample(3_400_000, fib_thread, &[overflow + 4, in_loop + 9]);
    if let Event::Sample(b) = &mut blocked {
        b.source = Some(Source::Block);
    }
    let switch = |time, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    let request = |time, answered| Event::Request { cpu: 0, time, daemon: ramfs, caller: who(10, 0), scheme: 3, tag: 1, answered };
    record(&mut s, [
        Event::Exec { cpu: 0, time: 3_000_000, who: fib_thread, entry: 0x40_1000 },
        blocked,
        switch(3_500_000, fib_thread, ramfs, Reason::Scheme, scheme_call(3, 1)),
        request(3_600_000, false),
        request(3_800_000, true),
        switch(4_500_000, ramfs, fib_thread, Reason::SchemeIdle, 0),
    ]);
    exit(&mut s, 10);
    let mut files = scheme_files(&mut s);
    let names_of = |p: &Profile| profil::naming::Names::of_run(prof_objects::Symbolizer::new(ObjectFile::read(&fib, &Default::default()).unwrap(), "fib", Default::default()), p, Default::default());
    let (p, _) = Profile::from_scheme(&files, false, |_| Vec::new()).unwrap();
    let names = names_of(&p);
    let sites = profil::request_sites::sites(&p, &names);
    let section = profil::requests::section(&p, "/usr/bin/fib", true, None, &sites).unwrap();
    let lines: Vec<&str> = section.lines().take(6).collect();
    assert_eq!(
        lines,
        [
            "Requests (to schemes, of fib [pid 10], each timed from taken to answered by the kernel's request records):",
            "  1 request, 0.000100 s in them",
            "  Under each scheme, the busiest sites its requests were made from (requests, share of the row's, site <- its caller): the first frame outside relibc and Rust's runtime of the user stack where the caller blocked in the call (the kernel's frame-pointer walk; no stack is kept of a request whose caller was not seen to block, nor of the program's after a later exec).",
            "  scheme (daemon)           count      total s       min    median       p90       p99       max",
            "  tmp: (ramfs [pid 20])         1     0.000100  100.0 us  100.0 us  100.0 us  100.0 us  100.0 us",
            "                                1       100.0%  overflow <- loop",
        ],
        "{section}"
    );
    assert_eq!(names.misses(), 0);
    files.stacks = None;
    let (p, _) = Profile::from_scheme(&files, false, |_| Vec::new()).unwrap();
    let sites = profil::request_sites::sites(&p, &names_of(&p));
    assert!(sites.is_empty() && !profil::requests::section(&p, "/usr/bin/fib", true, None, &sites).unwrap().contains("overflow"));
}

/// A system-wide run on Redox's path (`profil -a`): profd's session on all over the kernel's
/// records, its `servers` read as profil reads them, each process placed from its static
/// executable and named: the program's row and functions, the daemon's, idle, the kernel's.
#[test]
fn a_system_wide_run_from_the_scheme_files() {
    use prof_objects::object_file::ObjectFile;
    // A real executable stands for both processes' files: their samples are at its link
    // addresses, as a static Redox program's run addresses are.
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib, &Default::default()).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let fib_path = fib.display().to_string();
    let mut s = scheme();
    // profil keeps the file that started the session open until it stops it.
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all rate=1000\n", 0).unwrap();
    let (fib10, fib20, idle) = (who(10, 100), who(20, 200), Ids { pid: None, thread: 1 });
    let mut events = vec![
        Event::Name { cpu: 0, time: 3_000_000, who: fib10, name: fib_path.clone() },
        Event::Name { cpu: 0, time: 3_000_001, who: fib20, name: fib_path.clone() },
    ];
    events.extend((0..6).map(|i| sample(3_100_000 + i, fib10, &[work + 4])));
    events.push(sample(3_200_000, fib10, &[KERNEL + 0x1000]));
    events.push(sample(3_300_000, fib20, &[work + 8]));
    events.extend((0..3).map(|i| sample(3_400_000 + i, idle, &[KERNEL + 0x2000])));
    // Requests: pid 20's of scheme 24, which pid 10 serves (10 us, twice), and profil's own
    // (pid 99), left out of its report. pid 20's first from its side: its switch into the call
    // to its switch back, 20 us; pid 10 asks scheme 9 (pid 30) for 1 us of it: its own
    // request, and a link of the first's chain.
    let request = |time, caller, tag, answered| Event::Request { cpu: 0, time, daemon: fib10, caller: Ids { pid: Some(caller), thread: caller * 10 }, scheme: 24, tag, answered };
    let disk = who(30, 300);
    let of_disk = |time, answered| Event::Request { cpu: 0, time, daemon: disk, caller: Ids { pid: Some(10), thread: 0 }, scheme: 9, tag: 5, answered };
    let switch = |time, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    let blocked = |time, who, ip| {
        let mut b = sample(time, who, &[ip]);
        if let Event::Sample(s) = &mut b {
            s.source = Some(Source::Block);
        }
        b
    };
    events.extend([
        blocked(3_480_000, fib20, work + 4),
        switch(3_490_000, fib20, fib10, Reason::Scheme, scheme_call(24, 1)),
        request(3_500_000, 20, 1, false),
        switch(3_505_000, fib10, disk, Reason::Scheme, scheme_call(9, 5)),
        of_disk(3_506_000, false),
        of_disk(3_508_000, true),
        switch(3_509_000, disk, fib10, Reason::SchemeIdle, 0),
        request(3_520_000, 20, 1, true),
        switch(3_530_000, fib10, fib20, Reason::SchemeIdle, 0),
        request(3_530_000, 99, 2, false),
        request(3_540_000, 99, 2, true),
        request(3_600_000, 20, 3, false),
        request(3_620_000, 20, 3, true),
    ]);
    record(&mut s, events);
    let id = s.open("status", Access::Read, 0).unwrap();
    s.close(id);
    s.write(starter, b"stop\n", 0).unwrap();
    s.close(starter);
    let id = s.open("servers", Access::Read, 0).unwrap();
    let mut servers = vec![0u8; 1 << 16];
    let n = s.read(id, &mut servers, 0).unwrap();
    s.close(id);
    let report = prof_core::formats::parse_servers(std::str::from_utf8(&servers[..n]).unwrap()).unwrap();

    let mut p = Profile::from_system_servers(&report, false);
    assert_eq!((p.idle_ticks(), p.lost(), p.processes().len()), (Some(3), 0, 2));
    for c in p.parts_mut().processes.iter_mut() {
        c.profile.parts_mut().mappings = prof_objects::elf::static_mappings(&c.program, &Default::default());
        assert!(!c.profile.mappings().is_empty());
    }
    let fib10 = p.processes().iter().find(|c| c.pid == 10).unwrap();
    assert_eq!((fib10.profile.user_ticks(), fib10.profile.kernel_ticks(), fib10.program.as_str()), (6, Some(1), fib_path.as_str()));
    assert_eq!(p.kernel_samples(), vec![(KERNEL + 0x1000, 1)]);
    let empty = ObjectFile::from_symbols(std::path::Path::new(""), prof_objects::symbols::SymbolTable::new(Vec::new()));
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(empty, "system", Default::default()), &p, Default::default());
    let (_, _, kernel) = profil::flat::analyse(&p, &names);
    let processes = profil::processes::Tree::of_system(p.processes(), &names);
    let out = profil::processes::render_system(&p, &processes, &kernel, None);
    assert!(out.starts_with("System-wide (-a): 11 samples:\n"), "{out}");
    assert!(out.contains(&format!("       10        -         7   63.64  {fib_path}\n")), "{out}");
    assert!(out.contains(&format!("        2         8   72.73  {fib_path}\n")), "{out}");
    assert!(out.contains("fib ×2 (") && out.contains(" overflow [fib]\n"), "{out}");
    assert!(out.contains("        3   27.27  idle\n"), "{out}");

    // Every process in time order (a track each in the Firefox Profiler's file): its samples,
    // each with its stack.
    let id = s.open("timeline", Access::Read, 0).unwrap();
    let mut timeline = vec![0u8; 1 << 16];
    let n = s.read(id, &mut timeline, 0).unwrap();
    s.close(id);
    let timeline = std::str::from_utf8(&timeline[..n]).unwrap();
    assert!(prof_core::formats::parse_timeline(timeline).unwrap().samples.is_empty());
    let id = s.open("status", Access::Read, 0).unwrap();
    let mut status = vec![0u8; 4096];
    let n = s.read(id, &mut status, 0).unwrap();
    s.close(id);
    let status = std::str::from_utf8(&status[..n]).unwrap();
    // As profil on Redox reads the run back: typed records, so the rows are processes.
    let p = Profile::from_scheme_system(status, &report, Some(timeline), &Default::default(), true);
    assert!(p.source().typed_records, "{status}");
    let fib10 = p.processes().iter().find(|c| c.pid == 10).unwrap();
    let t = &fib10.profile.timeline().samples;
    assert_eq!(t.len(), 7);
    // From the run's first sample (TSC 3,100,000): a run of every process has no program to
    // start from; TSC 3,200,000 is 50 µs later.
    assert_eq!(t.iter().map(|s| s.time).collect::<Vec<_>>(), [0, 0, 0, 0, 0, 0, 50_000]);
    for sample in t {
        let stack = &fib10.profile.stacks()[sample.stack.unwrap() as usize];
        assert_eq!((At::Cpu(stack.frames[0]), sample.tid), (sample.at, 100));
    }
    let fib20 = p.processes().iter().find(|c| c.pid == 20).unwrap();
    assert_eq!(fib20.profile.timeline().samples.iter().map(|s| (s.time, s.tid)).collect::<Vec<_>>(), [(100_000, 200)]);

    // `-a --requests`: every process's requests to schemes, profil's own left out, as the
    // section of a run of every process shows them: by process, then a table each and of all.
    let id = s.open("requests", Access::Read, 0).unwrap();
    let mut requests = vec![0u8; 1 << 16];
    let n = s.read(id, &mut requests, 0).unwrap();
    s.close(id);
    let requests = std::str::from_utf8(&requests[..n]).unwrap();
    let names_of_schemes = std::collections::BTreeMap::from([(24, "tmp".to_string())]);
    // Without -g, no call sites; with it, pid 20's first request's, where its thread blocked
    // in `overflow` of its executable (each process named by its own file, as `-a` maps them).
    let without = p.clone().with_system_requests(requests, &names_of_schemes, 99, false);
    assert!(without.requests().unwrap().by_pid.values().all(|r| r.stacks.is_empty()));
    let mut p = p.with_system_requests(requests, &names_of_schemes, 99, true);
    for c in p.parts_mut().processes.iter_mut() {
        c.profile.parts_mut().mappings = prof_objects::elf::static_mappings(&c.program, &Default::default());
    }
    let empty = ObjectFile::from_symbols(std::path::Path::new(""), prof_objects::symbols::SymbolTable::new(Vec::new()));
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(empty, "system", Default::default()), &p, Default::default());
    let sites = profil::request_sites::sites(&p, &names);
    let read = &sites[&20].values().next().unwrap().sites;
    assert_eq!(read.iter().map(|s| (s.site.as_str(), s.count)).collect::<Vec<_>>(), [("overflow [fib]", 1)]);
    let section = profil::requests::system_section(&p, true, None, &Default::default()).unwrap();
    assert!(section.starts_with("Requests by process (requests to schemes of every process but profil's, each timed from taken to answered by the kernel's request records; "), "{section}");
    assert!(section.contains("\n  fib [pid 20]         2     0.000020\n"), "{section}");
    assert!(section.contains("\n  tmp: (fib [pid 10])         2     0.000020   10.0 us   10.0 us   10.0 us   10.0 us   10.0 us\n"), "{section}");
    assert!(!section.contains("pid 99"), "{section}");
    // Timed as a program's are: pid 20's from its side, pid 10's split of them, and pid 10's
    // own request of scheme 9 a link of their chain (in the table of them all together).
    let pid20 = section.split("of fib [pid 20], each").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(pid20.contains("\n  tmp: (fib [pid 10])         1     0.000020   20.0 us   20.0 us   20.0 us   20.0 us   20.0 us\n"), "{section}");
    assert!(pid20.contains("\n  tmp: (fib [pid 10])  on a CPU 18.0 us (90.0 %), waiting on scheme 9 2.0 us (10.0 %), otherwise 0 ns (0.0 %)\n"), "{section}");
    assert!(!pid20.contains("Chains"), "{section}");
    assert!(section.contains("\n  fib [pid 10]         1     0.000001\n"), "{section}");
    let together = section.split("of every process together, 2 processes,").nth(1).unwrap();
    assert!(together.contains("\n  tmp: (fib [pid 10]) -> scheme 9 ([exited] [pid 30])         1     0.000001    1.0 us    1.0 us    1.0 us\n"), "{section}");
}

/// `profil -a` on a stock kernel, as profil on Redox reads it back: upstream's records name
/// contexts by debug id, so each row is a context, and the report says so wherever it names
/// one (`fib [context 24]`, never `[pid 24]`); of the machine's 2 CPUs the kernel has a ring
/// for 1 (the other sends the NMIs), as `status` now says (`rings`), so the run is "on 1 of 2
/// CPUs".
#[test]
fn a_stock_kernels_system_wide_run_names_contexts_and_the_cpus_it_samples() {
    use prof_objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib, &Default::default()).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let fib_path = fib.display().to_string();
    // A stock kernel: no typed records, no rate; one ring.
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], ..Default::default() };
    files.names.insert(24, fib_path.clone());
    let mut s: Scheme = ProfScheme::new(Profd::new(UpstreamSampler::new(files)));
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all\n", 0).unwrap();
    let f = s.profd_mut().sampler_mut().files();
    for _ in 0..4 {
        f.sample(0, 24, work + 4, &[]);
    }
    f.sample(0, 24, KERNEL + 0x1000, &[KERNEL + 0x1010]);
    s.write(starter, b"stop\n", 0).unwrap();
    s.close(starter);
    let read_as_root = |s: &mut Scheme, path: &str| {
        let id = s.open(path, Access::Read, 0).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let n = s.read(id, &mut buf, 0).unwrap();
        s.close(id);
        String::from_utf8(buf[..n].to_vec()).unwrap()
    };
    let (servers, status) = (read_as_root(&mut s, "servers"), read_as_root(&mut s, "status"));
    assert!(status.contains(" records=none ") && status.contains(" rings=1 "), "{status}");
    let report = prof_core::formats::parse_servers(&servers).unwrap();
    let mut p = Profile::from_scheme_system(&status, &report, None, &Default::default(), false);
    assert_eq!((p.source().rings, p.process_id_word()), (Some(1), "context"));
    // profil reads the machine's CPUs from sys:cpu.
    p.parts_mut().source.cpus = Some(2);
    for c in p.parts_mut().processes.iter_mut() {
        c.profile.parts_mut().mappings = prof_objects::elf::static_mappings(&c.program, &Default::default());
    }
    let empty = ObjectFile::from_symbols(std::path::Path::new(""), prof_objects::symbols::SymbolTable::new(Vec::new()));
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(empty, "system", Default::default()), &p, Default::default());
    let (_, _, kernel) = profil::flat::analyse(&p, &names);
    let processes = profil::processes::Tree::of_system(p.processes(), &names);
    let out = profil::processes::render_system(&p, &processes, &kernel, None);
    assert!(out.starts_with("System-wide (-a) on 1 of 2 CPUs (the other sends the NMIs): 5 samples:\n"), "{out}");
    assert!(out.contains("\n  context   parent   samples       %  program\n"), "{out}");
    assert!(out.contains(&format!("\nfib [context 24] ({fib_path}): 4 user samples, 1 in the kernel:\n")), "{out}");
    assert!(out.contains("\nAll 1 context together: 4 user samples:\n"), "{out}");
    assert!(!out.contains("[pid"), "{out}");
    assert_eq!(profil::processes::row_frame(&p, &fib_path, 24), "fib [context 24]");
}

/// A `--children` run on Redox's path: profd follows the program's tree from the records (a
/// fork that execs fib, a fork of that which does not exec), serves it in `children`, profil
/// reads it into one process a pid, each placed in the static executable it ran (its exec's,
/// or its parent's for a copy that did not exec), the forked copy's run before its exec
/// `[unknown]`; the same processes as the session itself has them (the Linux way).
#[test]
fn a_process_tree_from_the_scheme_files() {
    use prof_objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib, &Default::default()).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let fib_path = fib.display().to_string();
    let mut s = scheme();
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 children exec\n");
    let (program, child, grandchild) = (who(10, 100), who(11, 110), who(12, 120));
    record(&mut s, [
        Event::Exec { cpu: 0, time: 3_000_000, who: program, entry: 0x40_1000 },
        sample(3_010_000, program, &[work + 4]),
        Event::NewThread { cpu: 0, time: 3_020_000, who: child, giver: program },
        sample(3_030_000, child, &[work + 4]),
    ]);
    let _ = text(&mut s, "status");
    let mut events = vec![
        Event::Name { cpu: 0, time: 3_100_000, who: child, name: fib_path.clone() },
        Event::Exec { cpu: 0, time: 3_110_000, who: child, entry: 0x40_1000 },
    ];
    events.extend((0..4).map(|i| sample(3_200_000 + i, child, &[work + 8])));
    events.push(Event::NewThread { cpu: 0, time: 3_300_000, who: grandchild, giver: child });
    events.push(sample(3_310_000, grandchild, &[work + 4]));
    events.push(sample(3_320_000, grandchild, &[work + 4]));
    events.push(Event::Switch(Switch { cpu: 0, time: 3_400_000, left: grandchild, entered: child, reason: Some(Reason::Exit), detail: 0, stack: vec![] }));
    record(&mut s, events);
    exit(&mut s, 10);
    let (status, data, samples) = (text(&mut s, "status"), read(&mut s, "data"), text(&mut s, "samples"));
    let children = prof_core::formats::parse_children(&text(&mut s, "children")).unwrap();
    assert_eq!(children.processes.len(), 2);
    let mapped = |_: &str| prof_objects::elf::static_mappings(&fib_path, &Default::default());
    let from_files = Profile::from_scheme_files(&status, &data, &samples).unwrap().with_children(
        children.processes,
        "fib",
        &Default::default(),
        mapped,
    );
    // The Linux way: the session's processes, placed alike.
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, false);
    let rows = |p: &Profile| -> Vec<(u32, Option<u32>, String, u64, bool)> {
        p.processes().iter().map(|c| (c.pid, c.parent, c.program.clone(), c.profile.user_ticks(), c.running)).collect()
    };
    assert_eq!(
        rows(&from_files),
        [(11, Some(10), fib_path.clone(), 5, true), (12, Some(11), fib_path.clone(), 2, false)]
    );
    assert_eq!(rows(&from_files), rows(&from_session));
    // The copy's sample before its exec has no address; after it, fib's.
    assert_eq!(from_files.processes()[0].profile.foreign_samples(), [(0, 1), (work + 8, 4)]);
    // Each process in time order, from the program's exec (TSC 3,000,000): the same from the
    // `timeline` file as from the session, stacks and all.
    let file = prof_core::formats::parse_timeline(&text(&mut s, "timeline")).unwrap();
    assert_eq!(file.children.iter().map(|c| c.0).collect::<Vec<_>>(), [11, 12]);
    let mut from_files = from_files;
    for (pid, span, placed) in &file.children {
        let c = from_files.parts_mut().processes.iter_mut().find(|c| c.pid == *pid).unwrap();
        c.profile.parts_mut().timeline = Timeline::of_placed(*span, placed);
    }
    // Each process's samples: (time, tid, where, its stack's frames).
    type Timed = Vec<(u64, u32, At, Option<Vec<Frame>>)>;
    let timed = |p: &Profile| -> Vec<(u32, Timed)> {
        let stack = |c: &profil::profile::ChildProfile, i: Option<u32>| i.map(|i| c.profile.stacks()[i as usize].frames.clone());
        p.processes().iter().map(|c| (c.pid, c.profile.timeline().samples.iter().map(|t| (t.time, t.tid, t.at, stack(c, t.stack))).collect())).collect()
    };
    assert_eq!(timed(&from_files), timed(&from_session));
    let child_times: Vec<u64> = from_files.processes()[0].profile.timeline().samples.iter().map(|t| t.time).collect();
    // TSC 3,030,000 (before its exec: no address), then 3,200,000..3: ns 15,000 and 100,000.
    assert_eq!(child_times, [15_000, 100_000, 100_000, 100_000, 100_000]);
    assert_eq!(from_files.processes()[0].profile.timeline().samples[0].at, At::Cpu(Frame::Foreign(0)));

    let empty = ObjectFile::from_symbols(std::path::Path::new(""), prof_objects::symbols::SymbolTable::new(Vec::new()));
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(empty, "fib", Default::default()), &from_files, Default::default());
    let tree = profil::processes::Tree::of_program(&[], from_files.processes(), &names);
    let out = profil::processes::render("fib", None, &from_files, &tree);
    assert!(out.starts_with("Processes (--children): 'fib' and the 2 processes it started, 8 samples:\n"), "{out}");
    assert!(out.contains(&format!("       11       10         5   62.50  {fib_path}  (still running)\n")), "{out}");
    assert!(out.contains(&format!("       12       11         2   25.00  {fib_path}\n")), "{out}");
    assert!(out.contains(" overflow [fib]\n") && out.contains("[unknown]"), "{out}");
}

/// `--threads` on Redox's path: each sample names its thread (its context's debug id), profd
/// serves the program's by thread in `threads`, profil reads them into the same threads as the
/// session has (the Linux way), and the view names each thread's functions.
#[test]
fn threads_from_the_scheme_files() {
    use prof_objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib, &Default::default()).unwrap();
    let symbol = |name: &str| file.symbols.by_name(&format!("fib::{name}")).or_else(|| file.symbols.by_name(name)).unwrap().addr;
    let (overflow, looping) = (symbol("overflow"), symbol("loop"));
    let mut s = scheme();
    start(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n");
    let (main, worker) = (who(10, 100), who(10, 101));
    let mut events = vec![Event::Exec { cpu: 0, time: 3_000_000, who: main, entry: 0x40_1000 }];
    events.extend((0..3).map(|i| sample(3_100_000 + i, main, &[overflow + 4])));
    events.push(sample(3_200_000, worker, &[looping + 4]));
    events.push(sample(3_200_001, worker, &[overflow + 8]));
    record(&mut s, events);
    exit(&mut s, 10);
    let (status, data, samples) = (text(&mut s, "status"), read(&mut s, "data"), text(&mut s, "samples"));
    let threads = text(&mut s, "threads");
    assert_eq!(threads.lines().count(), 3, "{threads}");
    let from_files =
        Profile::from_scheme_files(&status, &data, &samples).unwrap().with_scheme_threads(&prof_core::formats::parse_threads(&threads));
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, true);
    assert_eq!(from_files.by_thread(), from_session.by_thread());
    let mut p = from_files;
    p.parts_mut().mappings = prof_objects::elf::static_mappings(&fib.display().to_string(), &Default::default());
    let wanted = profil::naming::Wanted { threads: true, ..Default::default() };
    let names = profil::naming::Names::of_run(prof_objects::Symbolizer::new(file.clone(), "fib", Default::default()), &p, wanted);
    let view = profil::threads::threads(&p, "fib", &names);
    assert_eq!(
        profil::threads::render(&view),
        "By thread (2 threads, 5 samples):\n\
         \x20     tid  name             samples       %  top functions\n\
         \x20     100  fib                    3   60.00  overflow [fib] 3\n\
         \x20     101  fib                    2   40.00  loop [fib] 1, overflow [fib] 1\n"
    );
}

/// Where the workspace's binaries are (the test runs from its deps directory).
fn profil_bin_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Redox's requests over time (`--requests`): profd serves each whole, from the program's start
/// as `timeline` counts (fib's reads taken 300 and 805 us after its exec, answered 400 and 845
/// us after it), with the thread of ramfs that took it; profil keeps them as an embedded
/// session does, so a saved run loaded with `--time` counts the one that began in the window,
/// and the Firefox Profiler's file has each request on fib's thread and on ramfs's, one flow.
#[test]
fn redox_requests_over_time_and_on_both_tracks() {
    let mut s = a_finished_session_with(a_read_through_a_chain);
    let files = scheme_files(&mut s);
    let (p, _) = Profile::from_scheme(&files, false, |_| Vec::new()).unwrap();
    let log = p.requests().unwrap();
    let timed: Vec<_> = log.timed.iter().map(|r| (r.pid, r.tid, r.key.to.as_ref(), r.from, r.to, r.taken_by)).collect();
    assert_eq!(timed, [(10, 100, "tmp:", 300_000, 400_000, Some((20, 200))), (10, 100, "tmp:", 805_000, 845_000, Some((20, 200)))]);
    // As the session itself has them (Linux's path: its times from the run's start).
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, true);
    let theirs: Vec<_> = from_session.requests().unwrap().timed.iter().map(|r| (r.from, r.to, r.taken_by)).collect();
    assert_eq!(theirs, log.timed.iter().map(|r| (r.from, r.to, r.taken_by)).collect::<Vec<_>>());

    // Saved, and loaded by profil: its Timeline's two slices have a read each; the Firefox
    // Profiler's file has each read on fib's thread and on ramfs's, one flow a read.
    let dir = common::scratch("redox-requests");
    let run = profil::profile::Outcome { program: "fib".into(), arguments: vec![], frequency_hz: 1000, profile: p, exit: profil::report::ExitKind::Exited(0), interpreters: Vec::new() };
    let saved = dir.join("run.profil");
    // The program under a sysroot, as a Redox run is loaded elsewhere.
    std::fs::create_dir_all(dir.join("usr/bin")).unwrap();
    std::fs::copy(profil_bin_dir().join("fib"), dir.join("usr/bin/fib")).unwrap();
    std::fs::write(&saved, profil::saved::render(&run, std::path::Path::new("/usr/bin/fib"), prof_core::sampler::CallGraph::FramePointers, false)).unwrap();
    let load = |args: &[&str]| {
        let json = dir.join(format!("{}.json", args.len()));
        let o = std::process::Command::new(profil_bin_dir().join("profil"))
            .args(["--load", saved.to_str().unwrap(), "--sysroot", dir.to_str().unwrap(), "--firefox", json.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
        (out, json)
    };
    // Each request marker of a thread of the file: (start, end ms, name, flow).
    let requests_of = |doc: &serde_json::Value, tid: &str| -> Vec<(f64, f64, String, String)> {
        let thread = doc["threads"].as_array().unwrap().iter().find(|t| t["tid"] == tid).unwrap_or_else(|| panic!("no thread {tid}"));
        let strings = thread["stringArray"].as_array().unwrap();
        let string = |v: &serde_json::Value| strings[v.as_u64().unwrap() as usize].as_str().unwrap().to_string();
        let m = &thread["markers"];
        (0..m["length"].as_u64().unwrap() as usize)
            .filter(|&i| m["data"][i]["type"] == "SchemeRequest")
            .map(|i| (m["startTime"][i].as_f64().unwrap(), m["endTime"][i].as_f64().unwrap(), string(&m["name"][i]), string(&m["data"][i]["flow"])))
            .collect()
    };
    let (out, whole) = load(&["--timeline=2"]);
    // 0 to 0.5 ms and 0.5 to 1 ms (three decimals of seconds): fib's samples are all in the first.
    let slices: Vec<&str> = out.lines().filter(|l| l.contains("| ")).collect();
    assert_eq!(slices, ["    0.000    0.001  1600 %  [0x401100-0x401101] 62.5 %  | 1 request (tmp: 1)", "    0.001    0.001     0 %  -  | 1 request (tmp: 1)"], "{out}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&whole).unwrap()).unwrap();
    let schema = doc["meta"]["markerSchema"].as_array().unwrap().iter().find(|s| s["name"] == "SchemeRequest").unwrap();
    assert_eq!(schema["fields"][3], serde_json::json!({"format": "flow-id", "key": "flow", "label": "Flow", "searchable": true}));
    let flows = |name: &str| [(0.3, 0.4, name.to_string(), "request-0".to_string()), (0.805, 0.845, name.to_string(), "request-1".to_string())];
    assert_eq!(requests_of(&doc, "100"), flows("tmp:"));
    assert_eq!(requests_of(&doc, "200"), flows("served tmp:"));
    // The window 0.5 to 1 ms: the second read alone, in the section and on both tracks.
    let (out, window) = load(&["--time", "0.0005,0.001"]);
    assert!(out.contains("\n  1 request, 0.000040 s in them\n"), "{out}");
    // Its callers' side, its daemon's split and its chain are the window's too (the whole
    // run's: 550 us, 140 us, the same chain; requests_on_redox_s_path).
    let section = out.split("\nRequests (").nth(1).and_then(|s| s.split("\n\n").next()).unwrap_or_else(|| panic!("{out}"));
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("  tmp: (ramfs [pid 20])") && !l.ends_with("log2 buckets:")).collect();
    assert_eq!(rows, [
        "  tmp: (ramfs [pid 20])         1     0.000040   40.0 us   40.0 us   40.0 us   40.0 us   40.0 us",
        "  tmp: (ramfs [pid 20])         1     0.000050   50.0 us   50.0 us   50.0 us   50.0 us   50.0 us",
        "  tmp: (ramfs [pid 20])  on a CPU 15.0 us (37.5 %), waiting on scheme 9 20.0 us (50.0 %), otherwise 5.0 us (12.5 %)",
        "  tmp: (ramfs [pid 20]) -> scheme 9 (ahcid [pid 21])         1     0.000010   10.0 us   10.0 us   10.0 us",
    ], "{section}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&window).unwrap()).unwrap();
    assert_eq!(requests_of(&doc, "100"), [(0.805, 0.845, "tmp:".to_string(), "request-0".to_string())]);
    assert_eq!(requests_of(&doc, "200"), [(0.805, 0.845, "served tmp:".to_string(), "request-0".to_string())]);

    // The Firefox Profiler's own code reads both ends of each with the same flow.
    let Some(cli) = common::profiler_cli() else {
        common::skip("the Firefox Profiler's client is not installed (.ci/run: npm install @firefox-devtools/profiler-cli into ~/.cache/profil-ci/profiler-cli)");
        return;
    };
    if !common::installed("node", "nodejs") {
        return;
    }
    let session = format!("profil-redox-requests-{}", std::process::id());
    let o = std::process::Command::new("node").arg(&cli).arg("load").arg(&whole).args(["--session", &session]).output().unwrap();
    assert!(o.status.success(), "profiler-cli load: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let threads = common::ask(&cli, &session, &["thread", "list"]);
    let mut flows_by_thread = std::collections::BTreeMap::new();
    for t in threads["threads"].as_array().unwrap() {
        let handle = t["threadHandle"].as_str().unwrap();
        let markers = common::ask(&cli, &session, &["thread", "markers", "--thread", handle, "--search", "type:SchemeRequest", "--list", "--limit", "0"]);
        let mut flows: Vec<(String, String)> = markers["flatMarkers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let info = common::ask(&cli, &session, &["marker", "info", m["handle"].as_str().unwrap()]);
                let flow = info["fields"].as_array().unwrap().iter().find(|f| f["key"] == "flow").unwrap_or_else(|| panic!("{info}"));
                (info["markerType"].as_str().unwrap().to_string(), flow["value"].as_str().unwrap().to_string())
            })
            .collect();
        flows.sort();
        flows_by_thread.insert(t["tid"].as_str().unwrap().to_string(), flows);
    }
    let _ = std::process::Command::new("node").arg(&cli).args(["stop", &session]).output();
    let both = vec![("SchemeRequest".to_string(), "request-0".to_string()), ("SchemeRequest".to_string(), "request-1".to_string())];
    assert_eq!(flows_by_thread["100"], both, "{flows_by_thread:?}");
    assert_eq!(flows_by_thread["200"], both, "{flows_by_thread:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
