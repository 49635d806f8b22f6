//! The `prof:` scheme over upstream's own profiler (a stock kernel built with its `profiling`
//! feature): records as upstream's NMI handler writes them into its rings, names as its
//! `DBG_ID_MAP` gives them, a `sys:context` table; the whole path from a record to
//! `/scheme/prof/status`, `samples`, `stacks` and `servers` runs on the host.

use prof_core::formats::parse_status;
use profd::scheme::{Access, ProfScheme};
use prof_core::Profd;
use prof_samplers::fake_debug_files::FakeDebugFiles;
use prof_samplers::upstream_kernel::UpstreamSampler;

type Scheme = ProfScheme<UpstreamSampler<FakeDebugFiles>>;

const ALICE: u32 = 1000;
const K: u64 = 0xffff_ffff_8000_1000;

/// `sys:context` as the kernel writes it: pid 10 (alice's) named `name`, in state `stat`.
fn contexts(name: &str, stat: &str) -> String {
    format!(
        "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
         1     0     0     UB    0     0-1        00:00:00.01 1 MB    0 B     /scheme/initfs/bin/init\n\
         7     0     0     UB    0     0-1        00:00:00.02 1 MB    0 B     /scheme/initfs/bin/ramfs\n\
         10    {ALICE}  {ALICE}  {stat}    0     0-1        00:00:00.00 1 MB    0 B     {name}\n"
    )
}

fn scheme() -> Scheme {
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], contexts: contexts("/usr/bin/profil", "UB"), ..Default::default() };
    // debug_ids as procmgr named them: the kmain context, init, ramfs, the profil that
    // launched, and its forked child (pid 10, the newest with profil's name).
    for (id, name) in [(1, "[kmain]"), (2, "/scheme/initfs/bin/init"), (5, "/scheme/initfs/bin/ramfs"), (20, "/usr/bin/profil"), (21, "/usr/bin/profil")] {
        files.names.insert(id, name.into());
    }
    // Reads of 20 bytes: records and words cut across reads, as a small buffer gives them.
    files.read_limit = 20;
    ProfScheme::new(Profd::new(UpstreamSampler::new(files)))
}

fn files(s: &mut Scheme) -> &mut FakeDebugFiles {
    s.profd_mut().sampler_mut().files()
}

fn ctl(s: &mut Scheme, uid: u32, line: &str) -> Result<(), i32> {
    let id = s.open("ctl", Access::Write, uid)?;
    let r = s.write(id, line.as_bytes(), uid).map(|_| ());
    s.close(id);
    r
}

fn text(s: &mut Scheme, uid: u32, path: &str) -> String {
    let id = s.open(path, Access::Read, uid).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let n = s.read(id, &mut buf, 0).unwrap();
    s.close(id);
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn status(s: &mut Scheme) -> std::collections::HashMap<String, String> {
    parse_status(&text(s, ALICE, "status")).into_iter().collect()
}

/// A session of alice's started with `line` on a kernel that writes typed records, whose
/// clocks read 2 TSC ticks a ns (profd's calibration ends at TSC 3,000,000, 1 ms, and the
/// clocks are read 1 ms apart after it).
fn typed_session(line: &str) -> Scheme {
    let mut s = scheme();
    let f = files(&mut s);
    f.typed_records = true;
    f.clocks_measured_up_to((3_000_000, 1_000_000), (2_000_000, 1_000_000));
    ctl(&mut s, ALICE, line).unwrap();
    s
}

fn who(pid: u32, thread: u32) -> prof_events::Ids {
    prof_events::Ids { pid: Some(pid), thread }
}

/// A user sample of `who` at `ip`, taken at TSC `tsc` by the NMI.
fn nmi_sample(tsc: u64, who: prof_events::Ids, ip: u64) -> prof_events::Event {
    let source = Some(prof_events::layout::Source::NmiIpi);
    let sample = prof_events::Sample { cpu: 0, time: tsc, who, kernel: false, source, ip, kernel_frames: vec![], user_frames: vec![] };
    prof_events::Event::Sample(sample)
}

/// `profil fib` on a stock kernel: the program's context is the newest one bearing its pid's
/// name at the start; its samples before its exec (profil's launch code) are not counted; a
/// thread it starts counts with it; another process's samples are the rest; its exit ends the
/// session; the source says it is upstream's.
#[test]
fn a_program_on_upstreams_profiler() {
    let mut s = scheme();
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 exec").unwrap();
    assert!(files(&mut s).on(), "profiling switched on");
    // The launch, before the exec: profil's code.
    files(&mut s).sample(0, 21, 0x40_1800, &[0x0]);
    assert_eq!(status(&mut s)["ticks_user"], "0");
    // The exec: procmgr renames the context and the process.
    let f = files(&mut s);
    f.names.insert(21, "/usr/bin/fib".into());
    f.contexts = contexts("/usr/bin/fib", "UR");
    for _ in 0..3 {
        f.sample(0, 21, 0x40_1100, &[0x0]);
    }
    // A system call: kernel frames, then the call's user address, then the broken user walk.
    f.sample(0, 21, K, &[K + 0x10, 0x40_1200, 0x0]);
    // A thread fib started (its own context, fib's name); ramfs; the kmain context.
    f.names.insert(22, "/usr/bin/fib".into());
    f.sample(0, 22, 0x40_1150, &[]);
    f.sample(0, 5, 0x40_2000, &[]);
    f.sample(0, 1, K + 0x40, &[]);
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["ticks_user"].as_str(), st["ticks_kernel"].as_str()), ("running", "4", "1"));
    assert_eq!((st["source"].as_str(), st["rate"].as_str()), ("nmi-ipi", "0"));
    assert_eq!(text(&mut s, ALICE, "samples"), "0x401100 3 text\n0x401150 1 text\n0xffffffff80001000 1 kernel\n");
    // The kernel sample's stack: its address, its kernel frames, the system call's user address.
    assert_eq!(
        text(&mut s, ALICE, "stacks"),
        "3 truncated text:0x401100\n1 truncated text:0x401150\n1 truncated kernel:0xffffffff80001000 kernel:0xffffffff80001010 text:0x401200\n"
    );
    // It exits (a zombie until profil reaps it): the session ends, profiling is switched off.
    files(&mut s).contexts = contexts("/usr/bin/fib", "UZ");
    let st = status(&mut s);
    assert_eq!((st["state"].as_str(), st["reason"].as_str()), ("stopped", "exit"));
    assert!(!files(&mut s).on());
    // Samples after the end are not the session's.
    assert_eq!(status(&mut s)["ticks_user"], "4");
}

