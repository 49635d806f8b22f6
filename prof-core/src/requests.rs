//! Requests and their latencies: what a process asked of the system and how long each took
//! (Linux: its system calls, enter to exit; Redox: its requests to schemes, taken to
//! answered, by the daemon that served them), summed per what they went to.
//!
//! [`Latencies`] keeps one key's figures in bounded memory however many requests there are:
//! count, total, minimum and maximum exactly; the values themselves exactly up to
//! [`EXACT_CAP`], so the quantiles of a short run are exact; past that a log-linear histogram
//! (HdrHistogram's idea: every power of two cut in [`SUB_BUCKETS`] equal buckets, values below
//! [`SUB_BUCKETS`] ns each their own), whose quantiles are a bucket's middle, within 1/128 (0.8 %)
//! of the true value, at most 3,776 counters a key. Nothing here panics on any input, a saved
//! file's included.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// Requests kept whole, with their times, for the run over time (`--time`'s window, the
/// Firefox Profiler's markers): at most this many a run; past it they are counted only.
pub const MAX_TIMED: usize = 100_000;

/// Requests made by daemons while serving a timed one kept with it ([`Served::made`]): at most
/// this many a run; past it they are in the run's chains, not in a window's.
pub const MAX_MADE: usize = 100_000;

/// How far back among the timed requests a caller's side looks for its request.
const WAITED_SEARCH: usize = 4096;

/// Values kept exactly per key before the histogram takes over (32 KiB of them).
pub const EXACT_CAP: usize = 4096;

/// Distinct call stacks kept per key and process (`-g`): past them a key's requests are
/// counted in [`Stacks::other`], so the memory is bounded however many requests there are.
pub const MAX_STACKS: usize = 64;

/// Frames kept of a request's call stack (innermost first): enough for its site and callers.
pub const MAX_STACK_FRAMES: usize = 32;

/// Buckets per power of two in the histogram (a power of two itself).
pub const SUB_BUCKETS: u64 = 64;
const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();

/// What a request went to: a system call (`read`), or on Redox a scheme (`file:`) and the
/// daemon that served it (`ramfs [pid 7]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct RequestKey {
    pub to: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl RequestKey {
    /// A system call's key.
    pub fn call(name: impl Into<Cow<'static, str>>) -> RequestKey {
        RequestKey { to: name.into(), server: None }
    }

    /// A Redox request as the records say it, before anyone names it: the kernel's number of
    /// the scheme and the pid of the daemon that took it (0: the bootstrap's managers, which
    /// have none). [`RequestKey::as_scheme`] reads it back; `prof:requests` says it so.
    pub fn scheme(scheme: u64, daemon: u32) -> RequestKey {
        RequestKey { to: Cow::Owned(scheme.to_string()), server: Some(daemon.to_string()) }
    }

    /// The scheme's number and the daemon's pid of a key made by [`RequestKey::scheme`].
    pub fn as_scheme(&self) -> Option<(u64, u32)> {
        Some((self.to.parse().ok()?, self.server.as_deref()?.parse().ok()?))
    }
}

/// One request, whole: process `pid`'s thread `tid` asked `key` at `from` and had its answer
/// at `to` (ns of the backend's clock; in a profile, from the run's start); on Redox, the
/// daemon's pid and the thread of it that took it (`taken_by`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    pub pid: u32,
    pub tid: u32,
    pub key: RequestKey,
    pub from: u64,
    pub to: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_by: Option<(u32, u32)>,
    /// `-g` (Linux): where its call stack went among its process's ([`Site`]).
    #[serde(default, skip_serializing_if = "Site::is_unrecorded")]
    pub site: Site,
    /// Redox: the request from its caller's side and its daemons' ([`Served`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Box<Served>>,
}

/// Redox: a timed request from its caller's side and its daemons', so a window of the run
/// (`--time`) counts the callers' side, the daemons' split and the chains as the run does.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Served {
    /// From the caller's switch into the call to its switch back ([`Requests::waited`]), ns,
    /// where both were seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited: Option<u64>,
    /// How its daemon's thread spent it (a count of 1; [`Requests::split`]).
    pub split: DaemonSplit,
    /// The requests daemons made while serving it, at any depth ([`RequestLog::chains`]): the
    /// one served, the one made and its latency (ns); at most [`MAX_MADE`] a run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made: Vec<(RequestKey, RequestKey, u64)>,
}

/// Where a timed request's call stack (`-g`) is counted, so a window of the run (`--time`)
/// counts its requests' sites as the whole run's are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Site {
    /// No stack was recorded (a run without `-g`, Redox).
    #[default]
    Unrecorded,
    /// Among its key's [`Stacks::counts`]: the log's [`RequestLog::sites`]`[i]`.
    Stack(u32),
    /// In its key's [`Stacks::other`] (past [`MAX_STACKS`] distinct stacks, or empty).
    Other,
    /// In its key's [`Stacks::earlier`] (made before its process's latest exec).
    Earlier,
}

impl Site {
    fn is_unrecorded(&self) -> bool {
        *self == Site::Unrecorded
    }
}

impl Request {
    /// Its call stack's place among its log's [`RequestLog::sites`], where it was kept.
    fn site_index(&self) -> Option<usize> {
        match self.site {
            Site::Stack(i) => usize::try_from(i).ok(),
            _ => None,
        }
    }
}

/// Redox: how a daemon's thread spent its requests' time, from taking each to answering it
/// (ns): on a CPU (its switches in and out between the two), blocked in a request of its own
/// to another scheme (`waiting`, by that scheme as the key names schemes), and the rest
/// (preempted or runnable, or blocked on anything but a scheme). `total` is their sum exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DaemonSplit {
    pub count: u64,
    pub total: u64,
    pub on_cpu: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub waiting: BTreeMap<String, u64>,
}

