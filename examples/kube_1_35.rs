//! A fake Kubernetes 1.35 for measuring `openapi-proxy check` through the
//! proxy (`benches/load/check_kube.sh`): its whole-cluster Swagger 2.0 at
//! `/openapi/v2` (the proxy converts it), `/version`, and the legacy
//! discovery derived from the same document (`openapi_proxy::testkit::kube`),
//! with the storage version hashes a kube-apiserver lists. The same fake
//! the `check` integration tests run against.
//!
//! Prints its base URL, then `ready`, and serves until killed.
//!
//! `cargo run --release --example kube_1_35`

use openapi_proxy::demo::{Route, Routes, start_site, version_body};
use openapi_proxy::testkit::{kube, testdata};

type Error = Box<dyn std::error::Error>;

#[allow(clippy::print_stdout, reason = "the URL is this program's output")]
fn main() -> Result<(), Error> {
    let bytes = std::fs::read(testdata::path("kubernetes-1.35/swagger.json"))?;
    let swagger: serde_json::Value = serde_json::from_slice(&bytes)?;
    let overlay = kube::overlay(&testdata::path(kube::CAPTURED_DISCOVERY));
    let mut lists = kube::legacy_discovery(&swagger, &overlay);
    kube::add_storage_version_hashes(&mut lists, &overlay);
    let mut routes = Vec::new();
    for (path, list) in lists {
        routes.push((path, Route::json(serde_json::to_vec(&list)?)));
    }
    routes.push(("/openapi/v2".to_owned(), Route::json(bytes)));
    routes.push(("/version".to_owned(), Route::json(version_body(35))));
    let table = Routes::default();
    table.replace(routes);
    actix_web::rt::System::new().block_on(async move {
        let site = start_site(table)?;
        println!("{}", site.url());
        println!("ready");
        std::future::pending::<()>().await;
        Ok(())
    })
}