/// `profil -a` on a stock kernel: every context by its debug_id and name, user and kernel
/// samples alike; a record the full ring cut short is lost, not read.
#[test]
fn every_context_on_upstreams_profiler() {
    let mut s = scheme();
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all", 0).unwrap();
    let f = files(&mut s);
    f.sample(0, 21, 0x40_1100, &[0x0]);
    f.sample(0, 21, 0x40_1100, &[0x0]);
    f.sample(0, 5, K, &[K + 0x10]);
    // A record the ring cut short: 2 of its 5 words, then the next record.
    let cut = f.rings[0].len();
    f.sample(0, 5, 0x40_2000, &[0x1]);
    f.rings[0].truncate(cut + 16);
    f.sample(0, 99, 0x40_3000, &[]);
    s.write(starter, b"stop", 0).unwrap();
    s.close(starter);
    let servers = text(&mut s, 0, "servers");
    assert!(servers.contains("server 21 2 /usr/bin/profil\n"), "{servers}");
    assert!(servers.contains("server 5 1 /scheme/initfs/bin/ramfs\n"), "{servers}");
    assert!(servers.contains("server 99 1 [context 99]\n"), "{servers}");
    assert_eq!(status(&mut s)["dropped"], "1");
}

/// `profil fib` on a kernel that writes typed records (our series, told `2`): each sample has
/// its pid, so the program's samples are exactly its pid's: a thread it named otherwise counts,
/// another process of the same program does not; its exec record says where counting starts;
/// records the full ring refused are counted.
#[test]
fn a_program_on_typed_records() {
    use prof_events::{Event, Ids};
    let mut s = scheme();
    let f = files(&mut s);
    f.typed_records = true;
    // Its TSC runs at 1 GHz (a ns a tick), its calibration ending at 1,000, and its samples
    // come 1,000 ticks apart from 0.
    f.clocks_measured_up_to((1_000, 1_000), (1_000, 1_000));
    f.sample_gap = 1_000;
    for (id, pid) in [(1, 0), (5, 7), (20, 9), (21, 10), (22, 10), (30, 11)] {
        f.pids.insert(id, pid);
    }
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 exec").unwrap();
    assert_eq!(files(&mut s).mode, prof_samplers::upstream_kernel::Recording::Typed);
    let f = files(&mut s);
    // profil's launch code, before the exec: not fib's.
    f.sample(0, 21, 0x40_1800, &[]);
    f.record(0, Event::Exec { cpu: 0, time: f.sample_time + 1, who: Ids { pid: Some(10), thread: 21 }, entry: 0x40_1000 });
    f.sample(0, 21, 0x40_1100, &[0x40_1500]);
    // fib's thread, which named itself; another fib (pid 11, a context newer than fib's).
    f.names.insert(22, "worker".into());
    f.sample(0, 22, 0x40_1150, &[]);
    f.names.insert(30, "/usr/bin/fib".into());
    f.sample(0, 30, 0x40_1100, &[]);
    // A system call of fib's: kernel frames, then the call's user address and its caller.
    f.sample(0, 21, K, &[K + 0x10, 0x40_1200, 0x40_1500]);
    // The ring had no room for 3 records; then ramfs.
    f.lost = 3;
    f.sample(0, 5, 0x40_2000, &[]);
    let st = status(&mut s);
    assert_eq!((st["ticks_user"].as_str(), st["ticks_kernel"].as_str(), st["dropped"].as_str()), ("2", "1", "3"));
    assert_eq!(text(&mut s, ALICE, "samples"), "0x401100 1 text\n0x401150 1 text\n0xffffffff80001000 1 kernel\n");
    // Whole stacks: the series reads user frames right.
    assert_eq!(
        text(&mut s, ALICE, "stacks"),
        "1 complete text:0x401100 text:0x401500\n1 complete text:0x401150\n1 complete kernel:0xffffffff80001000 kernel:0xffffffff80001010 text:0x401200 text:0x401500\n"
    );
    // By thread (`--threads`): the context is the thread.
    assert_eq!(
        text(&mut s, ALICE, "threads"),
        "21 0x401100 1 text\n21 0xffffffff80001000 1 kernel\n22 0x401150 1 text\n"
    );
    // In time order, from the session's start (TSC 1,000): each sample's thread, place and
    // stack (its line in `stacks`); the launch's sample and the other fib's are not fib's.
    assert_eq!(
        text(&mut s, ALICE, "timeline"),
        "timeline 2 span 5000\n1000 21 text:0x401100 0\n2000 22 text:0x401150 1\n4000 21 kernel:0xffffffff80001000 2\n"
    );
    files(&mut s).contexts = contexts("/usr/bin/fib", "UZ");
    assert_eq!(status(&mut s)["reason"], "exit");
    assert_eq!(files(&mut s).mode, prof_samplers::upstream_kernel::Recording::Off);
}

/// A stock kernel refuses typed records (`2`: EINVAL): the session takes upstream's.
#[test]
fn a_stock_kernel_is_asked_for_upstreams_records() {
    let mut s = scheme();
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 exec").unwrap();
    assert_eq!(files(&mut s).mode, prof_samplers::upstream_kernel::Recording::Upstream);
}

