//! The `prof:` scheme handler (`profd::scheme::ProfScheme`) over the Redox sampler
//! (`UpstreamSampler`) and the kernel's rings in memory (`FakeDebugFiles`, typed records) that
//! `profd/tests/scheme.rs` uses too, driven by a sequence of operations decoded from the input:
//! open / read / write / close / size by any uid, and the kernel's samples, execs and exits in
//! between. Nothing may panic and every error must be an errno value.
//!
//! Input: `[counter limit selector]` then operations, each an opcode byte and its arguments
//! (see `Op::decode`); a truncated operation ends the sequence.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_core::formats::parse_status;
use prof_events::{Event, Ids};
use prof_samplers::fake_debug_files::FakeDebugFiles;
use prof_samplers::upstream_kernel::UpstreamSampler;
use profd::scheme::{Access, Errno, ProfScheme};
use prof_core::Profd;

/// Every errno the scheme may answer with.
const ERRNOS: [i32; 10] = [
    libc::ENOENT,
    libc::EACCES,
    libc::EISDIR,
    libc::EBADF,
    libc::EINVAL,
    libc::ESRCH,
    libc::EFAULT,
    libc::EBUSY,
    libc::EPERM,
    libc::EIO,
];

const UIDS: [u32; 4] = [0, 1000, 1001, 4242];
const PIDS: [u32; 4] = [10, 11, 12, 0];
const PATHS: [&str; 9] = ["", "ctl", "status", "bins", "data", "samples", "/ctl/", "nope", "bins/x"];
/// Bases of program counters: non-PIE text, a PIE load base, the kernel, the very top.
const PC_BASES: [u64; 4] = [0x40_1000, 0x7000_0000_0000, 0xffff_8000_0000_0000, u64::MAX - 0xff];

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        let mut w = [0; 8];
        w[..b.len()].copy_from_slice(b);
        Some(u64::from_le_bytes(w))
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> Option<T> {
        Some(from[self.byte()? as usize % from.len()])
    }
}

fn check_errno<T>(r: &Result<T, Errno>) {
    if let Err(e) = r {
        assert!(ERRNOS.contains(e), "not an errno of the scheme: {e}");
    }
}

type Scheme = ProfScheme<UpstreamSampler<FakeDebugFiles>>;

fn kernel(s: &mut Scheme) -> &mut FakeDebugFiles {
    s.profd_mut().sampler_mut().files()
}

/// The debug id of pid `pid`'s thread (pid 0: a context without a pid).
fn thread(pid: u32) -> u32 {
    pid * 2 + 1
}

/// A `sys:context` row of `pid`, owned by `uid`, in state `stat`.
fn row(pid: u32, uid: u32, stat: &str) -> String {
    format!("{pid}    {uid}  {uid}  {stat}    0     0-1        00:00:00.00 1 MB    0 B     /usr/bin/fib\n")
}

const HEADER: &str = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n";

