//! A system-wide run (`profil -a`): every process that ran, each with its own samples, the
//! kernel's samples of all of them, and the CPUs' idle time. No program, so no Minix bins: the
//! rules that remain are the one session at a time (the sampler holds the session lock) and
//! that nothing counted is dropped. The backend hands over [`SampleBatch`]es as for a session:
//! every process as a [`ChildBatch`](crate::sampler::ChildBatch), idle time in the account; the
//! kernel's samples are the sum of the processes' kernel-mode ones.

use std::collections::BTreeMap;

use crate::sample::Sampled;
use crate::sampler::SampleBatch;
use crate::session::ChildProcess;

/// What a system-wide run recorded.
#[derive(Debug, Clone, Default)]
pub struct SystemRecord {
    /// Every process seen, by pid: those running at the start and those started since.
    pub processes: BTreeMap<u32, ChildProcess>,
    /// Samples of idle CPUs.
    pub idle_ticks: u64,
    /// Kernel-mode samples of every process, by kernel address, where the backend keeps them.
    pub kernel_samples: BTreeMap<u64, u64>,
    /// Samples the backend had to drop.
    pub lost: u64,
    /// The clock's first and last readings (ns).
    pub clock: Option<(u64, u64)>,
    /// Every process's requests, by pid (`--requests`), where the backend records them.
    pub requests: Option<crate::requests::RequestLog>,
}

impl SystemRecord {
    pub fn ingest(&mut self, batch: SampleBatch) {
        for c in batch.child_processes {
            for sample in &c.samples {
                if let Sampled::Kernel { ip, .. } = sample.at {
                    crate::process::add_one(&mut self.kernel_samples, ip);
                }
            }
            self.processes.entry(c.pid).or_default().add(c);
        }
        self.idle_ticks = self.idle_ticks.saturating_add(batch.servers.account.idle);
        self.lost = self.lost.saturating_add(batch.lost);
        if let Some(source) = batch.requests.source {
            self.requests.get_or_insert_with(|| crate::requests::RequestLog::new(source)).take(batch.requests);
        }
        crate::program_clock::widen(&mut self.clock, &batch.clock);
    }

    /// Every sample: the processes' (user and kernel mode) and idle's.
    pub fn total(&self) -> u64 {
        self.processes
            .values()
            .fold(self.idle_ticks, |n, p| n.saturating_add(p.samples.user_ticks).saturating_add(p.samples.kernel_ticks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{user_runs, Sample};
    use crate::sampler::{Account, ChildBatch, Mapping, ServersBatch};

    const KERNEL: u64 = 0xffff_ffff_8100_0000;

    fn kernel(offset: u64) -> Sample {
        Sample::kernel(Some(offset), 8, KERNEL + offset, false, None)
    }

    #[test]
    fn batches_add_up_by_process() {
        let mut r = SystemRecord::default();
        let map = Mapping { start: 0x1000, len: 0x1000, path: "/bin/hog".into(), ..Default::default() };
        r.ingest(SampleBatch {
            child_processes: vec![
                ChildBatch { pid: 7, exec: Some("hog".into()), samples: user_runs(&[(0x1010, 3)]), mappings: vec![map.clone()], ..Default::default() },
                ChildBatch { pid: 8, parent: Some(7), samples: vec![kernel(0x10), kernel(0x20)], ..Default::default() },
            ],
            servers: ServersBatch { account: Account { idle: 5, ..Default::default() }, ..Default::default() },
            clock: vec![100],
            ..Default::default()
        });
        r.ingest(SampleBatch {
            child_processes: vec![
                ChildBatch { pid: 7, samples: user_runs(&[(0x1010, 1), (0x1020, 1)]), ..Default::default() },
                ChildBatch { pid: 8, exited: true, ..Default::default() },
            ],
            servers: ServersBatch { account: Account { idle: 1, ..Default::default() }, ..Default::default() },
            lost: 4,
            clock: vec![300],
            ..Default::default()
        });
        let hog = &r.processes[&7];
        assert_eq!((hog.samples.user_ticks, hog.exec.as_deref(), hog.mappings.len()), (5, Some("hog"), 1));
        assert_eq!(hog.samples.user.iter().map(|(&a, &n)| (a, n)).collect::<Vec<_>>(), [(0x1010, 4), (0x1020, 1)]);
        let child = &r.processes[&8];
        assert_eq!((child.parent, child.samples.kernel_ticks, child.exited), (Some(7), 2, true));
        assert_eq!((r.idle_ticks, r.lost, r.clock), (6, 4, Some((100, 300))));
        assert_eq!(r.kernel_samples, BTreeMap::from([(KERNEL + 0x10, 1), (KERNEL + 0x20, 1)]));
        assert_eq!(child.samples.timeline.entries.len(), 2);
        assert_eq!(r.total(), 5 + 2 + 6);
    }
}
