//! The `prof:` scheme handler driven the way the Redox daemon drives it (open / write / read /
//! close with a caller uid), over the Redox kernel backend, over a fake kernel whose prof table
//! is the real `kprof::Profiler` — the code the kernel patch compiles — so the whole path from
//! timer tick to `/scheme/prof/bins` runs on the host.

use prof_core::formats::parse_status;
use prof_samplers::fake_kernel::FakeKernel;
use prof_samplers::redox_kernel::KernelSampler;
use prof_core::scheme::{Access, Errno, ProfScheme};
use prof_core::{ProfData, Profd};

const ROOT: u32 = 0;
const ALICE: u32 = 1000;
const BOB: u32 = 1001;

fn fake_kernel(limit: u64) -> FakeKernel {
    FakeKernel::new(limit, vec![(10, ALICE, 0x40_1000), (11, BOB, 0x40_1000)])
}

type Scheme = ProfScheme<KernelSampler<FakeKernel>>;

fn scheme(limit: u64) -> Scheme {
    ProfScheme::new(Profd::new(KernelSampler::new(fake_kernel(limit))))
}

fn kernel(s: &mut Scheme) -> &mut FakeKernel {
    s.profd_mut().sampler_mut().kernel()
}

/// Open, write one command, close: what `echo … > /scheme/prof/ctl` does.
fn ctl(s: &mut Scheme, uid: u32, line: &str) -> Result<(), Errno> {
    let id = s.open("ctl", Access::Write, uid)?;
    let r = s.write(id, line.as_bytes(), uid).map(|n| assert_eq!(n, line.len()));
    s.close(id);
    r
}

/// Open, read everything in small pieces, close: what `cat /scheme/prof/<file>` does.
fn read(s: &mut Scheme, uid: u32, path: &str) -> Result<Vec<u8>, Errno> {
    let id = s.open(path, Access::Read, uid)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 7];
    loop {
        match s.read(id, &mut buf, out.len() as u64) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => {
                s.close(id);
                return Err(e);
            }
        }
    }
    s.close(id);
    Ok(out)
}

fn text(s: &mut Scheme, uid: u32, path: &str) -> String {
    String::from_utf8(read(s, uid, path).unwrap()).unwrap()
}

fn status(s: &mut Scheme) -> std::collections::HashMap<String, String> {
    parse_status(&text(s, BOB, "status")).into_iter().collect()
}

#[test]
fn full_session_through_the_scheme() {
    let mut s = scheme(u64::MAX);
    assert_eq!(status(&mut s)["state"], "idle");
    // Non-PIE program: text 0x401000..0x402000, so the load base is 0x401000 - 0x401000 = 0.
    ctl(&mut s, ALICE, "start 10 0x401000 0x401400 0x100 0x401000 0x402000\n").unwrap();
    assert_eq!(status(&mut s)["state"], "running");
    for pc in [0x401000, 0x401001, 0x4010ff, 0x401300, 0x401500] {
        kernel(&mut s).tick(10, true, pc);
    }
    kernel(&mut s).tick(10, false, 0xffff_8000_0000_1000);
    kernel(&mut s).tick(11, true, 0x401000); // another process: not counted
    kernel(&mut s).exit(10);

    let st = status(&mut s);
    assert_eq!(
        (st["state"].as_str(), st["reason"].as_str(), st["pid"].as_str()),
        ("stopped", "exit", "10")
    );
    assert_eq!((st["ticks_in_bins"].as_str(), st["ticks_user"].as_str()), ("4", "5"));
    assert_eq!((st["ticks_kernel"].as_str(), st["dropped"].as_str(), st["load_base"].as_str()), ("1", "0", "0x0"));

    assert_eq!(
        text(&mut s, ALICE, "bins"),
        "# start=0x401000 end=0x401400 bin_sz=256 nr_bins=4 total=4\n\
         0x401000 0x4010ff 3\n0x401100 0x4011ff 0\n0x401200 0x4012ff 0\n0x401300 0x4013ff 1\n"
    );
    let data = ProfData::from_bytes(&read(&mut s, ALICE, "data").unwrap()).unwrap();
    assert_eq!((data.start_addr, data.end_addr, data.nr_bins, data.bin_sz), (0x401000, 0x401400, 4, 256));
    assert_eq!(&data.bin[..4], &[3, 0, 0, 1]);
    assert_eq!(
        text(&mut s, ALICE, "samples"),
        "0x401000 1 text\n0x401001 1 text\n0x4010ff 1 text\n0x401300 1 text\n0x401500 1 text\n\
         0xffff800000001000 1 kernel\n"
    );
    assert_eq!(text(&mut s, ROOT, ""), "ctl\nstatus\nbins\ndata\nsamples\nstacks\nservers\nclock\nchildren\nthreads\n");
    assert_eq!(s.open_files(), 0);
}

