//! A test program for server attribution: where fib spends its time in its own code, iowork
//! spends it asking others. On Redox a file is served by a scheme daemon (ramfs, RedoxFS) and
//! a pipe by the kernel and the process at its other end, so a profile of iowork's own code
//! shows a fraction of its cost; `profil` on Redox charges the daemons' work to it.
//!
//! `iowork [DIR [ROUNDS [TRIPS]]]`:
//! 1. `file`: ROUNDS times (default 200), write a 64 KiB file `iowork.<pid>` in DIR (default
//!    the temporary directory) in 4 KiB writes, then read it back in 4 KiB reads and check it;
//! 2. `pipe`: TRIPS round trips (default 2000) of one byte through a child process (iowork
//!    itself, as `iowork --echo`) over two pipes; none with TRIPS 0.
//!
//! Each phase's wall time goes to stderr as `iowork.time.file: SECONDS` and
//! `iowork.time.pipe: SECONDS`, so a profile can be checked against it.
//!
//! With `IOWORK_REQUESTS=1` in the environment, iowork also counts the calls it makes to the
//! file's scheme (opens, reads, writes, closes, removes) and times each read and write with
//! its own clock, and prints them (`iowork.requests.file: opens=N reads=N writes=N closes=N
//! removes=N read_ns=T write_ns=T clock_ns=T`, `iowork.requests.calls: …` for `--calls`), so a
//! profile of its requests to schemes can be checked against them. `clock_ns` (`--calls`): as
//! many empty intervals of the same clock as the reads it timed, what the clock's own reading
//! adds to them (on Redox a system call of its own).
//!
//! `iowork --calls DIR N`: N one-byte reads of a one-byte file in DIR, timed
//! (`iowork.time.calls`): the cost of small scheme calls, with and without a profiler.
//!
//! `iowork --self-pipe N`: N one-byte round trips through a pipe to itself: work the kernel
//! does for the program (on Redox the `pipe:` scheme is the kernel's), and no other process.
//! Prints its wall time (`iowork.time.self_pipe`) and the CPU time the kernel charged to the
//! process (`iowork.cpu: SECONDS`: on Redox its contexts' TIME in `/scheme/sys/context`, on
//! Linux utime + stime of `/proc/self/stat`), to check a profile's samples against.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const FILE_LEN: usize = 64 * 1024;
const CHUNK: usize = 4096;

/// The calls iowork makes to a file's scheme, counted where `IOWORK_REQUESTS` is set.
mod count {
    use std::io::{self, Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::OnceLock;
    use std::time::Instant;

    pub static OPENS: AtomicU64 = AtomicU64::new(0);
    pub static READS: AtomicU64 = AtomicU64::new(0);
    pub static WRITES: AtomicU64 = AtomicU64::new(0);
    pub static CLOSES: AtomicU64 = AtomicU64::new(0);
    pub static REMOVES: AtomicU64 = AtomicU64::new(0);
    pub static READ_NS: AtomicU64 = AtomicU64::new(0);
    pub static WRITE_NS: AtomicU64 = AtomicU64::new(0);
    /// As many empty intervals of its clock as the reads it timed: what its clock adds to
    /// each (on Redox reading the clock is a system call of its own).
    pub static CLOCK_NS: AtomicU64 = AtomicU64::new(0);

    pub fn on() -> bool {
        static ON: OnceLock<bool> = OnceLock::new();
        *ON.get_or_init(|| std::env::var_os("IOWORK_REQUESTS").is_some_and(|v| !v.is_empty() && v != "0"))
    }

    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    /// One `read` call, counted and timed.
    pub fn read(f: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
        let t = Instant::now();
        let r = f.read(buf);
        add(&READ_NS, t.elapsed().as_nanos() as u64);
        add(&READS, 1);
        r
    }

    /// `read_exact`, each call counted.
    pub fn read_exact(f: &mut impl Read, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match read(f, buf)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    /// `write_all`, each call counted and timed.
    pub fn write_all(f: &mut impl Write, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let t = Instant::now();
            let r = f.write(buf);
            add(&WRITE_NS, t.elapsed().as_nanos() as u64);
            add(&WRITES, 1);
            match r? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// What was counted, as one line for `what`, and the counts back to 0.
    pub fn report(what: &str) {
        if !on() {
            return;
        }
        let take = |c: &AtomicU64| c.swap(0, Relaxed);
        eprintln!(
            "iowork.requests.{what}: opens={} reads={} writes={} closes={} removes={} read_ns={} write_ns={} clock_ns={}",
            take(&OPENS),
            take(&READS),
            take(&WRITES),
            take(&CLOSES),
            take(&REMOVES),
            take(&READ_NS),
            take(&WRITE_NS),
            take(&CLOCK_NS)
        );
    }
}

/// Write the file in chunks, read it back, check it: one round.
#[inline(never)]
fn file_round(path: &PathBuf, round: u32) -> io::Result<()> {
    let pattern: Vec<u8> = (0..CHUNK).map(|i| (i as u32 ^ round) as u8).collect();
    let mut f = File::create(path)?;
    count::add(&count::OPENS, 1);
    for _ in 0..FILE_LEN / CHUNK {
        match count::on() {
            true => count::write_all(&mut f, &pattern)?,
            false => f.write_all(&pattern)?,
        }
    }
    drop(f);
    count::add(&count::CLOSES, 1);
    let mut f = File::open(path)?;
    count::add(&count::OPENS, 1);
    let mut buf = vec![0u8; CHUNK];
    for _ in 0..FILE_LEN / CHUNK {
        match count::on() {
            true => count::read_exact(&mut f, &mut buf)?,
            false => f.read_exact(&mut buf)?,
        }
        if buf != pattern {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "read back differs"));
        }
    }
    drop(f);
    count::add(&count::CLOSES, 1);
    Ok(())
}

/// One byte to the child and back, `trips` times.
#[inline(never)]
fn pipe_trips(trips: u32) -> io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe).arg("--echo").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let (mut to, mut from) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut byte = [0u8; 1];
    for i in 0..trips {
        to.write_all(&[i as u8])?;
        from.read_exact(&mut byte)?;
        if byte[0] != i as u8 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "echo differs"));
        }
    }
    drop(to);
    child.wait()?;
    Ok(())
}

