//! The program's threads by the clock, from a kernel's typed records: each switch record of a
//! thread of the program becomes the ledger's switch (out, preempted or not; in), and the
//! sample a thread wrote as it blocked (source `Block`: its user stack where it called) names
//! the wait its next switch out begins. Record times are the kernel's TSC; the ledger's are
//! ns of the monotonic clock, by a rate measured when the session began.

use std::collections::BTreeMap;

use prof_core::ledger::Switch;
use prof_core::sampler::{CallStack, Probe, SampleBatch, WaitSite};
use prof_events::layout::{Reason, Source};
use prof_events::{Event, Sample};

/// The TSC against the monotonic clock: two readings of both, apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TscClock {
    pub tsc: u64,
    pub ns: u64,
    /// Nanoseconds a TSC tick.
    pub ns_per_tick: f64,
}

impl TscClock {
    /// From readings `(tsc, ns)` taken at two times; `None` where they cannot give a rate.
    pub fn from_readings(a: (u64, u64), b: (u64, u64)) -> Option<TscClock> {
        let (ticks, ns) = (b.0.checked_sub(a.0)?, b.1.checked_sub(a.1)?);
        (ticks > 0 && ns > 0).then(|| TscClock { tsc: a.0, ns: a.1, ns_per_tick: ns as f64 / ticks as f64 })
    }

    /// A TSC reading in ns of the monotonic clock.
    pub fn ns(&self, tsc: u64) -> u64 {
        let ticks = tsc as i128 - self.tsc as i128;
        (self.ns as i128 + (ticks as f64 * self.ns_per_tick) as i128).clamp(0, u64::MAX as i128) as u64
    }
}

/// What a switch's reason says a thread waited on, in the words of `prof:clock` (the
/// kernel's reason, and a scheme call's scheme number).
fn wait_call(reason: Option<Reason>, detail: u64) -> (String, Option<String>) {
    let call = match reason {
        Some(Reason::Futex) => "futex",
        Some(Reason::Sleep) => "sleep",
        Some(Reason::Scheme) => return ("scheme-call".into(), Some(detail.to_string())),
        Some(Reason::Pipe) => "pipe",
        Some(Reason::Waitpid) => "waitpid",
        Some(Reason::Event) => "event",
        Some(Reason::Stopped) => "stopped",
        Some(Reason::SchemeIdle) => "scheme-requests",
        _ => "other",
    };
    (call.into(), None)
}

/// One session's clock of the program's threads.
#[derive(Debug)]
pub struct RecordClock {
    pid: u32,
    tsc: TscClock,
    /// Where each thread last blocked, until its switch out.
    blocked_at: BTreeMap<u32, CallStack>,
    /// Threads named in the session: the first naming of one is its start (procmgr names a
    /// context as it makes it; the program's first thread, at its exec).
    named: std::collections::BTreeSet<u32>,
}

impl RecordClock {
    pub fn new(pid: u32, tsc: TscClock) -> RecordClock {
        RecordClock { pid, tsc, blocked_at: BTreeMap::new(), named: Default::default() }
    }

    pub fn ns(&self, tsc: u64) -> u64 {
        self.tsc.ns(tsc)
    }

    /// Is this sample where a thread blocked (not a sample of where the CPU was)?
    pub fn is_block(s: &Sample) -> bool {
        s.source == Some(Source::Block)
    }

