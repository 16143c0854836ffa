//! Every name svc serves that is derived from a user's name: plurals, root fields, mutation
//! fields, input and payload types, relation arguments, filter keys and order values.
//!
//! GraphQL names are part of the public API and must match the reference exactly (plurals follow
//! evo-inflector 1.2 as the reference's Appendix A describes). The generator (which checks the
//! model for collisions and emits the data tables) and the runtime (which registers the schema
//! from those tables) both call these functions, so the names they use can never disagree.
//!
//! This crate has no dependencies and does no I/O: every function is a pure function of its
//! arguments.

mod plural;

pub use plural::plural;
use plural::upper_first;

/// `all{Plural}`: the list query of a model.
pub fn all_field(ty: &str) -> String {
    format!("all{}", plural(ty))
}

/// `_all{Plural}Meta`: the count query of a model.
pub fn meta_field(ty: &str) -> String {
    format!("_all{}Meta", plural(ty))
}

/// `user`: the query field holding the node of the request's node token (when a `User` model
/// exists).
pub const USER_FIELD: &str = "user";

/// The model whose nodes [`USER_FIELD`] returns, and whose `create` mutation comes after the
/// others.
pub const USER_TYPE: &str = "User";

/// `node(id)`: the query field that finds a node of any model by its id.
pub const NODE_FIELD: &str = "node";

/// The interface every model type implements.
pub const NODE_INTERFACE: &str = "Node";

/// `viewer`: the Relay API's root field that holds every query field (reference §3.1).
pub const VIEWER_FIELD: &str = "viewer";

/// `Viewer`: the type of [`VIEWER_FIELD`].
pub const VIEWER_TYPE: &str = "Viewer";

/// The id of the viewer, the same for everyone: `node(id: "viewer-fixed")` is the viewer.
pub const VIEWER_ID: &str = "viewer-fixed";

/// `PageInfo`: the page facts of every Relay connection.
pub const PAGE_INFO_TYPE: &str = "PageInfo";

/// `{Mutation}Input` of a Relay API mutation field (`createPost` → `CreatePostInput`): its one
/// argument `input` (reference §3.2).
pub fn relay_input_type(mutation: &str) -> String {
    format!("{}Input", upper_first(mutation))
}

/// `{Mutation}{ModelA}Input` of a Relay API relation mutation field (`addToUserPosts` →
/// `AddToUserPostsPostInput` when `Post` is side A). `set{R}` takes the name of `addTo{R}`
/// (reference §3.2; a 1:1 relation, which has `set`, has no `addTo`): the caller passes that.
pub fn relay_relation_input(mutation: &str, model_a: &str) -> String {
    format!("{}{model_a}Input", upper_first(mutation))
}

/// The field of a Relay API relation payload with the edge of the node that `side` names
/// (`{bName}Edge`, `{aName}Edge`).
pub fn relay_relation_edge_field(side: &str) -> String {
    format!("{side}Edge")
}

/// `{Mutation}Payload` of a Relay API mutation field (`createPost` → `CreatePostPayload`).
pub fn relay_payload_type(mutation: &str) -> String {
    format!("{}Payload", upper_first(mutation))
}

