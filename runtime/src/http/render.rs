//! Rendering an executed GraphQL request in the reference's shapes (§11.1): validation errors
//! without `data` or `code`; otherwise `data` (with failed fields `null`, propagated as GraphQL
//! requires) and field errors carrying `code` and `requestId`, internal failures saying only
//! "Whoops".

use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{PathSegment, Pos, Response, ServerError, Value};
use serde::Serialize;

use super::nulls::{self, Nullability};
use super::order;
use crate::model::{FUNCTION_ERROR, INTERNAL};

/// Renders an executed request: validation errors without `data` or `code`; otherwise `data`
/// (with failed fields `null`) and field errors carrying `code` and `requestId`.
/// `types` (the field types, the query parsed, `None` when it does not parse, and the
/// operation's name) lets a failed non-null field
/// null its parent as GraphQL requires, and puts every object's entries in the query's order
/// ([`order`]); without it, only the failed field is `null`, and entries stay in the order in
/// which the executor's fields completed.
pub(super) fn render(
    response: Response,
    request_id: &str,
    types: Option<(&Nullability, Option<&ExecutableDocument>, Option<&str>)>,
) -> serde_json::Value {
    if rejected(&response) {
        let errors: Vec<_> = response
            .errors
            .iter()
            .map(|e| ValidationErrorOut {
                message: validation_message(&e.message),
                locations: &e.locations,
            })
            .collect();
        return serde_json::json!({ "errors": errors });
    }
    let errors: Vec<_> = response
        .errors
        .iter()
        .map(|e| field_error(e, request_id))
        .collect();
    let mut data = response.data.into_json().unwrap_or(serde_json::Value::Null);
    for e in &response.errors {
        null_at_path(&mut data, &e.path);
    }
    if let Some((nulls, doc, operation)) = types
        && data.is_object()
    {
        nulls::propagate(nulls, doc, operation, &mut data, &response.errors);
        if let Some(doc) = doc {
            order::restore(nulls, doc, operation, &mut data);
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("data".to_owned(), data);
    if !errors.is_empty() {
        out.insert("errors".to_owned(), serde_json::Value::Array(errors));
    }
    serde_json::Value::Object(out)
}

/// Whether the executor refused the request before executing it: errors, none of them at a
/// field's path, and no data (the document did not validate, or the variables did not coerce).
pub(super) fn rejected(response: &Response) -> bool {
    matches!(response.data, Value::Null)
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// Puts the `null` of a failed field back into `data`: the executor leaves failed fields out (and
/// turns an object none of whose fields succeeded into `null`), but clients expect
/// `{"data": {"updatePost": null}, "errors": […]}` and `{"viewer": {"project": null}}`.
fn null_at_path(data: &mut serde_json::Value, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = data;
    for segment in parents {
        // An error below an object means the object was resolved: `null` there is the executor
        // dropping an object whose only fields failed.
        if node.is_null() && matches!(segment, PathSegment::Field(_)) {
            *node = serde_json::Value::Object(serde_json::Map::new());
        }
        match nulls::child(node, segment) {
            Some(next) => node = next,
            None => return,
        }
    }
    if node.is_null() && matches!(last, PathSegment::Field(_)) {
        *node = serde_json::Value::Object(serde_json::Map::new());
    }
    if let (PathSegment::Field(name), serde_json::Value::Object(map)) = (last, node) {
        map.entry(name.clone()).or_insert(serde_json::Value::Null);
    }
}

/// async-graphql reports a bad literal for a custom scalar generically ("Invalid value for
/// argument …, expected type \"DateTime\""); the reference's message names the reason too, and
/// clients look for it.
fn validation_message(message: &str) -> String {
    if message.ends_with("expected type \"DateTime\"") {
        format!("{message}: Date value expected")
    } else if message.ends_with("expected type \"Json\"") {
        format!("{message}: Not valid JSON")
    } else {
        message.to_owned()
    }
}

#[derive(Serialize)]
struct ValidationErrorOut<'a> {
    message: String,
    locations: &'a [Pos],
}

#[derive(Serialize)]
struct FieldErrorOut<'a> {
    locations: &'a [Pos],
    path: &'a [PathSegment],
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<Value>,
    message: String,
    #[serde(rename = "requestId")]
    request_id: &'a str,
    #[serde(rename = "functionError", skip_serializing_if = "Option::is_none")]
    function_error: Option<Value>,
}

/// An execution error: `code` and `requestId` at the top level; internal failures say only
/// "Whoops" and the request id.
fn field_error(e: &ServerError, request_id: &str) -> serde_json::Value {
    let ext = e.extensions.as_ref();
    let internal = ext.and_then(|x| x.get(INTERNAL)).is_some();
    if internal {
        // The cause stays in the log, under the id the client is asked to quote.
        eprintln!("svc: request {request_id}: {}", e.message);
    }
    let message = if internal {
        format!(
            "Whoops. Looks like an internal server error. Please contact us from the Console (https://console.graph.cool) or via email (support@graph.cool) and include your Request ID: {request_id}"
        )
    } else {
        e.message.clone()
    };
    let out = FieldErrorOut {
        locations: &e.locations,
        path: &e.path,
        code: ext.and_then(|x| x.get("code")).cloned(),
        message,
        request_id,
        function_error: ext.and_then(|x| x.get(FUNCTION_ERROR)).cloned(),
    };
    serde_json::to_value(out).unwrap_or(serde_json::Value::Null)
}
