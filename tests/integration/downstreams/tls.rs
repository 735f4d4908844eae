//! TLS to downstreams and bearer tokens, black-box: a real proxy in front of
//! HTTPS fake downstreams with certificates made at test time. Success is
//! the widgets sample's four documents being published; failure is none,
//! a downstream that `/metrics` reports down, and a proxy still ready.
//! Credentials: the proxy sends its own token (re-read when the file
//! changes), never a client's, and never shows it in `/metrics`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use actix_web::http::StatusCode;
use actix_web::http::header::{AUTHORIZATION, COOKIE};
use openapi_proxy::DownstreamClient;
use openapi_proxy::demo::{Route, SeenRequest};
use openapi_proxy::error_chain;
use openapi_proxy::{DEFAULT_MAX_DOCUMENT_BYTES, DownstreamConfig};

use crate::common::proxy::{TestProxy, downstream, site, testdata, widgets_routes};
use crate::common::tls::{Pki, TlsSite, start_tls_site};

/// The widgets sample publishes this many OpenAPI v3 documents.
const WIDGETS_DOCUMENTS: usize = 4;

/// An HTTPS downstream publishing the widgets sample with `cert` and `key`.
fn widgets_tls_site(cert: &Path, key: &Path, client_ca: Option<&Path>) -> TlsSite {
    start_tls_site(widgets_routes(), cert, key, client_ca).expect("HTTPS site starts")
}

/// A downstream entry trusting `ca`.
fn verified(name: &str, url: &str, ca: &Path) -> DownstreamConfig {
    let mut d = downstream(name, url, 1);
    d.tls.ca = Some(ca.to_owned().into());
    d
}

/// Waits for the proxy to publish the widgets documents.
async fn wait_for_widgets(proxy: &TestProxy) {
    proxy.wait_for("the widgets documents", |s| s.openapi.len() >= WIDGETS_DOCUMENTS).await;
    assert_eq!(proxy.running.state.store.load().openapi.len(), WIDGETS_DOCUMENTS);
}

/// The value of the sample whose line starts with `series` (name and
/// labels, exactly as rendered).
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        Some(value.parse().unwrap_or_else(|e| panic!("{line:?}: {e}")))
    })
}