impl DaemonSplit {
    /// Neither on a CPU nor waiting on a scheme: preempted, runnable, blocked otherwise.
    pub fn other(&self) -> u64 {
        self.total.saturating_sub(self.on_cpu).saturating_sub(self.waiting.values().fold(0u64, |n, &w| n.saturating_add(w)))
    }

    pub fn merge(&mut self, o: &DaemonSplit) {
        self.count = self.count.saturating_add(o.count);
        self.total = self.total.saturating_add(o.total);
        self.on_cpu = self.on_cpu.saturating_add(o.on_cpu);
        for (scheme, &ns) in &o.waiting {
            let w = self.waiting.entry(scheme.clone()).or_insert(0);
            *w = w.saturating_add(ns);
        }
    }
}

/// Where a run's requests come from, which says what their figures mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestSource {
    /// Linux: the kernel's `raw_syscalls` tracepoints, every call's enter and exit.
    SystemCalls,
    /// Redox: the kernel's records of each request a daemon took and answered.
    SchemeRequests,
}

/// One key's latencies (ns). See the module's doc for what is exact.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Latencies {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
    /// Every value, while there are at most [`EXACT_CAP`]; then empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exact: Vec<u64>,
    /// Past [`EXACT_CAP`]: (bucket, count) of the log-linear histogram, by bucket.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "pairs")]
    buckets: BTreeMap<u16, u64>,
}

/// The figures of one key: what the Requests table shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub median: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl Latencies {
    /// One more request that took `ns`.
    pub fn add(&mut self, ns: u64) {
        self.min = if self.count == 0 { ns } else { self.min.min(ns) };
        self.max = self.max.max(ns);
        self.count = self.count.saturating_add(1);
        self.total = self.total.saturating_add(ns);
        self.keep(ns);
    }

    /// The value `ns` among the values: exact, or past the cap the histogram's.
    fn keep(&mut self, ns: u64) {
        if self.buckets.is_empty() && self.exact.len() < EXACT_CAP {
            self.exact.push(ns);
            return;
        }
        self.fold_into_histogram();
        let c = self.buckets.entry(bucket_of(ns)).or_insert(0);
        *c = c.saturating_add(1);
    }

    /// The exact values into the histogram (from now on it holds them all).
    fn fold_into_histogram(&mut self) {
        for v in std::mem::take(&mut self.exact) {
            let c = self.buckets.entry(bucket_of(v)).or_insert(0);
            *c = c.saturating_add(1);
        }
    }

    /// Another's requests of the same key, as if added here.
    pub fn merge(&mut self, other: &Latencies) {
        if other.count == 0 {
            return;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count = self.count.saturating_add(other.count);
        self.total = self.total.saturating_add(other.total);
        for &v in &other.exact {
            self.keep(v);
        }
        if !other.buckets.is_empty() {
            // Its values are buckets already: this key's quantiles are the histogram's too.
            self.fold_into_histogram();
        }
        for (&b, &n) in &other.buckets {
            let c = self.buckets.entry(b).or_insert(0);
            *c = c.saturating_add(n);
        }
    }

    /// What it holds of the values: each value (while exact), and the histogram's (bucket,
    /// count) pairs (past the cap), for a file that carries them whole (`prof:requests`).
    pub fn held(&self) -> (&[u64], &BTreeMap<u16, u64>) {
        (&self.exact, &self.buckets)
    }

    /// A key's latencies as another process held them ([`Latencies::held`]), with its count,
    /// total, minimum and maximum: the same figures, whatever the input (values past the cap
    /// go into the histogram; a histogram takes the values in with it).
    pub fn from_held(count: u64, total: u64, min: u64, max: u64, exact: Vec<u64>, buckets: BTreeMap<u16, u64>) -> Latencies {
        let mut l = Latencies { count, total, min, max, exact: Vec::new(), buckets };
        for v in exact {
            l.keep(v);
        }
        l
    }

    /// Are the quantiles exact (every value kept)?
    pub fn is_exact(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The `q` quantile (0 < q <= 1), by nearest rank: the value at rank ceil(q × n) of the n
    /// values in order (the median of 1, 2, 3, 4 is 2). From the histogram, the middle of the
    /// bucket that rank falls in, kept within the minimum and maximum. 0 where there is none.
    pub fn quantile(&self, q: f64) -> u64 {
        let held = match self.buckets.is_empty() {
            true => self.exact.len() as u64,
            false => self.buckets.values().fold(0u64, |n, &c| n.saturating_add(c)),
        };
        if held == 0 {
            return 0;
        }
        let q = if q.is_nan() { 1.0 } else { q.clamp(0.0, 1.0) };
        // (Less a hair: 0.9 × 100 must be rank 90 whatever the rounding of 0.9.)
        let rank = ((q * held as f64 - 1e-9).ceil() as u64).clamp(1, held);
        if self.buckets.is_empty() {
            let mut sorted = self.exact.clone();
            sorted.sort_unstable();
            return sorted[(rank - 1) as usize];
        }
        let mut seen = 0u64;
        for (&b, &n) in &self.buckets {
            seen = seen.saturating_add(n);
            if seen >= rank {
                let (low, width) = bucket_range(b);
                return low.saturating_add(width / 2).clamp(self.min.min(self.max), self.max);
            }
        }
        self.max
    }

    /// Count, total, minimum, median, 90th and 99th percentile, maximum.
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count,
            total: self.total,
            min: self.min,
            median: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }

    /// How many values fall in each power of two: `(k, n)` for the n values from 2^k up to
    /// (not including) 2^(k+1) ns (k 0 also holds 0), every k from the lowest to the highest
    /// that has one.
    pub fn log2_histogram(&self) -> Vec<(u32, u64)> {
        let mut by_power = [0u64; 64];
        for &v in &self.exact {
            by_power[power_of(v) as usize] += 1;
        }
        for (&b, &n) in &self.buckets {
            let p = power_of(bucket_range(b).0) as usize;
            by_power[p] = by_power[p].saturating_add(n);
        }
        let Some(first) = by_power.iter().position(|&n| n > 0) else { return Vec::new() };
        let last = by_power.iter().rposition(|&n| n > 0).unwrap_or(first);
        (first..=last).map(|k| (k as u32, by_power[k])).collect()
    }
}

