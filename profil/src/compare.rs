//! Two runs compared (`--diff BASE`): each function's share of the samples in the base run and
//! in this one, the change in percentage points, and whether that change is more than the
//! sampling's own noise.
//!
//! A sampled profile is a count: of a run's `n` samples, `k` fell in a function, so its share
//! `k / n` is known within about `sqrt(p (1 - p) / n)`. The change of a share between two runs
//! gets an interval for a difference of two proportions (Agresti and Caffo's, which holds for
//! small shares and zeros), at a confidence of 95 % for the whole table: with `m` functions compared, each interval is at
//! `1 - 0.05 / m` (Bonferroni), so two runs of one unchanged program flag no function in about
//! 19 comparisons of 20. A change whose interval excludes 0 is `significant`, else `noise`.
//! What the interval does not know: a run's own variation beyond sampling (another load on
//! the machine, a different input); the verdict is on sampling alone.

use std::collections::BTreeMap;
use std::fmt::Write;

use statrs::distribution::{ContinuousCDF, Normal};

use crate::flat::FlatProfile;

/// Family-wise confidence of a comparison's table.
pub const CONFIDENCE: f64 = 0.95;

/// Changes the section shows unless `--top` says otherwise.
pub const DEFAULT_TOP: usize = 20;

/// The base run of `--diff`, named: its file as given, its flat profile and stacks, its rate.
pub struct Base {
    pub file: String,
    /// The program the base run profiled, as its report named it.
    pub program: String,
    pub flat: FlatProfile,
    pub stacks: Option<crate::stacks::StackProfile>,
    pub frequency_hz: u64,
    /// A tree's (`--children`) or a system-wide run's processes together, which the
    /// comparison is of: the run as a whole. `None`: one process, `flat`.
    pub together: Option<FlatProfile>,
}

/// A comparison: the base's side, this run's, and each function's change.
pub type Comparison = (Side, Side, Vec<Change>);

impl Base {
    /// What the comparison is of: the run as a whole.
    pub fn whole(&self) -> &FlatProfile {
        self.together.as_ref().unwrap_or(&self.flat)
    }

    /// This base against a run of `program` whose whole is `whole` (sampled at `frequency_hz`):
    /// both sides, and each function's change. A program's functions go by their own names on
    /// both sides (`overflow`, not `overflow [fib]` as a tree tags them).
    pub fn against(&self, whole: &FlatProfile, program: &str, frequency_hz: u64) -> Comparison {
        let programs = [crate::processes::base_name(&self.program), crate::processes::base_name(program)];
        let (old, new) = (Side::of_programs(self.whole(), self.frequency_hz, &programs), Side::of_programs(whole, frequency_hz, &programs));
        let changes = compare(&old, &new);
        (old, new, changes)
    }
}

/// One run's side of a comparison: its samples and each function's (self, total) samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Side {
    pub samples: u64,
    /// Samples a second, where they stand for time (0: not known).
    pub frequency_hz: u64,
    pub functions: BTreeMap<String, (u64, Option<u64>)>,
}

impl Side {
    /// A run's flat profile as one side, functions by name (so two builds of a program
    /// compare: addresses move, names stay).
    pub fn of(flat: &FlatProfile, frequency_hz: u64) -> Side {
        Side::of_programs(flat, frequency_hz, &[])
    }

    /// As [`Side::of`], the functions of the programs `programs` (base names) by their own
    /// names: a program's functions are untagged in its own run and `[fib]` in a tree's, so a
    /// tree compares with a run of the program it ran.
    pub fn of_programs(flat: &FlatProfile, frequency_hz: u64, programs: &[&str]) -> Side {
        let mut functions: BTreeMap<String, (u64, Option<u64>)> = BTreeMap::new();
        for e in &flat.entries {
            let name = match (&e.function, &e.object) {
                (Some(f), Some(o)) if programs.contains(&o.as_str()) => f.clone(),
                _ => e.name(),
            };
            let f = functions.entry(name).or_insert((0, None));
            f.0 = f.0.saturating_add(e.samples);
            if let Some(t) = e.total {
                f.1 = Some(f.1.unwrap_or(0).saturating_add(t));
            }
        }
        Side { samples: flat.total, frequency_hz, functions }
    }
}