/// The field of a Relay API mutation payload that holds the node: the model's name with its
/// first letter lower-cased (`Post` → `post`).
pub fn payload_node_field(ty: &str) -> String {
    let mut chars = ty.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The field of a Relay API mutation payload that holds the node's to-one relation `field`:
/// the field's name, or `{field}_` when that is the payload's node field (reference §3.2).
pub fn payload_relation_field(field: &str, ty: &str) -> String {
    if field == payload_node_field(ty) {
        format!("{field}_")
    } else {
        field.to_owned()
    }
}

/// `{Type}Connection`: a page of a model's nodes in the Relay API.
pub fn connection_type(ty: &str) -> String {
    format!("{ty}Connection")
}

/// `{Type}Edge`: one node of a [`connection_type`] with its cursor.
pub fn edge_type(ty: &str) -> String {
    format!("{ty}Edge")
}

pub fn create_field(ty: &str) -> String {
    format!("create{ty}")
}

pub fn update_field(ty: &str) -> String {
    format!("update{ty}")
}

pub fn update_or_create_field(ty: &str) -> String {
    format!("updateOrCreate{ty}")
}

pub fn delete_field(ty: &str) -> String {
    format!("delete{ty}")
}

/// `deleteMany{Plural}`: deletes every node of a model that matches a filter and returns a
/// [`BATCH_PAYLOAD_TYPE`] with their count (an extension beyond the reference).
pub fn delete_many_field(ty: &str) -> String {
    format!("deleteMany{}", plural(ty))
}

/// `updateMany{Plural}`: sets the same values on every node of a model that matches a filter and
/// returns a [`BATCH_PAYLOAD_TYPE`] with their count (an extension beyond the reference).
pub fn update_many_field(ty: &str) -> String {
    format!("updateMany{}", plural(ty))
}

/// `UpdateMany{Plural}Data`: the input type holding the values `updateMany{Plural}` writes.
pub fn update_many_data(ty: &str) -> String {
    format!("UpdateMany{}Data", plural(ty))
}

/// The output type of `deleteMany{Plural}` and `updateMany{Plural}`, which reports how many nodes
/// they changed. One type shared by every model.
pub const BATCH_PAYLOAD_TYPE: &str = "_BatchPayload";

/// The output type of the count queries (`_all{Plural}Meta`, `_{field}Meta`).
pub const QUERY_META_TYPE: &str = "_QueryMeta";

/// `set{Relation}`: connects the two nodes of a 1:1 relation.
pub fn set_field(relation: &str) -> String {
    format!("set{relation}")
}

/// `unset{Relation}`: disconnects the two nodes of a 1:1 relation.
pub fn unset_field(relation: &str) -> String {
    format!("unset{relation}")
}

/// `addTo{Relation}`: connects two nodes of a 1:n or n:m relation.
pub fn add_to_field(relation: &str) -> String {
    format!("addTo{relation}")
}

/// `removeFrom{Relation}`: disconnects two nodes of a 1:n or n:m relation.
pub fn remove_from_field(relation: &str) -> String {
    format!("removeFrom{relation}")
}

/// `SetRelationPayload`: the result type of [`set_field`].
pub fn set_payload(relation: &str) -> String {
    format!("Set{relation}Payload")
}

/// `UnsetRelationPayload`: the result type of [`unset_field`].
pub fn unset_payload(relation: &str) -> String {
    format!("Unset{relation}Payload")
}

/// `AddToRelationPayload`: the result type of [`add_to_field`].
pub fn add_to_payload(relation: &str) -> String {
    format!("AddTo{relation}Payload")
}

/// `RemoveFromRelationPayload`: the result type of [`remove_from_field`].
pub fn remove_from_payload(relation: &str) -> String {
    format!("RemoveFrom{relation}Payload")
}

/// `{field}{Target}`: the name relation mutations give one side of a relation (reference §2.7),
/// from that side's field and the type the field points at. It names the side's argument
/// ([`relation_id_argument`]) and the payload field holding the node the field points at.
///
/// A self relation declared on a single field has two sides but one field: use
/// [`self_relation_side_name`] for it.
pub fn relation_side_name(field: &str, target: &str) -> String {
    format!("{field}{target}")
}

/// `{field}1{Type}` (side A) or `{field}2{Type}` (side B): the side names of a self relation
/// declared on the single field `field` of `ty`, where [`relation_side_name`] would give both
/// sides the same name.
pub fn self_relation_side_name(field: &str, ty: &str, side_a: bool) -> String {
    let side = if side_a { 1 } else { 2 };
    format!("{field}{side}{ty}")
}

/// `{sideName}Id`: the argument of a relation mutation for one side. The `aName` argument holds
/// the id of the **B** node and the `bName` argument the id of the **A** node (reference §2.7).
pub fn relation_id_argument(side_name: &str) -> String {
    format!("{side_name}Id")
}

/// `Some<Type>Exists`: the permission schema's field for `ty` (seed §2.4).
pub fn some_exists_field(ty: &str) -> String {
    format!("Some{ty}Exists")
}

pub fn filter_type(ty: &str) -> String {
    format!("{ty}Filter")
}

pub fn order_by_type(ty: &str) -> String {
    format!("{ty}OrderBy")
}

pub fn create_input(ty: &str) -> String {
    format!("Create{ty}")
}

pub fn update_input(ty: &str) -> String {
    format!("Update{ty}")
}

/// `{Owner}{field}{Related}`: the input type for nested creates through a relation field.
pub fn nested_input(owner: &str, field: &str, related: &str) -> String {
    format!("{owner}{field}{related}")
}

/// `{field}Id`: the write argument that connects the node of a to-one relation field.
pub fn connect_argument(field: &str) -> String {
    format!("{field}Id")
}

/// `{field}Ids`: the write argument that connects the nodes of a to-many relation field.
pub fn connect_list_argument(field: &str) -> String {
    format!("{field}Ids")
}

/// `_{field}Meta`: the count field beside a to-many relation field.
pub fn relation_meta_field(field: &str) -> String {
    format!("_{field}Meta")
}

/// The relation field whose count field is `name` ([`relation_meta_field`]), if it is one.
pub fn parse_relation_meta_field(name: &str) -> Option<&str> {
    name.strip_prefix('_')?.strip_suffix("Meta")
}

/// The relation field and whether it is to-many (`{field}Ids`) of a write argument that connects
/// nodes ([`connect_argument`], [`connect_list_argument`]), if `name` could be one.
pub fn parse_connect_argument(name: &str) -> Option<(&str, bool)> {
    if let Some(field) = name.strip_suffix("Ids") {
        Some((field, true))
    } else {
        name.strip_suffix("Id").map(|field| (field, false))
    }
}

/// `{field}_ASC` / `{field}_DESC`: a value of `{Type}OrderBy`.
pub fn order_value(field: &str, descending: bool) -> String {
    let direction = if descending { "DESC" } else { "ASC" };
    format!("{field}_{direction}")
}

/// The field and direction (`true` for descending) of an [`order_value`].
pub fn parse_order_value(value: &str) -> Option<(&str, bool)> {
    if let Some(field) = value.strip_suffix("_ASC") {
        Some((field, false))
    } else {
        value.strip_suffix("_DESC").map(|field| (field, true))
    }
}

/// `{field}{suffix}`: a key of `{Type}Filter` (`title_contains`, `author`, `posts_some`).
pub fn filter_key(field: &str, suffix: &str) -> String {
    format!("{field}{suffix}")
}

/// The `{Type}Filter` keys of a `String` or `ID` field, by suffix, in the reference's order.
pub const TEXT_FILTERS: &[&str] = &[
    "",
    "_not",
    "_in",
    "_not_in",
    "_lt",
    "_lte",
    "_gt",
    "_gte",
    "_contains",
    "_not_contains",
    "_starts_with",
    "_not_starts_with",
    "_ends_with",
    "_not_ends_with",
];

/// The `{Type}Filter` keys of an `Int`, `Float` or `DateTime` field, by suffix.
pub const ORDERED_FILTERS: &[&str] = &["", "_not", "_in", "_not_in", "_lt", "_lte", "_gt", "_gte"];

/// The `{Type}Filter` keys of an enum field, by suffix.
pub const ENUM_FILTERS: &[&str] = &["", "_not", "_in", "_not_in"];

/// The `{Type}Filter` keys of a `Boolean` field, by suffix.
pub const BOOLEAN_FILTERS: &[&str] = &["", "_not"];

/// The `{Type}Filter` keys of a to-many relation field, by suffix (a to-one field has one key,
/// its own name).
pub const TO_MANY_FILTERS: &[&str] = &["_every", "_some", "_none"];

/// Whether a filter suffix takes a list of values (`_in`, `_not_in`).
pub fn filter_takes_list(suffix: &str) -> bool {
    suffix.ends_with("_in")
}

pub fn subscription_filter_type(ty: &str) -> String {
    format!("{ty}SubscriptionFilter")
}

pub fn subscription_filter_node_type(ty: &str) -> String {
    format!("{ty}SubscriptionFilterNode")
}

pub fn subscription_payload_type(ty: &str) -> String {
    format!("{ty}SubscriptionPayload")
}

pub fn previous_values_type(ty: &str) -> String {
    format!("{ty}PreviousValues")
}

/// Type names the generated API always defines, whatever the model.
pub const FIXED_TYPE_NAMES: [&str; 11] = [
    // The generated Rust items a service binary runs (`svc_runtime::run::<Service>()`) and
    // the root of its permission schema.
    "Service",
    "PermissionQuery",
    "Query",
    "Mutation",
    "Subscription",
    NODE_INTERFACE,
    QUERY_META_TYPE,
    "_ModelMutationType",
    "Viewer",
    "Long",
    BATCH_PAYLOAD_TYPE,
];

/// `{Type}SubscriptionFilter`: the `filter` argument of a subscription field (reference §4.3).
pub fn subscription_filter(ty: &str) -> String {
    format!("{ty}SubscriptionFilter")
}

/// `{Type}SubscriptionFilterNode`: its `node` condition, `{Type}Filter` without `AND`/`OR`.
pub fn subscription_filter_node(ty: &str) -> String {
    format!("{ty}SubscriptionFilterNode")
}

/// `{Type}SubscriptionPayload`: what a subscription field answers per event.
pub fn subscription_payload(ty: &str) -> String {
    format!("{ty}SubscriptionPayload")
}

/// `{Type}PreviousValues`: a node's scalar fields before an update or delete.
pub fn previous_values(ty: &str) -> String {
    format!("{ty}PreviousValues")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names() {
        assert_eq!(all_field("Todo"), "allTodoes");
        assert_eq!(meta_field("Person"), "_allPersonsMeta");
        assert_eq!(create_field("User"), "createUser");
        assert_eq!(update_or_create_field("User"), "updateOrCreateUser");
        assert_eq!(
            nested_input("Post", "comments", "Comment"),
            "PostcommentsComment"
        );
        assert_eq!(filter_type("Post"), "PostFilter");
        assert_eq!(connect_argument("author"), "authorId");
        assert_eq!(connect_list_argument("posts"), "postsIds");
        assert_eq!(relation_meta_field("posts"), "_postsMeta");
        assert_eq!(parse_relation_meta_field("_postsMeta"), Some("posts"));
        assert_eq!(parse_relation_meta_field("posts"), None);
        assert_eq!(parse_connect_argument("postsIds"), Some(("posts", true)));
        assert_eq!(parse_connect_argument("authorId"), Some(("author", false)));
        assert_eq!(parse_connect_argument("author"), None);
        assert_eq!(some_exists_field("Post"), "SomePostExists");
        assert_eq!(connection_type("Post"), "PostConnection");
        assert_eq!(edge_type("Post"), "PostEdge");
        assert_eq!(
            relay_input_type("updateOrCreatePost"),
            "UpdateOrCreatePostInput"
        );
        assert_eq!(relay_payload_type("deletePost"), "DeletePostPayload");
        assert_eq!(payload_node_field("Post"), "post");
        assert_eq!(payload_relation_field("author", "Post"), "author");
        assert_eq!(payload_relation_field("user", "User"), "user_");
    }

    #[test]
    fn batch_mutation_names() {
        assert_eq!(delete_many_field("Post"), "deleteManyPosts");
        assert_eq!(update_many_field("Child"), "updateManyChildren");
        assert_eq!(update_many_data("Todo"), "UpdateManyTodoesData");
        assert!(FIXED_TYPE_NAMES.contains(&BATCH_PAYLOAD_TYPE));
        assert_eq!(BATCH_PAYLOAD_TYPE, "_BatchPayload");
    }

    /// Reference §2.7's example: `addToAuthorPosts(authorUserId: ID!, postsPostId: ID!):
    /// AddToAuthorPostsPayload { authorUser postsPost }`.
    #[test]
    fn relation_mutation_names() {
        let (a, b) = (
            relation_side_name("author", "User"),
            relation_side_name("posts", "Post"),
        );
        assert_eq!((a.as_str(), b.as_str()), ("authorUser", "postsPost"));
        assert_eq!(add_to_field("AuthorPosts"), "addToAuthorPosts");
        assert_eq!(
            [relation_id_argument(&a), relation_id_argument(&b)],
            ["authorUserId", "postsPostId"]
        );
        assert_eq!(add_to_payload("AuthorPosts"), "AddToAuthorPostsPayload");
        assert_eq!(
            remove_from_payload("AuthorPosts"),
            "RemoveFromAuthorPostsPayload"
        );
        assert_eq!(set_payload("AuthorPosts"), "SetAuthorPostsPayload");
        assert_eq!(unset_payload("AuthorPosts"), "UnsetAuthorPostsPayload");
        assert_eq!(
            self_relation_side_name("friends", "User", true),
            "friends1User"
        );
        assert_eq!(
            self_relation_side_name("friends", "User", false),
            "friends2User"
        );
    }

    #[test]
    fn order_values_round_trip() {
        for (field, descending) in [("title", false), ("createdAt", true), ("a_b", false)] {
            let value = order_value(field, descending);
            assert_eq!(parse_order_value(&value), Some((field, descending)));
        }
        assert_eq!(order_value("votes", true), "votes_DESC");
        assert_eq!(parse_order_value("votes"), None);
        assert_eq!(parse_order_value("votes_asc"), None);
    }

    #[test]
    fn filter_keys() {
        assert_eq!(filter_key("title", "_contains"), "title_contains");
        assert!(filter_takes_list("_not_in") && !filter_takes_list("_not"));
        assert!(TEXT_FILTERS.starts_with(ORDERED_FILTERS));
        assert!(ORDERED_FILTERS.starts_with(ENUM_FILTERS));
        assert!(ENUM_FILTERS.starts_with(BOOLEAN_FILTERS));
    }
}