/// `calls` small scheme calls: one-byte reads of a one-byte file in `dir`, all but the first
/// at its end (each a round trip to the file's daemon that moves no data), for measuring the
/// profiler's own cost.
fn calls(dir: &Path, calls: u32) -> io::Result<f64> {
    let path = dir.join(format!("iowork.calls.{}", std::process::id()));
    let at = |step: &str, e: io::Error| io::Error::new(e.kind(), format!("{step} {}: {e}", path.display()));
    std::fs::write(&path, b"x").map_err(|e| at("writing", e))?;
    let mut f = File::open(&path).map_err(|e| at("opening", e))?;
    let mut byte = [0u8; 1];
    let t = Instant::now();
    for _ in 0..calls {
        let _ = match count::on() {
            true => count::read(&mut f, &mut byte),
            false => f.read(&mut byte),
        }
        .map_err(|e| at("reading", e))?;
    }
    let secs = t.elapsed().as_secs_f64();
    if count::on() {
        for _ in 0..calls {
            let t = Instant::now();
            count::add(&count::CLOCK_NS, t.elapsed().as_nanos() as u64);
        }
    }
    drop(f);
    remove_or_warn(&path);
    // std::fs::write: an open, a write, a close; then the open, the reads, the close.
    count::add(&count::OPENS, 2);
    count::add(&count::WRITES, 1);
    count::add(&count::CLOSES, 2);
    Ok(secs)
}

/// `n` one-byte round trips through a pipe whose both ends are ours.
#[inline(never)]
fn self_pipe(n: u32) -> io::Result<()> {
    let (mut from, mut to) = io::pipe()?;
    let mut byte = [0u8; 1];
    for i in 0..n {
        to.write_all(&[i as u8])?;
        from.read_exact(&mut byte)?;
        if byte[0] != i as u8 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "pipe gave back another byte"));
        }
    }
    Ok(())
}

/// The CPU time the kernel charged to this process so far, in seconds.
#[cfg(target_os = "redox")]
fn cpu_seconds() -> Option<f64> {
    // Redox adds a context's running time to its TIME when it is switched out: block a moment
    // so the time up to here is in the table.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let table = std::fs::read_to_string("/scheme/sys/context").ok()?;
    cpu_in_context_table(&table, std::process::id())
}

#[cfg(not(target_os = "redox"))]
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command in parentheses: state is field 3, utime and stime fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_ascii_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ
}

/// The summed TIME (`HH:MM:SS.CC`, the 7th column) of `pid`'s rows in a `sys:context` table.
#[cfg_attr(not(target_os = "redox"), allow(dead_code))]
fn cpu_in_context_table(table: &str, pid: u32) -> Option<f64> {
    let times: Vec<f64> = table
        .lines()
        .skip(1)
        .filter(|row| row.split_ascii_whitespace().next() == Some(&pid.to_string()))
        .filter_map(|row| {
            let mut hms = row.split_ascii_whitespace().nth(6)?.split(':').map(|p| p.parse::<f64>().ok());
            let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
            Some(h * 3600.0 + m * 60.0 + s)
        })
        .collect();
    (!times.is_empty()).then(|| times.iter().sum())
}