/// The power of two `v` is in: floor(log2 v), 0 for 0.
fn power_of(v: u64) -> u32 {
    63u32.saturating_sub(v.leading_zeros())
}

/// The histogram bucket of `v`: below [`SUB_BUCKETS`] its own, else the power of two it is
/// in cut in [`SUB_BUCKETS`] equal parts.
fn bucket_of(v: u64) -> u16 {
    if v < SUB_BUCKETS {
        return v as u16;
    }
    let e = power_of(v);
    let top = v >> (e - SUB_BITS);
    (u64::from(e - SUB_BITS + 1) * SUB_BUCKETS + (top - SUB_BUCKETS)) as u16
}

/// A bucket's lowest value and width (a bucket no value has, from a damaged file: its
/// nearest real one's).
fn bucket_range(b: u16) -> (u64, u64) {
    let b = u64::from(b);
    if b < SUB_BUCKETS {
        return (b, 1);
    }
    let e = (b / SUB_BUCKETS + u64::from(SUB_BITS) - 1).min(63) as u32;
    let shift = e - SUB_BITS;
    ((SUB_BUCKETS + b % SUB_BUCKETS) << shift, 1 << shift)
}

/// A process's requests, by what they went to, and what the backend could not pair.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Requests {
    #[serde(with = "pairs")]
    pub by_key: BTreeMap<RequestKey, Latencies>,
    /// Requests seen to start and never seen to end (the process ended in one: `exit_group`;
    /// the run stopped during it), and ends without their start (the run began in one).
    #[serde(default)]
    pub unfinished: u64,
    /// Redox: the same requests from their callers' side, by key: from the caller's switch
    /// into the call to its switch back after the answer (what the caller's own clock sees of
    /// a request but for the system call's entry and exit), where both were seen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "pairs")]
    pub waited: BTreeMap<RequestKey, Latencies>,
    /// Redox: how the daemons spent these requests' time, by key ([`DaemonSplit`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "pairs")]
    pub split: BTreeMap<RequestKey, DaemonSplit>,
    /// `-g` (Linux): the user call stacks the requests were made from, by key, as the
    /// process's runtime addresses (so not merged with another process's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "pairs")]
    pub stacks: BTreeMap<RequestKey, Stacks>,
}

/// One key's call stacks: each distinct stack (runtime addresses, innermost first: the
/// address the call was made at, then its callers' return addresses) and how many requests it
/// made, at most [`MAX_STACKS`] of them; the requests of the stacks past those (and of stacks
/// with no frame) in `other`; those made before the process's latest exec, by the image it
/// replaced, in `earlier`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stacks {
    #[serde(with = "pairs")]
    pub counts: BTreeMap<Vec<u64>, u64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier: u64,
}

impl Stacks {
    /// One more request made from `stack` (cut to [`MAX_STACK_FRAMES`]): whether it is among
    /// `counts` (else in `other`).
    pub fn add(&mut self, mut stack: Vec<u64>) -> bool {
        stack.truncate(MAX_STACK_FRAMES);
        let known = self.counts.len() < MAX_STACKS || self.counts.contains_key(&stack);
        match self.counts.get_mut(&stack) {
            Some(n) => *n = n.saturating_add(1),
            None if known && !stack.is_empty() => {
                self.counts.insert(stack, 1);
            }
            None => {
                self.other = self.other.saturating_add(1);
                return false;
            }
        }
        true
    }

    /// The requests of every stack, `other`'s and `earlier`'s among them.
    pub fn count(&self) -> u64 {
        self.counts.values().fold(self.other.saturating_add(self.earlier), |n, &c| n.saturating_add(c))
    }
}

impl Requests {
    pub fn add(&mut self, key: RequestKey, ns: u64) {
        self.by_key.entry(key).or_default().add(ns);
    }

    /// Another process's requests, as if made here (a tree's table). Their call stacks are
    /// not merged: their addresses are of their own process.
    pub fn merge(&mut self, other: &Requests) {
        for (k, l) in &other.by_key {
            self.by_key.entry(k.clone()).or_default().merge(l);
        }
        for (k, l) in &other.waited {
            self.waited.entry(k.clone()).or_default().merge(l);
        }
        for (k, d) in &other.split {
            self.split.entry(k.clone()).or_default().merge(d);
        }
        self.unfinished = self.unfinished.saturating_add(other.unfinished);
    }

    pub fn count(&self) -> u64 {
        self.by_key.values().fold(0u64, |n, l| n.saturating_add(l.count))
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty() && self.unfinished == 0
    }
}

/// The requests a session recorded: where from, and each process's (the program's, each
/// followed child's), by pid; what the backend lost.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestLog {
    pub source: RequestSource,
    #[serde(with = "pairs")]
    pub by_pid: BTreeMap<u32, Requests>,
    /// Records the backend lost (its rings were full): requests missing from the counts.
    #[serde(default)]
    pub lost: u64,
    /// Why the backend could not record them (Linux without the privilege the tracepoints
    /// need), where it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Redox: the requests a daemon made while it served one (of the program's, or one
    /// such), by (the request it served, the one it made): `file:` (ramfs) waiting on
    /// `disk:` (ahcid). Each is the made request's latency.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "pairs")]
    pub chains: BTreeMap<(RequestKey, RequestKey), Latencies>,
    /// The first [`MAX_TIMED`] requests whole, in the order they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timed: Vec<Request>,
    /// Requests past [`MAX_TIMED`]: in the counts, not in `timed`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untimed: u64,
    /// `-g`: the call stacks `timed`'s requests were made from ([`Site::Stack`]), each once
    /// (cut to [`MAX_STACK_FRAMES`], at most [`MAX_STACKS`] a key and process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<Vec<u64>>,
    /// Redox: the callers' side ([`Requests::waited`]) is each request's system call, from its
    /// entry to its return (a kernel that records system calls: layout 1.1), not the caller's
    /// switch into the call to its switch back.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sides_in_calls: bool,
    #[serde(skip)]
    site_ids: SiteIds,
    /// [`Served::made`]'s entries kept, against [`MAX_MADE`].
    #[serde(skip)]
    made: usize,
}

