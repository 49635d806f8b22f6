//! The `prof:` control file's commands (`/scheme/prof/ctl`), one per line:
//!
//! ```text
//! start <pid> <start> <end> <interval> [<text_start> <text_end>] [rate=<hz>] [children] [exec]
//! start all [rate=<hz>]
//! stop
//! ```
//!
//! `start all` (root only) profiles every process: no program, no bins; each process's
//! samples are in `servers`, under its pid and executable, as a daemon's are.
//!
//! `rate=<hz>` (100 to 10000) asks for that many samples a second per CPU from the kernel's
//! NMI source, which also samples the kernel's work for the program; where the kernel has
//! none it samples on its timer tick (`status` says which: `source=… rate=…`).
//! `children` (`profil --children`) follows the processes `pid` starts, to any depth, forked
//! copies and what they exec; each one's samples come under its pid in `children`.
//! Numbers are decimal or `0x`-hex. `start 0 …` is `profile(0, …)`, i.e. stop. A final `exec`
//! says the caller has just started `pid` and it has yet to exec the program: counting begins
//! at that exec, so the launcher's exec code is never counted (`profil` always sends it).
//! `<text_start> <text_end>` are the link-time bounds of the program's executable segment, as
//! `profil` reads them from the ELF file; with them the rules check the range against the text
//! and the samples are binned by link-time address whatever the load base. Without them the
//! addresses are runtime addresses and the text is the whole user address space.

use crate::error::ProfError;
use crate::image::{ImageLayout, TextSegment};
use crate::sampler::CountFrom;
use crate::session::StartRequest;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlCommand {
    Start { req: StartRequest, image: ImageLayout },
    /// Every process, at the rate asked (`None`: the timer).
    StartAll { rate: Option<u64> },
    Stop,
}

/// Parse one line (surrounding whitespace ignored). Malformed input is EINVAL.
pub fn parse_line(line: &str) -> Result<CtlCommand, ProfError> {
    let mut words: Vec<&str> = line.split_ascii_whitespace().collect();
    // The optional words at the end: `rate=HZ`, then `children`, then `exec`, each at most once.
    let from = match words.as_slice() {
        ["start", .., "exec"] => {
            words.pop();
            CountFrom::Exec
        }
        _ => CountFrom::Now,
    };
    let children = match words.as_slice() {
        ["start", .., "children"] => {
            words.pop();
            true
        }
        _ => false,
    };
    let rate = match words.as_slice() {
        ["start", .., last] if last.starts_with("rate=") => {
            let hz = number(&last["rate=".len()..])?;
            if !(crate::sampler::MIN_RATE..=crate::sampler::MAX_RATE).contains(&hz) {
                return Err(ProfError::Invalid);
            }
            words.pop();
            Some(hz)
        }
        _ => None,
    };
    match words.as_slice() {
        ["stop"] => Ok(CtlCommand::Stop),
        ["start", "all"] if from == CountFrom::Now && !children => Ok(CtlCommand::StartAll { rate }),
        ["start", pid, start, end, interval, text @ ..] => {
            let pid = u32::try_from(number(pid)?).map_err(|_| ProfError::Invalid)?;
            let req = StartRequest {
                pid,
                start: number(start)?,
                end: number(end)?,
                interval: number(interval)?,
                from,
                rate,
                children,
            };
            let image = match text {
                [] => ImageLayout::unknown(),
                [lo, hi] => {
                    let text = TextSegment { start: number(lo)?, end: number(hi)? };
                    if text.start >= text.end {
                        return Err(ProfError::Invalid);
                    }
                    ImageLayout::from_text(text)
                }
                _ => return Err(ProfError::Invalid),
            };
            Ok(CtlCommand::Start { req, image })
        }
        _ => Err(ProfError::Invalid),
    }
}