/// `-F`: a kernel with the rate patch is told `2 4000` and the status says 4000; one with
/// typed records but no rates (EINVAL to a longer write) is told `2`; a stock kernel `1`; the
/// status then says the kernel's rate (0).
#[test]
fn the_rate_asked_where_the_kernel_takes_one() {
    use prof_samplers::upstream_kernel::Recording;
    let start = "start 10 0 0 0 0x401000 0x402000 rate=4000 exec";
    for (typed_records, rates, mode, told, said) in [
        (true, true, Recording::Typed, Some(4000), "4000"),
        (true, false, Recording::Typed, None, "0"),
        (false, false, Recording::Upstream, None, "0"),
    ] {
        let mut s = scheme();
        let f = files(&mut s);
        (f.typed_records, f.rates) = (typed_records, rates);
        ctl(&mut s, ALICE, start).unwrap();
        let f = files(&mut s);
        assert_eq!((f.mode, f.rate), (mode, told), "typed {typed_records} rates {rates}");
        f.contexts = contexts("/usr/bin/fib", "UR");
        let st = status(&mut s);
        assert_eq!((st["source"].as_str(), st["rate"].as_str()), ("nmi-ipi", said), "typed {typed_records} rates {rates}");
    }
}

/// The records' clock: on a stock kernel too, profd measures the TSC at the start and times
/// the session by its records: the rate the NMIs came at (one every 2,000,000 ticks at 2
/// ticks a ns: 1000 a second), and the span from the first record to the last.
#[test]
fn the_rate_sent_and_the_span_by_the_records_clock() {
    let mut s = scheme();
    let f = files(&mut s);
    (f.now, f.tick, f.sample_gap) = ((1_000_000, 0), (2_000_000, 1_000_000), 2_000_000);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 rate=4000").unwrap();
    let f = files(&mut s);
    assert_eq!(f.rate, None, "a stock kernel takes no rate");
    for i in 0..41u64 {
        f.sample(0, if i % 4 == 0 { 5 } else { 21 }, 0x40_1100, &[]);
    }
    let st = status(&mut s);
    assert_eq!((st["rate"].as_str(), st["rate_sent"].as_str(), st["span_ns"].as_str()), ("0", "1000", "40000000"));
}

/// Under QEMU's TCG the guest's monotonic clock now and then loses a timer tick against the
/// TSC: in the first of the calibration's windows it does here (4 of 20 ms), which read alone
/// would make every time 20 % short and the rate 1250; the other windows outvote it.
#[test]
fn a_calibration_window_whose_clock_lost_a_tick_does_not_skew_the_rate() {
    let mut s = scheme();
    let f = files(&mut s);
    let ms = |n: u64| (1_000_000 + 2_000_000 * n, 1_000_000 * n);
    f.early = vec![ms(0), (ms(20).0, ms(16).1), (ms(40).0, ms(36).1), (ms(60).0, ms(56).1)];
    (f.now, f.tick, f.sample_gap) = ((ms(61).0, ms(57).1), (2_000_000, 1_000_000), 2_000_000);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    let f = files(&mut s);
    f.sample_time = ms(61).0;
    for i in 0..41u64 {
        f.sample(0, if i % 4 == 0 { 5 } else { 21 }, 0x40_1100, &[]);
    }
    let st = status(&mut s);
    assert_eq!((st["rate_sent"].as_str(), st["span_ns"].as_str()), ("1000", "40000000"));
}

/// A typed session's start record as the kernel writes it on CPU 0 at TSC `time`, stating
/// its clock's rate `hz` (0: the kernel does not know it).
fn start_record(time: u64, hz: u64) -> prof_events::Event {
    let version = prof_events::Version::OURS;
    prof_events::Event::Start(prof_events::Start { cpu: 0, time, version, clock_hz: Some(hz).filter(|&hz| hz != 0), session: 1 })
}

/// The kernel's start record states its clock's rate: `status` says it (`clock_hz`), 0 where
/// the kernel does not know it, and 0 on a stock kernel, which writes no start record. The
/// session still times its records by profd's own measurement against the monotonic clock
/// (here 2 ticks a ns: 1000 a second, not the 800 the stated 2.5 GHz would make of it).
#[test]
fn the_kernels_clock_rate_is_in_status() {
    for (hz, said) in [(2_500_000_000, "2500000000"), (0, "0")] {
        let mut s = typed_session("start 10 0 0 0 0x401000 0x402000");
        let f = files(&mut s);
        f.pids.insert(21, 10);
        (f.sample_time, f.sample_gap) = (5_000_000, 2_000_000);
        f.record(0, start_record(5_000_000, hz));
        for _ in 0..41 {
            f.sample(0, 21, 0x40_1100, &[]);
        }
        let st = status(&mut s);
        let got = (st["clock_hz"].as_str(), st["rate_sent"].as_str(), st["span_ns"].as_str());
        assert_eq!(got, (said, "1000", "40000000"), "hz {hz}");
    }
    let mut s = scheme();
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    files(&mut s).sample(0, 21, 0x40_1100, &[]);
    assert_eq!(status(&mut s)["clock_hz"], "0");
}

/// Where profd's readings of the clocks give no rate (here the monotonic clock stands still
/// through the calibration), the kernel's stated rate times the records: 2 GHz, a sample
/// every 2,000,000 ticks, 1000 a second.
#[test]
fn the_kernels_clock_rate_where_the_clocks_give_none() {
    let mut s = scheme();
    let f = files(&mut s);
    f.typed_records = true;
    f.pids.insert(21, 10);
    (f.now, f.tick) = ((3_000_000, 1_000_000), (2_000_000, 0));
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    let st = status(&mut s);
    assert_eq!((st["rate_sent"].as_str(), st["span_ns"].as_str()), ("0", "0"), "no rate yet");
    let f = files(&mut s);
    (f.sample_time, f.sample_gap) = (20_000_000, 2_000_000);
    f.record(0, start_record(20_000_000, 2_000_000_000));
    for _ in 0..41 {
        f.sample(0, 21, 0x40_1100, &[]);
    }
    let st = status(&mut s);
    let got = (st["clock_hz"].as_str(), st["rate_sent"].as_str(), st["span_ns"].as_str());
    assert_eq!(got, ("2000000000", "1000", "40000000"));
}

