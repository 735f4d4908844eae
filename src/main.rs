//! The `openapi-proxy` binary: parse the command line, start logging, hand
//! over to the library.

use std::process::ExitCode;

use clap::Parser;
use openapi_proxy::cli::{Cli, Command, LogFormat};

/// The converter and the splitter build and free trees of about a million
/// small nodes. With the system allocator, freeing the 1.27 document's
/// trees alone took 62 ms, twice the conversion; with mimalloc it takes 15.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format, cli.verbosity);
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
        Command::Convert(args) => match openapi_proxy::cli::run_convert(args) {
            Ok(summary) => {
                let mut err = std::io::stderr().lock();
                // A summary that cannot be written changes nothing on disk.
                let _ = openapi_proxy::cli::write_summary(&mut err, &summary, args.verbose);
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
