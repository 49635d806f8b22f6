//! How the report writes its numbers: a count with its noun, a share in percent, the busiest
//! rows of a long table. A leaf every section uses, so that no section needs the report's
//! module for them.

/// `1 sample`, `2 samples`.
pub fn count(n: u64, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// `n` as a percentage of `of` (0 of nothing).
pub fn percent(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 * 100.0 / of as f64
    }
}

/// The most threads a per-thread table lists (the busiest; one line sums the rest).
pub const MAX_THREAD_ROWS: usize = 20;

/// The [`MAX_THREAD_ROWS`] threads with the most `by`, in their order in `threads`, and the
/// rest: all of them where they are that few.
pub fn busiest<T>(threads: &[T], by: impl Fn(&T) -> u64) -> (Vec<&T>, Vec<&T>) {
    if threads.len() <= MAX_THREAD_ROWS {
        return (threads.iter().collect(), Vec::new());
    }
    let mut ranked: Vec<usize> = (0..threads.len()).collect();
    ranked.sort_by_key(|&i| (std::cmp::Reverse(by(&threads[i])), i));
    let keep: std::collections::BTreeSet<usize> = ranked[..MAX_THREAD_ROWS].iter().copied().collect();
    let (mut shown, mut rest) = (Vec::new(), Vec::new());
    for (i, t) in threads.iter().enumerate() {
        match keep.contains(&i) {
            true => shown.push(t),
            false => rest.push(t),
        }
    }
    (shown, rest)
}
