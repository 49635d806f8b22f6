//! The session as its records time it: how many samples a second per CPU the kernel's source
//! sent, and the time from the session's first record to its last. Upstream's profiler says
//! neither: its rate is its local APIC timer's clock over a fixed count (about 954 a second in
//! QEMU, something else on hardware), and a CPU's records leave out what it did not record
//! (idle, kernel code with interrupts on). The gaps between a CPU's consecutive records are
//! whole periods, one where nothing was left out: the shortest common gap is the period.

use std::collections::BTreeMap;

use prof_core::sampler::RecordSpan;

use crate::program_records::TscClock;

/// Gaps kept for the estimate: the session's first ones (about 16 s at 1000 a second).
const MAX_GAPS: usize = 16_384;
/// Fewer gaps than this give no estimate.
const MIN_GAPS: usize = 16;

/// Sample times (TSC) fed in as the rings give them.
#[derive(Debug, Default)]
pub struct SpanMeter {
    last: BTreeMap<u32, u64>,
    gaps: Vec<u64>,
    first: Option<u64>,
    latest: Option<u64>,
}

impl SpanMeter {
    /// A sample taken on `cpu` at `time`.
    pub fn push(&mut self, cpu: u32, time: u64) {
        self.first = Some(self.first.map_or(time, |f| f.min(time)));
        self.latest = Some(self.latest.map_or(time, |l| l.max(time)));
        match self.last.insert(cpu, time) {
            // A record written late (one an NMI held) can be older than the one before.
            Some(before) if before >= time => {
                self.last.insert(cpu, before);
            }
            Some(before) if self.gaps.len() < MAX_GAPS => self.gaps.push(time - before),
            _ => {}
        }
    }

    /// The period in TSC ticks: the gaps near the shortest common one (the 20th percentile),
    /// so that left-out records (gaps of several periods) do not move it; their median, then
    /// the mean of the gaps within a quarter of it. A late NMI makes a short gap and a long
    /// one, which a mean evens out where both are counted: the window around the median is
    /// even, so both are, or neither; around the 20th percentile alone the short ones were
    /// kept and their long partners dropped, and the rate read 2–4 % high in QEMU.
    pub fn period(&self) -> Option<u64> {
        if self.gaps.len() < MIN_GAPS {
            return None;
        }
        let mut gaps = self.gaps.clone();
        gaps.sort_unstable();
        let q = gaps[gaps.len() / 5];
        let near: Vec<u64> = gaps.iter().copied().filter(|&g| g >= q / 2 && g <= q.saturating_add(q / 2)).collect();
        let median = *near.get(near.len() / 2)?;
        let even: Vec<u64> = gaps.into_iter().filter(|&g| g >= median - median / 4 && g <= median.saturating_add(median / 4)).collect();
        let sum = even.iter().map(|&g| u128::from(g)).sum::<u128>();
        u64::try_from(sum / even.len().max(1) as u128).ok().filter(|&p| p > 0)
    }

    /// From the first record to the last, in TSC ticks.
    pub fn span(&self) -> Option<u64> {
        self.latest?.checked_sub(self.first?)
    }

    /// The rate sent and the span, in the clock's units.
    pub fn record_span(&self, clock: &TscClock) -> Option<RecordSpan> {
        let span_ns = (self.span()? as f64 * clock.ns_per_tick).round() as u64;
        let rate_sent = self.period().map_or(0, |p| (1e9 / (p as f64 * clock.ns_per_tick)).round() as u64);
        Some(RecordSpan { rate_sent, span_ns })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TSC at 2 GHz.
    const CLOCK: TscClock = TscClock { tsc: 0, ns: 0, ns_per_tick: 0.5 };

    /// Two CPUs at 1000 a second (2,000,000 ticks), each with jitter, one leaving out every
    /// third record and most of a second's (idle): the rate sent is still 1000; the span is
    /// the first record to the last of either CPU.
    #[test]
    fn the_period_is_the_common_shortest_gap() {
        let mut m = SpanMeter::default();
        let period = 2_000_000u64;
        for i in 0..3000u64 {
            let jitter = (i * 7919) % 20_000;
            m.push(0, 1_000 + i * period + jitter);
            let idle = (1000..1900).contains(&i);
            if i % 3 != 0 && !idle {
                m.push(1, 5_000 + i * period + jitter);
            }
        }
        let r = m.record_span(&CLOCK).unwrap();
        assert_eq!(r.rate_sent, 1000);
        assert_eq!(m.span(), Some(5_000 + 2999 * period + (2999 * 7919) % 20_000 - 1_000));
        assert_eq!(r.span_ns, (m.span().unwrap() as f64 / 2.0).round() as u64);
    }

    /// Most gaps two periods long (a CPU idle half the time, in alternation), a fifth of them
    /// one: the shortest common gap still wins.
    #[test]
    fn a_cpu_that_records_every_other_period_still_gives_the_period() {
        let mut m = SpanMeter::default();
        let mut t = 0u64;
        for i in 0..1000u64 {
            t += if i % 4 == 0 { 400_000 } else { 800_000 };
            m.push(3, t);
        }
        assert_eq!(m.period(), Some(400_000));
        assert_eq!(m.record_span(&CLOCK).unwrap().rate_sent, 5000);
    }

    /// One NMI in twenty early and the next late (gaps of 0.6 and 1.6 periods, the long one
    /// past the window around the 20th percentile): the period is still the common gap. The
    /// mean of that window read it 2 % short (1021 a second).
    #[test]
    fn late_nmis_do_not_shorten_the_period() {
        let mut m = SpanMeter::default();
        let (period, mut t) = (1_000_000u64, 0u64);
        for i in 0..4000u64 {
            t += match i % 20 {
                3 => 600_000,
                4 => 1_600_000,
                _ => period,
            };
            m.push(0, t);
        }
        assert_eq!(m.period(), Some(period));
    }

    /// A record written late (older than the one before on its CPU) is no gap, and the next
    /// gap is from the newer one; too few gaps give no rate, but a span.
    #[test]
    fn late_records_and_short_sessions() {
        let mut m = SpanMeter::default();
        for t in [1000, 3000, 2500, 5000] {
            m.push(0, t);
        }
        assert_eq!(m.gaps, vec![2000, 2000]);
        assert_eq!(m.period(), None);
        assert_eq!(m.span(), Some(4000));
        assert_eq!(m.record_span(&CLOCK), Some(RecordSpan { rate_sent: 0, span_ns: 2000 }));
        assert_eq!(SpanMeter::default().record_span(&CLOCK), None);
    }
}
