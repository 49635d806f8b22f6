//! What the user asked on the command line, flag by flag: each option's declaration
//! (`options::OPTIONS`) parses its own value into one field here; `cli::parse` then checks how
//! the flags go together and makes the run's `Args`. The values a saved run recorded are not
//! here: they are the run's (`profile::Outcome`).

use std::path::PathBuf;

use prof_core::sampler::{is_valid_stack_size, MAX_STACK_SIZE};

/// A command-line mistake, with the message to print (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

/// How `--call-graph` records call stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackMode {
    Dwarf,
    FramePointers,
}

/// Every option's value as given (absent: its default), before the options are checked
/// against each other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    pub start: u64,
    pub end: u64,
    pub interval: u64,
    pub frequency_hz: Option<u64>,
    pub kernel: crate::kernel::KernelChoice,
    pub pid: Option<u32>,
    pub system: bool,
    pub duration: Option<std::time::Duration>,
    pub flat_only: bool,
    pub g: bool,
    pub call_graph: Option<StackMode>,
    pub stack_size: Option<u32>,
    pub callers: bool,
    pub inline: bool,
    pub children: bool,
    pub top: Option<usize>,
    pub percent_limit: Option<u32>,
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    pub tids: Vec<u32>,
    pub dsos: Vec<String>,
    pub relative: bool,
    pub window: Option<crate::timeline::Window>,
    pub short_names: bool,
    pub asm: bool,
    pub asm_top: Option<usize>,
    pub lines: Option<Option<usize>>,
    pub debug_dirs: Vec<PathBuf>,
    pub report: Option<PathBuf>,
    pub gmon: Option<PathBuf>,
    pub collapsed: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub pprof: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub samples: Option<PathBuf>,
    pub speedscope: Option<PathBuf>,
    pub firefox: Option<PathBuf>,
    pub save: Option<PathBuf>,
    pub load: Option<PathBuf>,
    pub off_cpu: bool,
    pub requests: bool,
    pub threads: bool,
    pub timeline: Option<usize>,
    pub sysroot: Option<PathBuf>,
    pub diff: Option<PathBuf>,
    pub fail_above: Option<u32>,
    pub help: bool,
    pub version: bool,
    pub man: bool,
}

/// What a flag's parser is given: its value, `None` for a flag without one (or `--lines`
/// without `=all`).
pub type Value<'a> = Option<&'a str>;

fn given(v: Value<'_>) -> &str {
    v.unwrap_or_default()
}

/// A decimal or `0x`-prefixed hexadecimal number.
/// (The same grammar as the `prof:` control file's numbers, so one parser serves both.)
pub fn parse_number(s: &str) -> Option<u64> {
    prof_core::ctl::number(s.trim()).ok()
}

/// Why `s` is not a number: well-formed but too large, or not a number at all.
fn number_problem(s: &str) -> &'static str {
    let s = s.trim();
    let digits = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
    };
    if digits {
        "out of range (at most 0xffffffffffffffff)"
    } else {
        "expected a decimal or 0x-hex number"
    }
}

/// `-s`, `-e`, `-i`: an address or a size.
pub fn number(v: Value, name: &str, what: &str) -> Result<u64, UsageError> {
    let s = given(v);
    parse_number(s).ok_or_else(|| UsageError(format!("invalid {what} '{s}' for -{name}: {}", number_problem(s))))
}

/// `-F`: a rate the platform samples at.
pub fn frequency(v: Value) -> Result<u64, UsageError> {
    let s = given(v);
    match parse_number(s) {
        Some(f) if crate::platform::FREQUENCIES.contains(&f) => Ok(f),
        _ => {
            let (lo, hi) = (crate::platform::FREQUENCIES.start(), crate::platform::FREQUENCIES.end());
            Err(UsageError(format!("invalid frequency '{s}' for -F: expected {lo} to {hi} (Hz)")))
        }
    }
}

/// A file named by `--NAME`: not empty.
pub fn file(v: Value, name: &str) -> Result<PathBuf, UsageError> {
    match given(v) {
        "" => Err(UsageError(format!("empty file name for --{name}"))),
        s => Ok(PathBuf::from(s)),
    }
}

/// `--kernel`: a file, or `none` (a file called so: `./none`).
pub fn kernel(v: Value) -> Result<crate::kernel::KernelChoice, UsageError> {
    match given(v) {
        "none" => Ok(crate::kernel::KernelChoice::Off),
        _ => file(v, "kernel").map(crate::kernel::KernelChoice::File),
    }
}

/// `--sysroot`: a directory.
pub fn directory(v: Value, name: &str) -> Result<PathBuf, UsageError> {
    let d = file(v, name)?;
    match d.is_dir() {
        true => Ok(d),
        false => Err(UsageError(format!("--{name} {}: not a directory", d.display()))),
    }
}

