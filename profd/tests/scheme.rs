//! The `prof:` scheme handler driven the way the Redox daemon drives it (open / write / read /
//! close with a caller uid), over the Redox backend reading the kernel's profiling rings, here
//! [`FakeDebugFiles`] filled with typed records as kernel-patch/events writes them: the whole
//! path from a record to `/scheme/prof/bins` runs on the host. What the files hold of a run's
//! clock, daemons and process tree is tests/upstream.rs's; here, the contract: the files, the
//! Minix rules, every errno, who may do what.

use prof_core::formats::parse_status;
use profd::scheme::{Access, Errno, ProfScheme};
use prof_core::{ProfData, Profd};
use prof_events::{Event, Ids};
use prof_samplers::fake_debug_files::FakeDebugFiles;
use prof_samplers::upstream_kernel::UpstreamSampler;

const ROOT: u32 = 0;
const ALICE: u32 = 1000;
const BOB: u32 = 1001;

type Scheme = ProfScheme<UpstreamSampler<FakeDebugFiles>>;

/// The kernel's debug id of pid `pid`'s main thread.
fn thread(pid: u32) -> u32 {
    pid * 2 + 1
}

/// A kernel that writes typed records, with alice's fib (pid 10) and bob's (pid 11) running,
/// its clocks 2 TSC ticks a ns, and bin counters that stop at `limit`.
fn scheme(limit: u64) -> Scheme {
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], typed_records: true, rates: true, ..Default::default() };
    files.contexts = format!(
        "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
         1     0     0     UB    0     0-1        00:00:00.01 1 MB    0 B     /scheme/initfs/bin/init\n\
         10    {ALICE}  {ALICE}  UR    0     0-1        00:00:00.00 1 MB    0 B     /usr/bin/fib\n\
         11    {BOB}  {BOB}  UR    0     0-1        00:00:00.00 1 MB    0 B     /usr/bin/fib\n"
    );
    for pid in [10, 11] {
        files.pids.insert(thread(pid), pid);
        files.names.insert(thread(pid), "/usr/bin/fib".into());
    }
    (files.now, files.tick) = ((1_000_000, 0), (2_000_000, 1_000_000));
    ProfScheme::new(Profd::new(UpstreamSampler::new(files)).with_counter_limit(limit))
}

fn kernel(s: &mut Scheme) -> &mut FakeDebugFiles {
    s.profd_mut().sampler_mut().files()
}

/// A sample of pid `pid`'s main thread at `ip` (a kernel address: in the kernel).
fn tick(s: &mut Scheme, pid: u32, ip: u64) {
    kernel(s).sample(0, thread(pid), ip, &[]);
}

/// A sample with its stack, innermost first.
fn tick_stack(s: &mut Scheme, pid: u32, frames: &[u64]) {
    kernel(s).sample(0, thread(pid), frames[0], &frames[1..]);
}

/// Pid `pid` begins its new image.
fn exec(s: &mut Scheme, pid: u32) {
    let k = kernel(s);
    k.sample_time += 1;
    let who = Ids { pid: Some(pid), thread: thread(pid) };
    k.record(0, Event::Exec { cpu: 0, time: k.sample_time, who, entry: 0x40_1000 });
}

/// Pid `pid` is gone from `sys:context` (a zombie).
fn exit(s: &mut Scheme, pid: u32) {
    let k = kernel(s);
    let row = format!("{pid}    ");
    k.contexts = k.contexts.lines().map(|l| if l.starts_with(&row) { l.replacen(" UR ", " UZ ", 1) } else { l.to_string() } + "\n").collect();
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
    // Text 0x401000..0x402000; Redox programs run at their link addresses (load base 0).
    ctl(&mut s, ALICE, "start 10 0x401000 0x401400 0x100 0x401000 0x402000\n").unwrap();
    assert_eq!(status(&mut s)["state"], "running");
    for pc in [0x401000, 0x401001, 0x4010ff, 0x401300, 0x401500] {
        tick(&mut s, 10, pc);
    }
    tick(&mut s, 10, 0xffff_8000_0000_1000);
    tick(&mut s, 11, 0x401000); // another process: not counted
    exit(&mut s, 10);

    let st = status(&mut s);
    assert_eq!(
        (st["state"].as_str(), st["reason"].as_str(), st["pid"].as_str()),
        ("stopped", "exit", "10")
    );
    assert_eq!((st["ticks_in_bins"].as_str(), st["ticks_user"].as_str()), ("4", "5"));
    assert_eq!((st["ticks_kernel"].as_str(), st["dropped"].as_str(), st["load_base"].as_str()), ("1", "0", "0x0"));
    assert_eq!(st["ticks_other"], "1");

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
    assert_eq!(text(&mut s, ROOT, ""), "ctl\nstatus\nbins\ndata\nsamples\nstacks\nservers\nclock\nchildren\nthreads\ntimeline\nrequests\n");
    assert_eq!(s.open_files(), 0);
}

