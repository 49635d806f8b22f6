//! `iowork-relay [DIR]`: a scheme daemon for testing server attribution through a chain. It
//! serves the scheme `relay` (started by init as a `type = { scheme = "relay" }` service) and
//! forwards every file of it to the same name in DIR (default `/scheme/tmp`), so a program
//! using `/scheme/relay/…` is served by iowork-relay, which is served by the filesystem behind
//! DIR: program → relay → ramfs. Redox only.

#[cfg(target_os = "redox")]
#[path = "shared/serve.rs"]
mod serve;

#[cfg(target_os = "redox")]
mod relay {
    use std::collections::BTreeMap;
    use std::fs::{File, OpenOptions};
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::path::PathBuf;

    use redox_scheme::scheme::SchemeSync;
    use redox_scheme::{CallerCtx, OpenResult, Socket};
    use syscall::error::{Error, Result, EBADF, EIO};
    use syscall::flag::{O_ACCMODE, O_APPEND, O_CREAT, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
    use syscall::schemev2::NewFdFlags;
    use syscall::CallFlags;

    const ROOT: usize = 0;

    struct Relay {
        dir: PathBuf,
        files: BTreeMap<usize, File>,
        next: usize,
    }

    fn errno(e: std::io::Error) -> Error {
        Error::new(e.raw_os_error().unwrap_or(EIO))
    }

    impl Relay {
        fn file(&mut self, id: usize) -> Result<&mut File> {
            self.files.get_mut(&id).ok_or(Error::new(EBADF))
        }
    }

    impl SchemeSync for Relay {
        fn scheme_root(&mut self) -> Result<usize> {
            Ok(ROOT)
        }

        fn openat(&mut self, _dirfd: usize, path: &str, flags: usize, _fcntl: u32, _ctx: &CallerCtx) -> Result<OpenResult> {
            let access = flags & O_ACCMODE;
            let file = OpenOptions::new()
                .read(access == O_RDONLY || access == O_RDWR)
                .write(access == O_WRONLY || access == O_RDWR)
                .append(flags & O_APPEND != 0)
                .create(flags & O_CREAT != 0)
                .truncate(flags & O_TRUNC != 0)
                .open(self.dir.join(path.trim_start_matches('/')))
                .map_err(errno)?;
            self.next += 1;
            self.files.insert(self.next, file);
            Ok(OpenResult::ThisScheme { number: self.next, flags: NewFdFlags::POSITIONED })
        }

        fn read(&mut self, id: usize, buf: &mut [u8], offset: u64, _fl: u32, _ctx: &CallerCtx) -> Result<usize> {
            let f = self.file(id)?;
            f.seek(SeekFrom::Start(offset)).map_err(errno)?;
            f.read(buf).map_err(errno)
        }

        fn write(&mut self, id: usize, buf: &[u8], offset: u64, _fl: u32, _ctx: &CallerCtx) -> Result<usize> {
            let f = self.file(id)?;
            f.seek(SeekFrom::Start(offset)).map_err(errno)?;
            f.write(buf).map_err(errno)
        }

        fn fsize(&mut self, id: usize, _ctx: &CallerCtx) -> Result<u64> {
            self.file(id)?.metadata().map(|m| m.len()).map_err(errno)
        }

        fn on_close(&mut self, id: usize) {
            self.files.remove(&id);
        }
    }

    pub fn run() -> ! {
        let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/scheme/tmp".into()));
        let notify: usize = std::env::var("INIT_NOTIFY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("iowork-relay: start it through init (a scheme service)"));
        let socket = Socket::create().expect("iowork-relay: cannot create the scheme");
        let mut relay = Relay { dir, files: BTreeMap::new(), next: ROOT };
        let cap = socket.create_this_scheme_fd(0, ROOT, 0, 0).expect("iowork-relay: cannot create the scheme root");
        libredox::call::call_wo(notify, &cap.to_ne_bytes(), CallFlags::FD, &[]).expect("iowork-relay: cannot notify init");
        super::serve::requests(&socket, &mut relay, "iowork-relay")
    }
}

fn main() {
    #[cfg(target_os = "redox")]
    relay::run();
    #[cfg(not(target_os = "redox"))]
    {
        eprintln!("iowork-relay: a Redox scheme daemon; nothing to do here");
        std::process::exit(2);
    }
}