/// The kernel's call stacks, from its frame-pointer walk to `/scheme/prof/stacks`: program
/// frames as link-time addresses (a PIE), others as they ran, most ticks first; a stack the
/// kernel's table had no room for is a truncated line without frames. Read across two
/// snapshots, the counts add up.
#[test]
fn stacks_through_the_scheme() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x1000 0x3000").unwrap();
    let base = 0x5555_0000_0000u64;
    kernel(&mut s).exec(10, base + 0x1000);
    let (c, a, b, main) = (base + 0x1310, base + 0x1105, base + 0x1205, base + 0x1005);
    for _ in 0..3 {
        kernel(&mut s).tick_stack(10, &[c, a, main, 0x7f00_0000_1234], false);
    }
    // The caller's call instruction is the last of the text: its return address is past it.
    kernel(&mut s).tick_stack(10, &[c, base + 0x3000], true);
    let first = text(&mut s, ALICE, "stacks");
    kernel(&mut s).tick_stack(10, &[c, b, main, 0x7f00_0000_1234], false);
    kernel(&mut s).tick_stack(10, &[c, a, main, 0x7f00_0000_1234], false);
    kernel(&mut s).exit(10);
    let all = text(&mut s, ALICE, "stacks");
    assert_eq!(
        first,
        "3 complete text:0x1310 text:0x1105 text:0x1005 other:0x7f0000001234\n\
         1 truncated text:0x1310 text:0x3000\n"
    );
    assert_eq!(
        all,
        "4 complete text:0x1310 text:0x1105 text:0x1005 other:0x7f0000001234\n\
         1 complete text:0x1310 text:0x1205 text:0x1005 other:0x7f0000001234\n\
         1 truncated text:0x1310 text:0x3000\n"
    );
    use prof_core::formats::{parse_stacks, StackFrame::*};
    let parsed = parse_stacks(&all);
    assert_eq!(parsed[1], (vec![Text(0x1310), Text(0x1205), Text(0x1005), Other(0x7f00_0000_1234)], false, 1));
    assert_eq!(parsed.len(), 3);
    // Only root or the starter may read them.
    assert_eq!(read(&mut s, BOB, "stacks"), Err(libc::EPERM));
}

/// Deep recursion makes more distinct stacks than the kernel's table holds: the ticks whose
/// stack it could not keep still count in their own function, as truncated one-frame stacks.
#[test]
fn stacks_the_kernel_could_not_keep_stay_in_their_function() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x1000 0x3000").unwrap();
    kernel(&mut s).exec(10, 0x1000);
    // Fill the stack table with distinct stacks, then sample another function.
    let table = prof_samplers::redox_kernel::stack_table_size(None);
    for i in 0..table as u64 {
        kernel(&mut s).tick_stack(10, &[0x1100, 0x1800 + i], false);
    }
    let _ = text(&mut s, ALICE, "stacks");
    for _ in 0..5 {
        kernel(&mut s).tick_stack(10, &[0x2200, 0x1005], false);
    }
    kernel(&mut s).exit(10);
    let all = text(&mut s, ALICE, "stacks");
    assert!(all.starts_with("5 truncated text:0x2200\n"), "{}", &all[..200]);
    assert_eq!(all.lines().count(), table + 1);
}

/// A program whose time goes to a daemon (ramfs) and, through it, to a driver: the daemons'
/// samples while they work for it, and an account of every tick of the run, in `servers` and
/// `status`; the program's own files are as they would be without them.
#[test]
fn servers_working_for_the_program_are_charged_to_it() {
    let mut s = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(
        u64::MAX,
        vec![(10, ALICE, 0x40_1000), (11, BOB, 0x40_1000), (20, ROOT, 0x40_1000), (21, ROOT, 0x40_1000)],
    ))));
    kernel(&mut s).names = vec![(20, "/scheme/initfs/bin/ramfs".into()), (21, "/usr/lib/drivers/ahcid".into())];
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 exec").unwrap();
    // Before the exec nothing counts, not even idle.
    kernel(&mut s).tick(0, false, 0xffff_8000_0000_1000);
    kernel(&mut s).exec(10, 0x40_1000);
    kernel(&mut s).tick_stack(10, &[0x40_1100, 0x40_1005], false);
    // fib reads a file: ramfs takes the request, asks the driver, which answers, then ramfs.
    kernel(&mut s).take_request(20, 10, 3, 1);
    for _ in 0..3 {
        kernel(&mut s).tick_stack(20, &[0x40_2200, 0x40_2105], false);
    }
    kernel(&mut s).take_request(21, 20, 4, 7);
    kernel(&mut s).tick_stack(21, &[0x40_7000], true);
    kernel(&mut s).tick(21, false, 0xffff_8000_0000_2000);
    // The driver answers; the tick of its answer is still ours.
    kernel(&mut s).answer(21, 4, 7);
    kernel(&mut s).tick_stack(21, &[0x40_7000], true);
    kernel(&mut s).tick_stack(20, &[0x40_2210, 0x40_2105], false);
    kernel(&mut s).answer(20, 3, 1);
    // ramfs for someone else, idle, another process: not the program's servers.
    kernel(&mut s).take_request(20, 11, 3, 2);
    kernel(&mut s).tick_stack(20, &[0x40_2200, 0x40_2105], false);
    kernel(&mut s).tick(0, false, 0xffff_8000_0000_1000);
    kernel(&mut s).tick(0, false, 0xffff_8000_0000_1000);
    kernel(&mut s).tick(11, true, 0x40_1100);
    kernel(&mut s).exit(10);
    assert_eq!(
        text(&mut s, ALICE, "servers"),
        "# own_user=1 own_kernel=0 server_user=6 server_kernel=1 servers_dropped=0 idle=2 other=2 total=12\n\
         server 20 4 /scheme/initfs/bin/ramfs\n\
         stack 20 3 complete 0x402200 0x402105\n\
         stack 20 1 complete 0x402210 0x402105\n\
         server 21 3 /usr/lib/drivers/ahcid\n\
         stack 21 2 truncated 0x407000\n\
         stack 21 1 truncated 0xffff800000002000\n"
    );
    let st = status(&mut s);
    assert_eq!(
        (st["ticks_user"].as_str(), st["ticks_servers"].as_str(), st["ticks_idle"].as_str(), st["ticks_other"].as_str()),
        ("1", "7", "2", "2")
    );
    // The program's own files are untouched by its servers.
    assert_eq!(text(&mut s, ALICE, "samples"), "0x401100 1 text\n");
    assert_eq!(text(&mut s, ALICE, "stacks"), "1 complete text:0x401100 text:0x401005\n");
    // Like the program's samples, its servers' are the starter's (or root's) to read.
    assert_eq!(read(&mut s, BOB, "servers"), Err(libc::EPERM));
    // What a client reads back.
    let report = prof_core::formats::parse_servers(&text(&mut s, ALICE, "servers")).unwrap();
    assert_eq!((report.own_user, report.own_kernel, report.account.servers(), report.account.idle, report.account.other), (1, 0, 7, 2, 2));
    let servers: Vec<(u32, u64, &str, usize)> =
        report.servers.iter().map(|s| (s.pid, s.ticks, s.path.as_str(), s.stacks.len())).collect();
    assert_eq!(servers, vec![(20, 4, "/scheme/initfs/bin/ramfs", 2), (21, 3, "/usr/lib/drivers/ahcid", 2)]);
    // Its kernel sample is its kernel PC alone (no walk in the fake kernel's plain tick).
    assert_eq!(report.servers[1].stacks, vec![(vec![0x40_7000], true, 2), (vec![0xffff_8000_0000_2000], true, 1)]);
    // Without a session: the header alone; without the header: nothing.
    let mut idle = scheme(u64::MAX);
    assert_eq!(
        text(&mut idle, BOB, "servers"),
        "# own_user=0 own_kernel=0 server_user=0 server_kernel=0 servers_dropped=0 idle=0 other=0 total=0\n"
    );
    assert_eq!(prof_core::formats::parse_servers("garbage\n"), None);
}

