//! `sys:prof_ctl`: the text commands that start and stop a session.

use core::fmt;

use super::{CountFrom, DEFAULT_STACKS, MAX_STACKS};

/// Table capacity when `start` names none.
pub const DEFAULT_CAPACITY: usize = 8192;

/// Largest table a session may ask for (16 bytes a slot: 16 MiB of kernel heap).
pub const MAX_CAPACITY: usize = 1 << 20;

/// Sampling rates a session may ask of an NMI source, per CPU and second: the lowest...
pub const MIN_RATE: usize = 100;

/// ...and the highest.
pub const MAX_RATE: usize = 10_000;

/// A command written to `sys:prof_ctl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `start <pid> [capacity] [exec] [children] [rate=HZ] [stacks=N]`, or `start all
    /// [rate=HZ] [stacks=N]` (`pid` 0): every process, each one's samples under its pid.
    Start {
        pid: usize,
        capacity: usize,
        from: CountFrom,
        /// Follow the processes `pid` starts, to any depth (`children`).
        children: bool,
        /// Samples per second and CPU from an NMI source; `None`: the timer tick.
        rate: Option<usize>,
        /// Distinct call stacks the session's stack table holds (0: no stacks are walked).
        stacks: usize,
    },
    /// `stop`
    Stop,
}

/// Why a `sys:prof_ctl` write is malformed (the kernel answers EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Nothing but whitespace.
    Empty,
    /// The first word is not `start` or `stop`.
    UnknownCommand,
    /// `start` without a pid.
    MissingPid,
    /// Not a decimal or `0x`-hex number, or too large.
    BadNumber,
    /// Pid 0 ("no pid assigned") never matches a sample.
    ZeroPid,
    /// Capacity 0 or above [`MAX_CAPACITY`].
    BadCapacity,
    /// Words after the last argument.
    TrailingWords,
    /// `rate=` not a number in [`MIN_RATE`]..=[`MAX_RATE`].
    BadRate,
    /// `stacks=` not a number in 0..=[`MAX_STACKS`].
    BadStacks,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::Empty => "empty command",
            ParseError::UnknownCommand => "unknown command (expected start or stop)",
            ParseError::MissingPid => "start needs a pid",
            ParseError::BadNumber => "not a decimal or 0x-hex number",
            ParseError::ZeroPid => "pid 0 cannot be profiled",
            ParseError::BadCapacity => "capacity out of range",
            ParseError::TrailingWords => "too many words",
            ParseError::BadRate => "rate out of range",
            ParseError::BadStacks => "stacks out of range",
        })
    }
}

/// Parse one `sys:prof_ctl` command: `start <pid> [capacity] [exec] [children] [rate=HZ]
/// [stacks=N]`, `start all [rate=HZ] [stacks=N]` (every process: `pid` 0) or `stop`. Words are
/// separated by ASCII whitespace (a trailing newline is fine); numbers are decimal or
/// `0x`-hex. `exec` makes the session count from the process's next exec
/// ([`CountFrom::Exec`]); `children` makes it follow the processes `pid` starts, to any depth,
/// each one's samples under its pid and image ([`owner_key`](super::owner_key)); `rate=HZ` asks for HZ samples a second per CPU from an NMI source
/// (the kernel falls back to the timer tick where it has none); `stacks=N` sizes the stack
/// table for N distinct stacks (0..=[`MAX_STACKS`]; default [`DEFAULT_STACKS`]; 0: no call
/// stacks). After the capacity, `exec`, `children`, `rate=` and `stacks=` come in any order,
/// each at most once.
pub fn parse_command(input: &[u8]) -> Result<Command, ParseError> {
    let mut words = input
        .split(|byte| byte.is_ascii_whitespace())
        .filter(|word| !word.is_empty());
    let command = match words.next().ok_or(ParseError::Empty)? {
        b"stop" => Command::Stop,
        b"start" => {
            let (pid, all) = match words.next().ok_or(ParseError::MissingPid)? {
                b"all" => (0, true),
                word => (parse_number(word)?, false),
            };
            if pid == 0 && !all {
                return Err(ParseError::ZeroPid);
            }
            let mut next = words.next();
            let capacity = match next {
                Some(word)
                    if !all
                        && word != b"exec"
                        && word != b"children"
                        && !word.starts_with(b"rate=")
                        && !word.starts_with(b"stacks=") =>
                {
                    next = words.next();
                    parse_number(word)?
                }
                _ => DEFAULT_CAPACITY,
            };
            if capacity == 0 || capacity > MAX_CAPACITY {
                return Err(ParseError::BadCapacity);
            }
            let (mut from, mut children, mut rate, mut stacks) = (None, false, None, None);
            while let Some(word) = next {
                if word == b"exec" && from.is_none() && !all {
                    from = Some(CountFrom::Exec);
                } else if word == b"children" && !children && !all {
                    children = true;
                } else if let (Some(hz), None) = (word.strip_prefix(b"rate="), rate) {
                    let hz = parse_number(hz).map_err(|_| ParseError::BadRate)?;
                    if !(MIN_RATE..=MAX_RATE).contains(&hz) {
                        return Err(ParseError::BadRate);
                    }
                    rate = Some(hz);
                } else if let (Some(n), None) = (word.strip_prefix(b"stacks="), stacks) {
                    let n = parse_number(n).map_err(|_| ParseError::BadStacks)?;
                    if n > MAX_STACKS {
                        return Err(ParseError::BadStacks);
                    }
                    stacks = Some(n);
                } else {
                    return Err(ParseError::TrailingWords);
                }
                next = words.next();
            }
            Command::Start {
                pid,
                capacity,
                from: from.unwrap_or(CountFrom::Now),
                children,
                rate,
                stacks: stacks.unwrap_or(DEFAULT_STACKS),
            }
        }
        _ => return Err(ParseError::UnknownCommand),
    };
    match words.next() {
        Some(_) => Err(ParseError::TrailingWords),
        None => Ok(command),
    }
}

fn parse_number(word: &[u8]) -> Result<usize, ParseError> {
    let (digits, radix) = match word {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        _ => (word, 10),
    };
    if digits.is_empty() {
        return Err(ParseError::BadNumber);
    }
    let mut value: usize = 0;
    for &byte in digits {
        let digit = (byte as char)
            .to_digit(radix)
            .ok_or(ParseError::BadNumber)?;
        value = value
            .checked_mul(radix as usize)
            .and_then(|value| value.checked_add(digit as usize))
            .ok_or(ParseError::BadNumber)?;
    }
    Ok(value)
}
