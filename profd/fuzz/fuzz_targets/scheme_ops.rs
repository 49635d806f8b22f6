//! The `prof:` scheme handler (`prof_core::scheme::ProfScheme`) over the Redox kernel sampler
//! (`KernelSampler`) and the fake kernel built on the real `kprof::Profiler` that
//! `profd/tests/scheme.rs` uses too, driven by a sequence of operations decoded from the input:
//! open / read / write / close / size by any uid, and the kernel's timer ticks, execs and
//! exits in between. Nothing may panic and every error must be an errno value.
//!
//! Input: `[counter limit selector]` then operations, each an opcode byte and its arguments
//! (see `Op::decode`); a truncated operation ends the sequence.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prof_core::formats::parse_status;
use prof_samplers::fake_kernel::FakeKernel;
use prof_samplers::redox_kernel::KernelSampler;
use prof_core::scheme::{Access, Errno, ProfScheme};
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

type Scheme = ProfScheme<KernelSampler<FakeKernel>>;

fn kernel(s: &mut Scheme) -> &mut FakeKernel {
    s.profd_mut().sampler_mut().kernel()
}

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
                if offset == 0 && n > 0 && s.node(id) == Ok(prof_core::scheme::Node::Status) && n == s.size(id).unwrap() as usize {
                    assert_eq!(parse_status(&String::from_utf8_lossy(&buf[..n])).len(), 12);
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
            // Timer ticks while `pid` runs at `pc`, `n` times.
            let pid = input.pick(&PIDS)?;
            let user = input.byte()? & 1 == 0;
            let base = input.pick(&PC_BASES)?;
            let pc = base.wrapping_add(u64::from(input.byte()?) * 3);
            let n = 1 + input.byte()? % 8;
            let k = kernel(s);
            for _ in 0..n {
                k.tick(pid, user, pc);
            }
        }
        6 => {
            let pid = input.pick(&PIDS)?;
            let base = match input.byte()? {
                0 => input.u64()?,
                b => PC_BASES[b as usize % PC_BASES.len()] & !0xfff,
            };
            kernel(s).exec(pid, base);
        }
        7 => {
            let pid = input.pick(&PIDS)?;
            kernel(s).exit(pid);
        }
        8 => {
            let k = kernel(s);
            k.fail_data = !k.fail_data;
        }
        _ => {
            // A process (re)appears.
            let pid = input.pick(&PIDS)?;
            let uid = input.pick(&UIDS)?;
            let k = kernel(s);
            if !k.contexts.iter().any(|c| c.0 == pid) {
                k.contexts.push((pid, uid, 0x40_1000));
            }
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    // The kernel's counter limit: tiny ones reach the overflow stop.
    let limit = match input.byte().unwrap_or(0) % 4 {
        0 => u64::MAX,
        n => u64::from(n),
    };
    let kernel = FakeKernel::new(limit, vec![(10, 1000, 0x40_1000), (11, 1001, 0x40_1000)]);
    let mut s: Scheme = ProfScheme::new(Profd::new(KernelSampler::new(kernel)));
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
