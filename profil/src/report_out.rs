//! Where the report goes: standard output, or standard error when an export takes standard
//! output (`--json -`), or a buffer that `--report FILE` writes as an export when the run is
//! over. A reader that goes away (`profil … | head`) ends the report quietly: the run goes on,
//! the exports are written and the program's status is still profil's. Any other write error
//! (a full disk) ends the report too, and is kept for the end of the run ([`ReportOut::error`]):
//! the program still runs and the exports are still written.

use std::io::{self, Write};

pub struct ReportOut {
    inner: Box<dyn Write>,
    /// The descriptor behind `inner` (1 or 2), where it is one.
    fd: Option<i32>,
    /// The reader closed the pipe: the rest of the report is dropped.
    closed: bool,
    /// The report kept for `--report FILE` (then `inner` is unused).
    kept: Option<Vec<u8>>,
    /// The first write error other than a closed reader's.
    failed: Option<io::Error>,
}

impl ReportOut {
    pub fn new(to_stderr: bool) -> ReportOut {
        let inner: Box<dyn Write> = if to_stderr { Box::new(io::stderr()) } else { Box::new(io::stdout()) };
        ReportOut { fd: Some(if to_stderr { 2 } else { 1 }), ..ReportOut::over(inner) }
    }

    /// Begin a new line if the program's output, which shares our output, did not end one.
    /// Only a regular file can be looked at afterwards (Linux: read back through /proc); on a
    /// terminal or a pipe the program's last byte is gone, and nothing is added, except after
    /// a Ctrl-C, whose `^C` the terminal echoed at the end of the line.
    pub fn start_line(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let Some(fd) = self.fd else { return Ok(()) };
        self.flush()?;
        // SAFETY: isatty only asks about the descriptor.
        if crate::interrupt::ctrl_c_from_terminal() && unsafe { libc::isatty(fd) } == 1 {
            return self.write_all(b"\n");
        }
        let Ok(file) = std::fs::File::open(format!("/proc/self/fd/{fd}")) else { return Ok(()) };
        let Ok(meta) = file.metadata() else { return Ok(()) };
        let mut last = [0u8; 1];
        if meta.is_file() && meta.len() > 0 && file.read_at(&mut last, meta.len() - 1).is_ok() && last[0] != b'\n' {
            self.write_all(b"\n")?;
        }
        Ok(())
    }

    /// A report written to `inner` (tests use a buffer or a broken pipe).
    pub fn over(inner: Box<dyn Write>) -> ReportOut {
        ReportOut { inner, fd: None, closed: false, kept: None, failed: None }
    }

    /// A report kept in memory until the run is over ([`ReportOut::kept`]).
    pub fn kept_for_file() -> ReportOut {
        ReportOut { kept: Some(Vec::new()), ..ReportOut::over(Box::new(io::sink())) }
    }

    /// Is the report kept for a file rather than written as it goes?
    pub fn is_kept(&self) -> bool {
        self.kept.is_some()
    }

    /// The report kept so far (empty where it is written as it goes).
    pub fn kept(&self) -> &[u8] {
        self.kept.as_deref().unwrap_or_default()
    }

    /// The write error that ended the report, if one did (other than a reader that went
    /// away), as profil says it: "Cannot write the report: ...".
    pub fn error(&mut self) -> io::Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }

    fn absorb<T>(&mut self, result: io::Result<T>, done: T) -> io::Result<T> {
        match result {
            // The reader went away, or the terminal hung up (EIO; ENXIO once it is gone).
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe || matches!(e.raw_os_error(), Some(libc::EIO | libc::ENXIO)) => {
                self.closed = true;
                Ok(done)
            }
            // Kept, to be said once at the end, naming what failed ("No space left on device"
            // alone reads as if the program had failed); the rest of the report is dropped.
            Err(e) => {
                self.closed = true;
                let message = format!("Cannot write the report: {}", prof_objects::os_message(&e));
                self.failed.get_or_insert(io::Error::new(e.kind(), message));
                Ok(done)
            }
            ok => ok,
        }
    }
}

impl Write for ReportOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(buf);
            return Ok(buf.len());
        }
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.absorb(result, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result, ())
    }
}



/// A line for standard error that never panics: where stderr is gone (a closed pipe, a
/// terminal that hung up) there is no one to tell.
pub fn to_stderr(line: std::fmt::Arguments) {
    let _ = writeln!(io::stderr(), "{line}");
}

/// Text for standard output, as [`to_stderr`].
pub fn to_stdout(text: std::fmt::Arguments) {
    let mut out = io::stdout();
    let _ = out.write_fmt(text).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    struct BrokenPipe;

    impl Write for BrokenPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    struct Failing;

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_drops_the_rest_quietly() {
        let mut out = ReportOut::over(Box::new(BrokenPipe));
        assert!(out.write_all(b"report").is_ok());
        assert!(out.flush().is_ok());
        assert!(out.closed);
        assert!(out.write_all(b"more").is_ok());
    }

    #[test]
    fn other_errors_end_the_report_and_are_kept_for_the_end() {
        let mut out = ReportOut::over(Box::new(Failing));
        assert!(out.write_all(b"report").is_ok());
        assert!(out.write_all(b"more").is_ok());
        let e = out.error().unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (io::ErrorKind::StorageFull, "Cannot write the report: No space left on device".to_string()));
        assert!(out.error().is_ok(), "said once");
    }
}
