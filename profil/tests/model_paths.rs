//! One model of a run, two ways to it: profil on Redox builds its `Profile` from the `prof:`
//! scheme's files (`Profile::from_scheme_files` and the readers of `stacks`, `servers`,
//! `clock`), profil on Linux from profd's `Session` itself (`Profile::from_session`). Here one
//! session, driven through the real `prof:` handler over the fake kernel (the kernel patch's own
//! `kprof` code), is read both ways: what both carry is the same (the Minix bins, every
//! sample, the counts, the stacks, the stop reason), and what only the files carry (the
//! daemons, the kernel's clock) is there. Then the profile made from the files is saved and
//! loaded back unchanged.

use prof_samplers::fake_kernel::FakeKernel;
use prof_samplers::redox_kernel::KernelSampler;
use prof_core::scheme::{Access, ProfScheme};
use prof_core::Profd;
use profil::profile::Profile;

const ALICE: u32 = 1000;

type Scheme = ProfScheme<KernelSampler<FakeKernel>>;

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

/// A session of pid 10 (text 0x401000..0x403000, non-PIE), its exec, samples with stacks
/// (user and kernel), ramfs (pid 20) working for it, its threads by the clock, its exit.
fn a_finished_session() -> Scheme {
    use kprof::{Leaving, Reason, KERNEL_SPACE_START};
    let mut s: Scheme =
        ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(u64::MAX, vec![(10, ALICE, 0x40_1000), (20, 0, 0x40_1000)]))));
    s.profd_mut().sampler_mut().kernel().names = vec![(20, "/scheme/initfs/bin/ramfs".into())];
    let ctl = s.open("ctl", Access::Write, ALICE).unwrap();
    let start = "start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n";
    s.write(ctl, start.as_bytes(), ALICE).unwrap();
    s.close(ctl);
    let k = s.profd_mut().sampler_mut().kernel();
    k.begin_thread(10, 100, true, 1_000);
    k.exec(10, 0x40_1000);
    for _ in 0..5 {
        k.tick_stack(10, &[0x40_1100, 0x40_1005], false);
    }
    k.tick_stack(10, &[0x40_1200, 0x40_2005], true);
    k.tick_stack(10, &[KERNEL_SPACE_START + 0x1000, 0x40_1300, 0x40_1005], false);
    k.tick(10, true, 0x7f00_0000_1000);
    k.call(10, 100, 3, 1);
    k.switch_out(10, 100, 2_000, Leaving::Blocked(Reason::SchemeCall), &[KERNEL_SPACE_START + 0x10, 0x40_1300, 0x40_1005]);
    k.take_request(20, 10, 3, 1);
    k.tick_stack(20, &[0x40_2200, 0x40_2105], false);
    k.answer(20, 3, 1);
    k.switch_in(10, 100, 5_000);
    k.clock = Some(9_000);
    k.exit(10);
    s
}

#[test]
fn the_scheme_files_and_the_session_give_one_profile() {
    let mut s = a_finished_session();
    // The Redox way: the files, as profil's scheme backend reads them.
    let status = text(&mut s, "status");
    let data = read(&mut s, "data");
    let samples = text(&mut s, "samples");
    let stacks = text(&mut s, "stacks");
    let servers = text(&mut s, "servers");
    let clock = text(&mut s, "clock");
    let mut from_files = Profile::from_scheme_files(&status, &data, &samples).unwrap().with_scheme_stacks(&stacks);
    from_files.servers = prof_core::formats::parse_servers(&servers);
    let from_files = from_files.with_kernel_clock(&prof_core::kernel_clock::parse(&clock).unwrap());
    // The Linux way: the session itself.
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, true);

    assert_eq!(from_files.pid, from_session.pid);
    assert_eq!(from_files.data, from_session.data);
    assert_eq!(from_files.image_samples, from_session.image_samples);
    assert_eq!(from_files.foreign_samples, from_session.foreign_samples);
    assert_eq!(from_files.kernel_samples, from_session.kernel_samples);
    assert_eq!((from_files.user_ticks, from_files.kernel_ticks), (from_session.user_ticks, from_session.kernel_ticks));
    assert_eq!(from_files.lost, from_session.lost);
    assert_eq!(from_files.stop_reason, from_session.stop_reason);
    assert_eq!(from_files.sampling, from_session.sampling);
    let sorted = |p: &Profile| {
        let mut v: Vec<String> = p.stacks.iter().map(|st| format!("{:?} {} {}", st.frames, st.truncated, st.count)).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&from_files), sorted(&from_session));
    // 7 user ticks (one outside the text, without a walk), 1 kernel; 3 distinct stacks.
    assert_eq!((from_files.user_ticks, from_files.kernel_ticks, from_files.stacks.len()), (7, Some(1), 3));
    // What only the files carry: the daemon working for it, and the kernel's clock.
    let servers = from_files.servers.as_ref().unwrap();
    assert_eq!(servers.servers.iter().map(|d| (d.pid, d.ticks)).collect::<Vec<_>>(), [(20, 1)]);
    assert_eq!(from_files.threads.len(), 1);
    let t = &from_files.threads[0];
    assert_eq!((t.tid, t.wall, t.blocked, t.on_cpu()), (100, 8_000, 3_000, 5_000));
    assert_eq!(from_files.wait_sites.len(), 1);
    assert_eq!(from_files.wait_sites[0].target.as_deref(), Some("ramfs [pid 20]"));
    assert_eq!(from_files.served.len(), 1);
}

