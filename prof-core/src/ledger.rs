//! The program's time by the clock, thread by thread: on a CPU, or off it and why (waiting for
//! a CPU it could run on: preempted; or blocked: asleep, waiting for I/O, a lock, a child).
//!
//! A backend reports each thread's switches (out, with whether it was preempted; in), its start
//! and its end, with timestamps of one monotonic clock. Records of different CPUs arrive in no
//! common order, but one thread's switches alternate, out then in: an out is paired with the
//! first in after it, whenever both have arrived, and a thread keeps at most a few unpaired
//! switches. What is left at the end: a first in without its out (the thread was off the CPU
//! when the session began) and a last out (it was off when it ended). A switch whose partner
//! never came (a record the kernel did not deliver: seen once in 40,000 switches) is left out
//! of the account rather than stretched to the thread's end. Time on a CPU is measured too, from
//! each in to its out, so the three (on a CPU, preempted, blocked) add up to the thread's span
//! where every switch paired; where one did not, the rest is `unknown`, never on a CPU.
//!
//! Why a thread was blocked comes from probes (`--off-cpu`): a look at a thread between two
//! times that found it blocked at a wait site (a system call, what it waits on, its user
//! stack; the session numbers the sites). A blocked thread cannot move, so one probe inside a
//! blocked period names the whole period; a period no probe fell in (shorter than the probes'
//! period) is counted as [`UNSEEN`].
//!
//! Without switches (Linux: the kernel's switch records cost the program about a microsecond
//! a switch, so they are not asked for), a thread's account comes from its looks alone
//! ([`Ledger::look`]): each look also reads the kernel's scheduler statistics of the thread
//! (its time on a CPU and waiting on a run queue, exact, and how many times it got a CPU), so
//! on a CPU and preempted are the kernel's own figures, blocked is the rest of its life, and
//! the blocked time is split over the wait sites by the looks that found it there, each look
//! standing for the time since the previous one (so a late look, on a busy machine, weighs
//! what it replaced). A wait is counted once however many looks saw it: consecutive looks at
//! one site between which the thread never got a CPU. Waits shorter than the looks' period
//! are mostly seen once or not at all: their time is right on average, their count is not.
//!
//! The switch-based account above is for a backend that records every switch (the Linux
//! backend asked the kernel for switch records until their cost showed: two records a
//! context switch, 1.43x on a program blocking 168,000 times a second).

use std::collections::BTreeMap;

/// One switch of a thread, at `time` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    pub tid: u32,
    pub time: u64,
    /// `Some(preempted)` for a switch off the CPU, `None` for one onto it.
    pub out: Option<bool>,
}

/// A thread's scheduler statistics (Linux: `/proc/PID/task/TID/schedstat`), cumulative since
/// it began: ns on a CPU, ns runnable waiting for one, times it was given one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sched {
    pub on_cpu: u64,
    pub runq: u64,
    pub slices: u64,
}

/// A thread's looks, where its account is made from them.
#[derive(Debug, Clone, Default)]
struct Looks {
    /// The first and latest looks with statistics: (time, statistics).
    first: Option<(u64, Sched)>,
    last: Option<(u64, Sched)>,
    /// The latest look's time: each later look stands for the time since it.
    previous_at: Option<u64>,
    /// Looks that found it blocked, by site: (the time they stand for, ns; waits seen).
    by_site: BTreeMap<u32, (u64, u64)>,
    /// The time all looks that found it blocked stand for, ns.
    blocked_weight: u64,
    /// The previous look's site and slice count, where it found the thread blocked.
    previous: Option<(u32, u64)>,
}

/// The wait site of blocked periods no probe fell in.
pub const UNSEEN: u32 = u32::MAX;

/// Blocked time at one wait site (an index the session gave it, or [`UNSEEN`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wait {
    pub site: u32,
    /// Total blocked time, ns.
    pub ns: u64,
    /// Blocked periods.
    pub count: u64,
}