/// One CPU (kernel-patch/events): the kernel samples at its timer tick, so the source is the
/// timer, and the CPU's idle context (`[kmain]`, debug id 1, no pid) is sampled: its ticks are
/// idle's, not another process's.
#[test]
fn one_cpu_samples_at_the_tick_and_idle_is_counted() {
    let mut s = scheme();
    let f = files(&mut s);
    (f.typed_records, f.ticks_sample) = (true, true);
    f.pids.insert(21, 10);
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000").unwrap();
    let f = files(&mut s);
    f.contexts = contexts("/usr/bin/fib", "UR");
    for _ in 0..3 {
        f.sample(0, 21, 0x40_1100, &[]);
    }
    f.sample(0, 1, K + 0x40, &[K + 0x80]);
    f.sample(0, 1, K + 0x40, &[K + 0x80]);
    // ramfs (pid 7): another process.
    f.pids.insert(5, 7);
    f.sample(0, 5, 0x40_2000, &[]);
    let st = status(&mut s);
    assert_eq!((st["source"].as_str(), st["records"].as_str()), ("timer", "typed"));
    assert_eq!((st["ticks_user"].as_str(), st["ticks_idle"].as_str(), st["ticks_other"].as_str()), ("3", "2", "1"));
}

/// The program's threads by the clock from a typed session's switch records, served as
/// `prof:clock` in the kernel account's own text: a thread's time on a CPU, preempted and
/// blocked add up to its span, and its block in a scheme call is a wait site with the user
/// stack it wrote as it blocked. The TSC becomes ns by the rate profd measured at the start.
/// The daemon's thread that took the call's request (its scheme and tag) works for the program
/// until it answers: its samples (not its other threads') are the daemons' ticks for it,
/// stitched under that wait.
#[test]
fn the_clock_from_switch_records() {
    use prof_events::layout::{scheme_call, Reason, Source};
    use prof_events::{Event, Ids, Sample, Switch};
    let mut s = typed_session("start 10 0 0 0 0x401000 0x402000 exec");
    let f = files(&mut s);
    f.names.insert(21, "/usr/bin/fib".into());
    let switch = |tsc, left, entered, reason, detail| {
        Event::Switch(Switch { cpu: 0, time: tsc, left, entered, reason: Some(reason), detail, stack: vec![] })
    };
    let request = |tsc, daemon, caller: u32, tag, answered| Event::Request {
        cpu: 0,
        time: tsc,
        daemon,
        caller: Ids { pid: Some(caller), thread: 0 },
        scheme: 24,
        tag,
        answered,
    };
    let sample = nmi_sample;
    let (fib, worker, ramfs, other) = (who(10, 21), who(10, 22), who(7, 5), who(11, 30));
    // Where fib blocks in its read (a sample of source Block, its user stack).
    let blocks = |tsc| {
        Event::Sample(Sample {
            cpu: 0,
            time: tsc,
            who: fib,
            kernel: false,
            source: Some(Source::Block),
            ip: 0x40_1100,
            kernel_frames: vec![],
            user_frames: vec![0x40_1500],
        })
    };
    let named = |tsc, who, name: &str| Event::Name { cpu: 0, time: tsc, who, name: name.into() };
    // The exec (profil's launch before it is not fib's); in at 1.0 ms; a call to ramfs
    // (scheme 24, tag 7) at 1.2 ms, which ramfs takes, works on and answers; fib back at 1.4;
    // preempted at 1.6 by its new thread (made at 1.5), which exits at 1.7; fib back at 1.8;
    // the batch reads the clock at 2.0 ms. ramfs's work for another process is not fib's.
    for e in [
        switch(2_500_000, fib, ramfs, Reason::Scheme, scheme_call(24, 3)),
        request(2_600_000, ramfs, 10, 3, false),
        sample(2_700_000, ramfs, 0x50_0100),
        Event::Exec { cpu: 0, time: 2_900_000, who: fib, entry: 0x40_1000 },
        named(2_950_000, fib, "/usr/bin/fib"),
        switch(3_000_000, ramfs, fib, Reason::SchemeIdle, 0),
        blocks(3_400_000),
        // ramfs takes the request a moment before fib's switch is recorded.
        request(3_390_000, ramfs, 10, 7, false),
        switch(3_400_000, fib, ramfs, Reason::Scheme, scheme_call(24, 7)),
        sample(3_500_000, ramfs, 0x50_0000),
        // ramfs's other thread, spinning for nobody while its first works for fib: not fib's.
        sample(3_600_000, who(7, 6), 0x50_0400),
        request(3_700_000, ramfs, 10, 7, true),
        sample(3_750_000, ramfs, 0x50_0200),
        switch(3_800_000, ramfs, fib, Reason::SchemeIdle, 0),
        named(4_000_000, worker, "/usr/bin/fib"),
        switch(4_200_000, fib, worker, Reason::Preempted, 0),
        switch(4_400_000, worker, other, Reason::Exit, 0),
        request(4_450_000, ramfs, 11, 9, false),
        sample(4_500_000, ramfs, 0x50_0300),
        switch(4_600_000, other, fib, Reason::Sleep, 0),
        // fib's next call reuses the tag: the same wait site, ramfs's work stitched under it.
        blocks(4_700_000),
        switch(4_700_000, fib, ramfs, Reason::Scheme, scheme_call(24, 7)),
        request(4_710_000, ramfs, 10, 7, false),
        sample(4_720_000, ramfs, 0x50_0000),
        request(4_730_000, ramfs, 10, 7, true),
        switch(4_740_000, ramfs, fib, Reason::SchemeIdle, 0),
    ] {
        f.record(0, e);
    }
    f.contexts = contexts("/usr/bin/fib", "UZ");
    assert_eq!(status(&mut s)["reason"], "exit");
    let clock = text(&mut s, ALICE, "clock");
    let lines: Vec<&str> = clock.lines().collect();
    // The worker: made at 1.5 ms, on a CPU from its first switch in at 1.6 until its exit at
    // 1.7; before its first switch in, off the CPU (the ledger's rule: as blocked, one block).
    assert_eq!(
        &lines[..4],
        [
            "clock version=1 state=stopped pid=10 begin=1000000 end=2000000 at=2000000 threads_dropped=0 sites_dropped=0 served_dropped=0",
            "thread tid=21 begin=1000000 end=2000000 on_cpu=580000 preempted=200000 blocked=220000 blocks=2",
            "thread tid=22 begin=1500000 end=1700000 on_cpu=100000 preempted=0 blocked=100000 blocks=1",
            "site id=0 tid=21 reason=scheme-call scheme=24 count=2 ns=220000 truncated=0 frames=401100,401500",
        ],
        "{clock}"
    );
    assert_eq!(
        &lines[4..6],
        ["scheme id=24 daemon=7 name=/scheme/initfs/bin/ramfs", "served site=0 daemon=7 count=2 truncated=0 frames=500000"],
        "{clock}"
    );
    // ramfs's two samples while it worked for fib; before fib's exec, after its answer, for
    // another process, and its other thread's meanwhile, not fib's.
    let servers = text(&mut s, ALICE, "servers");
    assert!(servers.contains("server 7 2 /scheme/initfs/bin/ramfs\n"), "{servers}");
}