#[test]
fn a_profile_from_the_scheme_files_saves_and_loads_unchanged() {
    let mut s = a_finished_session();
    let (status, data, samples, stacks) = (text(&mut s, "status"), read(&mut s, "data"), text(&mut s, "samples"), text(&mut s, "stacks"));
    let mut p = Profile::from_scheme_files(&status, &data, &samples).unwrap().with_scheme_stacks(&stacks);
    p.servers = prof_core::formats::parse_servers(&text(&mut s, "servers"));
    let p = p.with_kernel_clock(&prof_core::kernel_clock::parse(&text(&mut s, "clock")).unwrap());
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
    // The whole model, field for field (Debug shows every one of them).
    assert_eq!(format!("{:?}", back.run.profile), format!("{:?}", run.profile));
}

/// A system-wide run on Redox's path (`profil -a`): profd's session on all over the fake
/// kernel, its `servers` read as profil reads them, each process placed from its static
/// executable and named: the program's row and functions, the daemon's, idle, the kernel's.
#[test]
fn a_system_wide_run_from_the_scheme_files() {
    use kprof::KERNEL_SPACE_START;
    use profil::objects::object_file::ObjectFile;
    // A real executable stands for both processes' files: their samples are at its link
    // addresses, as a static Redox program's run addresses are.
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let fib_path = fib.display().to_string();
    let mut s: Scheme = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(u64::MAX, vec![(10, ALICE, 0x40_1000), (20, 0, 0x40_1000)]))));
    s.profd_mut().sampler_mut().kernel().names = vec![(10, fib_path.clone()), (20, fib_path.clone())];
    // profil keeps the file that started the session open until it stops it.
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all rate=1000\n", 0).unwrap();
    let k = s.profd_mut().sampler_mut().kernel();
    for _ in 0..6 {
        k.tick_stack(10, &[work + 4], true);
    }
    k.tick(10, false, KERNEL_SPACE_START + 0x1000);
    k.tick_stack(20, &[work + 8], true);
    for _ in 0..3 {
        k.tick(0, false, KERNEL_SPACE_START + 0x2000);
    }
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
    assert_eq!((p.idle_ticks, p.lost, p.processes.len()), (Some(3), 0, 2));
    for c in &mut p.processes {
        c.profile.mappings = profil::objects::elf::static_mappings(&c.program);
        assert!(!c.profile.mappings.is_empty());
    }
    let fib10 = p.processes.iter().find(|c| c.pid == 10).unwrap();
    assert_eq!((fib10.profile.user_ticks, fib10.profile.kernel_ticks, fib10.program.as_str()), (6, Some(1), fib_path.as_str()));
    assert_eq!(p.kernel_samples, vec![(KERNEL_SPACE_START + 0x1000, 1)]);
    let empty = ObjectFile::from_symbols(std::path::Path::new(""), profil::objects::symbols::SymbolTable::new(Vec::new()));
    let mut symbolizer = profil::objects::Symbolizer::new(empty, "system");
    let (_, _, kernel) = profil::flat::analyse(&p, &mut symbolizer, None);
    let processes = profil::processes::analyse(&p.processes, &mut symbolizer, None);
    let out = profil::processes::render_system(&p, &processes, &kernel, &symbolizer);
    assert!(out.starts_with("System-wide (-a): 11 samples:\n"), "{out}");
    assert!(out.contains(&format!("       10        -         7   63.64  {fib_path}\n")), "{out}");
    assert!(out.contains(&format!("        2         8   72.73  {fib_path}\n")), "{out}");
    assert!(out.contains("fib ×2 (") && out.contains(" overflow [fib]\n"), "{out}");
    assert!(out.contains("        3   27.27  idle\n"), "{out}");
}

