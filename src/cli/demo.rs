//! `openapi-proxy demo`: the proxy in front of two built-in downstreams,
//! and a banner of commands to try.

use clap::Args;

use crate::config::{Config, RawConfig, RawDownstream};
use crate::demo;
use crate::wiring;

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Address the proxy listens on.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Time between polls of the built-in downstreams.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub poll_interval: String,
}

/// Runs `demo` until Ctrl-C.
///
/// # Errors
/// When the built-in servers or the proxy cannot start.
pub async fn run_demo(args: &DemoArgs) -> anyhow::Result<()> {
    let sites = demo::start_demo_sites()
        .map_err(|e| anyhow::anyhow!("starting the built-in downstreams: {e}"))?;
    let raw = RawConfig {
        listen: Some(args.listen.clone()),
        poll_interval: Some(args.poll_interval.clone()),
        max_document_bytes: None,
        memory_budget_bytes: None,
        discovery_v2beta1: None,
        direct_writes: None,
        front_door: None,
        downstreams: vec![
            RawDownstream {
                name: Some("gadgets".into()),
                url: Some(sites.gadgets.url()),
                ..RawDownstream::default()
            },
            RawDownstream {
                name: Some("widgets".into()),
                url: Some(sites.widgets.url()),
                ..RawDownstream::default()
            },
        ],
        ..RawConfig::default()
    };
    let config = Config::from_raw(raw)?;
    let running = wiring::start(&config)?;
    // Wait for the first snapshot, to print working hash URLs.
    for _ in 0..100 {
        if running.state.store.load().ready {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    print_demo_banner(&running, &sites);
    running.done.await??;
    Ok(())
}

#[allow(clippy::print_stdout, reason = "the demo's banner is its output")]
fn print_demo_banner(running: &wiring::Running, sites: &demo::DemoSites) {
    // Listening on every interface (0.0.0.0 or ::), the examples still
    // need an address a client can connect to: loopback, on that port.
    let mut reachable = running.addr;
    if reachable.ip().is_unspecified() {
        reachable.set_ip(match reachable {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let base = format!("http://{reachable}");
    let snap = running.state.store.load();
    let widgets = snap
        .openapi
        .get("apis/widgets.example.com/v1beta1")
        .map(|e| e.location.to_str().unwrap_or_default().to_owned());
    println!("openapi-proxy demo: the proxy serves {base}");
    if reachable != running.addr {
        println!("  (listening on {}, every interface)", running.addr);
    }
    println!("  downstream gadgets, publishes OpenAPI v3:          {}", sites.gadgets.url());
    println!("  downstream widgets, publishes Swagger 2.0 only:    {}", sites.widgets.url());
    println!("  {} documents served (generation {})", snap.openapi.len(), snap.generation);
    println!();
    println!("Try:");
    println!("  curl -s {base}/openapi/v3");
    if let Some(url) = widgets {
        // The headers only: the body is one line of some 17 KB.
        println!("  curl -sS -D - -o /dev/null '{base}{url}'");
        println!(
            "  curl -s '{base}{url}' | python3 -m json.tool | grep -B2 -A8 x-kubernetes-int-or-string"
        );
    }
    println!("  curl -si -H 'If-None-Match: {}' {base}/openapi/v3", snap.openapi_root.etag_str());
    println!("  curl -s {base}/metrics | grep '^openapi_proxy_downstream'");
    println!("  kubectl --server {base} api-resources");
    println!("  kubectl --server {base} explain widgets.spec");
    println!(
        "  curl -s -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' {base}/apis"
    );
    println!();
    println!("Ctrl-C stops.");
}