/// `profil --children sh -c …` on typed records: a process whose first context the program
/// (or a child it follows) gave its address space is followed, even where procmgr names it only
/// after; its samples are its own (not the program's, not the others'), its exec is named as
/// procmgr names it (before the exec's record or after), and it has exited when its last thread
/// has. The program's own exec after the profiled one is said in `status` (`later_execs`).
#[test]
fn children_from_records() {
    use prof_events::layout::Reason;
    use prof_events::{Event, Ids, Switch};
    let mut s = typed_session("start 10 0 0 0 0x401000 0x402000 children exec");
    let (sh, child, grandchild, other) = (who(10, 21), who(12, 31), who(13, 41), who(11, 30));
    let sample = nmi_sample;
    let f = files(&mut s);
    for e in [
        Event::Exec { cpu: 0, time: 2_900_000, who: sh, entry: 0x40_1000 },
        sample(3_000_000, sh, 0x40_1100),
        // sh forks pid 12 (named already) and the child forks pid 13 before procmgr names it.
        Event::NewThread { cpu: 0, time: 3_100_000, who: child, giver: sh },
        Event::Name { cpu: 0, time: 3_150_000, who: child, name: "/bin/sh".into() },
        Event::Exec { cpu: 0, time: 3_200_000, who: child, entry: 0x40_1000 },
        Event::Name { cpu: 0, time: 3_210_000, who: child, name: "/usr/bin/fib".into() },
        sample(3_300_000, child, 0x40_2200),
        sample(3_310_000, child, 0x40_2200),
        Event::NewThread { cpu: 0, time: 3_400_000, who: Ids { pid: Some(0), thread: 41 }, giver: child },
        Event::Name { cpu: 0, time: 3_410_000, who: grandchild, name: "/bin/sh".into() },
        // Its exec, procmgr's renaming before the exec's own record.
        Event::Name { cpu: 0, time: 3_415_000, who: grandchild, name: "/usr/bin/ls".into() },
        Event::Exec { cpu: 0, time: 3_420_000, who: grandchild, entry: 0x40_1000 },
        sample(3_500_000, grandchild, 0x40_2300),
        sample(3_600_000, other, 0x40_9000),
        Event::Switch(Switch { cpu: 0, time: 3_700_000, left: grandchild, entered: sh, reason: Some(Reason::Exit), detail: 0, stack: vec![] }),
        // sh execs its last command itself (dash does): a later exec of the program.
        Event::Exec { cpu: 0, time: 3_800_000, who: sh, entry: 0x40_1000 },
    ] {
        f.record(0, e);
    }
    f.contexts = contexts("/usr/bin/sh", "UZ");
    assert_eq!(status(&mut s)["reason"], "exit");
    let children = text(&mut s, ALICE, "children");
    let lines: Vec<&str> = children.lines().filter(|l| l.starts_with('#') || l.starts_with("process")).collect();
    assert_eq!(
        lines,
        [
            "# processes=2 user=3 kernel=0 missed=0",
            // What sh became by its later exec: none of its samples came after it.
            "process 10 - 0 0 running /usr/bin/sh",
            "process 12 10 2 0 running /usr/bin/fib",
            "process 13 12 1 0 exited /usr/bin/ls",
        ],
        "{children}"
    );
    let st = status(&mut s);
    assert_eq!(st["ticks_user"], "1", "sh's own sample alone");
    assert_eq!(st["later_execs"], "1", "its exec after the profiled one");
}