/// `start all` (root): every process's samples under its pid and executable in `servers`,
/// user and kernel, idle apart; no program, no bins; a process's exit ends nothing; another
/// session meanwhile is busy; anyone but root is refused.
#[test]
fn every_process_at_once() {
    let mut s = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(
        u64::MAX,
        vec![(10, ALICE, 0x40_1000), (20, ROOT, 0x40_1000), (21, ROOT, 0x40_1000)],
    ))));
    kernel(&mut s).names =
        vec![(10, "/usr/bin/fib".into()), (20, "/scheme/initfs/bin/ramfs".into()), (21, "/usr/lib/drivers/ahcid".into())];
    assert_eq!(ctl(&mut s, ALICE, "start all"), Err(libc::EPERM));
    assert_eq!(ctl(&mut s, ROOT, "start all exec"), Err(libc::EINVAL));
    // Its starter keeps the ctl file open while it runs (closed, the session ends: below).
    let starter = s.open("ctl", Access::Write, ROOT).unwrap();
    s.write(starter, b"start all rate=1000", ROOT).unwrap();
    for _ in 0..3 {
        kernel(&mut s).tick_stack(10, &[0x40_1100, 0x40_1005], false);
    }
    kernel(&mut s).tick(10, false, 0xffff_8000_0000_1000);
    kernel(&mut s).tick_stack(20, &[0x40_2200], false);
    kernel(&mut s).tick(0, false, 0xffff_8000_0000_2000);
    kernel(&mut s).tick(0, false, 0xffff_8000_0000_2000);
    // A read of the session names each new process while it lives (profil polls `status`);
    // fib then exits: the session goes on, the others' samples still count.
    assert_eq!(status(&mut s)["state"], "running");
    kernel(&mut s).exit(10);
    kernel(&mut s).tick(21, true, 0x40_7000);
    // A user context without a pid (the bootstrap's managers): pid 0's, not idle.
    kernel(&mut s).tick(0, true, 0x40_3000);
    assert_eq!(ctl(&mut s, ROOT, "start 20 0 0 0"), Err(libc::EBUSY));
    assert_eq!(status(&mut s)["state"], "running");
    ctl(&mut s, ROOT, "stop").unwrap();
    s.close(starter);
    assert_eq!(
        text(&mut s, ROOT, "servers"),
        "# own_user=0 own_kernel=0 server_user=6 server_kernel=1 servers_dropped=0 idle=2 other=0 total=9\n\
         server 10 4 /usr/bin/fib\n\
         stack 10 3 complete 0x401100 0x401005\n\
         stack 10 1 truncated 0xffff800000001000\n\
         server 0 1 [bootstrap]\n\
         stack 0 1 truncated 0x403000\n\
         server 20 1 /scheme/initfs/bin/ramfs\n\
         stack 20 1 complete 0x402200\n\
         server 21 1 /usr/lib/drivers/ahcid\n\
         stack 21 1 truncated 0x407000\n"
    );
    let st = status(&mut s);
    assert_eq!((st["pid"].as_str(), st["state"].as_str(), st["reason"].as_str()), ("0", "stopped", "request"));
    // Root's to read, as any session is its starter's.
    assert_eq!(read(&mut s, ALICE, "servers"), Err(libc::EPERM));
}

