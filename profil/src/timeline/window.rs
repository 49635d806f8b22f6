//! `--time START,END`: a window of the run, in seconds from the program's start or in
//! percentages of its span, as `perf report --time` takes it.

/// A window of the run as `--time` takes it: `START,END`, each in seconds from the program's
/// start or a percentage of its span (`10%`); either may be left out (the run's start, its
/// end), as `perf report --time` takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub from: Option<Bound>,
    pub to: Option<Bound>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Seconds(f64),
    Percent(f64),
}

impl Bound {
    fn ns(self, span: u64) -> u64 {
        match self {
            Bound::Seconds(s) => (s * 1e9) as u64,
            Bound::Percent(p) => (span as f64 * p / 100.0) as u64,
        }
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = |b: Option<Bound>| match b {
            Some(Bound::Seconds(s)) => format!("{s}"),
            Some(Bound::Percent(p)) => format!("{p}%"),
            None => String::new(),
        };
        write!(f, "{},{}", bound(self.from), bound(self.to))
    }
}

impl Window {
    /// `START,END` as typed.
    pub fn parse(text: &str) -> Result<Window, String> {
        let (from, to) = text.split_once(',').ok_or_else(|| format!("'{text}' is not START,END (seconds, or percentages such as 10%,20%)"))?;
        let bound = |b: &str| -> Result<Option<Bound>, String> {
            let b = b.trim();
            if b.is_empty() {
                return Ok(None);
            }
            let (number, percent) = match b.strip_suffix('%') {
                Some(n) => (n, true),
                None => (b, false),
            };
            match number.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 && !(percent && n > 100.0) => {
                    Ok(Some(if percent { Bound::Percent(n) } else { Bound::Seconds(n) }))
                }
                _ => Err(format!("'{b}' is not a time: seconds from the start (1.5) or a percentage of the run (25%)")),
            }
        };
        let w = Window { from: bound(from)?, to: bound(to)? };
        if let (Some(Bound::Seconds(a)), Some(Bound::Seconds(b))) | (Some(Bound::Percent(a)), Some(Bound::Percent(b))) = (w.from, w.to) {
            if b <= a {
                return Err(format!("'{text}' ends where it starts or before"));
            }
        }
        Ok(w)
    }

    /// The window in ns from the start of a run of `span` ns: `from..to`.
    pub fn ns(&self, span: u64) -> (u64, u64) {
        (self.from.map_or(0, |b| b.ns(span)), self.to.map_or(u64::MAX, |b| b.ns(span)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_read_as_perf_report_time_reads_them() {
        let w = Window::parse("1.5,2").unwrap();
        assert_eq!(w.ns(10_000_000_000), (1_500_000_000, 2_000_000_000));
        assert_eq!(Window::parse("10%,20%").unwrap().ns(10_000_000_000), (1_000_000_000, 2_000_000_000));
        assert_eq!(Window::parse(",1").unwrap().ns(5), (0, 1_000_000_000));
        assert_eq!(Window::parse("1,").unwrap().ns(5), (1_000_000_000, u64::MAX));
        for bad in ["1", "a,b", "2,1", "1,1", "-1,2", "50%,120%", "inf,"] {
            assert!(Window::parse(bad).is_err(), "{bad}");
        }
    }

}
