//! A session on every process (`start all`) on typed records (Redox): every process's
//! requests to schemes, each from its daemon's taking it to its answer by the kernel's request
//! records, paired by the daemon's thread and the call (scheme and tag). A program's session
//! times more of each (`program_records`: the caller's side, the daemon's split, the chains);
//! a run of every process has the requests and their latencies.

use std::collections::BTreeMap;

use prof_core::requests::{Request, RequestKey, RequestSource, RequestsBatch};
use prof_events::{Event, Ids};

use crate::program_records::TscClock;

/// Requests taken and not yet answered: by (the daemon's thread, scheme, tag), when (TSC) and
/// for whom. (Those the session ends in are not counted: a run of every process has no end
/// of a program to be unfinished in.)
#[derive(Debug, Default)]
pub struct EveryRequest {
    open: BTreeMap<(u32, u64, u64), (u64, Ids)>,
}

impl EveryRequest {
    /// The requests of `events` (one batch's, any CPU's, in any order) answered in it, into
    /// `batch`, timed by `tsc`; those still open wait for a later batch. A request naming no
    /// caller (the kernel's close messages) is nobody's.
    pub fn take(&mut self, events: &[Event], tsc: &TscClock, batch: &mut RequestsBatch) {
        batch.source = Some(RequestSource::SchemeRequests);
        let mut requests: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Request { .. })).collect();
        requests.sort_by_key(|e| e.time());
        for e in requests {
            let Event::Request { time, daemon, caller, scheme, tag, answered, .. } = *e else { continue };
            let call = (daemon.thread, scheme, tag);
            if !answered {
                self.open.insert(call, (time, caller));
                continue;
            }
            let Some((taken, caller)) = self.open.remove(&call) else { continue };
            let Some(pid) = caller.pid.filter(|&p| p != 0) else { continue };
            let daemon_pid = daemon.pid.unwrap_or(0);
            batch.done.push(Request {
                pid,
                tid: caller.thread,
                key: RequestKey::scheme(scheme, daemon_pid),
                from: tsc.ns(taken),
                to: tsc.ns(time),
                taken_by: Some((daemon_pid, daemon.thread)),
                site: Default::default(),
                served: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(time: u64, daemon: (u32, u32), caller: Option<u32>, scheme: u64, tag: u64, answered: bool) -> Event {
        let daemon = Ids { pid: Some(daemon.0), thread: daemon.1 };
        Event::Request { cpu: 0, time, daemon, caller: Ids { pid: caller, thread: 0 }, scheme, tag, answered }
    }

    /// Paired by the daemon's thread and the call, across CPUs and batches, in time order;
    /// the kernel's close messages (no caller) are nobody's; one left open waits.
    #[test]
    fn every_process_s_requests_are_paired_and_timed() {
        let tsc = TscClock { tsc: 0, ns: 0, ns_per_tick: 0.5 };
        let mut every = EveryRequest::default();
        let mut b = RequestsBatch::default();
        // Given out of order (two CPUs' rings): 14's read of ramfs (7, thread 5), 20 us; 15's
        // of the same tag on another thread of ramfs; a close message; 14's write left open.
        let events = [
            request(3_000, (7, 5), Some(14), 24, 1, true),
            request(1_000, (7, 5), Some(14), 24, 1, false),
            request(1_500, (7, 6), Some(15), 24, 1, false),
            request(2_000, (7, 5), None, 24, 9, false),
            request(2_500, (7, 5), None, 24, 9, true),
            request(4_000, (7, 5), Some(14), 24, 2, false),
        ];
        every.take(&events, &tsc, &mut b);
        assert_eq!(b.source, Some(RequestSource::SchemeRequests));
        let done: Vec<_> = b.done.iter().map(|r| (r.pid, r.key.clone(), r.from, r.to, r.taken_by)).collect();
        assert_eq!(done, [(14, RequestKey::scheme(24, 7), 500, 1_500, Some((7, 5)))]);
        // The next batch answers 15's.
        let mut b = RequestsBatch::default();
        every.take(&[request(2_100, (7, 6), Some(15), 24, 1, true)], &tsc, &mut b);
        assert_eq!(b.done.iter().map(|r| (r.pid, r.from, r.to)).collect::<Vec<_>>(), [(15, 750, 1_050)]);
        assert_eq!(every.open.len(), 1);
    }
}