/// A session on every process has no program whose exit ends it: it ends when the `ctl` file
/// that started it is closed (a `profil -a` killed with SIGKILL: the kernel closes its files),
/// its data still readable. A one-program session outlives its starter's file, as before.
#[test]
fn a_session_on_every_process_ends_with_its_starters_file() {
    let mut s = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(u64::MAX, vec![(10, ALICE, 0x40_1000)]))));
    let starter = s.open("ctl", Access::Write, ROOT).unwrap();
    s.write(starter, b"start all", ROOT).unwrap();
    kernel(&mut s).tick(10, true, 0x40_1100);
    // Another file of root's, opened and closed meanwhile, ends nothing.
    ctl(&mut s, ROOT, "start 10 0 0 0").unwrap_err();
    assert_eq!(status(&mut s)["state"], "running");
    s.close(starter);
    let st = status(&mut s);
    assert_eq!((st["pid"].as_str(), st["state"].as_str(), st["reason"].as_str()), ("0", "stopped", "request"));
    assert!(text(&mut s, ROOT, "servers").contains("server 10 1 "));
    // A new session may start at once; a program's session survives its starter's file.
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    assert_eq!(status(&mut s)["state"], "running");
}

/// `children` (profil --children): the kernel follows the program's process tree; `children`
/// serves each process by pid with its parent, the program it exec'd (named while it runs)
/// and its samples; the forked copy's samples before its exec lose their addresses (they are
/// its parent's code, whatever batch they came in); an unrelated process is not there, nor a
/// child among the daemons; the program's exit ends the session.
#[test]
fn a_process_tree() {
    let mut s = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(
        u64::MAX,
        vec![(10, ALICE, 0x40_1000), (30, BOB, 0x40_1000)],
    ))));
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 rate=1000 children exec").unwrap();
    kernel(&mut s).exec(10, 0x40_1000);
    kernel(&mut s).tick_stack(10, &[0x40_1100], false);
    // The program forks 11, whose copy runs the program's code (its exec in relibc) ...
    kernel(&mut s).fork(10, 11, ALICE);
    kernel(&mut s).tick_stack(11, &[0x40_1200, 0x40_1005], false);
    assert_eq!(status(&mut s)["state"], "running");
    // ... then execs fib: named while it runs.
    kernel(&mut s).names = vec![(11, "/usr/bin/fib".into())];
    kernel(&mut s).exec(11, 0x40_1000);
    kernel(&mut s).tick_stack(11, &[0x40_1100, 0x40_1005], false);
    kernel(&mut s).tick_stack(11, &[0x40_1100, 0x40_1005], false);
    kernel(&mut s).tick(11, false, 0xffff_8000_0000_1000);
    assert_eq!(status(&mut s)["state"], "running");
    // fib forks a copy that never execs, which exits; someone else's process runs meanwhile.
    kernel(&mut s).fork(11, 12, ALICE);
    kernel(&mut s).tick_stack(12, &[0x40_1300], false);
    kernel(&mut s).exit(12);
    // The program runs ls, gone before any read: named by the name the kernel kept.
    kernel(&mut s).fork(10, 13, ALICE);
    kernel(&mut s).rename(13, "/usr/bin/ls");
    kernel(&mut s).exec(13, 0x40_1000);
    kernel(&mut s).tick_stack(13, &[0x40_1400], false);
    kernel(&mut s).exit(13);
    kernel(&mut s).tick(30, true, 0x40_9000);
    kernel(&mut s).exit(10);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str(), st["ticks_user"].as_str()), ("stopped", "exit", "1"));
    assert_eq!(st["ticks_other"], "1");
    assert_eq!(
        text(&mut s, ALICE, "children"),
        "# processes=3 user=5 kernel=1 missed=0\n\
         process 11 10 3 1 running /usr/bin/fib\n\
         stack 11 2 complete 0x401100 0x401005\n\
         stack 11 1 truncated\n\
         stack 11 1 truncated 0xffff800000001000\n\
         process 12 11 1 0 exited -\n\
         stack 12 1 complete 0x401300\n\
         process 13 10 1 0 exited /usr/bin/ls\n\
         stack 13 1 complete 0x401400\n"
    );
    // Read back as profil does.
    let report = prof_core::formats::parse_children(&text(&mut s, ALICE, "children")).unwrap();
    let fib = &report.processes[&11];
    assert_eq!((fib.parent, fib.exec.as_deref(), fib.user_ticks, fib.kernel_ticks), (Some(10), Some("/usr/bin/fib"), 3, 1));
    assert_eq!(fib.samples.iter().map(|(&a, &n)| (a, n)).collect::<Vec<_>>(), [(0, 1), (0x40_1100, 2)]);
    assert!(report.processes[&12].exited && !fib.exited);
    // No child is a daemon working for the program.
    assert_eq!(text(&mut s, ALICE, "servers").lines().count(), 1);
    assert_eq!(read(&mut s, BOB, "children"), Err(libc::EPERM));
}