/// Each of [`RequestLog::sites`] by its stack, to find one again as requests come: a cache,
/// not part of the log (equal whatever it holds; rebuilt where a log read back takes more).
#[derive(Debug, Clone, Default)]
struct SiteIds(BTreeMap<Vec<u64>, u32>);

impl PartialEq for SiteIds {
    fn eq(&self, _: &SiteIds) -> bool {
        true
    }
}

impl Eq for SiteIds {}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl RequestLog {
    pub fn new(source: RequestSource) -> RequestLog {
        RequestLog {
            source,
            by_pid: BTreeMap::new(),
            lost: 0,
            refused: None,
            chains: BTreeMap::new(),
            timed: Vec::new(),
            untimed: 0,
            sites: Vec::new(),
            sides_in_calls: false,
            site_ids: SiteIds::default(),
            made: 0,
        }
    }

    /// A whole request.
    pub fn add(&mut self, mut r: Request) {
        let ns = r.to.saturating_sub(r.from);
        let mine = self.by_pid.entry(r.pid).or_default();
        mine.add(r.key.clone(), ns);
        // Redox: how its daemon spent it, the run's split made of the requests' own.
        if let Some(served) = &r.served {
            mine.split.entry(r.key.clone()).or_default().merge(&served.split);
        }
        match self.timed.len() < MAX_TIMED {
            true => {
                if let Some(served) = r.served.as_mut() {
                    served.made.truncate(MAX_MADE.saturating_sub(self.made));
                    self.made = self.made.saturating_add(served.made.len());
                }
                self.timed.push(r);
            }
            false => self.untimed = self.untimed.saturating_add(1),
        }
    }

    /// A request of `timed` from its caller's side, `waited` (the same process, thread and
    /// key, answered before the caller was back): kept with it, where it is among the last
    /// requests kept (the caller is back from its answer soon after it).
    fn waited(&mut self, waited: &Request) {
        let ns = waited.to.saturating_sub(waited.from);
        let it = self.timed.iter_mut().rev().take(WAITED_SEARCH).find(|r| {
            (r.pid, r.tid, &r.key) == (waited.pid, waited.tid, &waited.key) && r.to <= waited.to && r.served.as_ref().is_some_and(|s| s.waited.is_none())
        });
        if let Some(served) = it.and_then(|r| r.served.as_mut()) {
            served.waited = Some(ns);
        }
    }

    /// A whole request made from `stack` (`-g`): counted among its key's stacks, and its
    /// place there kept with it.
    fn add_from(&mut self, mut r: Request, mut stack: Vec<u64>) {
        stack.truncate(MAX_STACK_FRAMES);
        let stacks = self.by_pid.entry(r.pid).or_default().stacks.entry(r.key.clone()).or_default();
        r.site = match stacks.add(stack.clone()) {
            true => Site::Stack(self.site_id(stack)),
            false => Site::Other,
        };
        self.add(r);
    }

    /// `stack`'s place among [`RequestLog::sites`], added where it is not yet.
    fn site_id(&mut self, stack: Vec<u64>) -> u32 {
        if self.site_ids.0.len() != self.sites.len() {
            // A log read back: its cache is not.
            self.site_ids.0 = self.sites.iter().cloned().zip(0..).collect();
        }
        let next = u32::try_from(self.sites.len()).unwrap_or(u32::MAX);
        *self.site_ids.0.entry(stack).or_insert_with_key(|stack| {
            self.sites.push(stack.clone());
            next
        })
    }

    /// The requests that began in `[from, to)` (ns, as `timed` has them), counted again from
    /// `timed`, their call stacks (`-g`), callers' side, daemons' split and chains (Redox)
    /// too: a window of the run (`--time`). Where some were not kept whole, the window has
    /// those that were, and `untimed` says how many the run had past them.
    pub fn within(&self, from: u64, to: u64) -> RequestLog {
        let mut out = RequestLog { untimed: self.untimed, sites: self.sites.clone(), sides_in_calls: self.sides_in_calls, ..RequestLog::new(self.source) };
        out.refused.clone_from(&self.refused);
        for r in self.timed.iter().filter(|r| r.from >= from && r.from < to) {
            if let Some(served) = &r.served {
                if let Some(ns) = served.waited {
                    out.by_pid.entry(r.pid).or_default().waited.entry(r.key.clone()).or_default().add(ns);
                }
                for (outer, inner, ns) in &served.made {
                    out.chains.entry((outer.clone(), inner.clone())).or_default().add(*ns);
                }
            }
            if r.site != Site::Unrecorded {
                let stacks = out.by_pid.entry(r.pid).or_default().stacks.entry(r.key.clone()).or_default();
                let n = match (r.site, r.site_index().and_then(|i| self.sites.get(i))) {
                    (Site::Stack(_), Some(stack)) => stacks.counts.entry(stack.clone()).or_default(),
                    (Site::Earlier, _) => &mut stacks.earlier,
                    _ => &mut stacks.other,
                };
                *n = n.saturating_add(1);
            }
            out.add(r.clone());
        }
        out
    }

    /// The log without its call stacks (a run that did not ask for them: `-g`).
    pub fn without_sites(mut self) -> RequestLog {
        self.sites.clear();
        self.site_ids = SiteIds::default();
        for r in self.by_pid.values_mut() {
            r.stacks.clear();
        }
        for r in &mut self.timed {
            r.site = Site::Unrecorded;
        }
        self
    }