/// A share's change and its interval, in percentage points: the change itself, and the
/// interval's centre (the change of the adjusted shares, a little nearer 0) and half width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    pub pp: f64,
    pub centre: f64,
    pub within: f64,
}

impl Shift {
    /// The interval leaves out 0.
    pub fn significant(&self) -> bool {
        self.centre.abs() > self.within
    }

    /// The least change the interval allows, in the direction of the change (0 if noise).
    pub fn at_least(&self) -> f64 {
        if self.significant() {
            self.centre.signum() * (self.centre.abs() - self.within)
        } else {
            0.0
        }
    }
}

/// One function's change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub name: String,
    /// (self, total) samples in the base run and in this one.
    pub base: (u64, Option<u64>),
    pub new: (u64, Option<u64>),
    pub own: Shift,
    /// Of the total share, where both runs recorded call stacks.
    pub total: Option<Shift>,
    /// Its own time's change, s, where both runs' samples stand for time.
    pub seconds: Option<f64>,
}

/// The `z` of a two-sided interval at `confidence` for the whole of `tests` intervals.
fn z_for(tests: usize, confidence: f64) -> f64 {
    let alpha = (1.0 - confidence) / tests.max(1) as f64;
    Normal::standard().inverse_cdf(1.0 - alpha / 2.0)
}

/// The change of a share from `a` of `n1` to `b` of `n2`, with its interval at `z`: Agresti
/// and Caffo's (each run given one more sample in the function and one more outside it), which
/// keeps its coverage for the small shares and the zeros a profile is full of, where Wald's
/// interval is too narrow.
fn shift(a: u64, n1: u64, b: u64, n2: u64, z: f64) -> Shift {
    let share = |k: u64, n: u64| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let adjusted = |k: u64, n: u64| (k as f64 + 1.0) / (n as f64 + 2.0);
    let (q1, q2) = (adjusted(a, n1), adjusted(b, n2));
    let se = (q1 * (1.0 - q1) / (n1 as f64 + 2.0) + q2 * (1.0 - q2) / (n2 as f64 + 2.0)).sqrt();
    let pp = (share(b, n2) - share(a, n1)) * 100.0;
    Shift { pp, centre: (q2 - q1) * 100.0, within: z * se * 100.0 }
}

