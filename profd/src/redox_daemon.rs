//! The Redox side of the daemon: a thin `SchemeSync` adapter over `ProfScheme`, readiness to
//! init, the null namespace. Every method only translates types.

use profd::sampler::kernel::{KernelSampler, SysFiles};
use profd::scheme::{Access, Node, ProfScheme};
use profd::Profd;
use redox_scheme::scheme::{SchemeState, SchemeSync};
use redox_scheme::{CallerCtx, OpenResult, RequestKind, SignalBehavior, Socket};
use syscall::error::{Error, Result, EACCES};
use syscall::flag::{O_ACCMODE, O_RDONLY, O_WRONLY};
use syscall::schemev2::NewFdFlags;
use syscall::{CallFlags, Stat, MODE_DIR, MODE_FILE};

struct ProfSchemeAdapter(ProfScheme<KernelSampler<SysFiles>>);

type Handler = ProfScheme<KernelSampler<SysFiles>>;

impl SchemeSync for ProfSchemeAdapter {
    fn scheme_root(&mut self) -> Result<usize> {
        Ok(Handler::ROOT_ID)
    }

    fn openat(&mut self, dirfd: usize, path: &str, flags: usize, _fcntl: u32, ctx: &CallerCtx) -> Result<OpenResult> {
        if dirfd != Handler::ROOT_ID {
            return Err(Error::new(EACCES));
        }
        let access = match flags & O_ACCMODE {
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
        stat.st_mode = match self.0.node(id).map_err(Error::new)? {
            Node::Root => MODE_DIR | 0o555,
            Node::Ctl => MODE_FILE | 0o222,
            _ => MODE_FILE | 0o444,
        };
        stat.st_size = self.0.size(id).map_err(Error::new)?;
        Ok(())
    }

    fn fpath(&mut self, id: usize, buf: &mut [u8], _ctx: &CallerCtx) -> Result<usize> {
        let node = self.0.node(id).map_err(Error::new)?;
        let name = profd::scheme::ENTRIES.iter().find(|e| e.1 == node).map_or("", |e| e.0);
        let path = format!("/scheme/prof/{name}");
        let n = path.len().min(buf.len());
        buf[..n].copy_from_slice(&path.as_bytes()[..n]);
        Ok(n)
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
    // Everything the daemon needs later is opened now, before the null namespace.
    let sys = SysFiles::open().expect("profd: cannot open /scheme/sys/prof_ctl (kernel without the prof patch?)");
    let socket = Socket::create().expect("profd: cannot create the prof scheme");
    let mut scheme = ProfSchemeAdapter(ProfScheme::new(Profd::new(KernelSampler::new(sys))));

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
            _ => {}
        }
    }
}
