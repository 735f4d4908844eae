//! Discovery wire types, named as Kubernetes names them so they can be
//! grepped against the Go source (`k8s.io/api/apidiscovery/v2`,
//! `k8s.io/apimachinery/pkg/apis/meta/v1`).
//!
//! Field order and omission follow the Go types (docs/upstream.md#b-4-6, B-5):
//! `encoding/json` writes struct fields in declaration order, drops
//! `omitempty` fields that are empty, and writes a nil slice as `null`.
//! Deserialization is lenient (missing fields default): downstreams are not
//! trusted to be complete, only to be JSON.

use serde::{Deserialize, Serialize};

/// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, without its
/// `kind`/`apiVersion`/`metadata`, which depend on the version served and
/// are written by [`crate::discovery::render`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct APIGroupDiscoveryList {
    /// The groups.
    pub items: Vec<APIGroupDiscovery>,
}

/// One API group in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIGroupDiscovery {
    /// Only `name` is set (`""` for the core group, then omitted).
    pub metadata: ObjectMeta,
    /// Versions, preferred first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<APIVersionDiscovery>,
}

/// The part of `ObjectMeta` discovery uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ObjectMeta {
    /// The group name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// One version of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIVersionDiscovery {
    /// `v1`, `v1beta2`, …
    pub version: String,
    /// Resources of this version.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<APIResourceDiscovery>,
    /// `Current` or `Stale`; empty is omitted.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub freshness: String,
}

/// `freshness` of a version whose server answered.
pub const CURRENT: &str = "Current";
/// `freshness` of a version whose server could not be reached.
pub const STALE: &str = "Stale";

/// One resource in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIResourceDiscovery {
    /// Plural name (`deployments`).
    pub resource: String,
    /// The kind returned; `null` is omitted.
    #[serde(rename = "responseKind", skip_serializing_if = "Option::is_none")]
    pub response_kind: Option<GroupVersionKind>,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// Singular name, possibly empty.
    #[serde(rename = "singularResource")]
    pub singular_resource: String,
    /// Verbs; `None` serializes as `null`, as Go writes a nil slice.
    pub verbs: Option<Vec<String>>,
    /// Short names.
    #[serde(rename = "shortNames", skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories (`all`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Subresources.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<APISubresourceDiscovery>,
}

/// One subresource in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APISubresourceDiscovery {
    /// Its name (`status`, `scale`).
    pub subresource: String,
    /// The kind returned; `null` is omitted.
    #[serde(rename = "responseKind", skip_serializing_if = "Option::is_none")]
    pub response_kind: Option<GroupVersionKind>,
    /// Kinds accepted in requests.
    #[serde(rename = "acceptedTypes", skip_serializing_if = "Vec::is_empty")]
    pub accepted_types: Vec<GroupVersionKind>,
    /// Verbs; `None` serializes as `null`.
    pub verbs: Option<Vec<String>>,
}

/// Group, version and kind, all always written (possibly empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupVersionKind {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

impl GroupVersionKind {
    /// All three empty: clients treat such a kind as absent.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty() && self.kind.is_empty()
    }
}

/// `/api` in legacy form. It has no `apiVersion` (the core group's
/// serializer strips it, docs/upstream.md#b-5-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIVersions {
    /// Always `APIVersions`.
    pub kind: String,
    /// `["v1"]`.
    pub versions: Vec<String>,
    /// Always written.
    #[serde(rename = "serverAddressByClientCIDRs")]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

/// Where clients in a CIDR should connect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerAddressByClientCIDR {
    /// The client network.
    #[serde(rename = "clientCIDR")]
    pub client_cidr: String,
    /// `host:port` for it.
    #[serde(rename = "serverAddress")]
    pub server_address: String,
}

/// `/apis` in legacy form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIGroupList {
    /// `APIGroupList`.
    pub kind: String,
    /// `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// The groups.
    pub groups: Vec<APIGroup>,
}

/// One group in legacy form (inside `APIGroupList`, or alone at
/// `/apis/<group>` with `kind`/`apiVersion`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIGroup {
    /// `APIGroup` when served alone; omitted inside a list.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `v1` when served alone; omitted inside a list.
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The group name.
    pub name: String,
    /// Its versions, preferred first.
    pub versions: Vec<GroupVersionForDiscovery>,
    /// The preferred version.
    #[serde(rename = "preferredVersion")]
    pub preferred_version: GroupVersionForDiscovery,
}

/// A group-version as legacy discovery names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupVersionForDiscovery {
    /// `apps/v1` (or `v1` for the core group).
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    /// `v1`.
    pub version: String,
}

/// `/apis/<group>/<version>` and `/api/v1`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIResourceList {
    /// `APIResourceList`.
    pub kind: String,
    /// `v1`, omitted for the core group.
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `apps/v1`, or `v1`.
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    /// Resources and `parent/sub` subresources.
    pub resources: Vec<APIResource>,
}

/// One resource or subresource in legacy form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct APIResource {
    /// `deployments` or `deployments/scale`.
    pub name: String,
    /// Always written, `""` for subresources.
    #[serde(rename = "singularName")]
    pub singular_name: String,
    /// Always written.
    pub namespaced: bool,
    /// Set for kinds of another group (`deployments/scale` → autoscaling).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Set with `group`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Always written.
    pub kind: String,
    /// Always written; `None` is `null`.
    pub verbs: Option<Vec<String>>,
    /// Short names.
    #[serde(rename = "shortNames", skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Storage identity (KEP-31); dropped by the aggregated form.
    #[serde(rename = "storageVersionHash", skip_serializing_if = "String::is_empty")]
    pub storage_version_hash: String,
}

/// The `Status` body of a discovery error (406, 404), as apiserver's
/// `WriteRawJSON` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Status<'a> {
    /// `Status`.
    pub kind: &'a str,
    /// `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: &'a str,
    /// `{}`.
    pub metadata: Empty,
    /// `Failure`.
    pub status: &'a str,
    /// Human-readable.
    pub message: &'a str,
    /// `NotAcceptable`, `NotFound`.
    pub reason: &'a str,
    /// The HTTP status.
    pub code: u16,
}

/// `{}`.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Empty {}