/// `profil -f sh -c 'fib 26 100'` on typed records: dash execs the last command in place, so
/// the program's pid runs fib after a later exec. fib is linked at the addresses sh is (Redox's
/// static programs): its samples, at sh's very addresses, must not be read in sh's image. They
/// go apart, as the program's own pid in `children` named by the image it became (with or
/// without `children` asked), and the program's bins and `samples` keep sh's own alone.
#[test]
fn a_later_exec_is_the_image_it_became() {
    let mut s = typed_session("start 10 0 0 0 0x401000 0x402000 exec");
    let sh = who(10, 21);
    let f = files(&mut s);
    for e in [
        prof_events::Event::Exec { cpu: 0, time: 2_900_000, who: sh, entry: 0x40_1000 },
        prof_events::Event::Name { cpu: 0, time: 2_910_000, who: sh, name: "/usr/bin/sh".into() },
        nmi_sample(3_000_000, sh, 0x40_1100),
        // relibc renames the process to the new program's path, then switches address space.
        prof_events::Event::Name { cpu: 0, time: 3_790_000, who: sh, name: "/usr/bin/fib".into() },
        prof_events::Event::Exec { cpu: 0, time: 3_800_000, who: sh, entry: 0x40_1000 },
        nmi_sample(3_900_000, sh, 0x40_1100),
        nmi_sample(3_900_001, sh, 0x40_1100),
        nmi_sample(3_900_002, sh, 0x40_1200),
    ] {
        f.record(0, e);
    }
    // Gone from sys:context by the time profd reads the rings (profil reads nothing until
    // its child is reaped): the name is the records'.
    f.contexts = contexts("/usr/bin/fib", "UZ").lines().filter(|l| !l.starts_with("10 ")).map(|l| format!("{l}\n")).collect();
    let st = status(&mut s);
    assert_eq!((st["reason"].as_str(), st["ticks_user"].as_str(), st["later_execs"].as_str()), ("exit", "1", "1"), "sh's own sample alone");
    assert_eq!(text(&mut s, ALICE, "samples"), "0x401100 1 text\n", "sh's one sample, at its link address in its text");
    let children = text(&mut s, ALICE, "children");
    let lines: Vec<&str> = children.lines().skip(1).collect();
    assert_eq!(lines, ["process 10 - 3 0 running /usr/bin/fib", "stack 10 2 complete 0x401100", "stack 10 1 complete 0x401200"], "{children}");
    let timeline = prof_core::formats::parse_timeline(&text(&mut s, ALICE, "timeline")).unwrap();
    assert_eq!(timeline.samples.len(), 1, "sh's");
    assert_eq!(timeline.children.iter().map(|c| (c.0, c.2.len())).collect::<Vec<_>>(), [(10, 3)], "fib's, apart");
}

/// A kernel that records system calls (layout 1.1) is told `3` for a program's session (and
/// `2` for `-a`'s, whose every process's calls nobody reads): fib's read from ramfs is timed
/// from its caller's side by the system call that made it, from its entry (TSC 3,090,000) to
/// its return (3,140,000): 25 us, where its switches say 15.5 (`waited=calls` says which). Its
/// call site (`-g`) is the user stack fib blocked at in the call (each stack once in a `site`
/// line, counted by key in `stacks`, each request's in `called-from`). A kernel of layout 1.0
/// refuses `3`: told `2`, the switches time it (the test above).
#[test]
fn a_kernel_that_records_system_calls_times_the_callers_side_by_them() {
    use prof_events::layout::{scheme_call, Reason};
    use prof_events::{Event, Ids, Switch};
    use prof_samplers::upstream_kernel::Recording;
    let mut s = scheme();
    let f = files(&mut s);
    (f.typed_records, f.syscall_records) = (true, true);
    f.clocks_measured_up_to((3_000_000, 1_000_000), (2_000_000, 1_000_000));
    ctl(&mut s, ALICE, "start 10 0 0 0 0x401000 0x402000 exec").unwrap();
    let f = files(&mut s);
    assert_eq!(f.mode, Recording::Syscalls);
    let (fib, ramfs) = (who(10, 21), who(7, 5));
    let switch = |tsc, left, entered, reason, detail| Event::Switch(Switch { cpu: 0, time: tsc, left, entered, reason: Some(reason), detail, stack: vec![] });
    let request = |tsc, answered| Event::Request { cpu: 0, time: tsc, daemon: ramfs, caller: Ids { pid: Some(10), thread: 0 }, scheme: 24, tag: 1, answered };
    // Where fib blocked in the call: its user stack, the read's call site (`-g`).
    let mut blocked = nmi_sample(3_095_000, fib, 0x40_1100);
    if let Event::Sample(b) = &mut blocked {
        (b.source, b.user_frames) = (Some(prof_events::layout::Source::Block), vec![0x40_1505, 0x40_1a05]);
    }
    for e in [
        Event::Exec { cpu: 0, time: 2_900_000, who: fib, entry: 0x40_1000 },
        blocked,
        switch(3_100_000, fib, ramfs, Reason::Scheme, scheme_call(24, 1)),
        request(3_110_000, false),
        request(3_130_000, true),
        switch(3_131_000, ramfs, fib, Reason::SchemeIdle, 0),
        Event::Syscall { cpu: 0, time: 3_140_000, who: fib, entered: 3_090_000, number: 0x2000_0003, result: 1 },
        // Another process's call: not fib's.
        Event::Syscall { cpu: 0, time: 3_150_000, who: who(11, 30), entered: 3_000_000, number: 1, result: 0 },
    ] {
        f.record(0, e);
    }
    f.contexts = contexts("/usr/bin/fib", "UZ");
    assert_eq!(status(&mut s)["reason"], "exit");
    let text = text(&mut s, ALICE, "requests");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("values ")).collect();
    assert_eq!(
        lines,
        [
            "requests version=1 lost=0 waited=calls",
            "daemon 7 /scheme/initfs/bin/ramfs",
            "request 10 24 7 1 10000 10000 10000 10000 10000 10000",
            "waited 10 24 7 1 25000 25000 25000 25000 25000 25000",
            "split 10 24 7 1 10000 10000 0",
            "site 0 0x401100 0x401505 0x401a05",
            "stacks 10 24 7 0 0 0:1",
            "timed 10 21 24 7 5 55000 65000",
            "served 25000 10000 0",
            "called-from 0",
            "untimed 0",
        ],
        "got:\n{text}"
    );
    // profil reads which clock the callers' side is by, and the call sites.
    let file = prof_core::requests_file::parse_requests(&text).unwrap();
    let log = file.log(|s, d, _| prof_core::requests::RequestKey::scheme(s, d));
    assert!(file.sides_in_calls && log.sides_in_calls);
    let stacks = &log.by_pid[&10].stacks[&prof_core::requests::RequestKey::scheme(24, 7)];
    assert_eq!((stacks.counts.iter().collect::<Vec<_>>(), log.timed[0].site), (vec![(&vec![0x40_1100, 0x40_1505, 0x40_1a05], &1)], prof_core::requests::Site::Stack(0)));
    // A window of the run counts its site as the run does.
    assert_eq!(log.within(0, u64::MAX).by_pid[&10].stacks, log.by_pid[&10].stacks);
    // `-a` asks for no system calls.
    let mut s = scheme();
    let f = files(&mut s);
    (f.typed_records, f.syscall_records) = (true, true);
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all", 0).unwrap();
    assert_eq!(files(&mut s).mode, Recording::Typed);
}