/// Run one operation; `None` when the input ran out.
fn step(s: &mut Scheme, ids: &mut Vec<usize>, input: &mut Input) -> Option<()> {
    // A handle: one we were given (most of the time), or any number.
    let handle = |input: &mut Input, ids: &[usize]| -> Option<usize> {
        let b = input.byte()?;
        Some(if b < 0xf0 && !ids.is_empty() { ids[b as usize % ids.len()] } else { usize::from(b) })
    };
    match input.byte()? % 10 {
        0 => {
            let path = input.pick(&PATHS)?;
            let access = input.pick(&[Access::Read, Access::Write, Access::ReadWrite])?;
            let uid = input.pick(&UIDS)?;
            let r = s.open(path, access, uid);
            check_errno(&r);
            if let Ok(id) = r {
                ids.push(id);
            }
        }
        1 => {
            let id = handle(input, ids)?;
            let len = usize::from(input.byte()?) * 41;
            let offset = match input.byte()? {
                0..=127 => 0,
                b @ 128..=250 => u64::from(b - 128) * 37,
                251 => u64::MAX,
                _ => input.u64()?,
            };
            let mut buf = vec![0u8; len];
            let r = s.read(id, &mut buf, offset);
            check_errno(&r);
            if let Ok(n) = r {
                assert!(n <= len);
                if offset == 0 && n > 0 && s.node(id) == Ok(profd::scheme::Node::Status) && n == s.size(id).unwrap() as usize {
                    // Every key, always (docs/prof-scheme.md): as many as an idle profiler's.
                    let all = parse_status(&prof_core::formats::status_line(prof_core::SessionState::Idle, None)).len();
                    assert_eq!(parse_status(&String::from_utf8_lossy(&buf[..n])).len(), all);
                }
            }
        }
        2 => {
            let id = handle(input, ids)?;
            let uid = input.pick(&UIDS)?;
            let len = usize::from(input.byte()?);
            let text = input.bytes(len)?.to_vec();
            let r = s.write(id, &text, uid);
            check_errno(&r);
            if let Ok(n) = r {
                assert_eq!(n, text.len());
            }
        }
        3 => {
            let id = handle(input, ids)?;
            s.close(id);
            ids.retain(|&i| i != id);
            assert!(s.node(id).is_err());
        }
        4 => {
            let id = handle(input, ids)?;
            let r = s.size(id);
            check_errno(&r);
        }
        5 => {
            // Samples while `pid` runs at `pc`, `n` times, with a frame.
            let pid = input.pick(&PIDS)?;
            let frame = input.pick(&PC_BASES)?;
            let base = input.pick(&PC_BASES)?;
            let pc = base.wrapping_add(u64::from(input.byte()?) * 3);
            let n = 1 + input.byte()? % 8;
            let k = kernel(s);
            for _ in 0..n {
                k.sample(0, thread(pid), pc, &[frame]);
            }
        }
        6 => {
            let pid = input.pick(&PIDS)?;
            let entry = match input.byte()? {
                0 => input.u64()?,
                b => PC_BASES[b as usize % PC_BASES.len()] & !0xfff,
            };
            let k = kernel(s);
            k.sample_time += 1;
            let who = Ids { pid: Some(pid), thread: thread(pid) };
            k.record(0, Event::Exec { cpu: 0, time: k.sample_time, who, entry });
        }
        7 => {
            let pid = input.pick(&PIDS)?;
            let k = kernel(s);
            let alive = format!("{pid}    ");
            k.contexts = k.contexts.lines().map(|l| if l.starts_with(&alive) { l.replacen(" UR ", " UZ ", 1) } else { l.to_string() } + "\n").collect();
        }
        8 => {
            let k = kernel(s);
            k.fail_reads = !k.fail_reads;
        }
        _ => {
            // A process (re)appears.
            let pid = input.pick(&PIDS)?;
            let uid = input.pick(&UIDS)?;
            let k = kernel(s);
            if !k.contexts.lines().any(|l| l.starts_with(&format!("{pid} "))) {
                k.contexts.push_str(&row(pid, uid, "UR"));
            }
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    // The bins' counter limit: tiny ones reach the overflow stop.
    let limit = match input.byte().unwrap_or(0) % 4 {
        0 => u64::MAX,
        n => u64::from(n),
    };
    let mut files = FakeDebugFiles { rings: vec![Vec::new()], typed_records: true, rates: true, ..Default::default() };
    files.contexts = format!("{HEADER}{}{}", row(10, 1000, "UR"), row(11, 1001, "UR"));
    for pid in [10, 11, 12] {
        files.pids.insert(thread(pid), pid);
    }
    (files.now, files.tick) = ((1_000_000, 0), (2_000_000, 1_000_000));
    let mut s: Scheme = ProfScheme::new(Profd::new(UpstreamSampler::new(files)).with_counter_limit(limit));
    let mut ids = Vec::new();
    for _ in 0..256 {
        if step(&mut s, &mut ids, &mut input).is_none() {
            break;
        }
    }
    for id in ids {
        s.close(id);
    }
    assert_eq!(s.open_files(), 0);
});