/// One thread's account.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadTime {
    pub tid: u32,
    /// From its start (or the session's) to its end (or the session's), ns.
    pub wall: u64,
    /// Off the CPU while runnable (another task had the CPU), ns.
    pub preempted: u64,
    /// Off the CPU, blocked (a system call that waits: sleep, I/O, a futex, wait), ns.
    pub blocked: u64,
    /// Where probes were taken: the blocked time by wait site, most first (they sum to
    /// `blocked`, up to the parts cut at the session's ends).
    pub waits: Vec<Wait>,
    /// What the account cannot say, ns: a thread no look and no switch ever saw (one that began
    /// and ended between two looks), past what its ticks show it ran ([`ThreadTime::ran_at_least`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ThreadTime {
    /// On a CPU: what the thread was not off it, nor unknown.
    pub fn on_cpu(&self) -> u64 {
        self.wall.saturating_sub(self.preempted).saturating_sub(self.blocked).saturating_sub(self.unknown)
    }

    /// Its ticks say it ran `ns` at least: that much of what was unknown was on a CPU.
    pub fn ran_at_least(&mut self, ns: u64) {
        self.unknown = self.unknown.saturating_sub(ns.saturating_sub(self.on_cpu()));
    }
}

#[derive(Debug, Clone, Default)]
struct Thread {
    start: Option<u64>,
    end: Option<u64>,
    /// Switches not yet settled, by time (a later batch may still bring earlier ones).
    pending: Vec<(u64, Option<bool>)>,
    /// Settled: off the CPU since this time, preempted or not.
    off: Option<(u64, bool)>,
    /// Its first settled switch was an in, at this time: off since before it.
    first_in: Option<u64>,
    /// Its first settled switch was an out, at this time: on a CPU since before it.
    first_out: Option<u64>,
    /// Settled: on a CPU since this time (an in not yet followed by its out).
    on_since: Option<u64>,
    seen: bool,
    /// On a CPU, measured from in to out (not the rest of its span: a lost switch leaves a
    /// time that is none of the three).
    on_cpu: u64,
    preempted: u64,
    blocked: u64,
    /// Switches whose partner never came.
    unpaired: u64,
    /// Probes not yet matched to a period: (from, to, site), by `from`.
    probes: Vec<(u64, u64, u32)>,
    /// Blocked time by site: (ns, periods).
    waits: BTreeMap<u32, (u64, u64)>,
    looks: Looks,
}

impl Thread {
    /// Take the pending switches before `until`, in time order: out then in, a period off.
    fn settle(&mut self, until: u64) {
        let n = self.pending.partition_point(|p| p.0 < until);
        let settled: Vec<(u64, Option<bool>)> = self.pending.drain(..n).collect();
        for (time, out) in settled {
            match (out, self.off.take()) {
                // Two outs: the in between them never came.
                (Some(preempted), previous) => {
                    self.unpaired += u64::from(previous.is_some());
                    match self.on_since.take() {
                        Some(since) => self.on_cpu = self.on_cpu.saturating_add(time.saturating_sub(since)),
                        None if !self.seen => self.first_out = Some(time),
                        None => {}
                    }
                    self.off = Some((time, preempted));
                }
                (None, Some((left, preempted))) => {
                    self.on_since = Some(time);
                    let period = time.saturating_sub(left);
                    if preempted {
                        self.preempted = self.preempted.saturating_add(period);
                    } else {
                        self.blocked = self.blocked.saturating_add(period);
                        let site = self.site_within(left, time);
                        self.charge(site, period);
                    }
                    // No later period reaches back before this one's end.
                    self.probes.retain(|p| p.1 >= time);
                }
                (None, None) if !self.seen => {
                    self.first_in = Some(time);
                    self.on_since = Some(time);
                }
                // Two ins: the out between them never came; on a CPU since the later.
                (None, None) => {
                    self.unpaired += 1;
                    self.on_since = Some(time);
                }
            }
            self.seen = true;
        }
    }
}