/// The call stacks of the kernel's frame-pointer walk in `/scheme/prof/stacks`: program
/// frames as `text`, others as they ran, most samples first; a stack as deep as the kernel's
/// walk goes is `truncated`. Read across two snapshots, the counts add up.
#[test]
fn stacks_through_the_scheme() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x403000").unwrap();
    let (c, a, b, main, libc) = (0x40_1310, 0x40_1105, 0x40_1205, 0x40_1005, 0x7f00_0000_1234);
    for _ in 0..3 {
        tick_stack(&mut s, 10, &[c, a, main, libc]);
    }
    // A recursion deeper than the walk: its stack is cut short.
    let deep: Vec<u64> = std::iter::once(c).chain(std::iter::repeat_n(a, 40)).collect();
    tick_stack(&mut s, 10, &deep);
    let first = text(&mut s, ALICE, "stacks");
    tick_stack(&mut s, 10, &[c, b, main, libc]);
    tick_stack(&mut s, 10, &[c, a, main, libc]);
    exit(&mut s, 10);
    let all = text(&mut s, ALICE, "stacks");
    let deep_line = format!("1 truncated text:0x401310{}\n", " text:0x401105".repeat(40));
    assert_eq!(first, format!("3 complete text:0x401310 text:0x401105 text:0x401005 other:0x7f0000001234\n{deep_line}"));
    assert_eq!(
        all,
        format!(
            "4 complete text:0x401310 text:0x401105 text:0x401005 other:0x7f0000001234\n\
             {deep_line}\
             1 complete text:0x401310 text:0x401205 text:0x401005 other:0x7f0000001234\n"
        )
    );
    use prof_core::formats::{parse_stacks, StackFrame::*};
    let parsed = parse_stacks(&all);
    assert_eq!(parsed[2], (vec![Text(0x40_1310), Text(0x40_1205), Text(0x40_1005), Other(0x7f00_0000_1234)], false, 1));
    assert_eq!(parsed.len(), 3);
    // Only root or the starter may read them.
    assert_eq!(read(&mut s, BOB, "stacks"), Err(libc::EPERM));
}

/// `servers` without a session: the header alone; without the header, nothing a client
/// takes for a report.
#[test]
fn servers_without_a_session_is_its_header() {
    let mut s = scheme(u64::MAX);
    assert_eq!(
        text(&mut s, BOB, "servers"),
        "# own_user=0 own_kernel=0 server_user=0 server_kernel=0 servers_dropped=0 idle=0 other=0 total=0\n"
    );
    assert_eq!(prof_core::formats::parse_servers("garbage\n"), None);
    // Nothing of the clock either.
    assert_eq!(text(&mut s, BOB, "clock"), "");
}

/// A session on every process has no program whose exit ends it: it ends when the `ctl` file
/// that started it is closed (a `profil -a` killed with SIGKILL: the kernel closes its files),
/// its data still readable. A one-program session outlives its starter's file, as before.
#[test]
fn a_session_on_every_process_ends_with_its_starters_file() {
    let mut s = scheme(u64::MAX);
    assert_eq!(ctl(&mut s, ALICE, "start all"), Err(libc::EPERM));
    assert_eq!(ctl(&mut s, ROOT, "start all exec"), Err(libc::EINVAL));
    let starter = s.open("ctl", Access::Write, ROOT).unwrap();
    s.write(starter, b"start all", ROOT).unwrap();
    tick(&mut s, 10, 0x40_1100);
    // Another file of root's, opened and closed meanwhile, ends nothing.
    assert_eq!(ctl(&mut s, ROOT, "start 10 0 0 0"), Err(libc::EBUSY));
    assert_eq!(status(&mut s)["state"], "running");
    s.close(starter);
    let st = status(&mut s);
    assert_eq!((st["pid"].as_str(), st["state"].as_str(), st["reason"].as_str()), ("0", "stopped", "request"));
    assert!(text(&mut s, ROOT, "servers").contains("server 10 1 /usr/bin/fib\n"));
    // Root's to read, as any session is its starter's.
    assert_eq!(read(&mut s, ALICE, "servers"), Err(libc::EPERM));
    // A new session may start at once; a program's session survives its starter's file.
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    assert_eq!(status(&mut s)["state"], "running");
}

