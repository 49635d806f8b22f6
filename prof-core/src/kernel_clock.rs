//! The program's threads by the clock on Redox: the account profd builds from the kernel's
//! switch records ([`crate::session::Session::clock_from_records`]), served as `prof:clock`
//! with a `name=` on each scheme line and an `image` line: where the program's text is
//! loaded, to place the sites' frames as `prof:stacks` places its own
//! ([`crate::session::place_frames`]).
//!
//! ```text
//! clock version=1 state=stopped pid=13 begin=439841718 end=1638795348 at=1638795348 threads_dropped=0 sites_dropped=0 served_dropped=0
//! thread tid=19 begin=439841718 end=1638795348 on_cpu=219319898 preempted=1069850 blocked=978563882 blocks=86
//! site id=812 tid=19 reason=sleep scheme=0 count=1 ns=300124044 truncated=1 frames=462f06,40afb6,40b797
//! site id=77 tid=19 reason=scheme-call scheme=24 count=39 ns=56912730 truncated=0 frames=444ae0,40b1a0
//! scheme id=24 daemon=7 name=/scheme/initfs/bin/ramfs
//! served site=77 daemon=7 count=12 truncated=0 frames=41c2f0,40a410
//! image load_base=0x0 text=0x401000-0x4a0000
//! ```
//!
//! Times are ns of the kernel's monotonic clock. A thread's `on_cpu + preempted + blocked` is
//! its `end` (or, while it runs, `at`) minus its `begin`, exactly; `blocks` counts its blocks,
//! and the sites (reason, scheme for a scheme call, user stack innermost first, hex) share
//! its blocked time but for blocks the kernel kept no site of (no user frame, a full table).
//! A `served` line is a daemon's samples at one of its stacks (its own addresses, kernel
//! frames first where it was in the kernel) while it worked on the request a thread was
//! blocked on at site `id`: its work stitched under the program's call.
//! The `*_dropped` counts are what an account with bounded tables could not keep (the text's
//! first writer, an in-kernel account, had them); one built from records keeps everything,
//! and says 0. Lines of other kinds, and words a reader does not know, are for later
//! versions: skipped.

use std::collections::BTreeMap;

use std::fmt::Write;

/// One thread of the program by the clock, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockThread {
    pub tid: u64,
    pub begin: u64,
    /// 0: it had not ended.
    pub end: u64,
    pub on_cpu: u64,
    pub preempted: u64,
    pub blocked: u64,
    pub blocks: u64,
}

/// Where a thread blocked: why (the kernel's reason: `scheme-call`, `sleep`, `futex`,
/// `pipe-read`, `pipe-write`, `event`, `stopped`, `other`), on which scheme (a scheme call's;
/// 0 otherwise), its user stack at the call, and its blocks there and their time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockSite {
    /// The kernel's number of the site (what [`ClockServed::site`] names).
    pub id: u64,
    pub tid: u64,
    pub reason: String,
    pub scheme: u64,
    pub count: u64,
    pub ns: u64,
    pub truncated: bool,
    pub frames: Vec<u64>,
}

/// A daemon's samples at one stack while it served the wait at site `site`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockServed {
    pub site: u64,
    pub daemon: u64,
    pub count: u64,
    pub truncated: bool,
    pub frames: Vec<u64>,
}

/// The daemon seen serving a scheme the program called, and its executable where known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemeDaemon {
    pub scheme: u64,
    pub daemon: u64,
    pub name: Option<String>,
}

/// Where the program's text is: its link-time segment and the runtime load base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub load_base: u64,
    pub text: crate::image::TextSegment,
}

/// The kernel's clock account of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockReport {
    /// `running`, `stopped` (or `idle`: no session since boot).
    pub state: String,
    pub pid: u64,
    pub begin: u64,
    pub end: u64,
    pub at: u64,
    pub threads_dropped: u64,
    pub sites_dropped: u64,
    pub served_dropped: u64,
    pub threads: Vec<ClockThread>,
    pub sites: Vec<ClockSite>,
    pub schemes: Vec<SchemeDaemon>,
    pub served: Vec<ClockServed>,
    /// profd's: where the program's text is loaded (`prof:clock` only).
    pub image: Option<Placement>,
}

impl ClockThread {
    /// Its time from its begin to its end (or to the account's moment, alive).
    pub fn wall(&self, at: u64) -> u64 {
        (if self.end != 0 { self.end } else { at }).saturating_sub(self.begin)
    }
}

impl ClockReport {
    /// The daemon of `scheme`, where one was seen.
    pub fn daemon_of(&self, scheme: u64) -> Option<&SchemeDaemon> {
        self.schemes.iter().find(|s| s.scheme == scheme)
    }
}