impl Thread {
    /// The account from looks alone (no switch recorded), for its life `start..end`.
    fn sampled_account(&self, tid: u32, start: u64, end: u64) -> ThreadTime {
        let l = &self.looks;
        let wall = end - start;
        let (Some((first_at, first)), Some((_, last))) = (l.first, l.last) else {
            return ThreadTime { tid, wall, ..Default::default() };
        };
        // Its statistics count from its creation: a thread created in the session, looked at
        // after, counts from zero; one that was there before (or looked at before its start:
        // the program before its exec) from its first look.
        let base = if self.start.is_some_and(|s| s < first_at) { Sched::default() } else { first };
        let on_cpu = last.on_cpu.saturating_sub(base.on_cpu).min(wall);
        let preempted = last.runq.saturating_sub(base.runq).min(wall - on_cpu);
        let blocked = wall - on_cpu - preempted;
        // Each look stands for the time since the one before, so a look that came late (the
        // looker was kept off a CPU) weighs as much as the looks it replaced. The first stands
        // for nothing: the thread's life before it (a child found a while after its fork) is
        // shared out as the later looks say, not given to whatever the first one caught.
        let by_site = &l.by_site;
        let total = l.blocked_weight;
        let mut waits: Vec<Wait> = Vec::new();
        let mut named = 0u64;
        for (&site, &(weight, seen)) in by_site {
            let ns = (u128::from(blocked) * u128::from(weight) / u128::from(total.max(1))) as u64;
            named += ns;
            waits.push(Wait { site, ns, count: seen });
        }
        if by_site.is_empty() && blocked > 0 {
            waits.push(Wait { site: UNSEEN, ns: blocked, count: 0 });
            named = blocked;
        } else if total == 0 && blocked > 0 {
            // Seen blocked only at looks that stand for no time (one look, at its start): an
            // even split.
            let n = waits.len() as u64;
            for w in &mut waits {
                w.ns = blocked / n;
            }
            named = blocked / n * n;
        }
        if blocked > named {
            // Rounding: the rest to the site with the most time.
            if let Some(w) = waits.iter_mut().max_by_key(|w| w.ns) {
                w.ns += blocked - named;
            }
        }
        // A site that stands for no time is none of its life's waits: the program's first
        // look, before its exec, found it at profil's gate.
        waits.retain(|w| w.ns > 0);
        waits.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.site.cmp(&b.site)));
        ThreadTime { tid, wall, preempted, blocked, waits, unknown: 0 }
    }

    /// The site of the first probe that overlaps `from..=to`, else [`UNSEEN`].
    fn site_within(&self, from: u64, to: u64) -> u32 {
        self.probes.iter().find(|p| p.0 <= to && p.1 >= from).map_or(UNSEEN, |p| p.2)
    }

    fn charge(&mut self, site: u32, ns: u64) {
        let w = self.waits.entry(site).or_default();
        w.0 = w.0.saturating_add(ns);
        w.1 += 1;
    }
}

/// A thread's span within the session `begin..finish` (`None`: a thread never seen spans it).
fn span_of(t: Option<&Thread>, begin: u64, finish: u64) -> (u64, u64) {
    let start = t.and_then(|t| t.start).unwrap_or(begin).max(begin);
    let end = t.and_then(|t| t.end).unwrap_or(finish).clamp(start, finish.max(start));
    (start, end)
}

/// The account of a session's threads.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    threads: BTreeMap<u32, Thread>,
}

impl Ledger {
    pub fn switch(&mut self, s: Switch) {
        let t = self.threads.entry(s.tid).or_default();
        let at = t.pending.partition_point(|p| p.0 <= s.time);
        t.pending.insert(at, (s.time, s.out));
    }

    /// Every switch before `until` has arrived (the backend read its records after that
    /// time): settle them in time order.
    pub fn settle(&mut self, until: u64) {
        for t in self.threads.values_mut() {
            t.settle(until);
        }
    }

    /// A probe found thread `tid` blocked at wait `site` at some time from `from` to `to`.
    /// Every probe up to a time must come before [`Ledger::settle`] up to it.
    pub fn probe(&mut self, tid: u32, from: u64, to: u64, site: u32) {
        let t = self.threads.entry(tid).or_default();
        let at = t.probes.partition_point(|p| p.0 <= from);
        t.probes.insert(at, (from, to.max(from), site));
    }

