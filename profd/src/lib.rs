//! profd: the `prof:` scheme's logic ([`scheme`]), which the daemon (`src/main.rs`, Redox)
//! serves over the kernel's sampler and the host tests drive directly.

pub mod scheme;