    /// `timed`'s times from `origin` (ns of the backend's clock): from the run's start.
    pub fn timed_from(mut self, origin: u64) -> RequestLog {
        for r in &mut self.timed {
            (r.from, r.to) = (r.from.saturating_sub(origin), r.to.saturating_sub(origin));
        }
        self
    }

    /// What a batch saw.
    pub fn take(&mut self, b: RequestsBatch) {
        let mut stacks = b.stacks.into_iter().enumerate().peekable();
        let mut execs = b.execs.into_iter().peekable();
        for (i, r) in b.done.into_iter().enumerate() {
            // Stacks given for no request (out of order, past the last): none of them.
            while stacks.next_if(|s| s.1 .0 < i).is_some() {}
            match stacks.next_if(|s| s.1 .0 == i) {
                Some((n, (_, stack))) => {
                    while let Some((exec, _)) = execs.next_if(|e| e.1 <= n) {
                        self.exec(exec);
                    }
                    self.add_from(r, stack);
                }
                None => self.add(r),
            }
        }
        for (exec, _) in execs {
            self.exec(exec);
        }
        self.sides_in_calls |= b.sides_in_calls;
        for r in b.waited {
            self.waited(&r);
            let ns = r.to.saturating_sub(r.from);
            self.by_pid.entry(r.pid).or_default().waited.entry(r.key).or_default().add(ns);
        }
        for (outer, inner, ns) in b.nested {
            self.chains.entry((outer, inner)).or_default().add(ns);
        }
        for pid in b.unfinished {
            let r = self.by_pid.entry(pid).or_default();
            r.unfinished = r.unfinished.saturating_add(1);
        }
        self.lost = self.lost.saturating_add(b.lost);
        if b.refused.is_some() {
            self.refused = b.refused;
        }
    }

    /// The requests of the processes `keep` says (by pid), the others' left out.
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        self.by_pid.retain(|&pid, _| keep(pid));
        self.timed.retain(|r| keep(r.pid));
    }

    /// Process `pid` exec'd: the stacks it has are of the image it replaced, whose mappings
    /// its run no longer has: each key's are counted in [`Stacks::earlier`].
    fn exec(&mut self, pid: u32) {
        let mut moved = 0u64;
        for s in self.by_pid.get_mut(&pid).into_iter().flat_map(|r| r.stacks.values_mut()) {
            let n = s.counts.values().fold(s.other, |n, &c| n.saturating_add(c));
            s.earlier = s.earlier.saturating_add(n);
            (s.counts, s.other) = (BTreeMap::new(), 0);
            moved = moved.saturating_add(n);
        }
        // Its timed requests' too (where it had any since its last exec).
        if moved > 0 {
            for r in self.timed.iter_mut().filter(|r| r.pid == pid && matches!(r.site, Site::Stack(_) | Site::Other)) {
                r.site = Site::Earlier;
            }
        }
    }

    /// Every process's requests as one process's (a tree's table); their stacks are not.
    pub fn merged(&self) -> Requests {
        let mut all = Requests::default();
        for r in self.by_pid.values() {
            all.merge(r);
        }
        all
    }
}

/// What a backend hands over of the requests in a batch: from where (`None`: it records
/// none), those ended in it, the processes of each seen to start or end alone, the records it
/// lost, and why it records none where it was asked to and cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestsBatch {
    pub source: Option<RequestSource>,
    pub done: Vec<Request>,
    pub unfinished: Vec<u32>,
    pub lost: u64,
    pub refused: Option<String>,
    /// Redox: requests a daemon made while serving one, (the one served, the one made, its
    /// latency in ns), ended in this batch.
    pub nested: Vec<(RequestKey, RequestKey, u64)>,
    /// Redox: requests of the tree's from their callers' side ([`Requests::waited`]).
    pub waited: Vec<Request>,
    /// ...each timed from its system call's entry to its return (the kernel records them),
    /// not from its caller's switch into the call to its switch back.
    pub sides_in_calls: bool,
    /// `-g` (Linux): the user call stack of each request of `done` whose stack was recorded,
    /// in `done`'s order: (its place in `done`, runtime addresses innermost first).
    pub stacks: Vec<(usize, Vec<u64>)>,
    /// `-g`: the processes that exec'd, each after how many of `stacks` (in time order): the
    /// stacks of a process before its exec are of the image it replaced.
    pub execs: Vec<(u32, usize)>,
}