/// The program's threads by the kernel's clock: each on a CPU, preempted and blocked, its
/// blocks by wait site (reason, scheme and the scheme's daemon, user stack), served in
/// `clock` with the daemons named and the program's text placed.
#[test]
fn the_kernels_clock_of_the_programs_threads() {
    use kprof::{Leaving, Reason, KERNEL_SPACE_START};
    let mut s = ProfScheme::new(Profd::new(KernelSampler::new(FakeKernel::new(
        u64::MAX,
        vec![(10, ALICE, 0x40_1000), (20, ROOT, 0x40_1000)],
    ))));
    kernel(&mut s).names = vec![(20, "/scheme/initfs/bin/ramfs".into())];
    // Nothing to read before a session; nothing the kernel keeps before the exec either.
    assert_eq!(text(&mut s, BOB, "clock"), "");
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000 exec").unwrap();
    let k = kernel(&mut s);
    k.switch_out(10, 100, 500, Leaving::Blocked(Reason::PipeRead), &[0x40_9000]);
    k.begin_thread(10, 100, true, 1_000);
    k.exec(10, 0x40_1000);
    // A read of a ramfs file, then a sleep; ramfs takes the read's request.
    k.call(10, 100, 3, 1);
    k.switch_out(10, 100, 2_000, Leaving::Blocked(Reason::SchemeCall), &[KERNEL_SPACE_START + 0x10, 0x40_1100, 0x40_1005]);
    k.take_request(20, 10, 3, 1);
    // The process manager (no pid) takes a request of the program's on its scheme.
    k.take_request(0, 10, 18, 2);
    // ramfs's work on it: stitched under the read's site.
    k.tick_stack(20, &[0x40_2200, 0x40_2105], false);
    k.switch_in(10, 100, 5_000);
    k.switch_out(10, 100, 6_000, Leaving::Blocked(Reason::Sleep), &[KERNEL_SPACE_START + 0x20, 0x40_1200, 0x40_1005]);
    k.switch_in(10, 100, 9_000);
    k.clock = Some(10_000);
    k.exit(10);
    let served = text(&mut s, ALICE, "clock");
    let clock = prof_core::kernel_clock::parse(&served).unwrap();
    assert!(
        served.starts_with(
            "clock version=1 state=stopped pid=10 begin=1000 end=10000 at=10000 threads_dropped=0 sites_dropped=0 served_dropped=0\n\
             thread tid=100 begin=1000 end=10000 on_cpu=3000 preempted=0 blocked=6000 blocks=2\n"
        ),
        "{served}"
    );
    assert!(
        served.contains("\nscheme id=3 daemon=20 name=/scheme/initfs/bin/ramfs\nscheme id=18 daemon=0 name=[bootstrap]\nserved site="),
        "{served}"
    );
    assert!(served.ends_with("\nimage load_base=0x0 text=0x401000-0x403000\n"), "{served}");
    let mut sites: Vec<(&str, u64, u64, u64, &[u64])> =
        clock.sites.iter().map(|s| (s.reason.as_str(), s.scheme, s.count, s.ns, s.frames.as_slice())).collect();
    sites.sort();
    assert_eq!(
        sites,
        [("scheme-call", 3, 1, 3_000, &[0x40_1100, 0x40_1005][..]), ("sleep", 0, 1, 3_000, &[0x40_1200, 0x40_1005][..])]
    );
    let read_site = clock.sites.iter().find(|s| s.reason == "scheme-call").unwrap().id;
    assert_eq!(
        clock.served,
        [prof_core::kernel_clock::ClockServed { site: read_site, daemon: 20, count: 1, truncated: false, frames: vec![0x40_2200, 0x40_2105] }]
    );
    // The program's to read, as its samples are.
    assert_eq!(read(&mut s, BOB, "clock"), Err(libc::EPERM));
    assert_eq!(text(&mut s, ROOT, "clock"), served);
}

#[test]
fn pie_samples_are_binned_by_link_address_after_exec() {
    let mut s = scheme(u64::MAX);
    // profil's flow: start on the forked child (profil's own image), then it execs a PIE whose
    // text (link 0x15780..0x57200) the kernel finds mapped at 0x7000_0001_5000.
    ctl(&mut s, ALICE, "start 10 0x15b70 0x15e10 0x1a 0x15780 0x57200").unwrap();
    kernel(&mut s).exec(10, 0x7000_0001_5000);
    let base = 0x7000_0000_0000u64;
    kernel(&mut s).tick(10, true, base + 0x15b70);
    kernel(&mut s).tick(10, true, base + 0x15e0f);
    kernel(&mut s).exit(10);
    let st = status(&mut s);
    assert_eq!(st["load_base"], "0x700000000000");
    let data = ProfData::from_bytes(&read(&mut s, ALICE, "data").unwrap()).unwrap();
    let n = (0x15e10u64 - 0x15b70).div_ceil(26);
    assert_eq!(data.nr_bins, n);
    assert_eq!((data.bin[0], data.bin[n as usize - 1]), (1, 1));
    assert_eq!(text(&mut s, ALICE, "samples"), "0x15b70 1 text\n0x15e0f 1 text\n");
}

#[test]
fn a_launch_counts_the_program_only_from_its_exec() {
    let mut s = scheme(u64::MAX);
    // profil's flow on Redox: start on the forked child with `exec`. Until the exec, the child
    // runs relibc's exec code in profil's own image, which (static, linked at 0x401000 like
    // every Redox program) overlaps the program's text: none of it may be counted.
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x45e0d6 exec\n").unwrap();
    for pc in [0x40_2345, 0x41_0000, 0x7fff_0000_1000] {
        kernel(&mut s).tick(10, true, pc);
    }
    kernel(&mut s).tick(10, false, 0xffff_8000_0000_1000);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["ticks_user"].as_str(), st["ticks_kernel"].as_str()), ("running", "0", "0"));
    kernel(&mut s).exec(10, 0x40_1000);
    kernel(&mut s).tick(10, true, 0x40_2000);
    kernel(&mut s).tick(10, true, 0x40_2000);
    kernel(&mut s).tick(10, false, 0xffff_8000_0000_1000);
    kernel(&mut s).exit(10);
    let st = status(&mut s);
    assert_eq!(
        (st["reason"].as_str(), st["ticks_user"].as_str(), st["ticks_in_bins"].as_str(), st["ticks_kernel"].as_str()),
        ("exit", "2", "2", "1")
    );
    assert_eq!(text(&mut s, ALICE, "samples"), "0x402000 2 text\n0xffff800000001000 1 kernel\n");

    // Without `exec` (attaching to a running process) counting starts at once.
    ctl(&mut s, BOB, "start 11 0 0 0 0x401000 0x45e0d6\n").unwrap();
    kernel(&mut s).tick(11, true, 0x40_2345);
    assert_eq!(status(&mut s)["ticks_user"], "1");
}