#[test]
fn a_launch_counts_the_program_only_from_its_exec() {
    let mut s = scheme(u64::MAX);
    // profil's flow on Redox: start on the forked child with `exec`. Until the exec, the child
    // runs relibc's exec code in profil's own image, which (static, linked at 0x401000 like
    // every Redox program) overlaps the program's text: none of it may be counted.
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x45e0d6 exec\n").unwrap();
    for pc in [0x40_2345, 0x41_0000, 0x7fff_0000_1000] {
        tick(&mut s, 10, pc);
    }
    tick(&mut s, 10, 0xffff_8000_0000_1000);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["ticks_user"].as_str(), st["ticks_kernel"].as_str()), ("running", "0", "0"));
    exec(&mut s, 10);
    tick(&mut s, 10, 0x40_2000);
    tick(&mut s, 10, 0x40_2000);
    tick(&mut s, 10, 0xffff_8000_0000_1000);
    exit(&mut s, 10);
    let st = status(&mut s);
    assert_eq!(
        (st["reason"].as_str(), st["ticks_user"].as_str(), st["ticks_in_bins"].as_str(), st["ticks_kernel"].as_str()),
        ("exit", "2", "2", "1")
    );
    assert_eq!(text(&mut s, ALICE, "samples"), "0x402000 2 text\n0xffff800000001000 1 kernel\n");

    // Without `exec` (attaching to a running process) counting starts at once.
    ctl(&mut s, BOB, "start 11 0 0 0 0x401000 0x45e0d6\n").unwrap();
    tick(&mut s, 11, 0x40_2345);
    assert_eq!(status(&mut s)["ticks_user"], "1");
}

#[test]
fn a_session_whose_process_exited_does_not_block_the_next_start() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    tick(&mut s, 10, 0x401000);
    exit(&mut s, 10);
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
    // A write with no command at all is malformed too (`echo -n > ctl`, a stray newline).
    for nothing in ["", "\n", "  \n\t\n"] {
        assert_eq!(ctl(&mut s, ROOT, nothing), Err(libc::EINVAL), "{nothing:?}");
    }
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
    kernel(&mut s).fail_reads = true;
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
    for path in ["bins", "data", "samples", "stacks", "servers", "clock", "children", "threads", "timeline", "requests"] {
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
    tick(&mut s, 10, 0x401010);
    exit(&mut s, 10);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str(), st["ticks_in_bins"].as_str()), ("stopped", "exit", "1"));
    // The last profile stays readable until the next start.
    assert!(text(&mut s, ALICE, "bins").contains("total=1"));
    ctl(&mut s, BOB, "start 11 0 0 0").unwrap();
    assert_eq!(status(&mut s)["ticks_in_bins"], "0");
}

/// Bin counters that stop at 3: the fourth tick in a bin ends the session with overflow,
/// uncounted, as Minix's clock handler does.
#[test]
fn a_bin_counters_overflow_ends_the_session() {
    let mut s = scheme(3);
    ctl(&mut s, ALICE, "start 10 0x401000 0x401100 0x100 0x400000 0x500000").unwrap();
    for _ in 0..5 {
        tick(&mut s, 10, 0x401000);
    }
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str(), st["ticks_user"].as_str()), ("stopped", "overflow", "3"));
}

#[test]
fn reads_are_consistent_snapshots() {
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x400000 0x500000").unwrap();
    tick(&mut s, 10, 0x401000);
    let id = s.open("status", Access::Read, ALICE).unwrap();
    let mut first = [0u8; 20];
    let n = s.read(id, &mut first, 0).unwrap();
    // More ticks between two reads of one open file do not change what that file shows ...
    tick(&mut s, 10, 0x401000);
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
    use profd::scheme::UNPOSITIONED;
    let mut s = scheme(u64::MAX);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x400000 0x500000").unwrap();
    tick(&mut s, 10, 0x401000);
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
    use profd::scheme::FileStat;
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
    for (name, _) in profd::scheme::ENTRIES {
        let id = s.open(name, Access::Path, BOB).unwrap();
        assert!(s.stat(id).is_ok(), "{name}");
        s.close(id);
    }
}

#[test]
fn ls_and_stat_see_a_directory_of_twelve_files() {
    use profd::scheme::FileStat;
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
    assert_eq!(all, vec![(0, "ctl"), (1, "status"), (2, "bins"), (3, "data"), (4, "samples"), (5, "stacks"), (6, "servers"), (7, "clock"), (8, "children"), (9, "threads"), (10, "timeline"), (11, "requests")]);
    // A small buffer: the listing resumes at the index after the last entry given.
    assert_eq!(list(&s, 0, 2).unwrap(), vec![(0, "ctl"), (1, "status")]);
    assert_eq!(list(&s, 2, usize::MAX).unwrap(), all[2..].to_vec());
    assert_eq!(list(&s, 12, usize::MAX).unwrap(), vec![]);
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
    for (name, _) in profd::scheme::ENTRIES {
        let access = if name == "ctl" { Access::Write } else { Access::Read };
        let id = s.open(name, access, ROOT).unwrap();
        inodes.push(s.stat(id).unwrap().inode);
        s.close(id);
    }
    assert_eq!(inodes, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    assert_eq!(s.path(status_id).unwrap(), "/scheme/prof/status");
    for id in [root, ctl_id, status_id] {
        s.close(id);
    }
    assert_eq!(s.stat(root), Err(libc::EBADF));
    assert_eq!(s.path(root), Err(libc::EBADF));
    assert_eq!(s.dir_entries(root, 0, |_, _| true), Err(libc::EBADF));
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
