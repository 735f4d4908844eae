//! The layouts `export` writes: which files, named how, holding what.
//!
//! - [`Layout::KubectlValidate`]: `api/<v>.json` and `apis/<g>/<v>.json`,
//!   each group-version's OpenAPI 3.0 document as collected (a server's
//!   bytes as it served them), the layout of kubectl-validate's
//!   `--local-schemas`;
//! - [`Layout::Kubeconform`]: one standalone JSON Schema per kind
//!   ([`super::schema`]), named as kubeconform's default
//!   `{{ .ResourceKind }}{{ .KindSuffix }}.json` expects:
//!   `<kind>-<group prefix>-<version>.json`, `<kind>-<version>.json` for
//!   the core group, lower case, all in one folder;
//! - [`Layout::Catalog`]: the same schemas named as datree's CRDs-catalog
//!   and flux-schema name them, `<group>/<kind>_<version>.json`, the core
//!   group's under `core/`;
//! - [`Layout::OpenapiV2`]: one Swagger 2.0 document, `swagger.json`, of
//!   every document converted down and merged as the proxy's `/openapi/v2`
//!   is (`openapi/v2`), for kustomize's `openapi:` field.
//!
//! Two kinds that get one file name (kubeconform names a group by its first
//! label only) keep the first and report the other.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::schema::{self, KindSchema, Options, SchemaError};
use crate::openapi::v2::assemble::AssembleError;
use crate::wire::GroupVersion;
use crate::wire::key::DocumentKey;

/// A layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The OpenAPI 3.0 documents per group-version.
    KubectlValidate,
    /// Standalone JSON Schemas in kubeconform's default naming.
    Kubeconform,
    /// Standalone JSON Schemas in CRDs-catalog's naming.
    Catalog,
    /// One merged Swagger 2.0 document.
    OpenapiV2,
}

/// Two kinds that map to one file name; the first is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The file name.
    pub file: String,
    /// `<apiVersion> <kind>` of the one written.
    pub kept: String,
    /// `<apiVersion> <kind>` of the one left out.
    pub dropped: String,
}

/// What laying out found besides the files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Files handed out.
    pub files: usize,
    /// Kinds left out for a file name another kind took.
    pub collisions: Vec<Collision>,
    /// Kinds left out because their kind is not a name a file can carry.
    pub bad_kinds: Vec<String>,
}

/// Why a layout could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A document is not JSON.
    #[error("document {key} is not JSON")]
    Json {
        /// Its key.
        key: DocumentKey,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A kind's schema would be too large.
    #[error("document {key}")]
    Schema {
        /// Its key.
        key: DocumentKey,
        /// Why.
        #[source]
        source: SchemaError,
    },
    /// The documents could not be converted down to Swagger 2.0 and merged.
    #[error("converting to Swagger 2.0")]
    V2(#[source] AssembleError),
}

/// The file name of `kind` of `group_version` in `layout` (lower case), or
/// `None` for the layouts that are not one file per kind.
#[must_use]
pub fn kind_file(layout: Layout, group_version: &GroupVersion, kind: &str) -> Option<String> {
    let kind = kind.to_ascii_lowercase();
    let version = &group_version.version;
    let group = &group_version.group;
    match layout {
        Layout::Kubeconform if group.is_empty() => Some(format!("{kind}-{version}.json")),
        Layout::Kubeconform => {
            let prefix = group.split('.').next().unwrap_or(group);
            Some(format!("{kind}-{prefix}-{version}.json"))
        }
        Layout::Catalog if group.is_empty() => Some(format!("core/{kind}_{version}.json")),
        Layout::Catalog => Some(format!("{group}/{kind}_{version}.json")),
        Layout::KubectlValidate | Layout::OpenapiV2 => None,
    }
}

/// A layout of a file (or several) per document, made one document at a
/// time: what it keeps between documents is the names written, to tell
/// two kinds of one file name.
#[derive(Debug)]
pub struct Laying {
    layout: Layout,
    options: Options,
    /// Each file written of a kind, and `<apiVersion> <kind>` of it.
    written: BTreeMap<String, String>,
    report: Report,
}

impl Laying {
    /// `layout`, or `None` for [`Layout::OpenapiV2`], which merges every
    /// document into one file (the command does, as `serve` merges them).
    #[must_use]
    pub fn new(layout: Layout, options: Options) -> Option<Self> {
        (layout != Layout::OpenapiV2).then(|| Self {
            layout,
            options,
            written: BTreeMap::new(),
            report: Report::default(),
        })
    }

    /// Lays out `key`'s document, handing each of its files (its path
    /// below the output, with `/`, and its bytes) to `each`. Documents
    /// given in key order give the files in a fixed order.
    ///
    /// # Errors
    /// [`LayoutError`] when the document cannot be laid out; the error
    /// `each` returns stops the work and is handed back.
    pub fn document<E>(
        &mut self,
        key: &DocumentKey,
        bytes: &[u8],
        mut each: impl FnMut(&str, &[u8]) -> Result<(), E>,
    ) -> Result<Result<(), E>, LayoutError> {
        let Some(gv) = key.group_version() else { return Ok(Ok(())) };
        if self.layout == Layout::KubectlValidate {
            if let Err(e) = each(&format!("{key}.json"), bytes) {
                return Ok(Err(e));
            }
            self.report.files += 1;
            return Ok(Ok(()));
        }
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|source| LayoutError::Json { key: key.clone(), source })?;
        let kinds = schema::kind_schemas(&gv, &doc, self.options)
            .map_err(|source| LayoutError::Schema { key: key.clone(), source })?;
        drop(doc);
        for KindSchema { group_version, kind, schema } in kinds {
            let name = format!("{group_version} {kind}");
            if !super::crd::is_kind_name(&kind) {
                self.report.bad_kinds.push(name);
                continue;
            }
            let file = kind_file(self.layout, &group_version, &kind)
                .expect("a layout of one file per kind names each kind's file");
            if let Some(kept) = self.written.get(&file) {
                self.report.collisions.push(Collision { file, kept: kept.clone(), dropped: name });
                continue;
            }
            let mut bytes =
                serde_json::to_vec_pretty(&schema).expect("a JSON value always serializes");
            bytes.push(b'\n');
            if let Err(e) = each(&file, &bytes) {
                return Ok(Err(e));
            }
            self.written.insert(file, name);
            self.report.files += 1;
        }
        Ok(Ok(()))
    }

    /// What was laid out.
    #[must_use]
    pub fn finish(self) -> Report {
        self.report
    }
}