/// Remove a file of ours; a filesystem that refuses (a Redox ramfs root may) gets a warning,
/// not a failure: the work is done.
fn remove_or_warn(path: &Path) {
    count::add(&count::REMOVES, 1);
    if let Err(e) = std::fs::remove_file(path) {
        eprintln!("iowork: warning: cannot remove {}: {e}", path.display());
    }
}

/// The child: copy stdin to stdout a byte at a time until end of input.
fn echo() -> io::Result<()> {
    let (mut input, mut output) = (io::stdin().lock(), io::stdout().lock());
    let mut byte = [0u8; 1];
    while input.read(&mut byte)? == 1 {
        output.write_all(&byte)?;
        output.flush()?;
    }
    Ok(())
}

fn number(arg: Option<&String>, default: u32, what: &str) -> Result<u32, String> {
    match arg {
        None => Ok(default),
        Some(a) => a.parse().map_err(|_| format!("iowork: {what} must be a whole number, not '{a}'")),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("--echo") {
        return echo().map_err(|e| format!("iowork --echo: {e}"));
    }
    if args.first().is_some_and(|a| a == "--help" || a == "-h") {
        println!(
            "usage: iowork [DIR [ROUNDS [TRIPS]]]  (defaults: the temporary directory, 200, 2000)\n\
             \x20      iowork --calls DIR N          (N one-byte reads of a file in DIR, timed)\n\
             \x20      iowork --self-pipe N          (N one-byte round trips through a pipe to itself)"
        );
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("--self-pipe") {
        let n = number(args.get(1), 100_000, "N")?;
        let t = Instant::now();
        self_pipe(n).map_err(|e| format!("iowork --self-pipe: {e}"))?;
        eprintln!("iowork.time.self_pipe: {:.6}", t.elapsed().as_secs_f64());
        if let Some(cpu) = cpu_seconds() {
            eprintln!("iowork.cpu: {cpu:.2}");
        }
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("--calls") {
        let dir = args.get(1).map(PathBuf::from).ok_or("iowork --calls: DIR N")?;
        let n = number(args.get(2), 100_000, "N")?;
        let secs = calls(&dir, n).map_err(|e| format!("iowork --calls: {e}"))?;
        eprintln!("iowork.time.calls: {secs:.6}");
        count::report("calls");
        return Ok(());
    }
    let dir = args.first().map_or_else(std::env::temp_dir, PathBuf::from);
    let rounds = number(args.get(1), 200, "ROUNDS")?;
    let trips = number(args.get(2), 2000, "TRIPS")?;
    let path = dir.join(format!("iowork.{}", std::process::id()));

    let t = Instant::now();
    (0..rounds).try_for_each(|r| file_round(&path, r)).map_err(|e| format!("iowork: {}: {e}", path.display()))?;
    remove_or_warn(&path);
    eprintln!("iowork.time.file: {:.6}", t.elapsed().as_secs_f64());
    count::report("file");

    if trips > 0 {
        let t = Instant::now();
        pipe_trips(trips).map_err(|e| format!("iowork: pipe round trips: {e}"))?;
        eprintln!("iowork.time.pipe: {:.6}", t.elapsed().as_secs_f64());
    }
    println!("iowork: {rounds} file rounds of {} KiB, {trips} pipe round trips", FILE_LEN / 1024);
    Ok(())
}



fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// Rows as the kernel at 663e6641 prints them; a process's threads are summed.
    #[test]
    fn cpu_time_from_the_context_table() {
        let table = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
                     12    0     0     UR+   #0    1          00:01:02.50 1.95 MB 4.00 KB /bin/iowork\n\
                     12    0     0     UB    #0    1          00:00:00.25 1.95 MB 4.00 KB /bin/iowork\n\
                     13    0     0     UB    #0    1          01:00:00.00 1.95 MB 4.00 KB /bin/other\n";
        assert_eq!(super::cpu_in_context_table(table, 12), Some(62.75));
        assert_eq!(super::cpu_in_context_table(table, 13), Some(3600.0));
        assert_eq!(super::cpu_in_context_table(table, 14), None);
        assert_eq!(super::cpu_in_context_table("PID TIME\n12 x y z w v junk\n", 12), None);
    }
}