/// The `key=value` words of a line after its kind.
fn words(rest: &str) -> BTreeMap<&str, &str> {
    rest.split_ascii_whitespace().filter_map(|w| w.split_once('=')).collect()
}

fn number(w: &BTreeMap<&str, &str>, key: &str) -> Option<u64> {
    w.get(key)?.parse().ok()
}

/// The `frames=` list of a line: hex, comma-separated (`None` if one is not hex).
fn frames(w: &BTreeMap<&str, &str>) -> Option<Vec<u64>> {
    match *w.get("frames")? {
        "" => Some(Vec::new()),
        list => list.split(',').map(|f| u64::from_str_radix(f, 16).ok()).collect(),
    }
}

fn hex_list(frames: &[u64]) -> String {
    frames.iter().map(|f| format!("{f:x}")).collect::<Vec<_>>().join(",")
}

/// Read a `prof:clock` text; `None` unless it begins with a version-1
/// `clock` line. A malformed line is skipped.
pub fn parse(text: &str) -> Option<ClockReport> {
    let mut lines = text.lines();
    let (kind, rest) = lines.next()?.split_once(' ')?;
    let head = words(rest);
    if kind != "clock" || head.get("version") != Some(&"1") {
        return None;
    }
    let mut report = ClockReport {
        state: head.get("state").unwrap_or(&"").to_string(),
        pid: number(&head, "pid")?,
        begin: number(&head, "begin")?,
        end: number(&head, "end")?,
        at: number(&head, "at")?,
        threads_dropped: number(&head, "threads_dropped").unwrap_or(0),
        sites_dropped: number(&head, "sites_dropped").unwrap_or(0),
        served_dropped: number(&head, "served_dropped").unwrap_or(0),
        ..ClockReport::default()
    };
    for line in lines {
        let Some((kind, rest)) = line.split_once(' ') else { continue };
        match kind {
            "thread" => {
                let w = words(rest);
                let thread = (|| {
                    Some(ClockThread {
                        tid: number(&w, "tid")?,
                        begin: number(&w, "begin")?,
                        end: number(&w, "end")?,
                        on_cpu: number(&w, "on_cpu")?,
                        preempted: number(&w, "preempted")?,
                        blocked: number(&w, "blocked")?,
                        blocks: number(&w, "blocks")?,
                    })
                })();
                report.threads.extend(thread);
            }
            "site" => {
                let w = words(rest);
                let site = (|| {
                    Some(ClockSite {
                        id: number(&w, "id").unwrap_or(u64::MAX),
                        tid: number(&w, "tid")?,
                        reason: w.get("reason")?.to_string(),
                        scheme: number(&w, "scheme")?,
                        count: number(&w, "count")?,
                        ns: number(&w, "ns")?,
                        truncated: *w.get("truncated")? == "1",
                        frames: frames(&w)?,
                    })
                })();
                report.sites.extend(site);
            }
            "served" => {
                let w = words(rest);
                let served = (|| {
                    Some(ClockServed {
                        site: number(&w, "site")?,
                        daemon: number(&w, "daemon")?,
                        count: number(&w, "count")?,
                        truncated: *w.get("truncated")? == "1",
                        frames: frames(&w)?,
                    })
                })();
                report.served.extend(served);
            }
            "scheme" => {
                // The name is the rest of the line: a path may hold spaces.
                let (rest, name) = match rest.split_once(" name=") {
                    Some((r, n)) => (r, Some(n.to_string())),
                    None => (rest, None),
                };
                let w = words(rest);
                if let (Some(scheme), Some(daemon)) = (number(&w, "id"), number(&w, "daemon")) {
                    report.schemes.push(SchemeDaemon { scheme, daemon, name });
                }
            }
            "image" => {
                let w = words(rest);
                let hex = |v: &str| u64::from_str_radix(v.strip_prefix("0x")?, 16).ok();
                let image = (|| {
                    let (start, end) = w.get("text")?.split_once('-')?;
                    Some(Placement {
                        load_base: hex(w.get("load_base")?)?,
                        text: crate::image::TextSegment { start: hex(start)?, end: hex(end)? },
                    })
                })();
                report.image = image.or(report.image);
            }
            _ => {}
        }
    }
    Some(report)
}

