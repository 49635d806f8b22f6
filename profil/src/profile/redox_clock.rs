//! Redox: the kernel's clock account (`/scheme/prof/clock`, see `prof_core::kernel_clock`) as the
//! profile's threads and wait sites, which the Linux backend builds from its looks: the same
//! "By the clock" and "Waiting" sections and exports follow from them.
//!
//! The kernel times every block of every thread, so each wait site's blocks and time are
//! exact; a thread's blocked time no site holds (blocks with no user frame, a full table) is
//! its [`UNSEEN`] part.

use prof_core::kernel_clock::{ClockReport, ClockSite};
use prof_core::ledger::{ThreadTime, Wait, UNSEEN};
use prof_core::session::place_frames;

use super::{Profile, ServedStack, Stack, WaitSite};

/// What a block's kernel reason is called in the report (as Linux names the system call).
pub fn call_name(reason: &str) -> String {
    match reason {
        "scheme-call" => "scheme call",
        "sleep" => "nanosleep",
        "futex" => "futex",
        "pipe-read" => "pipe read",
        "pipe-write" => "pipe write",
        "pipe" => "pipe read or write",
        "waitpid" => "waitpid",
        "scheme-requests" => "its scheme's next request",
        "event" => "event queue read",
        "stopped" => "stopped",
        "other" => "other wait",
        other => other,
    }
    .to_string()
}

/// What a scheme call waited on: the scheme's daemon, by its executable's name and pid (one
/// without a pid, the bootstrap's process or namespace manager, by its scheme), or the
/// scheme's number where no daemon of it was seen taking the program's requests.
fn target(clock: &ClockReport, site: &ClockSite) -> Option<String> {
    (site.reason == "scheme-call").then(|| match clock.daemon_of(site.scheme) {
        Some(d) if d.daemon == 0 => format!("{} (scheme {})", d.name.as_deref().unwrap_or(prof_samplers::context_table::BOOTSTRAP), site.scheme),
        Some(d) => {
            let name = d.name.as_deref().map_or("", |n| n.rsplit('/').next().unwrap_or(n));
            crate::profile::process_label(name, u32::try_from(d.daemon).unwrap_or(u32::MAX))
        }
        None => format!("scheme {}", site.scheme),
    })
}

/// The threads (by tid), the wait sites they index, of the program `pid`, and the daemons'
/// samples under those sites.
pub fn threads_and_sites(clock: &ClockReport, pid: u32) -> (Vec<ThreadTime>, Vec<WaitSite>, Vec<ServedStack>) {
    let (load_base, text) = match clock.image {
        Some(p) => (Some(p.load_base), p.text),
        None => (None, prof_core::image::TextSegment { start: 0, end: 0 }),
    };
    let sites: Vec<WaitSite> = clock
        .sites
        .iter()
        .map(|s| WaitSite {
            pid,
            call: call_name(&s.reason),
            target: target(clock, s),
            stack: Stack::new(place_frames(&s.frames, load_base, &text), s.truncated, 0),
        })
        .collect();
    let mut threads: Vec<ThreadTime> = clock
        .threads
        .iter()
        .map(|t| {
            let mut waits: Vec<Wait> = clock
                .sites
                .iter()
                .enumerate()
                .filter(|(_, s)| s.tid == t.tid)
                .map(|(i, s)| Wait { site: u32::try_from(i).unwrap_or(UNSEEN - 1).min(UNSEEN - 1), ns: s.ns, count: s.count })
                .collect();
            waits.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.site.cmp(&b.site)));
            let (ns, count) = waits.iter().fold((0u64, 0u64), |(n, c), w| (n.saturating_add(w.ns), c.saturating_add(w.count)));
            if t.blocked > ns {
                waits.push(Wait { site: UNSEEN, ns: t.blocked - ns, count: t.blocks.saturating_sub(count) });
            }
            ThreadTime {
                tid: u32::try_from(t.tid).unwrap_or(u32::MAX),
                wall: t.wall(clock.at),
                preempted: t.preempted,
                blocked: t.blocked,
                waits,
                unknown: 0,
            }
        })
        .collect();
    threads.sort_by_key(|t| t.tid);
    let served = clock
        .served
        .iter()
        .filter_map(|s| {
            let site = clock.sites.iter().position(|site| site.id == s.site)?;
            Some(ServedStack {
                site: u32::try_from(site).ok()?,
                pid: u32::try_from(s.daemon).ok()?,
                frames: s.frames.clone(),
                truncated: s.truncated,
                count: s.count,
            })
        })
        .collect();
    (threads, sites, served)
}

impl Profile {
    /// The account of the Redox kernel's clock (`/scheme/prof/clock`): each thread's time on
    /// a CPU, preempted and blocked, and its blocks by wait site.
    pub(crate) fn with_kernel_clock(mut self, clock: &ClockReport) -> Profile {
        let (threads, sites, served) = threads_and_sites(clock, self.parts.pid);
        self.parts.clock.threads = threads;
        self.parts.clock.wait_sites = sites;
        self.parts.clock.served = served;
        self
    }
}

/// The whole waits of profd's `timeline` file (their sites as the clock's ids), each at its
/// site among the profile's `wait_sites` as [`threads_and_sites`] makes them (a site of the
/// clock a thread: the wait's thread and id); a wait whose site the clock does not hold is left
/// out.
pub fn timed_waits(clock: &ClockReport, waits: &[prof_core::timeline::WaitSpan]) -> Vec<crate::timeline::TimedWait> {
    waits
        .iter()
        .filter_map(|w| {
            let site = clock.sites.iter().position(|s| s.id == u64::from(w.site) && s.tid == u64::from(w.tid))?;
            Some(crate::timeline::TimedWait { tid: w.tid, from: w.from, to: w.to, site: u32::try_from(site).ok()? })
        })
        .collect()
}

