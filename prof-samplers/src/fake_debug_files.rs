//! Upstream's debug files in memory, for the host tests: rings filled with records as the
//! kernel writes them (upstream's, or typed ones of kernel-patch/events), names by `debug_id`,
//! a `sys:context` table, the two clocks.

use std::collections::BTreeMap;
use std::io;

use prof_events::layout::Source;
use prof_events::{Event, Ids, Sample as Record};

use crate::upstream_kernel::{DebugFiles, Recording};

/// Upstream's files in memory, for the host tests: rings filled with records as the kernel
/// writes them, names by `debug_id`, a `sys:context` table.
#[derive(Debug, Default)]
pub struct FakeDebugFiles {
    /// Does this kernel write typed records (our series), or refuse `2` (a stock kernel)?
    pub typed_records: bool,
    /// ...and records each system call's end (layout 1.1: `3`), or refuses `3`?
    pub syscall_records: bool,
    /// Does it take a rate (`2 HZ`), or refuse any write longer than a byte?
    pub rates: bool,
    /// Does its timer tick take the samples (one CPU), not the NMIs?
    pub ticks_sample: bool,
    pub mode: Recording,
    /// The rate it was told last.
    pub rate: Option<u64>,
    /// The pid of each `debug_id`, for typed records.
    pub pids: BTreeMap<u32, u32>,
    /// Records the ring had no room for, said before the next one (typed records).
    pub lost: u64,
    /// The TSC and monotonic clock: each reading advances them by `tick`; `early` readings
    /// come before (see [`FakeDebugFiles::clocks_measured_up_to`]).
    pub now: (u64, u64),
    pub tick: (u64, u64),
    pub early: Vec<(u64, u64)>,
    /// The time of the last sample [`FakeDebugFiles::sample`] wrote; each is `sample_gap`
    /// TSC ticks (at least 1) after the one before.
    pub sample_time: u64,
    pub sample_gap: u64,
    pub rings: Vec<Vec<u8>>,
    pub names: BTreeMap<u32, String>,
    pub contexts: String,
    /// The most a read gives (a reader's buffer), to cut records across reads.
    pub read_limit: usize,
    /// Reads of the rings fail (EIO), as a kernel that cannot answer.
    pub fail_reads: bool,
}

impl FakeDebugFiles {
    /// Clocks at the rate `tick` gives whose calibration (profd's windows at a session's
    /// start, a quarter tick apart) ends with reading `at`; every reading after it is a tick
    /// later than the one before.
    pub fn clocks_measured_up_to(&mut self, at: (u64, u64), tick: (u64, u64)) {
        let windows = crate::upstream_kernel::CALIBRATION_WINDOWS as u64;
        // (Wrapping, as the clocks' readings do: a test may end its calibration near 0.)
        self.early = (1..=windows).rev().map(|k| (at.0.wrapping_sub(k * tick.0 / 4), at.1.wrapping_sub(k * tick.1 / 4))).collect();
        (self.now, self.tick) = (at, tick);
    }

    /// A sample of context `id` at `ip` on `cpu`, with `frames`, as the NMI handler writes it
    /// (only while profiling is on).
    pub fn sample(&mut self, cpu: usize, id: u32, ip: u64, frames: &[u64]) {
        let typed = match self.mode {
            Recording::Off => return,
            Recording::Upstream => false,
            Recording::Typed | Recording::Syscalls => true,
        };
        let kernel = frames.iter().take_while(|&&f| f >= prof_events::KERNEL_BASE).count();
        self.sample_time += self.sample_gap.max(1);
        // Upstream's record (kind 0) has no pid and says no source.
        let sample = Record {
            cpu: cpu as u32,
            time: self.sample_time,
            who: Ids { pid: typed.then(|| self.pids.get(&id).copied().unwrap_or(0)), thread: id },
            kernel: ip >= prof_events::KERNEL_BASE,
            source: typed.then_some(if self.ticks_sample { Source::Tick } else { Source::NmiIpi }),
            ip,
            kernel_frames: frames[..kernel].to_vec(),
            user_frames: frames[kernel..].to_vec(),
        };
        let mut events = Vec::new();
        if typed && self.lost > 0 {
            events.push(Event::Lost { cpu: cpu as u32, time: 0, count: std::mem::take(&mut self.lost) });
        }
        events.push(Event::Sample(sample));
        self.rings[cpu].extend(prof_events::ring_bytes(&events));
    }

    /// Any record, as the kernel writes it in a typed session (only then; a system call's
    /// only in a session told `3`).
    pub fn record(&mut self, cpu: usize, event: Event) {
        let written = match event {
            Event::Syscall { .. } => self.mode == Recording::Syscalls,
            _ => matches!(self.mode, Recording::Typed | Recording::Syscalls),
        };
        if written {
            self.rings[cpu].extend(prof_events::ring_bytes(&[event]));
        }
    }

    /// Is profiling on?
    pub fn on(&self) -> bool {
        self.mode != Recording::Off
    }
}

impl DebugFiles for FakeDebugFiles {
    fn set_profiling(&mut self, mode: Recording, rate: Option<u64>) -> io::Result<()> {
        let refused = match mode {
            Recording::Typed => !self.typed_records,
            Recording::Syscalls => !self.syscall_records,
            Recording::Off | Recording::Upstream => false,
        };
        if refused || (rate.is_some() && !self.rates) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        (self.mode, self.rate) = (mode, rate);
        Ok(())
    }
    fn rings(&self) -> usize {
        self.rings.len()
    }
    fn read_ring(&mut self, cpu: usize, buf: &mut [u8]) -> io::Result<usize> {
        if self.fail_reads {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let ring = &mut self.rings[cpu];
        let limit = if self.read_limit == 0 { buf.len() } else { self.read_limit.min(buf.len()) };
        let n = limit.min(ring.len());
        buf[..n].copy_from_slice(&ring[..n]);
        // As the kernel: only whole words are consumed.
        ring.drain(..n / 8 * 8);
        Ok(n)
    }
    fn context_name(&mut self, debug_id: u32) -> Option<String> {
        self.names.get(&debug_id).cloned()
    }
    fn contexts(&mut self) -> io::Result<String> {
        Ok(self.contexts.clone())
    }
    /// Its clocks move by `tick` a reading, not by time.
    fn pause(&mut self, _: std::time::Duration) {}
    fn clocks(&mut self) -> io::Result<(u64, u64)> {
        if !self.early.is_empty() {
            return Ok(self.early.remove(0));
        }
        let now = self.now;
        self.now = (now.0 + self.tick.0, now.1 + self.tick.1);
        Ok(now)
    }
}

