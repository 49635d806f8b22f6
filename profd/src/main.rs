//! `profd`: the `prof:` scheme daemon (Redox). The logic is this crate's `scheme::ProfScheme`
//! over `prof-core`'s session and `prof-samplers`' kernel sampler; this binary only connects
//! them to the kernel and to init.
//! On Linux there is no daemon: `profil` embeds the library.

#[cfg(target_os = "redox")]
mod redox_daemon;

fn main() {
    #[cfg(target_os = "redox")]
    redox_daemon::run();
    #[cfg(not(target_os = "redox"))]
    {
        eprintln!("profd: the prof: scheme daemon runs on Redox; on Linux, profil embeds prof-core");
        std::process::exit(1);
    }
}