#[test]
fn a_session_whose_process_exited_does_not_block_the_next_start() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    kernel(&mut s).tick(10, true, 0x401000);
    kernel(&mut s).exit(10);
    // Nobody read a prof: file since the exit: the next start must still succeed.
    ctl(&mut s, BOB, "start 11 0 0 0 0x401000 0x402000").unwrap();
    assert_eq!((status(&mut s)["state"].as_str(), status(&mut s)["pid"].as_str()), ("running", "11"));
}

#[test]
fn errno_for_every_error() {
    let mut s = scheme(u64::MAX);
    // Paths and access modes.
    assert_eq!(s.open("nope", Access::Read, ROOT), Err(libc::ENOENT));
    assert_eq!(s.open("ctl", Access::Read, ROOT), Err(libc::EACCES));
    assert_eq!(s.open("bins", Access::Write, ROOT), Err(libc::EACCES));
    assert_eq!(s.open("", Access::Write, ROOT), Err(libc::EISDIR));
    assert_eq!(s.read(999, &mut [0; 4], 0), Err(libc::EBADF));
    assert_eq!(s.write(999, b"stop", ROOT), Err(libc::EBADF));
    let st = s.open("status", Access::Read, ROOT).unwrap();
    assert_eq!(s.write(st, b"stop", ROOT), Err(libc::EBADF));
    s.close(st);
    // Malformed commands: EINVAL.
    assert_eq!(ctl(&mut s, ROOT, "start 10"), Err(libc::EINVAL));
    assert_eq!(ctl(&mut s, ROOT, "frobnicate"), Err(libc::EINVAL));
    assert_eq!(ctl(&mut s, ROOT, "start 10 0 0 0 \u{ff}"), Err(libc::EINVAL));
    // The spec's errors.
    assert_eq!(ctl(&mut s, ROOT, "start 99 0 0 0"), Err(libc::ESRCH));
    assert_eq!(ctl(&mut s, ROOT, "start 10 0x300 0x20 0 0x0 0x1000"), Err(libc::EFAULT));
    assert_eq!(ctl(&mut s, ROOT, "start 10 0x100 0x2000 0 0x0 0x1000"), Err(libc::EFAULT));
    assert_eq!(ctl(&mut s, ROOT, "start 10 0 0 1 0x0 0x10000"), Err(libc::EFAULT));
    assert_eq!(ctl(&mut s, ROOT, "start 10 0 0 0 0x0 0x10000"), Ok(()));
    assert_eq!(ctl(&mut s, ROOT, "start 11 0 0 0 0x0 0x10000"), Err(libc::EBUSY));
    // pid 0 stops and never fails.
    assert_eq!(ctl(&mut s, ROOT, "start 0 0 0 0"), Ok(()));
    assert_eq!(status(&mut s)["reason"], "request");
    assert_eq!(ctl(&mut s, ROOT, "stop"), Ok(()));
    // The kernel failing to answer is the spec's EGENERIC (EIO).
    ctl(&mut s, ROOT, "start 10 0 0 0 0x0 0x10000").unwrap();
    kernel(&mut s).fail_data = true;
    assert_eq!(read(&mut s, ROOT, "status"), Err(libc::EIO));
}

#[test]
fn uid_rules() {
    let mut s = scheme(u64::MAX);
    // Bob may not profile Alice's process; Alice and root may.
    assert_eq!(ctl(&mut s, BOB, "start 10 0 0 0"), Err(libc::EPERM));
    assert_eq!(ctl(&mut s, ALICE, "start 10 0 0 0"), Ok(()));
    // Bob may see that the profiler is busy, but not read, stop or take over the session.
    assert_eq!(status(&mut s)["state"], "running");
    for path in ["bins", "data", "samples"] {
        assert_eq!(read(&mut s, BOB, path), Err(libc::EPERM), "{path}");
        assert!(read(&mut s, ALICE, path).is_ok());
        assert!(read(&mut s, ROOT, path).is_ok());
    }
    assert_eq!(ctl(&mut s, BOB, "stop"), Err(libc::EPERM));
    assert_eq!(ctl(&mut s, BOB, "start 0 0 0 0"), Err(libc::EPERM));
    assert_eq!(status(&mut s)["state"], "running");
    // Root may stop anyone's session.
    assert_eq!(ctl(&mut s, ROOT, "stop"), Ok(()));
    assert_eq!(status(&mut s)["state"], "stopped");
    // The uid that counts for a write is the writer's, not the opener's.
    let id = s.open("ctl", Access::Write, ROOT).unwrap();
    assert_eq!(s.write(id, b"start 10 0 0 0", BOB), Err(libc::EPERM));
    s.close(id);
}

