//! The program's threads by the clock, as a session keeps them: the ledger of their switches
//! and looks, the wait sites numbered as the ledger names them, the daemons' samples under
//! those waits (Redox's typed records), and the span of the backend's clock readings. A
//! batch's [`ThreadsBatch`] is merged here whole.

use std::collections::BTreeMap;

use crate::ledger::{Ledger, UNSEEN};
use crate::sample::CallStack;
use crate::sampler::{ThreadsBatch, WaitSite};
use crate::timeline::{Timeline, WaitSpan};

#[derive(Debug, Clone, Default)]
pub struct ProgramClock {
    /// The program's threads by the clock: on a CPU, preempted, blocked, and where.
    pub ledger: Ledger,
    /// The clock's first and last readings of the session (ns).
    pub span: Option<(u64, u64)>,
    /// The wait sites probes or records found, numbered as the ledger names them.
    pub wait_sites: Vec<WaitSite>,
    wait_index: BTreeMap<WaitSite, u32>,
    /// Why probing saw less than it should, if it did (`--off-cpu`).
    pub probe_problem: Option<String>,
    /// The daemons' samples under the program's waits, where the backend tells them (Redox's
    /// typed records): (wait site, daemon pid, stack) -> ticks.
    pub served: BTreeMap<(u32, u32, CallStack), u64>,
    /// Each scheme's daemon (Redox): scheme id -> pid.
    pub scheme_daemons: BTreeMap<u64, u32>,
}

impl ProgramClock {
    /// Take what a batch saw of the program's threads into the ledger, the wait sites and the
    /// program's `timeline` (its looks at blocked threads, its whole waits), and the clock's
    /// readings (`clock`) into the span; the ledger settles up to the latest reading (no later
    /// than the probes have come).
    pub fn add(&mut self, t: ThreadsBatch, clock: &[u64], timeline: &mut Timeline) {
        for sw in t.switches {
            self.ledger.switch(sw);
        }
        for (tid, time) in t.starts {
            self.ledger.start(tid, time);
        }
        for (tid, time) in t.ends {
            self.ledger.end(tid, time);
        }
        for p in t.probes {
            let site = p.site.map(|site| self.wait_site_index(site));
            let time = p.from / 2 + p.to / 2;
            self.ledger.look(p.tid, time, p.sched, site);
            if let Some(site) = site {
                timeline.blocked(p.tid, time, site);
            }
        }
        for (site, daemon, stack, n) in t.served {
            let site = self.wait_site_index(site);
            let c = self.served.entry((site, daemon, stack)).or_insert(0);
            *c = c.saturating_add(n);
        }
        for (tid, from, to, site) in t.wait_spans {
            let site = self.wait_site_index(site);
            timeline.waits.push(WaitSpan { tid, from, to, site });
        }
        for p in t.blocked_at {
            if let Some(site) = p.site.map(|site| self.wait_site_index(site)) {
                self.ledger.probe(p.tid, p.from, p.to, site);
            }
        }
        if t.probe_problem.is_some() {
            self.probe_problem = t.probe_problem;
        }
        if let Some(&read) = clock.iter().max() {
            self.ledger.settle(read.min(t.probed_until.unwrap_or(u64::MAX)));
        }
        widen(&mut self.span, clock);
    }

    /// The number the ledger names wait `site` by (a new site gets the next; past the last
    /// number, every new one shares it).
    pub fn wait_site_index(&mut self, site: WaitSite) -> u32 {
        if let Some(&i) = self.wait_index.get(&site) {
            return i;
        }
        let i = u32::try_from(self.wait_sites.len()).unwrap_or(UNSEEN - 1).min(UNSEEN - 1);
        self.wait_index.insert(site.clone(), i);
        self.wait_sites.push(site);
        i
    }
}

/// `span` (first, last) widened over the clock's `readings`.
pub(crate) fn widen(span: &mut Option<(u64, u64)>, readings: &[u64]) {
    for &now in readings {
        *span = Some(span.map_or((now, now), |(first, last)| (first.min(now), last.max(now))));
    }
}
