//! The request loop of this package's test daemons (Redox): every call answered through the
//! scheme's `SchemeSync` methods, as redox-scheme's own blocking loop does.

use redox_scheme::scheme::{SchemeState, SchemeSync};
use redox_scheme::{RequestKind, Response, SignalBehavior, Socket};

/// Serve `scheme` on `socket` until the socket closes (then exit 0); `name` names the daemon in
/// a panic.
pub fn requests(socket: &Socket, scheme: &mut impl SchemeSync, name: &str) -> ! {
    let mut state = SchemeState::new();
    loop {
        let request = match socket.next_request(SignalBehavior::Restart) {
            Ok(Some(r)) => r,
            Ok(None) => std::process::exit(0),
            Err(e) => panic!("{name}: reading requests: {e}"),
        };
        let response = match request.kind() {
            RequestKind::Call(call) => call.handle_sync(scheme, &mut state),
            RequestKind::OnClose { id } => {
                scheme.on_close(id);
                continue;
            }
            RequestKind::SendFd(req) => Response::new(scheme.on_sendfd(&req), req),
            RequestKind::RecvFd(req) => Response::open_dup_like(scheme.on_recvfd(&req), req),
            _ => continue,
        };
        socket.write_response(response, SignalBehavior::Restart).unwrap_or_else(|e| panic!("{name}: writing a response: {e}"));
    }
}