/// `profil -a` on typed records: a row a process, by pid, whichever of its threads the samples
/// were of, named as procmgr named it in the session, else as `sys:context` names it now;
/// `status` says the records are typed; every process's requests.
#[test]
fn every_process_on_typed_records() {
    let mut s = scheme();
    let f = files(&mut s);
    f.typed_records = true;
    f.clocks_measured_up_to((3_000_000, 1_000_000), (2_000_000, 1_000_000));
    let starter = s.open("ctl", Access::Write, 0).unwrap();
    s.write(starter, b"start all", 0).unwrap();
    let f = files(&mut s);
    for (tsc, who, ip) in [(1, who(7, 5), 0x40_2000), (2, who(7, 6), 0x40_2100), (3, who(10, 21), 0x40_1100)] {
        f.record(0, nmi_sample(tsc, who, ip));
    }
    f.record(0, prof_events::Event::Name { cpu: 0, time: 4, who: who(10, 21), name: "/usr/bin/fib".into() });
    // Every process's requests: fib's read (its thread 21's switch into the call, at TSC 3,990,000),
    // taken by ramfs's thread 5 and answered 20,000 TSC ticks (10 us) later, fib back at
    // 4,024,000 (17 us from its side); the kernel's close message (no caller), nobody's.
    let request = |cpu, time, caller, tag, answered| prof_events::Event::Request { cpu, time, daemon: who(7, 5), caller: prof_events::Ids { pid: caller, thread: 0 }, scheme: 24, tag, answered };
    let switch = |time, left, entered, reason, detail| prof_events::Event::Switch(prof_events::Switch { cpu: 0, time, left, entered, reason: Some(reason), detail, stack: vec![] });
    f.record(0, switch(3_990_000, who(10, 21), who(7, 5), prof_events::layout::Reason::Scheme, prof_events::layout::scheme_call(24, 1)));
    f.record(0, request(0, 4_000_000, Some(10), 1, false));
    f.record(0, request(0, 4_020_000, Some(10), 1, true));
    f.record(0, request(0, 4_030_000, None, 2, false));
    f.record(0, request(0, 4_031_000, None, 2, true));
    f.record(0, switch(4_024_000, who(7, 5), who(10, 21), prof_events::layout::Reason::SchemeIdle, 0));
    s.write(starter, b"stop", 0).unwrap();
    s.close(starter);
    let servers = text(&mut s, 0, "servers");
    assert!(servers.contains("server 7 2 /scheme/initfs/bin/ramfs\n"), "{servers}");
    assert!(servers.contains("server 10 1 /usr/bin/fib\n"), "{servers}");
    assert_eq!(status(&mut s)["records"], "typed");
    // Timed as a program's requests are: its callers' side (by the switches: `-a` asks the
    // kernel for no system call records), ramfs's split, each whole.
    let requests = text(&mut s, 0, "requests");
    let lines: Vec<&str> = requests.lines().filter(|l| !l.starts_with("values ")).collect();
    assert_eq!(
        lines,
        [
            "requests version=1 lost=0 waited=switches",
            "daemon 7 /scheme/initfs/bin/ramfs",
            "request 10 24 7 1 10000 10000 10000 10000 10000 10000",
            "waited 10 24 7 1 17000 17000 17000 17000 17000 17000",
            "split 10 24 7 1 10000 10000 0",
            "timed 10 21 24 7 5 1500000 1510000",
            "served 17000 10000 0",
            "untimed 0",
        ],
        "{requests}"
    );
}