/// Every function of either run, largest change of its own share first (then of its total).
pub fn compare(base: &Side, new: &Side) -> Vec<Change> {
    let names: Vec<&String> = {
        let mut n: Vec<&String> = base.functions.keys().chain(new.functions.keys()).collect();
        n.sort();
        n.dedup();
        n
    };
    let with_totals = base.functions.values().any(|f| f.1.is_some()) && new.functions.values().any(|f| f.1.is_some());
    // Both the own and the total shares are tested for every function.
    let z = z_for(names.len() * if with_totals { 2 } else { 1 }, CONFIDENCE);
    let mut out: Vec<Change> = names
        .into_iter()
        .map(|name| {
            let b = base.functions.get(name).copied().unwrap_or((0, None));
            let n = new.functions.get(name).copied().unwrap_or((0, None));
            let total = with_totals.then(|| shift(b.1.unwrap_or(0), base.samples, n.1.unwrap_or(0), new.samples, z));
            let seconds = (base.frequency_hz > 0 && new.frequency_hz > 0)
                .then(|| n.0 as f64 / new.frequency_hz as f64 - b.0 as f64 / base.frequency_hz as f64);
            Change { name: name.clone(), base: b, new: n, own: shift(b.0, base.samples, n.0, new.samples, z), total, seconds }
        })
        .collect();
    let size = |c: &Change| c.own.pp.abs().max(c.total.map_or(0.0, |t| t.pp.abs()));
    out.sort_by(|a, b| size(b).total_cmp(&size(a)).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The functions whose own share grew by more than `points` for sure: the interval's lower
/// end above it (`--fail-above`).
pub fn regressions(changes: &[Change], points: f64) -> Vec<&Change> {
    changes.iter().filter(|c| c.own.at_least() > points).collect()
}

fn shift_text(s: &Shift) -> String {
    format!("{:+.2} pp ± {:.2}, {}", s.pp, s.within, if s.significant() { "significant" } else { "noise" })
}

fn share(k: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        k as f64 * 100.0 / n as f64
    }
}

/// The section: the runs' sizes, then the `top` largest changes, each with its verdict.
pub fn render(base_name: &str, base: &Side, new: &Side, changes: &[Change], top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Compared with {base_name} ({} samples there, {} here; each change with its {:.0} % interval over the {} functions, from the sample counts alone):",
        base.samples,
        new.samples,
        CONFIDENCE * 100.0,
        changes.len()
    );
    let shown: Vec<&Change> = changes.iter().take(top).collect();
    if shown.is_empty() {
        let _ = writeln!(out, "  no samples in either run");
        return out;
    }
    let with_totals = shown.iter().any(|c| c.total.is_some());
    let with_seconds = shown.iter().any(|c| c.seconds.is_some());
    let _ = write!(out, "   base %    new %  own share change");
    if with_seconds {
        let _ = write!(out, "  seconds");
    }
    if with_totals {
        let _ = write!(out, "  total share change              ");
    }
    let _ = writeln!(out, "  function");
    for c in shown {
        let _ = write!(
            out,
            "{:>9.2} {:>8.2}  {:<32}",
            share(c.base.0, base.samples),
            share(c.new.0, new.samples),
            shift_text(&c.own)
        );
        if with_seconds {
            let _ = write!(out, " {:>+8.3}", c.seconds.unwrap_or(0.0));
        }
        if with_totals {
            let _ = write!(out, "  {:<32}", c.total.as_ref().map_or("-".to_string(), shift_text));
        }
        let _ = writeln!(out, "  {}", c.name);
    }
    let significant = changes.iter().filter(|c| c.own.significant() || c.total.is_some_and(|t| t.significant())).count();
    let _ = writeln!(
        out,
        "  {significant} of {} functions changed more than sampling noise explains{}",
        changes.len(),
        if changes.len() > top { format!(" ({} shown)", top) } else { String::new() }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(samples: u64, functions: &[(&str, u64, Option<u64>)]) -> Side {
        Side {
            samples,
            frequency_hz: 1000,
            functions: functions.iter().map(|&(n, s, t)| (n.to_string(), (s, t))).collect(),
        }
    }

    #[test]
    fn a_doubled_function_is_significant_and_sampling_noise_is_not() {
        // hot: 2,000 of 10,000 samples, then 4,000 of 12,000 (twice its work); warm: 10 %,
        // then 1,190 of 12,000 (9.9 %, noise). (`rest` keeps its samples, so its share falls:
        // a share is of the whole run.)
        let base = side(10_000, &[("hot", 2_000, None), ("warm", 1_000, None), ("rest", 7_000, None)]);
        let new = side(12_000, &[("hot", 4_000, None), ("warm", 1_190, None), ("rest", 6_810, None)]);
        let changes = compare(&base, &new);
        let by = |n: &str| changes.iter().find(|c| c.name == n).unwrap().clone();
        let hot = by("hot");
        assert!((hot.own.pp - (100.0 * 4_000.0 / 12_000.0 - 20.0)).abs() < 1e-9);
        assert!(hot.own.significant());
        // z at 1 - 0.05/3 two-sided: 2.394; se of 0.2 of 10,000 and 1/3 of 12,000.
        let se = (0.2 * 0.8 / 10_000.0 + (1.0 / 3.0) * (2.0 / 3.0) / 12_000.0_f64).sqrt();
        assert!((hot.own.within - 2.3940 * se * 100.0).abs() < 0.01, "{:?}", hot.own);
        assert!(!by("warm").own.significant());
        assert_eq!(changes[0].name, "hot");
        assert!((hot.seconds.unwrap() - 2.0).abs() < 1e-9);
        // The gate: hot grew by at least 12 points for sure, not by 14.
        assert_eq!(regressions(&changes, 10.0).len(), 1);
        assert!(regressions(&changes, 12.5).is_empty());
    }

    #[test]
    fn the_interval_is_bonferronis_over_every_function() {
        assert!((z_for(1, 0.95) - 1.95996).abs() < 1e-4);
        assert!((z_for(20, 0.95) - 3.0233).abs() < 1e-3);
        // A function in one run only, on a few samples: not significant.
        let changes = compare(&side(10_000, &[("a", 10_000, None)]), &side(10_000, &[("a", 9_997, None), ("b", 3, None)]));
        assert!(changes.iter().all(|c| !c.own.significant()), "{changes:?}");
    }

    /// Two runs of one unchanged program differ by sampling alone: of 400 such pairs (drawn
    /// from one distribution of 12 functions, 4,000 samples a run, a fixed seed), about 1 in
    /// 20 has a function flagged, as a 95 % family-wise interval promises (14 of 400 here; 92 of
    /// 2,000 with `CMP_N=2000`).
    #[test]
    fn unchanged_runs_are_noise_in_19_of_20_comparisons() {
        let shares = [0.30, 0.18, 0.12, 0.09, 0.08, 0.06, 0.05, 0.04, 0.035, 0.025, 0.015, 0.01];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut run = |n: u64| {
            let mut counts = [0u64; 12];
            for _ in 0..n {
                let mut u = uniform();
                let f = shares.iter().position(|&p| {
                    u -= p;
                    u < 0.0
                });
                counts[f.unwrap_or(11)] += 1;
            }
            let names: Vec<(String, u64)> = counts.iter().enumerate().map(|(i, &c)| (format!("f{i}"), c)).collect();
            Side { samples: n, frequency_hz: 1000, functions: names.into_iter().map(|(n, c)| (n, (c, None))).collect() }
        };
        let pairs: usize = std::env::var("CMP_N").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
        let flagged = (0..pairs)
            .filter(|_| {
                let (a, b) = (run(4_000), run(4_000));
                compare(&a, &b).iter().any(|c| c.own.significant())
            })
            .count();
        assert!(flagged * 100 <= pairs * 7, "{flagged} of {pairs} comparisons of unchanged runs flagged a function");
        assert!(flagged > 0, "an interval that never errs is too wide");
        // And a real change among that noise is seen: f3's share from 9 % to 13.5 %.
        let a = run(4_000);
        let mut b = run(4_000);
        b.functions.get_mut("f3").unwrap().0 += 180;
        b.samples += 180;
        let changes = compare(&a, &b);
        assert!(changes.iter().find(|c| c.name == "f3").unwrap().own.significant());
    }

    #[test]
    fn the_section() {
        let base = side(10_000, &[("hot", 2_000, Some(2_000)), ("main", 0, Some(10_000))]);
        let new = side(10_000, &[("hot", 4_000, Some(4_000)), ("main", 0, Some(10_000))]);
        let changes = compare(&base, &new);
        let text = render("base.prof", &base, &new, &changes, 10);
        assert_eq!(
            text.lines().next().unwrap(),
            "Compared with base.prof (10000 samples there, 10000 here; each change with its 95 % interval over the 2 functions, from the sample counts alone):"
        );
        // se = sqrt(0.2 × 0.8 / 10,000 + 0.4 × 0.6 / 10,000), z = 2.498 (4 intervals).
        assert!(text.contains("    20.00    40.00  +20.00 pp ± 1.58, significant      +2.000  +20.00 pp ± 1.58, significant     hot\n"), "{text}");
        // No sample at all of main's own: one sample's worth of doubt, never significant.
        assert!(text.contains("     0.00     0.00  +0.00 pp ± 0.04, noise             +0.000  +0.00 pp ± 0.04, noise            main\n"), "{text}");
        assert!(text.ends_with("  1 of 2 functions changed more than sampling noise explains\n"), "{text}");
    }

    /// A tree's side names its program's functions as the program's own run does: `spin
    /// [busy]` of a child is `spin`, beside busy's own run's `spin`; other objects keep theirs.
    #[test]
    fn a_program_s_functions_compare_by_their_own_names() {
        let entry = |f: &str, o: Option<&str>, samples: u64| crate::flat::FlatEntry { function: Some(f.into()), object: o.map(str::to_string), samples, total: None, code: None };
        let tree = FlatProfile {
            entries: vec![entry("spin", Some("busy"), 90), entry("spin", None, 5), entry("memcpy", Some("libc.so.6"), 5)],
            total: 100,
            ..Default::default()
        };
        let side = Side::of_programs(&tree, 1000, &["busy", "sh"]);
        assert_eq!(side.functions.into_iter().collect::<Vec<_>>(), [("memcpy [libc.so.6]".to_string(), (5, None)), ("spin".to_string(), (95, None))]);
        assert_eq!(Side::of(&tree, 1000).functions.len(), 3, "without programs every object keeps its tag");
    }
}
