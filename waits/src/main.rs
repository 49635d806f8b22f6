//! A test program with known waits, for the clock view (`profil --off-cpu`): each phase
//! blocks the main thread in a named function for a known time, with CPU spinning between
//! phases, and prints how long the main thread was blocked there, measured around the call:
//!
//! 1. `sleep_phase`: `thread::sleep` for 300 ms (clock_nanosleep);
//! 2. `pipe_phase`: a `read` of a pipe whose writer (a thread) sleeps 200 ms first;
//! 3. `condvar_phase`: a condition-variable wait (a futex) that a thread ends after 150 ms;
//! 4. `child_phase`: `waitpid` for a child process that sleeps 250 ms;
//! 5. `disk_phase`: 8 MiB written to a file in DIR (default the temporary directory), then
//!    `fsync`; its time is whatever the disk takes.
//!
//! Each phase prints `waits.NAME: SECONDS` to stderr (the time blocked in its call), and
//! `spin` runs a fixed amount of work (no wait) between phases. `waits [DIR [SCALE]]`: every
//! known wait is SCALE times as long (default 1).
//!
//! With `WAITS_REQUESTS=1` in the environment, the disk phase also prints the calls it made
//! to the file's scheme and its own time in each kind (`waits.requests.disk: opens=1 writes=N
//! fsyncs=1 closes=1 removes=1 write_ns=T fsync_ns=T`), to check a profile of its requests.
//!
//! `waits --trips N`: N one-byte round trips between two threads over two pipes, each side
//! blocking in `read` every trip (a switch-heavy program, for the benchmark); prints
//! `waits.trips: SECONDS`, the trips a second and its own CPU time (`waits.cpu_seconds`).

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// CPU work and no wait: a fixed number of steps of a xorshift generator.
#[inline(never)]
fn spin(steps: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

fn report(name: &str, blocked: Duration) {
    eprintln!("waits.{name}: {:.6}", blocked.as_secs_f64());
}

#[inline(never)]
fn sleep_phase(ms: u64) -> Duration {
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(ms));
    t.elapsed()
}

#[inline(never)]
fn pipe_phase(ms: u64) -> Duration {
    let (mut reader, mut writer) = std::io::pipe().expect("pipe");
    let w = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        writer.write_all(b"x").expect("write");
    });
    let mut byte = [0u8; 1];
    let t = Instant::now();
    reader.read_exact(&mut byte).expect("read");
    let blocked = t.elapsed();
    w.join().expect("writer");
    blocked
}

#[inline(never)]
fn condvar_phase(ms: u64) -> Duration {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let other = pair.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        *other.0.lock().expect("lock") = true;
        other.1.notify_one();
    });
    let start = Instant::now();
    let mut done = pair.0.lock().expect("lock");
    while !*done {
        done = pair.1.wait(done).expect("wait");
    }
    let blocked = start.elapsed();
    drop(done);
    t.join().expect("notifier");
    blocked
}

#[inline(never)]
fn child_phase(ms: u64) -> Duration {
    // SAFETY: the child only sleeps and exits (async-signal-safe calls); no other thread
    // runs now (the earlier phases joined theirs).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ts = libc::timespec { tv_sec: (ms / 1000) as libc::time_t, tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long };
        // SAFETY: nanosleep reads the timespec; _exit ends the child without running
        // the parent's destructors or atexit handlers.
        unsafe {
            libc::nanosleep(&ts, std::ptr::null_mut());
            libc::_exit(0);
        }
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    let t = Instant::now();
    // SAFETY: waits for our own child; status is a valid int.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid, "waitpid");
    t.elapsed()
}

#[inline(never)]
fn disk_phase(dir: &std::path::Path) -> Duration {
    let path = dir.join(format!("waits.{}", std::process::id()));
    let mut f = std::fs::File::create(&path).expect("create");
    let block = vec![0x5au8; 1 << 20];
    // Each write call, counted and timed with its own clock.
    let (mut writes, mut write_ns) = (0u64, 0u128);
    for _ in 0..8 {
        let mut left = &block[..];
        while !left.is_empty() {
            let t = Instant::now();
            let n = f.write(left).expect("write");
            write_ns += t.elapsed().as_nanos();
            writes += 1;
            assert!(n > 0, "write wrote nothing");
            left = &left[n..];
        }
    }
    let t = Instant::now();
    f.sync_all().expect("fsync");
    let blocked = t.elapsed();
    drop(f);
    let _ = std::fs::remove_file(&path);
    if std::env::var_os("WAITS_REQUESTS").is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!("waits.requests.disk: opens=1 writes={writes} fsyncs=1 closes=1 removes=1 write_ns={write_ns} fsync_ns={}", blocked.as_nanos());
    }
    blocked
}

/// N round trips of a byte between this thread and another, over two pipes.
#[inline(never)]
fn trips(n: u64) -> Duration {
    let (mut from_echo, mut to_main) = std::io::pipe().expect("pipe");
    let (mut from_main, mut to_echo) = std::io::pipe().expect("pipe");
    let echo = std::thread::spawn(move || {
        let mut b = [0u8; 1];
        for _ in 0..n {
            from_main.read_exact(&mut b).expect("echo read");
            to_main.write_all(&b).expect("echo write");
        }
    });
    let t = Instant::now();
    let mut b = [7u8; 1];
    for _ in 0..n {
        to_echo.write_all(&b).expect("write");
        from_echo.read_exact(&mut b).expect("read");
    }
    let took = t.elapsed();
    echo.join().expect("echo");
    took
}

fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid rusage to write.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("--trips") {
        let n: u64 = match std::env::args().nth(2).map(|s| s.parse()) {
            Some(Ok(n)) if n > 0 => n,
            _ => {
                eprintln!("usage: waits --trips N (N > 0)");
                std::process::exit(2);
            }
        };
        let took = trips(n);
        report("trips", took);
        eprintln!("waits.trips_per_second: {:.0}", n as f64 / took.as_secs_f64());
        // Its own CPU time, both threads, user and system: what a profiler's records cost the
        // program, apart from the profiler's own work (the bench reads it).
        eprintln!("waits.cpu_seconds: {:.6}", own_cpu_seconds());
        return;
    }
    let dir = args.next().map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let scale: u64 = match args.next().map(|s| s.parse()) {
        None => 1,
        Some(Ok(n)) if (1..=100).contains(&n) => n,
        Some(_) => {
            eprintln!("usage: waits [DIR [SCALE]] (SCALE 1 to 100)");
            std::process::exit(2);
        }
    };
    const STEPS: u64 = 20_000_000;
    spin(STEPS);
    report("sleep", sleep_phase(300 * scale));
    spin(STEPS);
    report("pipe", pipe_phase(200 * scale));
    spin(STEPS);
    report("condvar", condvar_phase(150 * scale));
    spin(STEPS);
    report("child", child_phase(250 * scale));
    spin(STEPS);
    report("disk", disk_phase(&dir));
    spin(STEPS);
}