/// The daemons' work of profd's `timeline` file, by pid, each at the program's wait site as
/// [`timed_waits`] places waits (the site a thread of the clock: the thread served, and id).
pub fn timed_served(clock: &ClockReport, served: &[(u32, prof_core::timeline::ServedSpan)]) -> Vec<(u32, crate::timeline::TimedServed)> {
    served
        .iter()
        .map(|(pid, w)| {
            let site = w.site.and_then(|id| clock.sites.iter().position(|s| s.id == u64::from(id) && s.tid == u64::from(w.for_tid)));
            let site = site.and_then(|i| u32::try_from(i).ok());
            (*pid, crate::timeline::TimedServed { tid: w.tid, from: w.from, to: w.to, for_tid: w.for_tid, site })
        })
        .collect()
}

/// What kept the account from holding every wait, if anything did.
pub fn problem(clock: &ClockReport) -> Option<String> {
    let mut parts = Vec::new();
    if clock.threads_dropped > 0 {
        parts.push(format!("{} switches of threads were not timed", clock.threads_dropped));
    }
    if clock.sites_dropped > 0 {
        parts.push(format!("{} blocks had no site (no user frame, or a full table)", clock.sites_dropped));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Frame;

    const SERVED: &str = "clock version=1 state=stopped pid=13 begin=1000 end=9000 at=9000 threads_dropped=0 sites_dropped=1\n\
        thread tid=19 begin=1000 end=8000 on_cpu=3000 preempted=500 blocked=3500 blocks=5\n\
        thread tid=20 begin=2000 end=0 on_cpu=1000 preempted=0 blocked=6000 blocks=1\n\
        site id=40 tid=19 reason=scheme-call scheme=24 count=3 ns=3000 truncated=1 frames=402010,401050,7f0010\n\
        site id=41 tid=19 reason=scheme-call scheme=18 count=1 ns=400 truncated=0 frames=402010\n\
        site id=7 tid=20 reason=sleep scheme=0 count=1 ns=6000 truncated=0 frames=403000\n\
        scheme id=24 daemon=7 name=/scheme/initfs/bin/ramfs\n\
        served site=40 daemon=7 count=2 truncated=0 frames=7000,7100\n\
        served site=99 daemon=7 count=1 truncated=0 frames=7000\n\
        image load_base=0x0 text=0x401000-0x404000\n";

    /// A wait on a daemon without a pid (the bootstrap's process manager): named by profd
    /// as `[bootstrap]`, shown with its scheme, since two such daemons share the name.
    #[test]
    fn a_daemon_without_a_pid_is_named_with_its_scheme() {
        let text = "clock version=1 state=stopped pid=13 begin=1000 end=9000 at=9000 threads_dropped=0 sites_dropped=0\n\
            thread tid=19 begin=1000 end=8000 on_cpu=3000 preempted=0 blocked=4000 blocks=1\n\
            site id=1 tid=19 reason=scheme-call scheme=18 count=1 ns=4000 truncated=0 frames=402010\n\
            scheme id=18 daemon=0 name=[bootstrap]\n";
        let clock = prof_core::kernel_clock::parse(text).unwrap();
        let (_, sites, _) = threads_and_sites(&clock, 13);
        assert_eq!(sites[0].target.as_deref(), Some("[bootstrap] (scheme 18)"));
        // A daemon profd could not name (a profd before it named every daemon it lists): by
        // its pid alone, not as `?`.
        let unnamed = text.replace("scheme id=18 daemon=0 name=[bootstrap]", "scheme id=18 daemon=7");
        let (_, sites, _) = threads_and_sites(&prof_core::kernel_clock::parse(&unnamed).unwrap(), 13);
        assert_eq!(sites[0].target.as_deref(), Some("[pid 7]"));
    }

    #[test]
    fn the_kernels_account_becomes_the_profiles_threads_and_sites() {
        let clock = prof_core::kernel_clock::parse(SERVED).unwrap();
        let (threads, sites, served) = threads_and_sites(&clock, 13);
        // Under the site the kernel numbered 40, the first; a site not listed is left out.
        assert_eq!(served, [ServedStack { site: 0, pid: 7, frames: vec![0x7000, 0x7100], truncated: false, count: 2 }]);
        assert_eq!(sites.len(), 3);
        assert_eq!((sites[0].call.as_str(), sites[0].target.as_deref()), ("scheme call", Some("ramfs [pid 7]")));
        assert_eq!(sites[1].target.as_deref(), Some("scheme 18"));
        assert_eq!((sites[2].call.as_str(), sites[2].target.as_deref()), ("nanosleep", None));
        // Placed as -g stacks are: the program's text, callers by their call, others foreign.
        assert_eq!(sites[0].stack.frames, [Frame::Program(0x402010), Frame::Program(0x40104f), Frame::Foreign(0x7f000f)]);
        assert!(sites[0].stack.truncated);
        assert_eq!(threads.len(), 2);
        let main = &threads[0];
        assert_eq!((main.tid, main.wall, main.preempted, main.blocked, main.on_cpu()), (19, 7000, 500, 3500, 3000));
        // Its sites, most time first, and the blocked time no site holds.
        assert_eq!(
            main.waits,
            [Wait { site: 0, ns: 3000, count: 3 }, Wait { site: 1, ns: 400, count: 1 }, Wait { site: UNSEEN, ns: 100, count: 1 }]
        );
        // A live thread's time runs to the account's moment.
        assert_eq!((threads[1].wall, threads[1].waits.len()), (7000, 1));
        assert_eq!(problem(&clock).as_deref(), Some("1 blocks had no site (no user frame, or a full table)"));
    }
}
