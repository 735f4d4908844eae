//! Discovery as Kubernetes' protobuf (`application/vnd.kubernetes.protobuf`):
//! the messages of `k8s.io/api/apidiscovery/v2` (v2beta1 has the same
//! fields and numbers) and `k8s.io/apimachinery/pkg/apis/meta/v1`, declared
//! from the field numbers of their `generated.proto`, and the envelope every
//! Kubernetes protobuf body travels in (docs/wire.md#a-12).
//!
//! The envelope (apimachinery's protobuf serializer): the four bytes
//! `k8s\0`, then a `runtime.Unknown` whose `typeMeta` holds the object's
//! `apiVersion` and `kind`, whose `raw` is the object's message, and whose
//! `contentEncoding` and `contentType` are empty.
//!
//! Fields are written as Kubernetes' generated (gogo) code writes them for
//! the values discovery has: a string or bool the Go type does not make a
//! pointer is written even when empty, a pointer field only when set. So
//! a decoder finds every field the JSON form has, with the same values.

use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint};

use super::types;

/// The magic that starts every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// `runtime.TypeMeta`.
#[derive(Clone, PartialEq, Message)]
pub struct TypeMeta {
    /// `apiVersion` (empty for the unversioned core lists, as in JSON).
    #[prost(string, required, tag = "1")]
    pub api_version: String,
    /// `kind`.
    #[prost(string, required, tag = "2")]
    pub kind: String,
}

/// `runtime.Unknown`: the envelope.
#[derive(Clone, PartialEq, Message)]
pub struct Unknown {
    /// The object's type.
    #[prost(message, required, tag = "1")]
    pub type_meta: TypeMeta,
    /// The object's message.
    #[prost(bytes = "vec", required, tag = "2")]
    pub raw: Vec<u8>,
    /// Always empty.
    #[prost(string, required, tag = "3")]
    pub content_encoding: String,
    /// Always empty.
    #[prost(string, required, tag = "4")]
    pub content_type: String,
}

/// `meta/v1.ListMeta`, empty: its three strings are written empty.
#[derive(Clone, PartialEq, Message)]
pub struct ListMeta {
    /// `selfLink`.
    #[prost(string, required, tag = "1")]
    pub self_link: String,
    /// `resourceVersion`.
    #[prost(string, required, tag = "2")]
    pub resource_version: String,
    /// `continue`.
    #[prost(string, required, tag = "3")]
    pub r#continue: String,
}

/// `meta/v1.ObjectMeta`, of which discovery sets only the name.
#[derive(Clone, PartialEq, Message)]
pub struct ObjectMeta {
    /// `name` (`""` for the core group).
    #[prost(string, required, tag = "1")]
    pub name: String,
}

/// `meta/v1.GroupVersionKind`.
#[derive(Clone, PartialEq, Message)]
pub struct GroupVersionKind {
    /// `group`.
    #[prost(string, required, tag = "1")]
    pub group: String,
    /// `version`.
    #[prost(string, required, tag = "2")]
    pub version: String,
    /// `kind`.
    #[prost(string, required, tag = "3")]
    pub kind: String,
}

/// `apidiscovery.APIGroupDiscovery`.
#[derive(Clone, PartialEq, Message)]
pub struct APIGroupDiscovery {
    /// `metadata`.
    #[prost(message, required, tag = "1")]
    pub metadata: ObjectMeta,
    /// `versions`.
    #[prost(message, repeated, tag = "2")]
    pub versions: Vec<APIVersionDiscovery>,
}

/// `apidiscovery.APIVersionDiscovery`.
#[derive(Clone, PartialEq, Message)]
pub struct APIVersionDiscovery {
    /// `version`.
    #[prost(string, required, tag = "1")]
    pub version: String,
    /// `resources`.
    #[prost(message, repeated, tag = "2")]
    pub resources: Vec<APIResourceDiscovery>,
    /// `freshness`.
    #[prost(string, required, tag = "3")]
    pub freshness: String,
}

/// `apidiscovery.APIResourceDiscovery`.
#[derive(Clone, PartialEq, Message)]
pub struct APIResourceDiscovery {
    /// `resource`.
    #[prost(string, required, tag = "1")]
    pub resource: String,
    /// `responseKind` (a pointer in Go).
    #[prost(message, optional, tag = "2")]
    pub response_kind: Option<GroupVersionKind>,
    /// `scope`.
    #[prost(string, required, tag = "3")]
    pub scope: String,
    /// `singularResource`.
    #[prost(string, required, tag = "4")]
    pub singular_resource: String,
    /// `verbs`.
    #[prost(string, repeated, tag = "5")]
    pub verbs: Vec<String>,
    /// `shortNames`.
    #[prost(string, repeated, tag = "6")]
    pub short_names: Vec<String>,
    /// `categories`.
    #[prost(string, repeated, tag = "7")]
    pub categories: Vec<String>,
    /// `subresources`.
    #[prost(message, repeated, tag = "8")]
    pub subresources: Vec<APISubresourceDiscovery>,
}

