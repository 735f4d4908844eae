//! The process itself: what was built, and what the kernel says it uses.
//!
//! `openapi_proxy_build_info` is the usual constant-1 gauge whose labels
//! carry what was known at compile time without a build script: the crate
//! version, the target platform, and whether debug assertions were on.
//! (The compiler's version would need a build script to run `rustc -V`;
//! `rust-version` in Cargo.toml is only the minimum, so it is not shown.)
//!
//! The `process_*` families are the `prometheus` crate's Linux collector,
//! which reads `/proc/self` on every scrape: resident and virtual memory,
//! CPU seconds, open and maximum file descriptors, threads, start time.
//! They use the names every Prometheus client uses, so the usual
//! dashboards work unchanged. On other systems they are simply absent.

use prometheus::{IntGauge, Opts, Registry};

use super::family;

/// Registers `openapi_proxy_build_info` and, on Linux, the process
/// collector.
pub(super) fn register(registry: &Registry) {
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let opts =
        Opts::new("openapi_proxy_build_info", "Always 1; the labels say which build is running.")
            .const_label("version", env!("CARGO_PKG_VERSION"))
            .const_label("platform", format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH))
            .const_label("profile", profile);
    let info =
        family::register(registry, IntGauge::with_opts(opts).expect("a valid build info gauge"));
    info.set(1);

    #[cfg(target_os = "linux")]
    registry
        .register(Box::new(prometheus::process_collector::ProcessCollector::for_self()))
        .expect("the process families are registered once");
}