    /// A look at thread `tid` at `time` (sampled accounts: no switches recorded): its
    /// scheduler statistics where read, and the site it was blocked at (`None`: it was on a
    /// CPU or runnable).
    pub fn look(&mut self, tid: u32, time: u64, sched: Option<Sched>, site: Option<u32>) {
        let l = &mut self.threads.entry(tid).or_default().looks;
        if let Some(s) = sched {
            l.first.get_or_insert((time, s));
            l.last = Some((time, s));
        }
        let weight = l.previous_at.map_or(0, |previous| time.saturating_sub(previous));
        l.previous_at = Some(l.previous_at.map_or(time, |p| p.max(time)));
        match site {
            Some(site) => {
                let slices = sched.map_or(u64::MAX, |s| s.slices);
                let e = l.by_site.entry(site).or_default();
                e.0 = e.0.saturating_add(weight);
                // A new wait unless the previous look saw this one (same site, no CPU since).
                if l.previous != Some((site, slices)) || slices == u64::MAX {
                    e.1 += 1;
                }
                l.blocked_weight = l.blocked_weight.saturating_add(weight);
                l.previous = Some((site, slices));
            }
            None => l.previous = None,
        }
    }

    /// Thread `tid` began at `time` (created during the session).
    pub fn start(&mut self, tid: u32, time: u64) {
        let t = self.threads.entry(tid).or_default();
        t.start = Some(t.start.map_or(time, |s| s.min(time)));
    }

    /// Thread `tid` ended at `time`.
    pub fn end(&mut self, tid: u32, time: u64) {
        let t = self.threads.entry(tid).or_default();
        t.end = Some(t.end.map_or(time, |e| e.max(time)));
    }

    /// Switches that lost their partner (records the kernel did not deliver), over all threads.
    pub fn unpaired(&self) -> u64 {
        self.threads.values().fold(0, |n, t| n.saturating_add(t.unpaired))
    }

    /// Thread `tid`'s span within the session `begin..finish`: from its start (or the
    /// session's) to its end (or the session's), as [`Ledger::accounts`] counts it.
    pub fn span(&self, tid: u32, begin: u64, finish: u64) -> (u64, u64) {
        span_of(self.threads.get(&tid), begin, finish)
    }

