//! The Redox side of the daemon: a thin `SchemeSync` adapter over `ProfScheme`, readiness to
//! init, the null namespace. Every method only translates types; every request gets an answer
//! (the request loop follows redox-scheme 0.12's own blocking loop, `wrappers.rs`).

use prof_samplers::upstream_kernel::{RealDebugFiles, UpstreamSampler};
use profd::scheme::{Access, ProfScheme};
use prof_core::Profd;
use redox_scheme::scheme::{SchemeState, SchemeSync};
use redox_scheme::{CallerCtx, OpenResult, RequestKind, Response, SignalBehavior, Socket};
use syscall::dirent::{DirEntry, DirentBuf, DirentKind};
use syscall::error::{Error, Result, EACCES};
use syscall::flag::{O_ACCMODE, O_RDONLY, O_STAT, O_WRONLY};
use syscall::schemev2::NewFdFlags;
use syscall::{CallFlags, Stat, MODE_DIR, MODE_FILE};

/// The kernel's own profiler (its feature `profiling`), typed records where it writes them.
type KernelProfiler = UpstreamSampler<RealDebugFiles>;

struct ProfSchemeAdapter(ProfScheme<KernelProfiler>);

type Handler = ProfScheme<KernelProfiler>;

impl SchemeSync for ProfSchemeAdapter {
    fn scheme_root(&mut self) -> Result<usize> {
        Ok(Handler::ROOT_ID)
    }

    fn openat(&mut self, dirfd: usize, path: &str, flags: usize, _fcntl: u32, ctx: &CallerCtx) -> Result<OpenResult> {
        if dirfd != Handler::ROOT_ID {
            return Err(Error::new(EACCES));
        }
        let access = match flags & O_ACCMODE {
            // relibc's stat opens with O_PATH (O_STAT here) and no access mode.
            _ if flags & O_STAT != 0 => Access::Path,
            0 => Access::Path,
            O_RDONLY => Access::Read,
            O_WRONLY => Access::Write,
            _ => Access::ReadWrite,
        };
        let id = self.0.open(path, access, ctx.uid).map_err(Error::new)?;
        Ok(OpenResult::ThisScheme { number: id, flags: NewFdFlags::POSITIONED })
    }

    fn read(&mut self, id: usize, buf: &mut [u8], offset: u64, _fl: u32, _ctx: &CallerCtx) -> Result<usize> {
        self.0.read(id, buf, offset).map_err(Error::new)
    }

    fn write(&mut self, id: usize, buf: &[u8], _offset: u64, _fl: u32, ctx: &CallerCtx) -> Result<usize> {
        self.0.write(id, buf, ctx.uid).map_err(Error::new)
    }

    fn fsize(&mut self, id: usize, _ctx: &CallerCtx) -> Result<u64> {
        self.0.size(id).map_err(Error::new)
    }

    fn fstat(&mut self, id: usize, stat: &mut Stat, _ctx: &CallerCtx) -> Result<()> {
        let st = self.0.stat(id).map_err(Error::new)?;
        stat.st_mode = if st.is_dir { MODE_DIR } else { MODE_FILE } | st.perm;
        stat.st_size = st.size;
        stat.st_ino = st.inode;
        stat.st_nlink = if st.is_dir { 2 } else { 1 };
        Ok(())
    }

    fn fpath(&mut self, id: usize, buf: &mut [u8], _ctx: &CallerCtx) -> Result<usize> {
        let path = self.0.path(id).map_err(Error::new)?;
        let n = path.len().min(buf.len());
        buf[..n].copy_from_slice(&path.as_bytes()[..n]);
        Ok(n)
    }

    fn getdents<'buf>(
        &mut self,
        id: usize,
        mut buf: DirentBuf<&'buf mut [u8]>,
        opaque_offset: u64,
    ) -> Result<DirentBuf<&'buf mut [u8]>> {
        let mut result = Ok(());
        let mut first = true;
        self.0
            .dir_entries(id, opaque_offset, |index, name| {
                let kind = DirentKind::Regular;
                match buf.entry(DirEntry { inode: index, next_opaque_id: index + 1, name, kind }) {
                    Ok(()) => {
                        first = false;
                        true
                    }
                    Err(e) => {
                        // A full buffer ends this call; only one too small for any entry fails.
                        if first {
                            result = Err(e);
                        }
                        false
                    }
                }
            })
            .map_err(Error::new)?;
        result.map(|()| buf)
    }

    fn on_close(&mut self, id: usize) {
        self.0.close(id);
    }
}

/// The pipe init gave us to report readiness (`type = { scheme = "prof" }` services).
fn init_notify_fd() -> usize {
    std::env::var("INIT_NOTIFY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("profd: start it through init (its service file), not by hand"))
}

pub fn run() -> ! {
    let notify = init_notify_fd();
    // Everything the daemon needs later is opened now, before the null namespace: the
    // kernel's profiler (its feature `profiling`); none: say so and stay down.
    let sampler = match RealDebugFiles::open() {
        Ok(debug) => {
            eprintln!("profd: this kernel has upstream's profiler (debug:ctl-profiling): typed records (kernel-patch/events) are asked for at each session");
            UpstreamSampler::new(debug)
        }
        Err(e) => {
            eprintln!("profd: this kernel has no profiler: /scheme/debug/ctl-profiling: {e} (a kernel built with its feature profiling has it)");
            std::process::exit(1)
        }
    };
    let socket = Socket::create().expect("profd: cannot create the prof scheme");
    let mut scheme = ProfSchemeAdapter(ProfScheme::new(Profd::new(sampler)));

    // Hand init our root capability; init registers it as `prof`.
    let cap = socket.create_this_scheme_fd(0, Handler::ROOT_ID, 0, 0).expect("profd: cannot create the scheme root");
    libredox::call::call_wo(notify, &cap.to_ne_bytes(), CallFlags::FD, &[]).expect("profd: cannot notify init");
    libredox::call::setrens(0, 0).expect("profd: cannot enter the null namespace");

    let mut state = SchemeState::new();
    loop {
        let request = match socket.next_request(SignalBehavior::Restart) {
            Ok(Some(r)) => r,
            Ok(None) => std::process::exit(0),
            Err(e) => panic!("profd: reading requests: {e}"),
        };
        match request.kind() {
            RequestKind::Call(call) => {
                let response = call.handle_sync(&mut scheme, &mut state);
                socket.write_response(response, SignalBehavior::Restart).expect("profd: writing a response");
            }
            RequestKind::OnClose { id } => scheme.on_close(id),
            // No fds are passed through prof: (the defaults answer EOPNOTSUPP), but the caller
            // waits for an answer.
            RequestKind::SendFd(req) => {
                let response = Response::new(scheme.on_sendfd(&req), req);
                socket.write_response(response, SignalBehavior::Restart).expect("profd: writing a response");
            }
            RequestKind::RecvFd(req) => {
                let response = Response::open_dup_like(scheme.on_recvfd(&req), req);
                socket.write_response(response, SignalBehavior::Restart).expect("profd: writing a response");
            }
            // Every call is answered at once, so there is nothing pending to cancel; the rest
            // are notifications that want no answer.
            RequestKind::Cancellation(_)
            | RequestKind::OnDetach { .. }
            | RequestKind::MmapMsg
            | RequestKind::MunmapMsg
            | RequestKind::MsyncMsg => {}
        }
    }
}