/// `--top`, `--asm-top`: a positive count.
pub fn count(v: Value, name: &str) -> Result<usize, UsageError> {
    let s = given(v);
    match parse_number(s) {
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(UsageError(format!("invalid count '{s}' for --{name}: expected a positive number"))),
    }
}

/// `-p`: a process id.
pub fn pid(v: Value) -> Result<u32, UsageError> {
    let s = given(v);
    match parse_number(s) {
        Some(pid) if (1..=u64::from(u32::MAX)).contains(&pid) => Ok(pid as u32),
        _ => Err(UsageError(format!("invalid pid '{s}' for -p: expected a process id above 0"))),
    }
}

/// `-t`: seconds above 0.
pub fn duration(v: Value) -> Result<std::time::Duration, UsageError> {
    let s = given(v);
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 1e9 => Ok(std::time::Duration::from_secs_f64(t)),
        _ => Err(UsageError(format!("invalid duration '{s}' for -t: expected seconds above 0"))),
    }
}

/// `--call-graph`: dwarf or fp.
pub fn stack_mode(v: Value) -> Result<StackMode, UsageError> {
    match given(v) {
        "dwarf" => Ok(StackMode::Dwarf),
        "fp" => Ok(StackMode::FramePointers),
        other => Err(UsageError(format!("invalid mode '{other}' for --call-graph: expected dwarf or fp"))),
    }
}

/// `--stack-size`: bytes, a multiple of 8.
pub fn stack_size(v: Value) -> Result<u32, UsageError> {
    let s = given(v);
    match parse_number(s) {
        Some(n) if is_valid_stack_size(n) => Ok(n as u32),
        _ => Err(UsageError(format!("invalid size '{s}' for --stack-size: expected a multiple of 8 from 8 to {MAX_STACK_SIZE} (bytes)"))),
    }
}

/// `--percent-limit`: a percentage, in hundredths of a percent.
pub fn percent_limit(v: Value) -> Result<u32, UsageError> {
    let s = given(v);
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok((p * 100.0).round() as u32),
        _ => Err(UsageError(format!("invalid share '{s}' for --percent-limit: expected a percentage from 0 to 100"))),
    }
}

/// `--fail-above`: points, in hundredths of a point.
pub fn points(v: Value) -> Result<u32, UsageError> {
    let s = given(v);
    match s.parse::<f64>() {
        Ok(pp) if (0.0..=100.0).contains(&pp) => Ok((pp * 100.0).round() as u32),
        _ => Err(UsageError(format!("invalid points '{s}' for --fail-above: expected a number from 0 to 100"))),
    }
}

/// A comma-separated list's words (`--comm a,b`), blanks dropped.
pub fn words(v: Value) -> Vec<String> {
    given(v).split(',').map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// A comma-separated list of ids (`--pids 42,43`).
pub fn ids(v: Value, name: &str) -> Result<Vec<u32>, UsageError> {
    words(v)
        .iter()
        .map(|w| match parse_number(w) {
            Some(n) if n <= u64::from(u32::MAX) => Ok(n as u32),
            _ => Err(UsageError(format!("invalid id '{w}' for --{name}: expected a list of numbers, such as 42,43"))),
        })
        .collect()
}

/// `--time`: a window of the run.
pub fn window(v: Value) -> Result<crate::timeline::Window, UsageError> {
    crate::timeline::Window::parse(given(v)).map_err(|e| UsageError(format!("invalid window for --time: {e}")))
}

/// `--percentage`: shares of the samples kept (`relative`) or of the run's (`absolute`).
pub fn relative(v: Value) -> Result<bool, UsageError> {
    match given(v) {
        "absolute" => Ok(false),
        "relative" => Ok(true),
        other => Err(UsageError(format!("invalid mode '{other}' for --percentage: expected absolute or relative"))),
    }
}

/// `--lines[=all]`: its top lines, or all of them (`None`).
pub fn lines(v: Value) -> Result<Option<usize>, UsageError> {
    match v {
        None => Ok(Some(prof_objects::lines::DEFAULT_TOP)),
        Some("all") => Ok(None),
        Some(other) => Err(UsageError(format!("invalid value '{other}' for --lines: expected --lines or --lines=all"))),
    }
}

/// `--timeline[=N]`: its slices.
pub fn slices(v: Value) -> Result<usize, UsageError> {
    match v {
        None => Ok(crate::slices::DEFAULT_SLICES),
        Some(n) => match parse_number(n) {
            Some(n @ 1..=1000) => Ok(n as usize),
            _ => Err(UsageError(format!("invalid count '{n}' for --timeline: expected slices from 1 to 1000"))),
        },
    }
}
