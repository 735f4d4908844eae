//! The `openapi-proxy` binary: parse the command line, start logging, hand
//! over to the library.

use std::process::ExitCode;

use openapi_proxy::cli::{Cli, Command, LogFormat};

/// The converter and the splitter build and free trees of about a million
/// small nodes. With the system allocator, freeing the 1.27 document's
/// trees alone took 62 ms, twice the conversion; with mimalloc it takes 15.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse_args();
    if matches!(cli.command, Command::Serve(_)) {
        without_transparent_huge_pages();
    }
    // `convert` logs nothing (its summary is its own output); setting up
    // the log subscriber took fresh memory and a tenth of a millisecond,
    // 7 % of a small conversion.
    if !matches!(cli.command, Command::Convert(_)) {
        init_tracing(cli.global.log_format, cli.global.verbosity);
    }
    match &cli.command {
        Command::Serve(args) => {
            // The configuration is checked before anything starts.
            let config = match openapi_proxy::cli::serve_config(args) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: configuration: {:#}", anyhow::Error::new(e));
                    return ExitCode::from(2);
                }
            };
            run_async(openapi_proxy::cli::run_serve(config))
        }
        Command::Demo(args) => run_async(openapi_proxy::cli::run_demo(args)),
        Command::Check(args) => {
            actix_web::rt::System::new().block_on(openapi_proxy::cli::run_check(args))
        }
        Command::Export(args) => {
            let result =
                actix_web::rt::System::new().block_on(openapi_proxy::cli::run_export(args));
            match result {
                Ok(summary) => {
                    let mut err = std::io::stderr().lock();
                    // The files are in place; a summary that cannot be
                    // written changes nothing.
                    let _ = openapi_proxy::cli::write_export_summary(&mut err, &summary);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    let code = e.exit_code();
                    eprintln!("error: {:#}", anyhow::Error::new(e));
                    code
                }
            }
        }
        Command::Convert(args) => match openapi_proxy::cli::run_convert(args) {
            Ok(summary) => {
                // Standard error is unbuffered: written as one piece, not
                // a system call per part of each line.
                let mut err = std::io::BufWriter::new(std::io::stderr().lock());
                // A summary that cannot be written changes nothing on disk.
                let _ = openapi_proxy::cli::write_summary(&mut err, &summary, args.verbose);
                let _ = std::io::Write::flush(&mut err);
                ExitCode::SUCCESS
            }
            Err(e) => {
                let code = e.exit_code();
                eprintln!("error: {:#}", anyhow::Error::new(e));
                code
            }
        },
    }
}

/// The environment variable with which mimalloc leaves transparent huge
/// pages alone. It is read once, when the allocator starts, before `main`.
const ALLOW_THP: &str = "MIMALLOC_ALLOW_THP";

/// How long mimalloc waits before it returns freed pages to the system;
/// read with [`ALLOW_THP`]. Its default delay is counted from the free,
/// but the return happens only when that thread calls the allocator
/// again: after 1,500 watches through the front door ended, idle worker
/// threads kept 170 MiB for good (50 requests later: 17 MiB). At 0 they
/// are returned at once: peak RSS 8 to 24 MiB lower at 5,000 CRDs, one
/// CRD change 1.7 ms slower to rebuild (BENCHMARKS.md, "The front door").
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// Starts this process again with mimalloc's transparent huge pages off,
/// unless `MIMALLOC_ALLOW_THP` is set already (then as the operator chose).
///
/// Why (issue 16): mimalloc asks the kernel for 2 MiB pages on its arenas
/// (`madvise(MADV_HUGEPAGE)`, honoured where THP is `madvise` or
/// `always`). For a long-running server whose documents arrive, are
/// compressed and are dropped, most of those pages stay resident and
/// mostly empty: at 5,000 CRDs the proxy held 222 MiB with them and
/// 149 MiB without (BENCHMARKS.md#crds-under-load). The one-shot commands
/// keep them: `convert` of the Kubernetes 1.27 document took 43 ms
/// instead of 27 ms without, in page faults. The allocator reads the
/// setting before `main` runs, and `unsafe_code` is forbidden here, so the
/// process replaces itself (same PID, arguments and descriptors) rather
/// than calling `prctl`. Should that fail, it serves with huge pages and
/// says so.
fn without_transparent_huge_pages() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(ALLOW_THP).is_some() {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!(
                "warning: cannot turn off transparent huge pages ({e}); memory use may be higher"
            );
            return;
        }
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    command.args(args).env(ALLOW_THP, "0");
    if std::env::var_os(PURGE_DELAY).is_none() {
        command.env(PURGE_DELAY, "0");
    }
    let e = command.exec();
    // `exec` returns only when it failed.
    eprintln!("warning: cannot turn off transparent huge pages ({e}); memory use may be higher");
}

/// Runs a server command on an actix system (the poll loops' HTTP client
/// needs one) and exits with its status.
///
/// The process exits as soon as the server has stopped (after at most its
/// graceful-stop period): dropping the runtime would wait for whatever
/// runs on its blocking pool — a downstream's conversion — and SIGTERM must
/// not wait for a hostile document.
fn run_async(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let system = actix_web::rt::System::new();
    let code = match system.block_on(fut) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    };
    std::process::exit(code)
}

fn init_tracing(format: LogFormat, verbosity: u8) {
    // By default actix-server's start-up and stop lines ("starting N
    // workers", "Actix runtime found", one set per server the demo runs)
    // are left out: they repeat the proxy's own `listening` and `stopping`
    // lines. Its warnings stay.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(openapi_proxy::cli::logs::filter_for(verbosity))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(openapi_proxy::cli::logs::KubernetesJson)
            .init(),
    }
}