/// Parse every non-blank line of a write. A write with no command (empty, or blank lines
/// only) is malformed, as every other write that asks for nothing the grammar knows.
pub fn parse(text: &str) -> Result<Vec<CtlCommand>, ProfError> {
    let commands: Vec<CtlCommand> = text.lines().filter(|l| !l.trim().is_empty()).map(parse_line).collect::<Result<_, _>>()?;
    if commands.is_empty() {
        return Err(ProfError::Invalid);
    }
    Ok(commands)
}

/// The end of a start command that says when counting begins: nothing, or ` exec`.
pub fn count_from_suffix(from: CountFrom) -> &'static str {
    match from {
        CountFrom::Now => "",
        CountFrom::Exec => " exec",
    }
}

/// The end of a start command that asks for a sampling rate: nothing, or ` rate=HZ`.
pub fn rate_suffix(rate: Option<u64>) -> String {
    rate.map_or(String::new(), |hz| format!(" rate={hz}"))
}

/// Format a start command as `profil` sends it.
pub fn format_start(req: &StartRequest, text: &TextSegment) -> String {
    let when = count_from_suffix(req.from);
    let rate = rate_suffix(req.rate);
    let children = if req.children { " children" } else { "" };
    format!(
        "start {} {:#x} {:#x} {:#x} {:#x} {:#x}{rate}{children}{when}\n",
        req.pid, req.start, req.end, req.interval, text.start, text.end
    )
}