/// `apidiscovery.APISubresourceDiscovery`.
#[derive(Clone, PartialEq, Message)]
pub struct APISubresourceDiscovery {
    /// `subresource`.
    #[prost(string, required, tag = "1")]
    pub subresource: String,
    /// `responseKind` (a pointer in Go).
    #[prost(message, optional, tag = "2")]
    pub response_kind: Option<GroupVersionKind>,
    /// `acceptedTypes`.
    #[prost(message, repeated, tag = "3")]
    pub accepted_types: Vec<GroupVersionKind>,
    /// `verbs`.
    #[prost(string, repeated, tag = "4")]
    pub verbs: Vec<String>,
}

/// `meta/v1.APIVersions`.
#[derive(Clone, PartialEq, Message)]
pub struct APIVersions {
    /// `versions`.
    #[prost(string, repeated, tag = "1")]
    pub versions: Vec<String>,
    /// `serverAddressByClientCIDRs`.
    #[prost(message, repeated, tag = "2")]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

/// `meta/v1.ServerAddressByClientCIDR`.
#[derive(Clone, PartialEq, Message)]
pub struct ServerAddressByClientCIDR {
    /// `clientCIDR`.
    #[prost(string, required, tag = "1")]
    pub client_cidr: String,
    /// `serverAddress`.
    #[prost(string, required, tag = "2")]
    pub server_address: String,
}

/// `meta/v1.APIGroupList`.
#[derive(Clone, PartialEq, Message)]
pub struct APIGroupList {
    /// `groups`.
    #[prost(message, repeated, tag = "1")]
    pub groups: Vec<APIGroup>,
}

/// `meta/v1.APIGroup`.
#[derive(Clone, PartialEq, Message)]
pub struct APIGroup {
    /// `name`.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// `versions`.
    #[prost(message, repeated, tag = "2")]
    pub versions: Vec<GroupVersionForDiscovery>,
    /// `preferredVersion`.
    #[prost(message, required, tag = "3")]
    pub preferred_version: GroupVersionForDiscovery,
}

/// `meta/v1.GroupVersionForDiscovery`.
#[derive(Clone, PartialEq, Message)]
pub struct GroupVersionForDiscovery {
    /// `groupVersion`.
    #[prost(string, required, tag = "1")]
    pub group_version: String,
    /// `version`.
    #[prost(string, required, tag = "2")]
    pub version: String,
}

/// `meta/v1.APIResourceList`.
#[derive(Clone, PartialEq, Message)]
pub struct APIResourceList {
    /// `groupVersion`.
    #[prost(string, required, tag = "1")]
    pub group_version: String,
    /// `resources`.
    #[prost(message, repeated, tag = "2")]
    pub resources: Vec<APIResource>,
}

/// `meta/v1.APIResource`.
#[derive(Clone, PartialEq, Message)]
pub struct APIResource {
    /// `name`.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// `namespaced`.
    #[prost(bool, required, tag = "2")]
    pub namespaced: bool,
    /// `kind`.
    #[prost(string, required, tag = "3")]
    pub kind: String,
    /// `verbs`: a message of its own, written when the JSON has a list
    /// (even empty) and left out for `null`, as Go tells the two apart.
    #[prost(message, optional, tag = "4")]
    pub verbs: Option<Verbs>,
    /// `shortNames`.
    #[prost(string, repeated, tag = "5")]
    pub short_names: Vec<String>,
    /// `singularName`.
    #[prost(string, required, tag = "6")]
    pub singular_name: String,
    /// `categories`.
    #[prost(string, repeated, tag = "7")]
    pub categories: Vec<String>,
    /// `group`.
    #[prost(string, required, tag = "8")]
    pub group: String,
    /// `version`.
    #[prost(string, required, tag = "9")]
    pub version: String,
    /// `storageVersionHash`.
    #[prost(string, required, tag = "10")]
    pub storage_version_hash: String,
}

/// `meta/v1.Verbs`.
#[derive(Clone, PartialEq, Message)]
pub struct Verbs {
    /// `items`.
    #[prost(string, repeated, tag = "1")]
    pub items: Vec<String>,
}

fn gvk(k: &types::GroupVersionKind) -> GroupVersionKind {
    GroupVersionKind { group: k.group.clone(), version: k.version.clone(), kind: k.kind.clone() }
}

/// One aggregated group as its message.
#[must_use]
pub fn group_discovery(g: &types::APIGroupDiscovery) -> APIGroupDiscovery {
    APIGroupDiscovery {
        metadata: ObjectMeta { name: g.metadata.name.clone() },
        versions: g
            .versions
            .iter()
            .map(|v| APIVersionDiscovery {
                version: v.version.clone(),
                freshness: v.freshness.clone(),
                resources: v
                    .resources
                    .iter()
                    .map(|r| APIResourceDiscovery {
                        resource: r.resource.clone(),
                        response_kind: r.response_kind.as_ref().map(gvk),
                        scope: r.scope.clone(),
                        singular_resource: r.singular_resource.clone(),
                        verbs: r.verbs.clone().unwrap_or_default(),
                        short_names: r.short_names.clone(),
                        categories: r.categories.clone(),
                        subresources: r
                            .subresources
                            .iter()
                            .map(|s| APISubresourceDiscovery {
                                subresource: s.subresource.clone(),
                                response_kind: s.response_kind.as_ref().map(gvk),
                                accepted_types: s.accepted_types.iter().map(gvk).collect(),
                                verbs: s.verbs.clone().unwrap_or_default(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// An aggregated group as an item of `APIGroupDiscoveryList` (field 2,
/// keyed and length-prefixed): items joined one after another make the
/// list's repeated field, so each group is encoded once and kept.
#[must_use]
pub fn list_item(g: &types::APIGroupDiscovery) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::message::encode(2, &group_discovery(g), &mut out);
    out
}

/// The start of an enveloped `APIGroupDiscoveryList` whose items take
/// `items_len` bytes: the magic, the `Unknown` up to its `raw` field's
/// length, and the list's empty `metadata`. [`ENVELOPE_END`] closes it.
#[must_use]
pub fn list_head(api_version: &str, items_len: usize) -> Vec<u8> {
    let mut meta = Vec::new();
    prost::encoding::message::encode(
        1,
        &ListMeta {
            self_link: String::new(),
            resource_version: String::new(),
            r#continue: String::new(),
        },
        &mut meta,
    );
    let type_meta =
        TypeMeta { api_version: api_version.to_owned(), kind: "APIGroupDiscoveryList".to_owned() };
    let raw_len = meta.len() + items_len;
    let mut out = Vec::with_capacity(64 + meta.len());
    out.extend_from_slice(MAGIC);
    prost::encoding::message::encode(1, &type_meta, &mut out);
    encode_key(2, WireType::LengthDelimited, &mut out);
    encode_varint(u64::try_from(raw_len).unwrap_or(u64::MAX), &mut out);
    out.extend_from_slice(&meta);
    out
}

/// What follows `raw` in every envelope: `contentEncoding` and
/// `contentType`, both empty.
pub const ENVELOPE_END: &str = "\x1a\x00\x22\x00";

/// `message` enveloped: the whole protobuf body of one object.
#[must_use]
pub fn enveloped(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: TypeMeta { api_version: api_version.to_owned(), kind: kind.to_owned() },
        raw: message.encode_to_vec(),
        content_encoding: String::new(),
        content_type: String::new(),
    };
    let mut out = Vec::with_capacity(MAGIC.len() + unknown.encoded_len());
    out.extend_from_slice(MAGIC);
    unknown.encode_raw(&mut out);
    out
}

/// Legacy `APIVersions` as its message.
#[must_use]
pub fn api_versions(v: &types::APIVersions) -> APIVersions {
    APIVersions {
        versions: v.versions.clone(),
        server_address_by_client_cidrs: v
            .server_address_by_client_cidrs
            .iter()
            .map(address)
            .collect(),
    }
}

fn address(a: &types::ServerAddressByClientCIDR) -> ServerAddressByClientCIDR {
    ServerAddressByClientCIDR {
        client_cidr: a.client_cidr.clone(),
        server_address: a.server_address.clone(),
    }
}

fn group_version(v: &types::GroupVersionForDiscovery) -> GroupVersionForDiscovery {
    GroupVersionForDiscovery { group_version: v.group_version.clone(), version: v.version.clone() }
}

/// Legacy `APIGroup` as its message.
#[must_use]
pub fn api_group(g: &types::APIGroup) -> APIGroup {
    APIGroup {
        name: g.name.clone(),
        versions: g.versions.iter().map(group_version).collect(),
        preferred_version: group_version(&g.preferred_version),
    }
}

/// Legacy `APIGroupList` as its message.
#[must_use]
pub fn api_group_list(l: &types::APIGroupList) -> APIGroupList {
    APIGroupList { groups: l.groups.iter().map(api_group).collect() }
}

/// Legacy `APIResourceList` as its message.
#[must_use]
pub fn api_resource_list(l: &types::APIResourceList) -> APIResourceList {
    APIResourceList {
        group_version: l.group_version.clone(),
        resources: l
            .resources
            .iter()
            .map(|r| APIResource {
                name: r.name.clone(),
                namespaced: r.namespaced,
                kind: r.kind.clone(),
                verbs: r.verbs.clone().map(|items| Verbs { items }),
                short_names: r.short_names.clone(),
                singular_name: r.singular_name.clone(),
                categories: r.categories.clone(),
                group: r.group.clone(),
                version: r.version.clone(),
                storage_version_hash: r.storage_version_hash.clone(),
            })
            .collect(),
    }
}