#[test]
fn two_clients_racing_to_start_one_wins() {
    let mut s = scheme(u64::MAX);
    let a = s.open("ctl", Access::Write, ALICE).unwrap();
    let b = s.open("ctl", Access::Write, BOB).unwrap();
    let ra = s.write(a, b"start 10 0 0 0", ALICE);
    let rb = s.write(b, b"start 11 0 0 0", BOB);
    assert_eq!((ra, rb), (Ok(14), Err(libc::EBUSY)));
    assert_eq!(status(&mut s)["pid"], "10");
    s.close(a);
    s.close(b);
}

#[test]
fn a_client_that_disconnects_mid_session_hurts_nothing() {
    let mut s = scheme(u64::MAX);
    let id = s.open("ctl", Access::Write, ALICE).unwrap();
    s.write(id, b"start 10 0x401000 0x402000 0 0x401000 0x402000", ALICE).unwrap();
    let half = s.open("bins", Access::Read, ALICE).unwrap();
    s.read(half, &mut [0; 3], 0).unwrap();
    // The client goes away without stopping, in the middle of a read.
    s.close(id);
    s.close(half);
    assert_eq!(s.open_files(), 0);
    kernel(&mut s).tick(10, true, 0x401010);
    kernel(&mut s).exit(10);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str(), st["ticks_in_bins"].as_str()), ("stopped", "exit", "1"));
    // The last profile stays readable until the next start.
    assert!(text(&mut s, ALICE, "bins").contains("total=1"));
    ctl(&mut s, BOB, "start 11 0 0 0").unwrap();
    assert_eq!(status(&mut s)["ticks_in_bins"], "0");
}

#[test]
fn kernel_overflow_and_full_table_are_reported() {
    // The kernel's counters stop at 3: the fourth user tick ends the session with overflow.
    let mut s = scheme(3);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x400000 0x500000").unwrap();
    for _ in 0..5 {
        kernel(&mut s).tick(10, true, 0x401000);
    }
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str(), st["ticks_user"].as_str()), ("stopped", "overflow", "3"));
}

#[test]
fn reads_are_consistent_snapshots() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x400000 0x500000").unwrap();
    kernel(&mut s).tick(10, true, 0x401000);
    let id = s.open("status", Access::Read, ALICE).unwrap();
    let mut first = [0u8; 20];
    let n = s.read(id, &mut first, 0).unwrap();
    // More ticks between two reads of one open file do not change what that file shows ...
    kernel(&mut s).tick(10, true, 0x401000);
    let mut rest = vec![0u8; 400];
    let m = s.read(id, &mut rest, n as u64).unwrap();
    let whole = [&first[..n], &rest[..m]].concat();
    assert!(String::from_utf8(whole).unwrap().contains(" ticks_user=1 "));
    // ... until it is read from the start again.
    let m = s.read(id, &mut rest, 0).unwrap();
    assert!(String::from_utf8_lossy(&rest[..m]).contains(" ticks_user=2 "));
    assert_eq!(s.size(id).unwrap(), m as u64);
    s.close(id);
}

