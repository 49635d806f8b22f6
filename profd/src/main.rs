//! `profd`: the `prof:` scheme daemon (Redox). All the logic is `prof-core`
//! (`scheme::ProfScheme`) over `prof-samplers`' kernel sampler; this binary only connects them
//! to the kernel and to init.
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