/// `/metrics`, read until `pred` holds for it (15 s at most).
async fn metrics_until(proxy: &TestProxy, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let resp = proxy.get("/metrics", &[]).await;
        assert_eq!(resp.status, StatusCode::OK);
        let text = String::from_utf8(resp.body.to_vec()).expect("metrics are text");
        if pred(&text) {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for: {what}\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `/metrics` once `downstream` has been polled and found down with at
/// least one error counted for `reason`.
async fn down(proxy: &TestProxy, downstream: &str, reason: &str) -> String {
    let up = format!("openapi_proxy_downstream_up{{downstream=\"{downstream}\"}}");
    let errors = format!(
        "openapi_proxy_downstream_errors_total{{downstream=\"{downstream}\",reason=\"{reason}\"}}"
    );
    metrics_until(proxy, &format!("{downstream} down ({reason})"), |m| {
        sample(m, &up) == Some(0.0) && sample(m, &errors).is_some_and(|n| n >= 1.0)
    })
    .await
}

/// `/metrics` once `downstream` is up.
async fn up(proxy: &TestProxy, downstream: &str) -> String {
    let up = format!("openapi_proxy_downstream_up{{downstream=\"{downstream}\"}}");
    metrics_until(proxy, &format!("{downstream} up"), |m| sample(m, &up) == Some(1.0)).await
}

/// The proxy has polled its one downstream, got nothing, and says it is
/// not ready: an empty cluster is not served as a ready one.
async fn polled_and_empty(proxy: &TestProxy, downstream: &str) {
    proxy.wait_polled(downstream).await;
    assert!(proxy.running.state.store.load().openapi.is_empty());
    let readyz = proxy.get("/readyz", &[]).await;
    assert_eq!(readyz.status, StatusCode::SERVICE_UNAVAILABLE);
    let text = String::from_utf8_lossy(&readyz.body);
    assert!(text.contains(&format!("[-]downstream/{downstream} failed")), "{text}");
}

fn authorization(r: &SeenRequest) -> Option<&str> {
    r.headers.get(AUTHORIZATION).map(|v| v.to_str().expect("ASCII"))
}

#[actix_web::test]
async fn https_downstream_with_its_ca_bundle_is_verified_and_served() {
    let pki = Pki::generate("verified");
    let ds = widgets_tls_site(&pki.server_cert, &pki.server_key, None);
    let proxy = TestProxy::start(vec![verified("widgets", &ds.url(), &pki.ca)]);

    wait_for_widgets(&proxy).await;
    up(&proxy, "widgets").await;
    let v3 = proxy.get("/openapi/v3/apis/widgets.example.com/v1beta1", &[]).await;
    assert_eq!(v3.status, StatusCode::OK);
    assert!(ds.routes.seen().iter().any(|r| r.uri == "/openapi/v2"), "polled over TLS");
}

#[actix_web::test]
async fn https_downstream_with_an_unknown_ca_is_refused() {
    let pki = Pki::generate("unknown-ca");
    let ds = widgets_tls_site(&pki.server_cert, &pki.server_key, None);
    let proxy = TestProxy::start(vec![verified("widgets", &ds.url(), &pki.unrelated_ca)]);

    polled_and_empty(&proxy, "widgets").await;
    down(&proxy, "widgets", "connect").await;
    assert!(proxy.running.state.store.load().openapi.is_empty());
    assert!(ds.routes.seen().is_empty(), "no request is sent over an unverified connection");
}

#[actix_web::test]
async fn insecure_skip_verify_accepts_any_certificate() {
    let pki = Pki::generate("insecure");
    // Self-signed, for another host name: nothing would verify it.
    let ds = widgets_tls_site(&pki.stranger_cert, &pki.stranger_key, None);
    let mut insecure = downstream("insecure", &ds.url(), 1);
    insecure.tls.insecure_skip_verify = true;
    // The same site, verified: the control that shows it really is refused.
    let mut checked = verified("checked", &ds.url(), &pki.ca);
    checked.priority = 2;
    let proxy = TestProxy::start(vec![checked, insecure]);

    wait_for_widgets(&proxy).await;
    up(&proxy, "insecure").await;
    down(&proxy, "checked", "connect").await;
}

#[actix_web::test]
async fn client_certificate_is_presented_for_mutual_tls() {
    let pki = Pki::generate("mutual");
    let ds = widgets_tls_site(&pki.server_cert, &pki.server_key, Some(&pki.client_ca));

    let anonymous = TestProxy::start(vec![verified("anonymous", &ds.url(), &pki.ca)]);
    polled_and_empty(&anonymous, "anonymous").await;
    down(&anonymous, "anonymous", "connect").await;
    assert!(ds.routes.seen().is_empty(), "a connection without a client certificate is refused");

    let mut identified = verified("identified", &ds.url(), &pki.ca);
    identified.tls.client_cert =
        Some((pki.client_cert.clone().into(), pki.client_key.clone().into()));
    let proxy = TestProxy::start(vec![identified]);
    wait_for_widgets(&proxy).await;
    up(&proxy, "identified").await;
    assert!(!ds.routes.seen().is_empty());
}

#[actix_web::test]
async fn bearer_token_is_sent_and_reread_when_the_file_changes() {
    const T1: &str = "t1-7c0d5e1a";
    const T2: &str = "t2-49b3f862";
    let pki = Pki::generate("token");
    let token = pki.dir.join("token");
    std::fs::write(&token, format!("{T1}\n")).expect("token file");
    // Backdate it, so that the rewrite below changes the modification time
    // however coarse the file system's clock.
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&token)
        .and_then(|f| f.set_modified(an_hour_ago))
        .expect("backdating the token file");
    let ds = widgets_tls_site(&pki.server_cert, &pki.server_key, None);
    let mut d = verified("widgets", &ds.url(), &pki.ca);
    d.token = Some(token.clone().into());
    let proxy = TestProxy::start(vec![d]);

    wait_for_widgets(&proxy).await;
    let bearer = |t: &str| format!("Bearer {t}");
    let seen = ds.routes.seen();
    assert!(seen.iter().all(|r| authorization(r) == Some(&bearer(T1))), "every request: {T1}");

    std::fs::write(&token, format!("{T2}\n")).expect("rotating the token");
    crate::common::proxy::eventually("the new token is sent", || {
        ds.routes.seen().iter().any(|r| authorization(r) == Some(&bearer(T2)))
    })
    .await;
    let seen = ds.routes.seen();
    let first = seen.iter().position(|r| authorization(r) == Some(&bearer(T2))).expect("T2");
    assert!(
        seen[..first].iter().all(|r| authorization(r) == Some(&bearer(T1))),
        "before the rotation: {T1}"
    );
    assert!(
        seen[first..].iter().all(|r| authorization(r) == Some(&bearer(T2))),
        "after it, the old token is never sent again"
    );

    let metrics = up(&proxy, "widgets").await;
    assert!(!metrics.contains(T1) && !metrics.contains(T2), "a token in /metrics:\n{metrics}");
}

#[actix_web::test]
async fn client_authorization_is_never_forwarded() {
    const PROXY_TOKEN: &str = "proxy-own-token-5e2f";
    let pki = Pki::generate("no-forwarding");
    let token = pki.dir.join("token");
    std::fs::write(&token, PROXY_TOKEN).expect("token file");
    let ds = site();
    ds.routes.replace([(
        "/openapi/v2".to_owned(),
        Route::json(std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture")),
    )]);
    let mut d = downstream("widgets", &ds.url(), 1);
    d.token = Some(token.into());
    let proxy = TestProxy::start(vec![d]);
    wait_for_widgets(&proxy).await;

    let client = [("authorization", "Bearer client"), ("cookie", "session=client-cookie")];
    for path in [
        "/openapi/v3",
        "/openapi/v3/apis/widgets.example.com/v1beta1",
        "/openapi/v2",
        "/version",
        "/apis",
        "/api",
        "/metrics",
    ] {
        proxy.get(path, &client).await;
    }
    // Let a few more polls happen after the client's requests.
    let before = ds.routes.seen().len();
    crate::common::proxy::eventually("three more polls", || ds.routes.seen().len() >= before + 3)
        .await;

    let seen = ds.routes.seen();
    for r in &seen {
        assert_eq!(authorization(r), Some(format!("Bearer {PROXY_TOKEN}").as_str()), "{r:?}");
        assert!(r.headers.get(COOKIE).is_none(), "a cookie reached the downstream: {r:?}");
        for (name, value) in &r.headers {
            let value = value.to_str().unwrap_or_default();
            assert!(
                !value.contains("Bearer client") && !value.contains("client-cookie"),
                "the client's credentials reached the downstream in {name}: {r:?}"
            );
        }
    }
}

#[actix_web::test]
async fn config_validation_refuses_tls_material_that_does_not_parse() {
    let pki = Pki::generate("garbage");
    let write = |name: &str, text: &str| {
        let path = pki.dir.join(name);
        std::fs::write(&path, text).expect("writing");
        path
    };
    let not_pem = write("not-pem.crt", "this is not a certificate\n");
    let bad_base64 = write(
        "bad-base64.crt",
        "-----BEGIN CERTIFICATE-----\n!!! not base64 !!!\n-----END CERTIFICATE-----\n",
    );
    // Valid PEM whose content is not a certificate ("hello world").
    let not_der = write(
        "not-der.crt",
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
    );
    let not_key = write("not-a-key.key", "this is not a key\n");
    let not_der_key = write(
        "not-der.key",
        "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END PRIVATE KEY-----\n",
    );

    let url = "https://127.0.0.1:1";

    // Through `wiring::start`, as `serve` starts: the downstream is named too.
    let config = crate::common::proxy::config(vec![verified("garbage", url, &not_pem)]);
    let e = openapi_proxy::start(&config).expect_err("refused");
    let message = error_chain(&e);
    assert!(message.starts_with("downstream garbage: "), "{message:?}");
    assert!(message.contains(&not_pem.display().to_string()), "{message:?}");

    // (what is wrong, the downstream, the files its error must name)
    let mut cases: Vec<(&str, DownstreamConfig, Vec<&Path>)> = Vec::new();
    for (what, ca) in [
        ("CA bundle: not PEM", &not_pem),
        ("CA bundle: PEM that is not base64", &bad_base64),
        ("CA bundle: PEM that is not a certificate", &not_der),
    ] {
        cases.push((what, verified("garbage", url, ca), vec![ca]));
    }
    let client = |cert: &Path, key: &Path| {
        let mut d = verified("garbage", url, &pki.ca);
        d.tls.client_cert = Some((cert.to_owned().into(), key.to_owned().into()));
        d
    };
    cases.push((
        "client certificate: PEM that is not a certificate",
        client(&not_der, &pki.client_key),
        vec![&not_der],
    ));
    cases.push(("client key: not PEM", client(&pki.client_cert, &not_key), vec![&not_key]));
    cases.push((
        "client key: PEM that is not a key",
        client(&pki.client_cert, &not_der_key),
        vec![&not_der_key],
    ));
    cases.push((
        "client key: a key, but not the certificate's",
        client(&pki.client_cert, &pki.server_key),
        vec![&pki.client_cert, &pki.server_key],
    ));

    let mut unnamed = Vec::new();
    for (what, d, files) in &cases {
        match DownstreamClient::new(
            &d.name,
            &d.url,
            &d.tls,
            d.token.as_ref(),
            d.timeout,
            DEFAULT_MAX_DOCUMENT_BYTES,
        ) {
            Ok(_) => unnamed.push(format!("{what}: a client was made")),
            Err(e) => {
                let message = error_chain(&e);
                for file in files {
                    if !message.contains(&file.display().to_string()) {
                        unnamed
                            .push(format!("{what}: {message:?} does not name {}", file.display()));
                    }
                }
            }
        }
    }
    assert!(unnamed.is_empty(), "{unnamed:#?}");
}