/// A map as a list of pairs in the saved JSON (its keys are not all strings).
mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(m: &BTreeMap<K, V>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<K, V>, D::Error> {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: impl IntoIterator<Item = u64>) -> Latencies {
        let mut l = Latencies::default();
        for v in values {
            l.add(v);
        }
        l
    }

    #[test]
    fn quantiles_of_known_values_are_exact_by_nearest_rank() {
        // 1..=100: the q quantile is 100 q itself.
        let l = of(1..=100);
        assert!(l.is_exact());
        assert_eq!(l.summary(), Summary { count: 100, total: 5050, min: 1, median: 50, p90: 90, p99: 99, max: 100 });
        // In any order; the median of four is the second.
        let l = of([40, 10, 30, 20]);
        assert_eq!((l.quantile(0.5), l.quantile(0.9), l.quantile(0.99), l.quantile(1.0)), (20, 40, 40, 40));
        assert_eq!(of([7]).summary(), Summary { count: 1, total: 7, min: 7, median: 7, p90: 7, p99: 7, max: 7 });
        // 1000 values: 990 of 1 ns, 9 of 1 ms, 1 of 1 s; p99 is rank 990, the last of 1 ns.
        let l = of(std::iter::repeat_n(1, 990).chain(std::iter::repeat_n(1_000_000, 9)).chain([1_000_000_000]));
        assert_eq!((l.quantile(0.99), l.quantile(0.991), l.quantile(1.0)), (1, 1_000_000, 1_000_000_000));
        assert_eq!(l.total, 990 + 9_000_000 + 1_000_000_000);
    }

    #[test]
    fn an_empty_key_and_odd_quantiles_do_not_panic() {
        let l = Latencies::default();
        assert_eq!(l.summary(), Summary::default());
        assert!(l.log2_histogram().is_empty());
        let l = of([5, 6]);
        assert_eq!((l.quantile(0.0), l.quantile(-3.0), l.quantile(f64::NAN), l.quantile(7.0)), (5, 5, 6, 6));
        // Extreme values: 0 and u64::MAX, totals saturate.
        let l = of([0, u64::MAX, u64::MAX]);
        assert_eq!((l.min, l.max, l.total, l.quantile(0.5)), (0, u64::MAX, u64::MAX, u64::MAX));
        assert_eq!(l.log2_histogram().first(), Some(&(0, 1)));
        assert_eq!(l.log2_histogram().last(), Some(&(63, 2)));
    }

    #[test]
    fn buckets_tile_every_value() {
        // Each bucket starts where the previous ended; a value is in its bucket's range.
        let mut next = 0u64;
        for b in 0..=bucket_of(u64::MAX) {
            let (low, width) = bucket_range(b);
            assert_eq!(low, next, "bucket {b}");
            assert_eq!(bucket_of(low), b);
            assert_eq!(bucket_of(low + (width - 1)), b);
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at 2^64");
        assert_eq!(bucket_of(u64::MAX), 3775);
        // Buckets past the last (a damaged file) still have a range, and no panic.
        assert_eq!(bucket_range(u16::MAX).0 >> 63, 1);
    }

    #[test]
    fn past_the_cap_the_histogram_is_within_its_error() {
        // 1..=100_000 ns: the quantiles within 1/128 of the exact ones, count, total, min and
        // max exact.
        let n = 100_000u64;
        let l = of(1..=n);
        assert!(!l.is_exact());
        let s = l.summary();
        assert_eq!((s.count, s.total, s.min, s.max), (n, n * (n + 1) / 2, 1, n));
        for (got, want) in [(s.median, 50_000), (s.p90, 90_000), (s.p99, 99_000)] {
            assert!(got.abs_diff(want) * 128 <= want, "{got} for {want}");
        }
        // Memory stays bounded: at most one counter a bucket, whatever the count.
        assert!(l.buckets.len() <= 3776 && l.exact.is_empty());
        // The log2 histogram is exact even so: 2^k..2^(k+1) holds 2^k values.
        let h = l.log2_histogram();
        assert_eq!(h[0], (0, 1));
        assert_eq!(h[10], (10, 1024));
        assert_eq!(h.iter().map(|x| x.1).sum::<u64>(), n);
    }

    #[test]
    fn merging_is_adding() {
        let (a, b) = (of(1..=3000), of(3001..=6000));
        let mut m = a.clone();
        m.merge(&b);
        let whole = of(1..=6000);
        assert_eq!(m.summary(), whole.summary());
        assert_eq!(m.log2_histogram(), whole.log2_histogram());
        let mut e = Latencies::default();
        e.merge(&a);
        assert_eq!(e, a);
        // Exact values merged into a histogram, and a histogram into exact values.
        let mut h = of(1..=5000);
        h.merge(&of([7, 9]));
        assert_eq!((h.count, h.min, h.max), (5002, 1, 5000));
        let mut x = of([7, 9]);
        x.merge(&of(1..=5000));
        assert_eq!(x.summary(), h.summary());
    }

    #[test]
    fn the_log2_histogram_counts_powers_of_two() {
        let l = of([0, 1, 2, 3, 4, 1000, 1023, 1024]);
        assert_eq!(l.log2_histogram(), vec![(0, 2), (1, 2), (2, 1), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 2), (10, 1)]);
    }

    #[test]
    fn a_log_saves_and_reads_back() {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        log.add(Request { pid: 7, tid: 7, key: RequestKey::call("read"), from: 100, to: 350, taken_by: None, site: Default::default(), served: None });
        log.add(Request { pid: 7, tid: 8, key: RequestKey::call("read"), from: 400, to: 300, taken_by: None, site: Default::default(), served: None });
        let mut big = Requests::default();
        for v in 0..5000 {
            big.add(RequestKey { to: "file:".into(), server: Some("ramfs [pid 3]".into()) }, v);
        }
        log.by_pid.insert(9, big);
        let json = serde_json::to_string(&log).unwrap();
        let back: RequestLog = serde_json::from_str(&json).unwrap();
        assert_eq!(back, log);
        // A time running backwards is 0, not a wrap.
        assert_eq!(log.by_pid[&7].by_key[&RequestKey::call("read")].summary().min, 0);
        // A damaged file: counts that disagree with the values, buckets past the last.
        let odd = r#"{"count":3,"total":1,"min":9,"max":2,"buckets":[[65535,1],[70,5]]}"#;
        let l: Latencies = serde_json::from_str(odd).unwrap();
        let _ = (l.summary(), l.log2_histogram());
    }

    /// Each key's stacks, bounded: at most MAX_STACKS distinct ones, each cut to
    /// MAX_STACK_FRAMES; the requests of the others (and of empty ones) counted in `other`,
    /// every request counted once; a log with stacks saves and reads back, one without them
    /// saves as before.
    #[test]
    fn stacks_are_counted_in_bounded_memory() {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let write = RequestKey::call("write");
        let mut batch = RequestsBatch { source: Some(RequestSource::SystemCalls), ..Default::default() };
        for i in 0..(MAX_STACKS as u64 + 10) {
            // Stack i made i + 1 requests; the last ten are past the bound.
            for _ in 0..=i {
                made(&mut batch, 7, &write, i, vec![0x1000 + i, 0x2000]);
            }
        }
        made(&mut batch, 7, &write, 0, Vec::new());
        made(&mut batch, 7, &write, 0, (0..100).collect());
        let before = serde_json::to_string(&log).unwrap();
        log.take(batch);
        let stacks = &log.by_pid[&7].stacks[&write];
        assert_eq!(stacks.counts.len(), MAX_STACKS);
        assert_eq!(stacks.counts[&vec![0x1000, 0x2000]], 1);
        assert_eq!(stacks.counts[&vec![0x1000 + MAX_STACKS as u64 - 1, 0x2000]], MAX_STACKS as u64);
        let n = MAX_STACKS as u64 + 10;
        assert_eq!(stacks.count(), n * (n + 1) / 2 + 2);
        // Stacks past the bound, the empty one and the long one (a new stack past it too).
        assert_eq!(stacks.other, (MAX_STACKS as u64 + 1..=n).sum::<u64>() + 2);
        assert!(stacks.counts.keys().all(|s| s.len() <= MAX_STACK_FRAMES));
        let mut one = Stacks::default();
        one.add((0..100).collect());
        assert_eq!(one.counts.keys().next().map(Vec::len), Some(MAX_STACK_FRAMES));
        let json = serde_json::to_string(&log).unwrap();
        assert_eq!(serde_json::from_str::<RequestLog>(&json).unwrap(), log);
        // A log without stacks: no field for them (older files are the same, and read).
        assert!(!before.contains("stacks"), "{before}");
        let older = r#"{"source":"system-calls","by_pid":[[7,{"by_key":[[{"to":"read"},{"count":1,"total":5,"min":5,"max":5,"exact":[5]}]]}]]}"#;
        let read: RequestLog = serde_json::from_str(older).unwrap();
        assert!(read.by_pid[&7].stacks.is_empty());
        assert_eq!(read.by_pid[&7].count(), 1);
    }

    /// A process's stacks before its exec are the replaced image's: counted as earlier, not
    /// kept, however the batch interleaves them with the exec.
    #[test]
    fn an_exec_sets_the_stacks_before_it_aside() {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let (read, execve) = (RequestKey::call("read"), RequestKey::call("execve"));
        // Process 7 reads twice and execs (its execve's stack the old image's too), then
        // reads once; process 8's read, between, stays.
        let mut b = RequestsBatch { execs: vec![(7, 4)], ..Default::default() };
        for (pid, key, stack) in [(7, &read, 0x10), (7, &read, 0x10), (8, &read, 0x30), (7, &execve, 0x20), (7, &read, 0x40)] {
            made(&mut b, pid, key, 0, vec![stack]);
        }
        log.take(b);
        let stacks = &log.by_pid[&7].stacks;
        assert_eq!((stacks[&read].counts.clone(), stacks[&read].earlier), (BTreeMap::from([(vec![0x40], 1)]), 2));
        assert_eq!((stacks[&execve].counts.len(), stacks[&execve].earlier, stacks[&execve].count()), (0, 1, 1));
        assert_eq!(log.by_pid[&8].stacks[&read].counts, BTreeMap::from([(vec![0x30], 1)]));
        // An exec at a batch's end, after its every stack.
        let mut b = RequestsBatch { execs: vec![(8, 1)], ..Default::default() };
        made(&mut b, 8, &read, 0, vec![0x30]);
        log.take(b);
        assert_eq!((log.by_pid[&8].stacks[&read].counts.len(), log.by_pid[&8].stacks[&read].earlier), (0, 2));
        // The timed requests say so too: a window of the whole run counts them the same.
        assert_eq!(log.within(0, u64::MAX).by_pid, log.by_pid);
    }

    /// Redox: a request's caller's side comes after its answer, in the same batch or a later
    /// one, and is kept with it (the newest of its thread and key answered before it); the
    /// requests daemons made while serving timed ones are kept with them up to MAX_MADE a run.
    #[test]
    fn a_request_keeps_its_callers_side_and_what_was_made_for_it() {
        let file = RequestKey::scheme(24, 7);
        let served = |made: Vec<(RequestKey, RequestKey, u64)>| Some(Box::new(Served { waited: None, split: DaemonSplit { count: 1, total: 10, on_cpu: 10, waiting: BTreeMap::new() }, made }));
        let request = |tid, from, to| Request { pid: 10, tid, key: file.clone(), from, to, taken_by: Some((7, 5)), site: Site::Unrecorded, served: served(Vec::new()) };
        let waited = |tid, from, to| Request { pid: 10, tid, key: file.clone(), from, to, taken_by: None, site: Site::Unrecorded, served: None };
        let mut log = RequestLog::new(RequestSource::SchemeRequests);
        log.take(RequestsBatch { done: vec![request(11, 100, 110), request(12, 105, 120)], waited: vec![waited(11, 95, 115)], ..Default::default() });
        // Thread 12's side in the next batch; one of a thread with no request kept: nowhere.
        log.take(RequestsBatch { done: vec![request(11, 200, 210)], waited: vec![waited(12, 101, 130), waited(13, 1, 2)], ..Default::default() });
        let sides: Vec<Option<u64>> = log.timed.iter().map(|r| r.served.as_ref().unwrap().waited).collect();
        assert_eq!(sides, [Some(20), Some(29), None]);
        assert_eq!(log.by_pid[&10].waited[&file].count, 3, "the run's figures count every one");
        // Made for it: kept up to MAX_MADE entries a run, the rest in the run's chains only.
        let made = |n: usize| (0..n as u64).map(|ns| (file.clone(), RequestKey::scheme(31, 9), ns)).collect::<Vec<_>>();
        let mut log = RequestLog::new(RequestSource::SchemeRequests);
        log.add(Request { served: served(made(MAX_MADE - 1)), ..request(11, 0, 1) });
        log.add(Request { served: served(made(3)), ..request(11, 2, 3) });
        log.add(Request { served: served(made(1)), ..request(11, 4, 5) });
        let kept: Vec<usize> = log.timed.iter().map(|r| r.served.as_ref().unwrap().made.len()).collect();
        assert_eq!(kept, [MAX_MADE - 1, 1, 0]);
    }

    /// A request of `pid` to `key` at `at` (1 ns long) made from `stack`, into `b`.
    fn made(b: &mut RequestsBatch, pid: u32, key: &RequestKey, at: u64, stack: Vec<u64>) {
        b.stacks.push((b.done.len(), stack));
        b.done.push(Request { pid, tid: pid, key: key.clone(), from: at, to: at + 1, taken_by: None, site: Site::Unrecorded, served: None });
    }

    /// A window of the run counts its requests' call stacks as the whole run's are counted:
    /// two halves add up to the whole, kept stacks, the other and the earlier ones; a log read
    /// back gives the same windows, and goes on taking stacks after them.
    #[test]
    fn a_window_counts_its_requests_sites() {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let (write, read) = (RequestKey::call("write"), RequestKey::call("read"));
        let mut b = RequestsBatch::default();
        // Process 7: writes from two sites over time, one stack past the bound, an empty
        // one; then it execs (at 500) and reads from a new image's site.
        for t in 0..MAX_STACKS as u64 {
            made(&mut b, 7, &write, t, vec![0x100 + t]);
        }
        made(&mut b, 7, &write, 100, vec![0x100]);
        made(&mut b, 7, &write, 200, vec![0x999]);
        made(&mut b, 7, &write, 300, Vec::new());
        made(&mut b, 8, &write, 350, vec![0x100]);
        b.execs.push((7, b.stacks.len()));
        made(&mut b, 7, &read, 600, vec![0x500]);
        b.done.push(Request { pid: 7, tid: 7, key: read.clone(), from: 700, to: 701, taken_by: None, site: Site::Unrecorded, served: None });
        log.take(b);
        let stacks = |l: &RequestLog, pid, key: &RequestKey| l.by_pid.get(&pid).and_then(|r| r.stacks.get(key)).cloned().unwrap_or_default();
        let (first, second) = (log.within(0, 150), log.within(150, u64::MAX));
        // Before the exec: every write of 7's is earlier (its image is gone), in both halves.
        assert_eq!((stacks(&first, 7, &write).earlier, stacks(&second, 7, &write).earlier), (65, 2));
        assert_eq!(stacks(&second, 8, &write).counts, BTreeMap::from([(vec![0x100], 1)]));
        assert_eq!(stacks(&second, 7, &read).counts, BTreeMap::from([(vec![0x500], 1)]));
        assert!(stacks(&first, 7, &read).counts.is_empty());
        // The halves add up to the whole run's, key by key.
        for (pid, key) in [(7, &write), (8, &write), (7, &read)] {
            let (a, b, whole) = (stacks(&first, pid, key), stacks(&second, pid, key), stacks(&log, pid, key));
            assert_eq!(a.count() + b.count(), whole.count(), "{pid} {key:?}");
            assert_eq!((a.other + b.other, a.earlier + b.earlier), (whole.other, whole.earlier));
        }
        // Without an exec: stacks past the bound and empty ones are `other` in their window.
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let mut b = RequestsBatch::default();
        for t in 0..=MAX_STACKS as u64 {
            made(&mut b, 7, &write, t * 10, vec![0x100 + t]);
        }
        made(&mut b, 7, &write, 5, Vec::new());
        log.take(b);
        let late = log.within(MAX_STACKS as u64 * 10, u64::MAX);
        assert_eq!((stacks(&late, 7, &write).counts.len(), stacks(&late, 7, &write).other), (0, 1));
        assert_eq!(stacks(&log.within(0, 10), 7, &write), Stacks { counts: BTreeMap::from([(vec![0x100], 1)]), other: 1, earlier: 0 });
        // Read back: the same windows; and a stack taken after is found among the sites.
        let mut read_back: RequestLog = serde_json::from_str(&serde_json::to_string(&log).unwrap()).unwrap();
        assert_eq!(read_back.within(0, 10), log.within(0, 10));
        let mut b = RequestsBatch::default();
        made(&mut b, 7, &write, 1000, vec![0x100]);
        read_back.take(b);
        assert_eq!((read_back.sites.len(), read_back.within(1000, 1001).by_pid[&7].stacks[&write].counts[&vec![0x100]]), (MAX_STACKS, 1));
    }

    /// A run's requests on its time axis: their times from the run's start; a window counts
    /// those that began in it, so two halves add up to the whole; past MAX_TIMED requests are
    /// counted, not kept whole.
    #[test]
    fn a_window_counts_the_requests_that_began_in_it() {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let at = |pid, from, to, call: &'static str| Request { pid, tid: pid, key: RequestKey::call(call), from, to, taken_by: None, site: Default::default(), served: None };
        for r in [at(1, 1_000, 1_500, "read"), at(1, 2_000, 2_100, "write"), at(2, 2_500, 9_000, "read"), at(1, 3_000, 3_010, "read")] {
            log.add(r);
        }
        let log = log.timed_from(1_000);
        assert_eq!(log.timed.iter().map(|r| (r.from, r.to)).collect::<Vec<_>>(), [(0, 500), (1_000, 1_100), (1_500, 8_000), (2_000, 2_010)]);
        let (first, second) = (log.within(0, 1_500), log.within(1_500, u64::MAX));
        let count = |l: &RequestLog, pid: u32, call: &str| l.by_pid.get(&pid).and_then(|r| r.by_key.get(&RequestKey::call(call.to_string()))).map_or(0, |l| l.summary().count);
        assert_eq!((count(&first, 1, "read"), count(&first, 1, "write"), count(&first, 2, "read")), (1, 1, 0));
        assert_eq!((count(&second, 1, "read"), count(&second, 2, "read")), (1, 1));
        assert_eq!(second.by_pid[&2].by_key[&RequestKey::call("read")].summary().max, 6_500, "a request whole, past the window's end");
        let mut many = RequestLog::new(RequestSource::SystemCalls);
        for i in 0..(MAX_TIMED as u64 + 3) {
            many.add(at(1, i, i + 1, "getpid"));
        }
        assert_eq!((many.timed.len(), many.untimed, many.merged().count()), (MAX_TIMED, 3, MAX_TIMED as u64 + 3));
    }
}