/// `profil --requests` on typed records: each request of the program's is timed from its
/// daemon's taking it to its answer, by the records' clock (2 TSC ticks a ns), by scheme and
/// daemon; a request ramfs makes of the disk's daemon while it serves one of the program's is
/// a link of a chain (ramfs's scheme, then the disk's), not the program's own; another
/// process's requests and one taken before the exec are not the program's; one taken and not
/// answered when the program ends is unfinished. From fib's side (its switch into each call
/// to its switch back) they took 15.5, 25.5 and 6.5 us. ramfs's 30 us on them: 20.5 on its
/// CPU, 6.5 blocked in its call to the disk's scheme (its switch out to its switch back), 3
/// preempted. Each request whole, from the session's start (ns 1,000,000: fib has no sample),
/// with ramfs's thread that took it. The file's text, whole.
#[test]
fn the_requests_by_scheme_and_daemon_and_their_chains() {
    use prof_events::layout::{scheme_call, Reason};
    use prof_events::{Event, Ids, Switch};
    let mut s = typed_session("start 10 0 0 0 0x401000 0x402000 exec");
    let f = files(&mut s);
    let switch = |tsc, left, entered, reason, detail| {
        Event::Switch(Switch { cpu: 0, time: tsc, left, entered, reason: Some(reason), detail, stack: vec![] })
    };
    let request = |tsc, daemon, caller: u32, scheme, tag, answered| Event::Request {
        cpu: 0,
        time: tsc,
        daemon,
        caller: Ids { pid: Some(caller), thread: 0 },
        scheme,
        tag,
        answered,
    };
    let (fib, ramfs, disk, other) = (who(10, 21), who(7, 5), who(9, 40), who(11, 30));
    let bootstrap = Ids { pid: None, thread: 3 };
    for e in [
        // Taken before the exec, answered after: profil's launch, not fib's.
        switch(2_790_000, fib, ramfs, Reason::Scheme, scheme_call(24, 9)),
        request(2_800_000, ramfs, 10, 24, 9, false),
        Event::Exec { cpu: 0, time: 2_900_000, who: fib, entry: 0x40_1000 },
        request(2_950_000, ramfs, 10, 24, 9, true),
        Event::Name { cpu: 0, time: 2_960_000, who: disk, name: "/scheme/initfs/bin/ahcid".into() },
        // A read from ramfs: taken at 3.11 ms of TSC, answered 20,000 ticks (10 us) later.
        switch(3_100_000, fib, ramfs, Reason::Scheme, scheme_call(24, 1)),
        request(3_110_000, ramfs, 10, 24, 1, false),
        // ramfs asks the disk's daemon (0.5 us), answered before a switch of it into the call
        // was recorded: charged to the request its process serves then.
        request(3_115_000, disk, 7, 31, 12, false),
        request(3_116_000, disk, 7, 31, 12, true),
        // ramfs preempted for 3 us meanwhile: another process has its CPU.
        switch(3_118_000, ramfs, other, Reason::Preempted, 0),
        switch(3_124_000, other, ramfs, Reason::Preempted, 0),
        request(3_130_000, ramfs, 10, 24, 1, true),
        switch(3_131_000, ramfs, fib, Reason::SchemeIdle, 0),
        // One that ramfs serves by asking the disk's daemon (scheme 31): 5 us of its 20 us.
        switch(3_190_000, fib, ramfs, Reason::Scheme, scheme_call(24, 2)),
        request(3_200_000, ramfs, 10, 24, 2, false),
        switch(3_210_000, ramfs, disk, Reason::Scheme, scheme_call(31, 5)),
        request(3_212_000, disk, 7, 31, 5, false),
        request(3_222_000, disk, 7, 31, 5, true),
        switch(3_223_000, disk, ramfs, Reason::SchemeIdle, 0),
        request(3_240_000, ramfs, 10, 24, 2, true),
        switch(3_241_000, ramfs, fib, Reason::SchemeIdle, 0),
        // One the bootstrap's managers take (no pid): 1 us.
        switch(3_290_000, fib, bootstrap, Reason::Scheme, scheme_call(3, 4)),
        request(3_300_000, bootstrap, 10, 3, 4, false),
        // A request naming no caller (the kernel's close messages; the bootstrap's own calls)
        // meanwhile: nobody's chain.
        request(3_300_500, ramfs, 0, 24, 11, false),
        request(3_301_500, ramfs, 0, 24, 11, true),
        request(3_302_000, bootstrap, 10, 3, 4, true),
        switch(3_303_000, bootstrap, fib, Reason::SchemeIdle, 0),
        // Another process's request to ramfs, and the disk's for it: not fib's.
        switch(3_390_000, other, ramfs, Reason::Scheme, scheme_call(24, 6)),
        request(3_400_000, ramfs, 11, 24, 6, false),
        switch(3_401_000, ramfs, disk, Reason::Scheme, scheme_call(31, 8)),
        request(3_402_000, disk, 7, 31, 8, false),
        request(3_404_000, disk, 7, 31, 8, true),
        request(3_410_000, ramfs, 11, 24, 6, true),
        // A request taken and not answered when fib ends.
        switch(3_500_000, fib, ramfs, Reason::Scheme, scheme_call(24, 10)),
        request(3_510_000, ramfs, 10, 24, 10, false),
    ] {
        f.record(0, e);
    }
    f.contexts = contexts("/usr/bin/fib", "UZ");
    assert_eq!(status(&mut s)["reason"], "exit");
    let text = text(&mut s, ALICE, "requests");
    let expected = "\
requests version=1 lost=0 waited=switches
daemon 0 [bootstrap]
daemon 7 /scheme/initfs/bin/ramfs
daemon 9 /scheme/initfs/bin/ahcid
request 10 24 7 2 30000 10000 10000 20000 20000 20000
values exact 10000 20000
request 10 3 0 1 1000 1000 1000 1000 1000 1000
values exact 1000
waited 10 24 7 2 41000 15500 15500 25500 25500 25500
values exact 15500 25500
waited 10 3 0 1 6500 6500 6500 6500 6500 6500
values exact 6500
chain 24 7 31 9 2 5500 500 500 5000 5000 5000
values exact 500 5000
unfinished 10 1
split 10 24 7 2 30000 20500 3000 31:6500
split 10 3 0 1 1000 1000 0
timed 10 21 24 7 5 55000 65000
served 15500 7000 3000
made 24 7 31 9 500
timed 10 21 24 7 5 100000 120000
served 25500 13500 0 31:6500
made 24 7 31 9 5000
timed 10 21 3 0 3 150000 151000
served 6500 1000 0
untimed 0
";
    assert_eq!(text, expected, "got:\n{text}");
    // As profil on Redox reads it back: the same figures.
    let file = prof_core::requests_file::parse_requests(&text).unwrap();
    assert_eq!(file.requests.len(), 2);
    assert_eq!(file.chains[0].latencies.summary().total, 5500);
    assert_eq!((file.timed.len(), file.splits[0].on_cpu, file.splits[0].waiting[&31]), (3, 20_500, 6_500));
    // Each request whole keeps its caller's side, its daemon's split and its chain, so a
    // window of the run counts them as the run does: the whole run's window is the run, and
    // a window of the second read alone has its figures only.
    let log = file.log(|scheme, daemon, _| prof_core::requests::RequestKey::scheme(scheme, daemon));
    let whole = log.within(0, u64::MAX);
    assert_eq!((whole.by_pid, whole.chains), (log.by_pid.iter().map(|(&p, r)| (p, prof_core::requests::Requests { unfinished: 0, ..r.clone() })).collect(), log.chains.clone()));
    let second = log.within(100_000, 120_000);
    let (key, disk) = (prof_core::requests::RequestKey::scheme(24, 7), prof_core::requests::RequestKey::scheme(31, 9));
    let r = &second.by_pid[&10];
    assert_eq!((r.count(), r.waited[&key].total, r.split[&key].on_cpu, r.split[&key].waiting["31"]), (1, 25_500, 13_500, 6_500));
    assert_eq!(second.chains.iter().map(|(k, l)| (k.clone(), l.total)).collect::<Vec<_>>(), [((key.clone(), disk), 5_000)]);
    // Bob may not read alice's requests.
    let id = s.open("requests", Access::Read, 2000).unwrap();
    assert_eq!(s.read(id, &mut [0u8; 64], 0), Err(libc::EPERM));
}
