//! A frame of a call stack or a sample, placed: in the program's text, elsewhere, or in the
//! kernel, as every part of the run's model names addresses.

use prof_core::formats::StackFrame;

/// One frame of a call stack, as the address to name it by: for a caller, its return
/// address minus one (inside the call instruction, so a call ending a function is still
/// named by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Frame {
    /// In the program's text: a link-time address.
    Program(u64),
    /// Elsewhere (shared objects, the vdso): a runtime address.
    Foreign(u64),
    /// In the kernel (its own address).
    Kernel(u64),
}

impl Frame {
    /// An address as the session placed it.
    pub fn placed(frame: StackFrame) -> Frame {
        match frame {
            StackFrame::Text(a) => Frame::Program(a),
            StackFrame::Other(a) => Frame::Foreign(a),
            StackFrame::Kernel(a) => Frame::Kernel(a),
        }
    }

    /// Frame `i` of a request's call stack, at `a` (a caller by its return address minus
    /// one): the program's own where the process runs at its link addresses (a static Redox
    /// program), else a runtime address in the process's mappings.
    pub fn of_call_stack(at_link_addresses: bool, i: usize, a: u64) -> Frame {
        let a = a.wrapping_sub(u64::from(i > 0));
        match at_link_addresses {
            true => Frame::Program(a),
            false => Frame::Foreign(a),
        }
    }
}

impl From<Frame> for StackFrame {
    /// The frame as the symbolizer is asked about it.
    fn from(frame: Frame) -> StackFrame {
        match frame {
            Frame::Program(a) => StackFrame::Text(a),
            Frame::Foreign(a) => StackFrame::Other(a),
            Frame::Kernel(a) => StackFrame::Kernel(a),
        }
    }
}