/// A decimal or `0x`-prefixed hexadecimal u64.
pub fn number(s: &str) -> Result<u64, ProfError> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit()) => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => s.parse().ok(),
        None => None,
    };
    parsed.ok_or(ProfError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_with_and_without_text_bounds() {
        let c = parse_line("start 42 0x1000 0x2000 64 0x1000 0x5000\n").unwrap();
        let CtlCommand::Start { req, image } = c else { panic!() };
        assert_eq!(req, StartRequest { pid: 42, start: 0x1000, end: 0x2000, interval: 64, from: CountFrom::Now, rate: None, children: false });
        assert_eq!(image.text, TextSegment { start: 0x1000, end: 0x5000 });
        assert!(!image.is_unknown());
        let CtlCommand::Start { image, .. } = parse_line("start 42 0 0 0").unwrap() else { panic!() };
        assert!(image.is_unknown());
    }

    #[test]
    fn a_final_exec_counts_from_the_exec() {
        let CtlCommand::Start { req, image } = parse_line("start 42 0 0 0 0x401000 0x45e0d6 exec\n").unwrap() else {
            panic!()
        };
        assert_eq!(req, StartRequest { pid: 42, start: 0, end: 0, interval: 0, from: CountFrom::Exec, rate: None, children: false });
        assert_eq!(image.text, TextSegment { start: 0x401000, end: 0x45e0d6 });
        let CtlCommand::Start { req, image } = parse_line("start 42 0 0 0 exec").unwrap() else { panic!() };
        assert_eq!(req.from, CountFrom::Exec);
        assert!(image.is_unknown());
    }

    #[test]
    fn a_rate_before_exec_asks_for_samples_per_second() {
        let CtlCommand::Start { req, .. } = parse_line("start 42 0 0 0 0x401000 0x402000 rate=4000 exec").unwrap() else {
            panic!()
        };
        assert_eq!((req.rate, req.from), (Some(4000), CountFrom::Exec));
        let CtlCommand::Start { req, image } = parse_line("start 42 0 0 0 rate=0x64").unwrap() else { panic!() };
        assert_eq!((req.rate, req.from, image.is_unknown()), (Some(100), CountFrom::Now, true));
        for bad in ["start 42 0 0 0 rate=99", "start 42 0 0 0 rate=10001", "start 42 0 0 0 exec rate=1000", "stop rate=1000"] {
            assert_eq!(parse_line(bad), Err(ProfError::Invalid), "{bad}");
        }
        let req = StartRequest { pid: 7, start: 0, end: 0, interval: 0, from: CountFrom::Exec, rate: Some(1000), children: false };
        let text = TextSegment { start: 0x401000, end: 0x402000 };
        let line = format_start(&req, &text);
        assert_eq!(line, "start 7 0x0 0x0 0x0 0x401000 0x402000 rate=1000 exec\n");
        assert_eq!(parse_line(&line), Ok(CtlCommand::Start { req, image: ImageLayout::from_text(text) }));
    }

    /// `children` between the rate and `exec`: the session follows the process tree.
    #[test]
    fn children_follows_the_processes_it_starts() {
        let req = StartRequest { pid: 7, start: 0, end: 0, interval: 0, from: CountFrom::Exec, rate: Some(1000), children: true };
        let text = TextSegment { start: 0x401000, end: 0x402000 };
        let line = format_start(&req, &text);
        assert_eq!(line, "start 7 0x0 0x0 0x0 0x401000 0x402000 rate=1000 children exec\n");
        assert_eq!(parse_line(&line), Ok(CtlCommand::Start { req, image: ImageLayout::from_text(text) }));
        let CtlCommand::Start { req, .. } = parse_line("start 7 0 0 0 children").unwrap() else { panic!() };
        assert_eq!((req.children, req.from, req.rate), (true, CountFrom::Now, None));
        for bad in ["start all children", "start 7 0 0 0 children children", "start 7 0 0 0 exec children", "stop children"] {
            assert_eq!(parse_line(bad), Err(ProfError::Invalid), "{bad}");
        }
    }

    #[test]
    fn stop_and_multiple_lines() {
        assert_eq!(parse_line("  stop \n"), Ok(CtlCommand::Stop));
        assert_eq!(parse("stop\n\nstop\n").unwrap().len(), 2);
    }

    #[test]
    fn malformed_is_einval() {
        for bad in [
            "",
            "go",
            "stop now",
            "start",
            "start 1 2 3",
            "start x 0 0 0",
            "start 1 0 0 0 0x10",
            "start 1 0 0 0 0x20 0x10",
            "start 4294967296 0 0 0",
            "start -1 0 0 0",
            "start 1 0x 0 0",
            "start 1 0 0 0 0 0 extra",
            "start 1 0 0 0 exec 0x10 0x20",
            "start 1 0 0 exec",
            "start 1 0 0 0 exec exec",
            "stop exec",
        ] {
            assert_eq!(parse_line(bad), Err(ProfError::Invalid), "{bad:?}");
        }
        assert_eq!(parse("stop\nbogus\n"), Err(ProfError::Invalid));
    }

    #[test]
    fn format_round_trips() {
        let req = StartRequest { pid: 7, start: 0x15b70, end: 0x15e10, interval: 26, from: CountFrom::Now, rate: None, children: false };
        let text = TextSegment { start: 0x15780, end: 0x57200 };
        let line = format_start(&req, &text);
        assert_eq!(line, "start 7 0x15b70 0x15e10 0x1a 0x15780 0x57200\n");
        assert_eq!(parse_line(&line), Ok(CtlCommand::Start { req, image: ImageLayout::from_text(text) }));
        let req = StartRequest { from: CountFrom::Exec, ..req };
        let line = format_start(&req, &text);
        assert_eq!(line, "start 7 0x15b70 0x15e10 0x1a 0x15780 0x57200 exec\n");
        assert_eq!(parse_line(&line), Ok(CtlCommand::Start { req, image: ImageLayout::from_text(text) }));
    }

    /// `rate=` takes what the kernel's `debug:ctl-profiling` takes (the kernel-patch/events
    /// patch that adds the NMIs' rate, `HZ_RANGE`).
    #[test]
    fn the_rates_are_the_kernels() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-patch/events");
        const RANGE: &str = "+pub const HZ_RANGE: core::ops::RangeInclusive<u64> = ";
        let line = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
            .find_map(|text| text.lines().find_map(|l| l.strip_prefix(RANGE).map(str::to_string)))
            .expect("a patch adds HZ_RANGE");
        let range: Vec<u64> = line.trim_end_matches(';').replace('_', "").split("..=").map(|n| n.parse().unwrap()).collect();
        assert_eq!(range, [crate::sampler::MIN_RATE, crate::sampler::MAX_RATE]);
    }
}
