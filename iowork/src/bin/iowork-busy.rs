//! `iowork-busy serve MS` / `iowork-busy ask N`: a two-threaded scheme daemon, for testing that
//! the kernel labels the daemon's thread that works for a program, not its whole process.
//! `serve` registers the scheme `busy` and answers every read of a file of it after burning
//! MS ms of CPU in `burn` (the thread that took the request), while its second thread spins in
//! `spin` for as long as the daemon lives, working for nobody. `ask` is the client: it reads
//! `/scheme/busy/work` N times. Under `profil iowork-busy ask N`, `burn` is the daemon's work
//! for the program and `spin` another process's time. Redox only.

#[cfg(target_os = "redox")]
#[path = "shared/serve.rs"]
mod serve;

#[cfg(target_os = "redox")]
mod busy {
    use std::io::Read;
    use std::time::{Duration, Instant};

    use redox_scheme::scheme::{register_sync_scheme, SchemeSync};
    use redox_scheme::{CallerCtx, OpenResult, Socket};
    use syscall::error::Result;
    use syscall::schemev2::NewFdFlags;

    const ROOT: usize = 0;

    struct Busy {
        burn: Duration,
        next: usize,
    }

    /// The work of one request: `for` of CPU, by the clock (this thread runs alone on its CPU).
    #[inline(never)]
    fn burn(work: Duration) -> u64 {
        let start = Instant::now();
        let mut x = 1u64;
        while start.elapsed() < work {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        x
    }

    /// The daemon's other thread: busy, for nobody.
    #[inline(never)]
    fn spin() -> ! {
        let mut x = 1u64;
        loop {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }

    impl SchemeSync for Busy {
        fn scheme_root(&mut self) -> Result<usize> {
            Ok(ROOT)
        }

        fn openat(&mut self, _dirfd: usize, _path: &str, _flags: usize, _fcntl: u32, _ctx: &CallerCtx) -> Result<OpenResult> {
            self.next += 1;
            Ok(OpenResult::ThisScheme { number: self.next, flags: NewFdFlags::POSITIONED })
        }

        fn read(&mut self, _id: usize, buf: &mut [u8], offset: u64, _fl: u32, _ctx: &CallerCtx) -> Result<usize> {
            if offset > 0 {
                return Ok(0);
            }
            let answer = format!("{}\n", burn(self.burn) & 1);
            let n = answer.len().min(buf.len());
            buf[..n].copy_from_slice(&answer.as_bytes()[..n]);
            Ok(n)
        }

        fn on_close(&mut self, _id: usize) {}
    }

    pub fn serve(ms: u64) -> ! {
        std::thread::spawn(|| spin());
        let socket = Socket::create().expect("iowork-busy: cannot create the scheme");
        let mut busy = Busy { burn: Duration::from_millis(ms), next: ROOT };
        register_sync_scheme(&socket, "busy", &mut busy).expect("iowork-busy: cannot register the scheme busy");
        super::serve::requests(&socket, &mut busy, "iowork-busy")
    }

    pub fn ask(n: u64) {
        for _ in 0..n {
            let mut answer = String::new();
            std::fs::File::open("/scheme/busy/work")
                .and_then(|mut f| f.read_to_string(&mut answer))
                .unwrap_or_else(|e| panic!("iowork-busy: reading /scheme/busy/work: {e} (is `iowork-busy serve` running?)"));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |s: Option<&String>| s.and_then(|s| s.parse::<u64>().ok());
    let (mode, n) = (args.first().map(String::as_str), number(args.get(1)));
    if !cfg!(target_os = "redox") || n.is_none() || !matches!(mode, Some("serve" | "ask")) {
        eprintln!("usage: iowork-busy serve MS | iowork-busy ask N   (a Redox scheme daemon and its client)");
        std::process::exit(2);
    }
    #[cfg(target_os = "redox")]
    match (mode, n) {
        (Some("serve"), Some(ms)) => busy::serve(ms),
        (_, Some(n)) => busy::ask(n),
        _ => unreachable!(),
    }
}