    /// Every thread's account for a session from `begin` to `finish` (ns of the switches'
    /// clock): threads seen at all, by tid. Where every switch is recorded, a thread with no
    /// switch at all was on a CPU; where threads are looked at instead (their scheduler
    /// statistics), one no look saw is unknown.
    pub fn accounts(&self, begin: u64, finish: u64) -> Vec<ThreadTime> {
        let by_looks = self.threads.values().any(|t| t.looks.last.is_some());
        self.threads
            .iter()
            .map(|(&tid, t)| {
                let (start, end) = span_of(Some(t), begin, finish);
                let mut t = t.clone();
                t.settle(u64::MAX);
                if !t.seen && t.looks.last.is_some() {
                    return t.sampled_account(tid, start, end);
                }
                if !t.seen && by_looks {
                    return ThreadTime { tid, wall: end - start, unknown: end - start, ..Default::default() };
                }
                let (mut preempted, mut blocked) = (t.preempted, t.blocked);
                // Off before its first in (asleep when the session began), and after its last
                // out (off until the end).
                if let Some(first) = t.first_in {
                    let period = first.clamp(start, end) - start;
                    blocked = blocked.saturating_add(period);
                    if period > 0 {
                        let site = t.site_within(start, first);
                        t.charge(site, period);
                    }
                }
                match t.off {
                    Some((left, true)) => preempted = preempted.saturating_add(end - left.clamp(start, end)),
                    Some((left, false)) => {
                        let period = end - left.clamp(start, end);
                        blocked = blocked.saturating_add(period);
                        if period > 0 {
                            let site = t.site_within(left, end);
                            t.charge(site, period);
                        }
                    }
                    None => {}
                }
                let wall = end - start;
                // On a CPU as measured: its periods from in to out, from its start to a first
                // out, from a last in to its end; a thread never switched ran all along.
                let on = match t.seen {
                    false => wall,
                    true => t
                        .on_cpu
                        .saturating_add(t.first_out.map_or(0, |o| o.clamp(start, end) - start))
                        .saturating_add(t.on_since.map_or(0, |since| end - since.clamp(start, end))),
                }
                .min(wall);
                // Periods that add up to more than the span (a span read in a clock other than
                // the switches') are cut off its time off the CPU, never off what it was seen
                // running: a thread blocked nearly all along still ran what it ran.
                let preempted = preempted.min(wall - on);
                let blocked = blocked.min(wall - on - preempted);
                // The three add up to the span but where a switch record was lost: that time
                // is none of them, and said so, never counted as on a CPU.
                let unknown = wall.saturating_sub(preempted).saturating_sub(blocked).saturating_sub(on);
                let mut waits: Vec<Wait> =
                    t.waits.iter().map(|(&site, &(ns, count))| Wait { site, ns, count }).collect();
                waits.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.site.cmp(&b.site)));
                ThreadTime { tid, wall, preempted, blocked, waits, unknown }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(tid: u32, time: u64, preempted: bool) -> Switch {
        Switch { tid, time, out: Some(preempted) }
    }

    fn back(tid: u32, time: u64) -> Switch {
        Switch { tid, time, out: None }
    }

    /// An account's times, its waits left out.
    fn times(tid: u32, wall: u64, preempted: u64, blocked: u64) -> (u32, u64, u64, u64) {
        (tid, wall, preempted, blocked)
    }

    fn times_of(a: &[ThreadTime]) -> Vec<(u32, u64, u64, u64)> {
        a.iter().map(|t| (t.tid, t.wall, t.preempted, t.blocked)).collect()
    }

    #[test]
    fn off_cpu_periods_by_reason() {
        let mut l = Ledger::default();
        // Thread 7, 0..1000: blocked 100..400, preempted 500..550, blocked from 900 to the end.
        for s in [out(7, 100, false), back(7, 400), out(7, 500, true), back(7, 550), out(7, 900, false)] {
            l.switch(s);
        }
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(7, 1000, 50, 400)]);
        assert_eq!(a[0].on_cpu(), 550);
    }

    /// A session's span read in a clock that runs slow against the switches' (a guest's
    /// monotonic clock under a busy host): its blocked period alone is longer than the span.
    /// What it was seen running stays on a CPU; the span's rest is blocked.
    #[test]
    fn a_span_shorter_than_its_periods_keeps_the_time_seen_on_a_cpu() {
        let mut l = Ledger::default();
        // On a CPU 0..10, blocked 10..1050, on 1050..1060 then it exits; the span says 1000.
        for s in [out(4, 10, false), back(4, 1050), out(4, 1060, false)] {
            l.switch(s);
        }
        l.end(4, 1060);
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(4, 1000, 0, 980)]);
        assert_eq!((a[0].on_cpu(), a[0].unknown), (20, 0));
    }

    /// Two CPUs' rings are read one after the other: a thread's in (on CPU 1) can arrive before
    /// the out (on CPU 0) that precedes it, even in a later batch; switches settle only once
    /// every earlier one has come.
    #[test]
    fn switches_out_of_order_pair_by_time() {
        let mut l = Ledger::default();
        for s in [back(3, 400), back(3, 900)] {
            l.switch(s);
        }
        l.settle(50);
        for s in [out(3, 100, false), out(3, 700, true)] {
            l.switch(s);
        }
        l.settle(950);
        assert_eq!(times_of(&l.accounts(0, 1000)), [times(3, 1000, 200, 300)]);
    }

    /// A switch whose partner never came counts for nothing: an out followed by another out
    /// (its in was lost), an in after another in.
    #[test]
    fn a_switch_without_its_partner_is_left_out() {
        let mut l = Ledger::default();
        for s in [back(5, 50), out(5, 100, false), out(5, 300, false), back(5, 400), back(5, 500), out(5, 600, true), back(5, 650)] {
            l.switch(s);
        }
        // Paired: 300..400 blocked, 600..650 preempted; before the first in (50) it was off;
        // the out at 100 and the in at 500 lost their partners.
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(5, 1000, 50, 150)]);
        // On a CPU as measured, 50..100, 500..600 and 650 to the end; 100..300 and 400..500,
        // where a partner was lost, are none of the three: not known, not on a CPU.
        assert_eq!((a[0].on_cpu(), a[0].unknown), (500, 300));
        l.settle(u64::MAX);
        assert_eq!(l.unpaired(), 2);
    }

    /// A thread asleep when the session began (attached) starts with an in; one created during
    /// the session counts from its start to its end.
    #[test]
    fn threads_start_and_end_within_the_session() {
        let mut l = Ledger::default();
        l.switch(back(1, 300));
        l.start(2, 200);
        l.switch(out(2, 250, false));
        l.switch(back(2, 650));
        l.end(2, 700);
        let a = l.accounts(100, 1000);
        assert_eq!(times_of(&a), [times(1, 900, 0, 200), times(2, 500, 0, 400)]);
        assert_eq!(a[1].on_cpu(), 100);
    }

    /// One probe inside a blocked period names all of it; a period no probe fell in is
    /// unseen; a probe while the thread ran (it raced a wake-up) names nothing.
    #[test]
    fn probes_name_whole_blocked_periods() {
        let mut l = Ledger::default();
        // Blocked 100..400 (probed at 150..160 at site 0 and again at 300..310), 500..520
        // (no probe), preempted 600..700 (a probe there counts for nothing), blocked 800..
        // the end (probed at 900..905 at site 1); a probe at 450 (running) is ignored.
        for p in [(150, 160, 0), (300, 310, 0), (450, 455, 1), (650, 660, 1), (900, 905, 1)] {
            l.probe(9, p.0, p.1, p.2);
        }
        for s in [out(9, 100, false), back(9, 400), out(9, 500, false), back(9, 520), out(9, 600, true), back(9, 700)] {
            l.switch(s);
        }
        l.switch(out(9, 800, false));
        l.settle(950);
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(9, 1000, 100, 520)]);
        assert_eq!(
            a[0].waits,
            [Wait { site: 0, ns: 300, count: 1 }, Wait { site: 1, ns: 200, count: 1 }, Wait { site: UNSEEN, ns: 20, count: 1 }]
        );
    }

    /// Asleep when the session began: the probe names the time before the first in.
    #[test]
    fn probes_name_the_wait_the_session_began_in() {
        let mut l = Ledger::default();
        l.probe(4, 120, 130, 3);
        l.switch(back(4, 300));
        let a = l.accounts(100, 1000);
        assert_eq!(a[0].waits, [Wait { site: 3, ns: 200, count: 1 }]);
    }

    fn sched(on_cpu: u64, runq: u64, slices: u64) -> Option<Sched> {
        Some(Sched { on_cpu, runq, slices })
    }

    /// No switches: on a CPU and preempted are the kernel's statistics between the first and
    /// the last look, blocked the rest of the thread's life, split over the sites by looks;
    /// consecutive looks at one site with no CPU between them are one wait.
    #[test]
    fn sampled_accounts_come_from_looks() {
        let mut l = Ledger::default();
        // Thread 3 existed before the session (0..1000): 10 looks; on a CPU 200, queued 100 in
        // the session; blocked at site 0 for 4 looks (one wait), site 1 for 2 looks (two
        // waits: it ran between them), running at the other 4.
        let looks = [
            (0, sched(50, 10, 5), None),
            (100, sched(100, 10, 6), Some(0)),
            (200, sched(100, 10, 6), Some(0)),
            (300, sched(100, 10, 6), Some(0)),
            (400, sched(100, 10, 6), Some(0)),
            (500, sched(150, 60, 7), None),
            (600, sched(160, 60, 8), Some(1)),
            (700, sched(170, 60, 9), Some(1)),
            (800, sched(200, 100, 10), None),
            (900, sched(250, 110, 11), None),
        ];
        for (t, s, site) in looks {
            l.look(3, t, s, site);
        }
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(3, 1000, 100, 700)]);
        assert_eq!(a[0].on_cpu(), 200);
        // 700 ns blocked, 4 : 2 looks.
        assert_eq!(a[0].waits, [Wait { site: 0, ns: 467, count: 1 }, Wait { site: 1, ns: 233, count: 2 }]);
    }

    /// A thread begun after its first look counts its statistics from zero; one never seen
    /// blocked has its blocked time unseen.
    #[test]
    fn a_thread_created_in_the_session_counts_from_zero() {
        let mut l = Ledger::default();
        l.start(4, 100);
        l.look(4, 150, sched(20, 5, 1), None);
        l.look(4, 250, sched(60, 5, 2), None);
        l.end(4, 300);
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(4, 200, 5, 135)]);
        assert_eq!(a[0].waits, [Wait { site: UNSEEN, ns: 135, count: 0 }]);
    }

    /// Each look stands for the time since the previous one: a look that came late (the
    /// looker was kept off a CPU on a busy machine) weighs as much as the looks it replaced;
    /// the first stands for nothing (what it caught is not given the life before it).
    #[test]
    fn looks_weigh_the_time_since_the_previous_one() {
        let mut l = Ledger::default();
        // Thread 5, 0..1000, on a CPU 100 and queued 0 in all: blocked 900. Its first look at
        // 100 finds it at site 2, then site 0 at 200 and 300, nothing until 700 (site 1: 400
        // ns), site 1 at 800, running at 900.
        let looks = [
            (100, sched(0, 0, 1), Some(2)),
            (200, sched(0, 0, 1), Some(0)),
            (300, sched(0, 0, 1), Some(0)),
            (700, sched(0, 0, 1), Some(1)),
            (800, sched(0, 0, 1), Some(1)),
            (900, sched(100, 0, 2), None),
        ];
        for (t, s, site) in looks {
            l.look(5, t, s, site);
        }
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(5, 1000, 0, 900)]);
        // Weights: site 2 none (the first look), site 0 200, site 1 500 (of 700), of 900 ns
        // blocked.
        assert_eq!(a[0].waits, [Wait { site: 1, ns: 643, count: 1 }, Wait { site: 0, ns: 257, count: 1 }]);
    }

    /// A look before the thread's start (the program at profil's gate, before its exec)
    /// stands for no time, and its site is not one of the thread's waits.
    #[test]
    fn a_look_before_the_start_names_no_wait() {
        let mut l = Ledger::default();
        l.look(6, 90, sched(0, 0, 1), Some(9));
        l.start(6, 100);
        l.look(6, 200, sched(50, 0, 2), None);
        l.look(6, 300, sched(50, 0, 2), Some(1));
        l.end(6, 400);
        let a = l.accounts(0, 1000);
        assert_eq!(times_of(&a), [times(6, 300, 0, 250)]);
        assert_eq!(a[0].waits, [Wait { site: 1, ns: 250, count: 1 }]);
    }

    /// Where threads are looked at (Linux: no switch records), a thread that began and ended
    /// between two looks is not known to have been on a CPU for its life: its account says
    /// so, and its ticks move what they show to on a CPU. Where switches are recorded, a
    /// thread with none ran throughout.
    #[test]
    fn a_thread_no_look_saw_is_unknown_but_for_its_ticks() {
        let mut l = Ledger::default();
        l.look(5, 100, sched(50, 0, 1), None);
        l.look(5, 900, sched(600, 100, 9), None);
        l.start(6, 300);
        l.end(6, 500);
        let a = l.accounts(0, 1000);
        assert_eq!((a[1].tid, a[1].wall, a[1].unknown, a[1].on_cpu(), a[1].blocked), (6, 200, 200, 0, 0));
        let mut t = a[1].clone();
        t.ran_at_least(30);
        assert_eq!((t.on_cpu(), t.unknown), (30, 170));
        t.ran_at_least(500);
        assert_eq!((t.on_cpu(), t.unknown), (200, 0), "never more than its life");
        assert_eq!(a[0].unknown, 0);
        // Switches recorded, none of thread 6's: it ran its whole life.
        let mut l = Ledger::default();
        for s in [out(5, 100, false), back(5, 400)] {
            l.switch(s);
        }
        l.start(6, 300);
        l.end(6, 500);
        let a = l.accounts(0, 1000);
        assert_eq!((a[1].unknown, a[1].on_cpu()), (0, 200));
    }
}
