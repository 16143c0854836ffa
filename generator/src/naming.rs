//! Every name the generator derives from a user's name, in one place.
//!
//! The GraphQL names come from the `svc-names` crate, which the runtime calls too, so the names
//! the generator checks for collisions and emits are the names the runtime serves. What is
//! specific to the generator lives here: Rust identifiers, which only have to be valid and
//! predictable. The side names of a relation need the model to tell a self relation declared
//! on one field: they are the model's (`Model::relation_a_name`, `relation_b_name`), which
//! derives them with the functions here.

pub use svc_names::*;

/// Rust keywords that may be used as raw identifiers (`r#type`).
const RAW_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Keywords that cannot be raw identifiers; they get a trailing `_` instead.
const NON_RAW_KEYWORDS: &[&str] = &["self", "Self", "super", "crate", "_"];

/// A GraphQL name as a snake_case Rust identifier (`createdAt` → `created_at`, `type` → `r#type`,
/// `self` → `self_`).
pub fn rust_ident(name: &str) -> String {
    escape_keyword(snake_case(&sanitize(name)))
}

/// A GraphQL type name as a Rust type identifier: the name is kept (it is UpperCamel already by the
/// naming rules) and only made keyword-safe.
pub fn rust_type_ident(name: &str) -> String {
    escape_keyword(sanitize(name))
}

/// Replaces characters that cannot appear in an identifier and avoids a leading digit or an empty
/// name, so every input maps to something `syn` accepts.
fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn escape_keyword(ident: String) -> String {
    if NON_RAW_KEYWORDS.contains(&ident.as_str()) {
        format!("{ident}_")
    } else if RAW_KEYWORDS.contains(&ident.as_str()) {
        format!("r#{ident}")
    } else {
        ident
    }
}

/// `createdAt` → `created_at`, `HTTPServer` → `http_server`, `userID` → `user_id`.
fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            // A word starts at a lower→upper step (`dA`) or at the last capital of an acronym
            // followed by a lower-case letter (`HTTPServer` → `HTTP` + `Server`).
            let boundary = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower);
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The prefix of the Rust types generated for a function with a Rust handler: `validate-email`
/// → `ValidateEmail` (`ValidateEmailEvent`, `ValidateEmailData`, …).
pub fn function_type_prefix(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `text` with every character that cannot be part of an identifier made `_`.
pub fn identifier_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::frontend::model_from_sdl as model;
    use crate::model::RelationId;

    /// Reference §2.7's example: `addToAuthorPosts(authorUserId: ID!, postsPostId: ID!):
    /// AddToAuthorPostsPayload { authorUser postsPost }`, where `Post.author` is side A.
    #[test]
    fn relation_mutation_names_match_the_reference_example() {
        let model = model(
            "type Post @model { id: ID! @isUnique author: User @relation(name: \"AuthorPosts\") }
             type User @model { id: ID! @isUnique posts: [Post!]! @relation(name: \"AuthorPosts\") }",
        );
        let rel = RelationId(0);
        let relation = &model.relation(rel).name;
        let a = model.relation_a_name(rel);
        let b = model.relation_b_name(rel);
        assert_eq!((a.as_str(), b.as_str()), ("authorUser", "postsPost"));
        assert_eq!(add_to_field(relation), "addToAuthorPosts");
        assert_eq!(
            [relation_id_argument(&a), relation_id_argument(&b)],
            ["authorUserId", "postsPostId"]
        );
        assert_eq!(add_to_payload(relation), "AddToAuthorPostsPayload");
        assert_eq!(
            remove_from_payload(relation),
            "RemoveFromAuthorPostsPayload"
        );
        assert_eq!(set_payload(relation), "SetAuthorPostsPayload");
        assert_eq!(unset_payload(relation), "UnsetAuthorPostsPayload");
        assert_eq!(relation_side_name("author", "User"), "authorUser");
    }

    #[test]
    fn self_relation_side_names() {
        let model = model(
            "type User @model {
               id: ID! @isUnique
               friends: [User!]! @relation(name: \"Friends\")
               followers: [User!]! @relation(name: \"Follows\")
               following: [User!]! @relation(name: \"Follows\")
             }",
        );
        // Declared on one field: `1` and `2` keep the two sides apart.
        assert_eq!(model.relation_a_name(RelationId(0)), "friends1User");
        assert_eq!(model.relation_b_name(RelationId(0)), "friends2User");
        // Declared on two fields: each side by its own field.
        assert_eq!(model.relation_a_name(RelationId(1)), "followersUser");
        assert_eq!(model.relation_b_name(RelationId(1)), "followingUser");
    }

    #[test]
    fn rust_idents() {
        for (name, ident) in [
            ("createdAt", "created_at"),
            ("id", "id"),
            ("userID", "user_id"),
            ("HTTPServer", "http_server"),
            ("url2Html", "url2_html"),
            ("_private", "_private"),
            ("__typename", "__typename"),
            ("type", "r#type"),
            ("async", "r#async"),
            ("gen", "r#gen"),
            ("self", "self_"),
            ("Self", "self_"),
            ("super", "super_"),
            ("crate", "crate_"),
            ("_", "__"),
            ("", "__"),
            ("9lives", "_9lives"),
            ("a-b", "a_b"),
        ] {
            assert_eq!(rust_ident(name), ident, "{name}");
        }
        assert_eq!(rust_type_ident("Post"), "Post");
        assert_eq!(rust_type_ident("Self"), "Self_");
        assert_eq!(rust_type_ident("type"), "r#type");
    }
}