#[test]
fn unpositioned_reads_go_on_from_the_files_cursor() {
    use prof_core::scheme::UNPOSITIONED;
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x400000 0x500000").unwrap();
    kernel(&mut s).tick(10, true, 0x401000);
    let whole = text(&mut s, ALICE, "status");
    let id = s.open("status", Access::Read, ALICE).unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 9]);
    loop {
        match s.read(id, &mut buf, UNPOSITIONED).unwrap() {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    assert_eq!(String::from_utf8(got).unwrap(), whole);
    // A positioned read in between moves the cursor with it.
    assert_eq!(s.read(id, &mut buf, 0).unwrap(), 9);
    assert_eq!(s.read(id, &mut buf, UNPOSITIONED).unwrap(), 9);
    assert_eq!(&buf[..], &whole.as_bytes()[9..18]);
    s.close(id);
}

/// relibc's `stat` opens with `O_PATH` and no access mode: every file and the directory open
/// so (their status read), and such a handle is neither read nor written.
#[test]
fn stat_opens_every_file_by_its_path_alone() {
    use prof_core::scheme::FileStat;
    let mut s = scheme(u64::MAX);
    let root = s.open("", Access::Path, BOB).unwrap();
    assert!(s.stat(root).unwrap().is_dir);
    assert_eq!(s.dir_entries(root, 0, |_, _| true), Err(libc::EBADF));
    let status = s.open("status", Access::Path, BOB).unwrap();
    let status_len = text(&mut s, BOB, "status").len() as u64;
    assert_eq!(s.stat(status).unwrap(), FileStat { inode: 3, is_dir: false, perm: 0o444, size: status_len });
    assert_eq!(s.read(status, &mut [0; 16], 0), Err(libc::EBADF));
    assert_eq!(s.path(status).unwrap(), "/scheme/prof/status");
    let ctl_id = s.open("ctl", Access::Path, BOB).unwrap();
    assert_eq!(s.write(ctl_id, b"stop\n", BOB), Err(libc::EBADF));
    assert_eq!(s.stat(ctl_id).unwrap().perm, 0o222);
    for (name, _) in prof_core::scheme::ENTRIES {
        let id = s.open(name, Access::Path, BOB).unwrap();
        assert!(s.stat(id).is_ok(), "{name}");
        s.close(id);
    }
}

#[test]
fn ls_and_stat_see_a_directory_of_ten_files() {
    use prof_core::scheme::FileStat;
    let mut s = scheme(u64::MAX);
    let root = s.open("", Access::Read, BOB).unwrap();
    let list = |s: &Scheme, offset: u64, room: usize| {
        let mut got = Vec::new();
        s.dir_entries(root, offset, |index, name| {
            got.push((index, name));
            got.len() < room
        })
        .map(|()| got)
    };
    let all = list(&s, 0, usize::MAX).unwrap();
    assert_eq!(all, vec![(0, "ctl"), (1, "status"), (2, "bins"), (3, "data"), (4, "samples"), (5, "stacks"), (6, "servers"), (7, "clock"), (8, "children"), (9, "threads")]);
    // A small buffer: the listing resumes at the index after the last entry given.
    assert_eq!(list(&s, 0, 2).unwrap(), vec![(0, "ctl"), (1, "status")]);
    assert_eq!(list(&s, 2, usize::MAX).unwrap(), all[2..].to_vec());
    assert_eq!(list(&s, 10, usize::MAX).unwrap(), vec![]);
    assert_eq!(list(&s, u64::MAX, usize::MAX).unwrap(), vec![]);

    let st = s.stat(root).unwrap();
    assert_eq!((st.is_dir, st.perm), (true, 0o555));
    assert_eq!(s.path(root).unwrap(), "/scheme/prof");
    let ctl_id = s.open("ctl", Access::Write, BOB).unwrap();
    assert_eq!(s.dir_entries(ctl_id, 0, |_, _| true), Err(libc::ENOTDIR));
    assert_eq!(s.stat(ctl_id).unwrap(), FileStat { inode: 2, is_dir: false, perm: 0o222, size: 0 });
    assert_eq!(s.path(ctl_id).unwrap(), "/scheme/prof/ctl");
    let status_id = s.open("status", Access::Read, BOB).unwrap();
    let status_len = text(&mut s, BOB, "status").len() as u64;
    assert_eq!(s.stat(status_id).unwrap(), FileStat { inode: 3, is_dir: false, perm: 0o444, size: status_len });
    // Every file has an inode of its own (grep refuses an input that looks like its output).
    let mut inodes = vec![s.stat(root).unwrap().inode];
    for (name, _) in prof_core::scheme::ENTRIES {
        let access = if name == "ctl" { Access::Write } else { Access::Read };
        let id = s.open(name, access, ROOT).unwrap();
        inodes.push(s.stat(id).unwrap().inode);
        s.close(id);
    }
    assert_eq!(inodes, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert_eq!(s.path(status_id).unwrap(), "/scheme/prof/status");
    for id in [root, ctl_id, status_id] {
        s.close(id);
    }
    assert_eq!(s.stat(root), Err(libc::EBADF));
    assert_eq!(s.path(root), Err(libc::EBADF));
    assert_eq!(s.dir_entries(root, 0, |_, _| true), Err(libc::EBADF));
}

/// `rate=HZ` asks the kernel for its NMI source: the session samples the kernel's work for the
/// program too, and the files say so: `status` names the source and rate, `samples` has the
/// kernel's addresses as `kernel`, `stacks` the kernel frames above the program's.
#[test]
fn a_rate_samples_the_kernel_for_the_program() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 rate=4000 exec\n").unwrap();
    kernel(&mut s).exec(10, 0x40_1000);
    kernel(&mut s).tick_stack(10, &[0x40_1010, 0x40_1805], false);
    // In a system call: the kernel's frames, then the program's below its `syscall`.
    let in_read = [0xffff_ffff_8001_2010, 0xffff_ffff_8000_0042, 0x40_1100, 0x40_1805];
    kernel(&mut s).tick_stack(10, &in_read, false);
    kernel(&mut s).tick_stack(10, &in_read, false);
    kernel(&mut s).exit(10);
    let st = status(&mut s);
    assert_eq!(
        (st["source"].as_str(), st["rate"].as_str(), st["ticks_user"].as_str(), st["ticks_kernel"].as_str()),
        ("nmi-hpet", "4000", "1", "2")
    );
    assert_eq!(text(&mut s, ALICE, "samples"), "0x401010 1 text\n0xffffffff80012010 2 kernel\n");
    assert_eq!(
        text(&mut s, ALICE, "stacks"),
        "2 complete kernel:0xffffffff80012010 kernel:0xffffffff80000042 text:0x401100 text:0x401805\n\
         1 complete text:0x401010 text:0x401805\n"
    );
    let stacks = prof_core::formats::parse_stacks(&text(&mut s, ALICE, "stacks"));
    assert_eq!(stacks[0].0[0], prof_core::formats::StackFrame::Kernel(0xffff_ffff_8001_2010));
    // The Minix bins stay the program's own: the kernel's samples are in none.
    assert_eq!(st["ticks_in_bins"], "1");

    // Without a rate the session samples on the timer tick, and says so.
    ctl(&mut s, BOB, "start 11 0 0 0 0x401000 0x402000\n").unwrap();
    let st = status(&mut s);
    assert_eq!((st["source"].as_str(), st["rate"].as_str()), ("timer", "246"));
    ctl(&mut s, BOB, "stop\n").unwrap();
}

#[test]
fn a_rate_out_of_range_is_einval() {
    let mut s = scheme(u64::MAX);
    for bad in ["rate=99", "rate=10001", "rate=0", "rate=", "rate=fast", "rate=1000 rate=1000"] {
        assert_eq!(ctl(&mut s, ALICE, &format!("start 10 0 0 0 {bad}\n")), Err(libc::EINVAL), "{bad}");
    }
    assert_eq!(status(&mut s)["state"], "idle");
    ctl(&mut s, ALICE, "start 10 0 0 0 rate=100\n").unwrap();
    assert_eq!(status(&mut s)["rate"], "100");
}