/// A `--children` run on Redox's path: the kernel follows the program's tree (a fork that
/// execs fib, a fork of that which does not exec), profd serves it in `children`, profil reads
/// it into one process a pid, each placed in the static executable it ran (its exec's, or its
/// parent's for a copy that did not exec), the forked copy's run before its exec `[unknown]`;
/// the same processes as the session itself has them (the Linux way).
#[test]
fn a_process_tree_from_the_scheme_files() {
    use profil::objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib).unwrap();
    let work = file.symbols.by_name("fib::overflow").or_else(|| file.symbols.by_name("overflow")).expect("fib's overflow").addr;
    let fib_path = fib.display().to_string();
    let mut s: Scheme = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(u64::MAX, vec![(10, ALICE, 0x40_1000)]))));
    let ctl = s.open("ctl", Access::Write, ALICE).unwrap();
    s.write(ctl, b"start 10 0 0 0 0x401000 0x403000 rate=1000 children exec\n", ALICE).unwrap();
    s.close(ctl);
    let k = s.profd_mut().sampler_mut().kernel();
    k.exec(10, 0x40_1000);
    k.tick_stack(10, &[work + 4], true);
    k.fork(10, 11, ALICE);
    k.tick_stack(11, &[work + 4], true);
    let _ = text(&mut s, "status");
    let k = s.profd_mut().sampler_mut().kernel();
    k.names = vec![(11, fib_path.clone())];
    k.exec(11, 0x40_1000);
    for _ in 0..4 {
        k.tick_stack(11, &[work + 8], true);
    }
    k.fork(11, 12, ALICE);
    k.tick_stack(12, &[work + 4], true);
    k.tick_stack(12, &[work + 4], true);
    k.exit(12);
    k.exit(10);
    let (status, data, samples) = (text(&mut s, "status"), read(&mut s, "data"), text(&mut s, "samples"));
    let children = prof_core::formats::parse_children(&text(&mut s, "children")).unwrap();
    assert_eq!(children.processes.len(), 2);
    let mapped = |_: &str| profil::objects::elf::static_mappings(&fib_path);
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
        p.processes.iter().map(|c| (c.pid, c.parent, c.program.clone(), c.profile.user_ticks, c.running)).collect()
    };
    assert_eq!(
        rows(&from_files),
        [(11, Some(10), fib_path.clone(), 5, true), (12, Some(11), fib_path.clone(), 2, false)]
    );
    assert_eq!(rows(&from_files), rows(&from_session));
    // The copy's tick before its exec has no address; after it, fib's.
    assert_eq!(from_files.processes[0].profile.foreign_samples, [(0, 1), (work + 8, 4)]);

    let empty = ObjectFile::from_symbols(std::path::Path::new(""), profil::objects::symbols::SymbolTable::new(Vec::new()));
    let mut symbolizer = profil::objects::Symbolizer::new(empty, "fib");
    let processes = profil::processes::analyse(&from_files.processes, &mut symbolizer, None);
    let out = profil::processes::render("fib", None, &from_files, &[], &processes, &symbolizer);
    assert!(out.starts_with("Processes (--children): 'fib' and the 2 processes it started, 8 samples:\n"), "{out}");
    assert!(out.contains(&format!("       11       10         5   62.50  {fib_path}  (still running)\n")), "{out}");
    assert!(out.contains(&format!("       12       11         2   25.00  {fib_path}\n")), "{out}");
    assert!(out.contains(" overflow [fib]\n") && out.contains("[unknown]"), "{out}");
}

/// `--threads` on Redox's path: the kernel keeps the program's stacks by thread (its context
/// id), profd serves them in `threads`, profil reads them into the same threads as the session
/// has (the Linux way), and the view names each thread's functions.
#[test]
fn threads_from_the_scheme_files() {
    use profil::objects::object_file::ObjectFile;
    let fib = profil_bin_dir().join("fib");
    let file = ObjectFile::read(&fib).unwrap();
    let symbol = |name: &str| file.symbols.by_name(&format!("fib::{name}")).or_else(|| file.symbols.by_name(name)).unwrap().addr;
    let (overflow, looping) = (symbol("overflow"), symbol("loop"));
    let mut s: Scheme = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(u64::MAX, vec![(10, ALICE, 0x40_1000)]))));
    let ctl = s.open("ctl", Access::Write, ALICE).unwrap();
    s.write(ctl, b"start 10 0 0 0 0x401000 0x403000 rate=1000 exec\n", ALICE).unwrap();
    s.close(ctl);
    let k = s.profd_mut().sampler_mut().kernel();
    k.exec(10, 0x40_1000);
    for _ in 0..3 {
        k.tick_thread(10, 100, &[overflow + 4]);
    }
    k.tick_thread(10, 101, &[looping + 4]);
    k.tick_thread(10, 101, &[overflow + 8]);
    // A sample whose thread the kernel does not know is in no thread.
    k.tick_stack(10, &[looping + 4], false);
    k.exit(10);
    let (status, data, samples) = (text(&mut s, "status"), read(&mut s, "data"), text(&mut s, "samples"));
    let threads = text(&mut s, "threads");
    assert_eq!(threads.lines().count(), 3, "{threads}");
    let from_files =
        Profile::from_scheme_files(&status, &data, &samples).unwrap().with_scheme_threads(&prof_core::formats::parse_threads(&threads));
    let session = s.profd().session(ALICE).unwrap().unwrap();
    let from_session = Profile::from_session(session, "fib", true, true);
    assert_eq!(from_files.by_thread, from_session.by_thread);
    let mut p = from_files;
    p.mappings = profil::objects::elf::static_mappings(&fib.display().to_string());
    let mut symbolizer = profil::objects::Symbolizer::new(file.clone(), "fib");
    let view = profil::threads::threads(&p, "fib", &mut symbolizer);
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