    /// Take one event of one CPU's ring, in the ring's order, into `batch`.
    pub fn event(&mut self, e: &Event, batch: &mut SampleBatch) {
        match e {
            Event::Sample(s) if Self::is_block(s) && s.who.pid == Some(self.pid) => {
                let mut frames = vec![s.ip];
                frames.extend(&s.user_frames);
                let truncated = frames.len() + 3 >= 32;
                self.blocked_at.insert(s.who.thread, CallStack { frames, truncated });
            }
            Event::Name { time, who, name, .. } if who.pid == Some(self.pid) => {
                if self.named.insert(who.thread) {
                    batch.thread_starts.push((who.thread, self.tsc.ns(*time)));
                }
                batch.thread_names.push((who.thread, name.clone()));
            }
            Event::Switch(sw) => {
                let time = self.tsc.ns(sw.time);
                if sw.left.pid == Some(self.pid) {
                    let tid = sw.left.thread;
                    let preempted = sw.reason == Some(Reason::Preempted);
                    batch.switches.push(Switch { tid, time, out: Some(preempted) });
                    if sw.reason == Some(Reason::Exit) {
                        batch.thread_ends.push((tid, time));
                    }
                    let stack = self.blocked_at.remove(&tid);
                    if !preempted && sw.reason != Some(Reason::Exit) {
                        let (call, target) = wait_call(sw.reason, sw.detail);
                        let stack = stack.unwrap_or(CallStack { frames: vec![], truncated: true });
                        let site = WaitSite { pid: self.pid, call, target, stack };
                        batch.blocked_at.push(Probe { tid, from: time, to: time, sched: None, site: Some(site) });
                    }
                }
                if sw.entered.pid == Some(self.pid) {
                    batch.switches.push(Switch { tid: sw.entered.thread, time, out: None });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_events::{Ids, Switch as SwitchRecord};

    const CLOCK: TscClock = TscClock { tsc: 1_000, ns: 5_000, ns_per_tick: 0.5 };

    fn who(pid: u32, thread: u32) -> Ids {
        Ids { pid: Some(pid), thread }
    }

    fn switch(time: u64, left: Ids, entered: Ids, reason: Reason) -> Event {
        Event::Switch(SwitchRecord { cpu: 0, time, left, entered, reason: Some(reason), detail: 4, stack: vec![] })
    }

    #[test]
    fn tsc_to_ns_by_the_measured_rate() {
        let c = TscClock::from_readings((1_000, 5_000), (3_000, 6_000)).unwrap();
        assert_eq!(c, CLOCK);
        assert_eq!((c.ns(1_000), c.ns(3_000), c.ns(0)), (5_000, 6_000, 4_500));
        assert_eq!(TscClock::from_readings((3_000, 5_000), (1_000, 6_000)), None);
        assert_eq!(TscClock::from_readings((1_000, 5_000), (3_000, 5_000)), None);
    }

    #[test]
    fn the_programs_switches_and_where_it_blocked() {
        let mut clock = RecordClock::new(10, CLOCK);
        let mut batch = SampleBatch::default();
        let block = Event::Sample(Sample {
            cpu: 0,
            time: 1_900,
            who: who(10, 21),
            kernel: false,
            source: Some(Source::Block),
            ip: 0x40_1000,
            kernel_frames: vec![],
            user_frames: vec![0x40_2000],
        });
        for e in [
            block,
            // Thread 21 calls a scheme; ramfs (pid 7) runs; 21 comes back, is preempted.
            switch(2_000, who(10, 21), who(7, 5), Reason::Scheme),
            switch(2_400, who(7, 5), who(10, 21), Reason::SchemeIdle),
            switch(3_000, who(10, 21), who(9, 30), Reason::Preempted),
            // Another process's switches are not the program's.
            switch(3_200, who(9, 30), who(7, 5), Reason::Sleep),
        ] {
            clock.event(&e, &mut batch);
        }
        assert_eq!(
            batch.switches,
            [
                Switch { tid: 21, time: 5_500, out: Some(false) },
                Switch { tid: 21, time: 5_700, out: None },
                Switch { tid: 21, time: 6_000, out: Some(true) },
            ]
        );
        let site = WaitSite {
            pid: 10,
            call: "scheme-call".into(),
            target: Some("4".into()),
            stack: CallStack { frames: vec![0x40_1000, 0x40_2000], truncated: false },
        };
        assert_eq!(batch.blocked_at, [Probe { tid: 21, from: 5_500, to: 5_500, sched: None, site: Some(site) }]);
    }
}