/// `prof:clock`: the account in the kernel's text, each scheme's daemon named where known.
pub fn render(report: &ClockReport) -> String {
    let mut out = String::new();
    let r = report;
    let _ = writeln!(
        out,
        "clock version=1 state={} pid={} begin={} end={} at={} threads_dropped={} sites_dropped={} served_dropped={}",
        r.state, r.pid, r.begin, r.end, r.at, r.threads_dropped, r.sites_dropped, r.served_dropped
    );
    for t in &r.threads {
        let _ = writeln!(
            out,
            "thread tid={} begin={} end={} on_cpu={} preempted={} blocked={} blocks={}",
            t.tid, t.begin, t.end, t.on_cpu, t.preempted, t.blocked, t.blocks
        );
    }
    for s in &r.sites {
        let _ = writeln!(
            out,
            "site id={} tid={} reason={} scheme={} count={} ns={} truncated={} frames={}",
            s.id,
            s.tid,
            s.reason,
            s.scheme,
            s.count,
            s.ns,
            u8::from(s.truncated),
            hex_list(&s.frames)
        );
    }
    for s in &r.schemes {
        let _ = write!(out, "scheme id={} daemon={}", s.scheme, s.daemon);
        if let Some(name) = &s.name {
            let _ = write!(out, " name={name}");
        }
        out.push('\n');
    }
    for s in &r.served {
        let _ = writeln!(
            out,
            "served site={} daemon={} count={} truncated={} frames={}",
            s.site,
            s.daemon,
            s.count,
            u8::from(s.truncated),
            hex_list(&s.frames)
        );
    }
    if let Some(p) = &r.image {
        let _ = writeln!(out, "image load_base={:#x} text={:#x}-{:#x}", p.load_base, p.text.start, p.text.end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "clock version=1 state=stopped pid=13 begin=1000 end=9000 at=9000 threads_dropped=0 sites_dropped=2 served_dropped=0\n\
        thread tid=19 begin=1000 end=8000 on_cpu=3000 preempted=500 blocked=3500 blocks=4\n\
        thread tid=20 begin=2000 end=0 on_cpu=1000 preempted=0 blocked=6000 blocks=1\n\
        site id=5 tid=19 reason=scheme-call scheme=24 count=3 ns=3000 truncated=1 frames=44bc78,40a9b6\n\
        site id=9 tid=20 reason=futex scheme=0 count=1 ns=6000 truncated=0 frames=4473f5\n\
        scheme id=24 daemon=7\n\
        served site=5 daemon=7 count=2 truncated=0 frames=7000,ffff800000001000\n";

    #[test]
    fn the_kernels_text_is_read_and_served_back_with_the_daemons_names() {
        let mut r = parse(KERNEL).unwrap();
        assert_eq!((r.state.as_str(), r.pid, r.begin, r.end, r.at, r.sites_dropped), ("stopped", 13, 1000, 9000, 9000, 2));
        assert_eq!(r.threads.len(), 2);
        assert_eq!(r.threads[0], ClockThread { tid: 19, begin: 1000, end: 8000, on_cpu: 3000, preempted: 500, blocked: 3500, blocks: 4 });
        assert_eq!((r.threads[0].wall(r.at), r.threads[1].wall(r.at)), (7000, 7000));
        assert_eq!(r.sites[0].frames, [0x44bc78, 0x40a9b6]);
        assert!(r.sites[0].truncated && !r.sites[1].truncated);
        assert_eq!(r.daemon_of(24).map(|d| d.daemon), Some(7));
        assert_eq!(r.served, [ClockServed { site: 5, daemon: 7, count: 2, truncated: false, frames: vec![0x7000, 0xffff_8000_0000_1000] }]);
        // Unchanged, as the kernel wrote it, until a name is added.
        assert_eq!(render(&r), KERNEL);
        r.schemes[0].name = Some("/scheme/initfs/bin/ramfs x".into());
        r.image = Some(Placement { load_base: 0, text: crate::image::TextSegment { start: 0x401000, end: 0x4a0000 } });
        let served = render(&r);
        assert!(
            served.ends_with(
                "scheme id=24 daemon=7 name=/scheme/initfs/bin/ramfs x\n\
                 served site=5 daemon=7 count=2 truncated=0 frames=7000,ffff800000001000\n\
                 image load_base=0x0 text=0x401000-0x4a0000\n"
            ),
            "{served}"
        );
        assert_eq!(parse(&served), Some(r));
    }

    #[test]
    fn other_versions_and_malformed_lines() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("clock version=2 pid=1 begin=0 end=0 at=0\n"), None);
        assert_eq!(parse("thread tid=1\n"), None);
        // Unknown kinds and words are skipped, malformed lines too.
        let r = parse(
            "clock version=1 state=running pid=5 begin=1 end=0 at=10 new=1\n\
             thread tid=1 begin=1 end=0 on_cpu=9 preempted=0 blocked=0 blocks=0 more=3\n\
             thread tid=x\n\
             site tid=1 reason=sleep scheme=0 count=1 ns=1 truncated=0 frames=zz\n\
             later kind=1\n",
        )
        .unwrap();
        assert_eq!((r.threads.len(), r.sites.len(), r.threads_dropped), (1, 0, 0));
    }
}