/// The folders `layout` writes files into for `files` (so they can be made
/// before the files): every parent of every path, shortest first.
#[must_use]
pub fn folders<'a>(files: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files {
        let mut at = f;
        while let Some((parent, _)) = at.rsplit_once('/') {
            out.insert(parent.to_owned());
            at = parent;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconform_names_a_group_by_its_first_label_and_the_core_group_by_nothing() {
        let deployment = GroupVersion::new("apps", "v1");
        let ingress = GroupVersion::new("networking.k8s.io", "v1");
        let core = GroupVersion::new("", "v1");
        assert_eq!(
            kind_file(Layout::Kubeconform, &deployment, "Deployment").unwrap(),
            "deployment-apps-v1.json"
        );
        assert_eq!(
            kind_file(Layout::Kubeconform, &ingress, "Ingress").unwrap(),
            "ingress-networking-v1.json"
        );
        assert_eq!(
            kind_file(Layout::Kubeconform, &core, "ConfigMap").unwrap(),
            "configmap-v1.json"
        );
        assert_eq!(
            kind_file(Layout::Catalog, &ingress, "Ingress").unwrap(),
            "networking.k8s.io/ingress_v1.json"
        );
        assert_eq!(
            kind_file(Layout::Catalog, &core, "ConfigMap").unwrap(),
            "core/configmap_v1.json"
        );
    }

    #[test]
    fn two_kinds_of_one_file_name_keep_the_first_and_report_the_second() {
        let doc = |group: &str| {
            serde_json::to_vec(&serde_json::json!({ "openapi": "3.0.0", "components": { "schemas": {
                "x": { "type": "object", "x-kubernetes-group-version-kind": [{ "group": group, "kind": "Gateway", "version": "v1" }] } } } }))
            .unwrap()
        };
        let mut documents = BTreeMap::new();
        documents.insert(
            DocumentKey::parse("apis/gateway.networking.k8s.io/v1").unwrap(),
            doc("gateway.networking.k8s.io"),
        );
        documents.insert(
            DocumentKey::parse("apis/gateway.example.com/v1").unwrap(),
            doc("gateway.example.com"),
        );
        let mut files = Vec::new();
        let mut laying = Laying::new(Layout::Kubeconform, Options::default()).unwrap();
        for (key, bytes) in &documents {
            laying
                .document(key, bytes, |f, _| {
                    files.push(f.to_owned());
                    Ok::<_, ()>(())
                })
                .unwrap()
                .unwrap();
        }
        let report = laying.finish();
        assert_eq!(files, ["gateway-gateway-v1.json"]);
        assert_eq!(report.collisions.len(), 1);
        assert_eq!(report.collisions[0].kept, "gateway.example.com/v1 Gateway");
    }
}
