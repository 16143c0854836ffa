//! The Rust handlers of the functions' test service: compiled into it, their types checked
//! against `service/svc.yml` when the tests build.

use serde_json::json;
use svc_runtime::functions::{FunctionError, FunctionResult};

use super::service::handlers::{
    DeletedOrdersEvent, NoteAfterData, NoteAfterEvent, NoteBeforeData, NoteBeforeEvent,
    NotesSeenEvent, RustHelloEvent, RustHelloPayload,
};

/// The events `order_deleted` received.
pub static DELETED_ORDERS: std::sync::Mutex<Vec<serde_json::Value>> =
    std::sync::Mutex::new(Vec::new());

/// Keeps the event of a deleted order (a server-side subscription), read through the types the
/// generator made of the subscription's query.
pub async fn order_deleted(event: DeletedOrdersEvent) -> FunctionResult<()> {
    let order = &event.data.order;
    let previous = order.previous_values.as_ref();
    let mut seen = serde_json::to_value(&event.context).unwrap_or_default();
    seen["data"] = serde_json::to_value(&event.data).unwrap_or_default();
    seen["typed"] = json!({
        "mutation": order.mutation,
        "id": previous.map(|p| p.id.clone()),
        "text": previous.map(|p| p.text.clone()),
    });
    DELETED_ORDERS.lock().unwrap().push(seen);
    Ok(None)
}

/// The `data` of every event `note_seen` received.
pub static SEEN_NOTES: std::sync::Mutex<Vec<serde_json::Value>> = std::sync::Mutex::new(Vec::new());

/// Keeps the data of a note's create or update (a server-side subscription with no `node`
/// condition).
pub async fn note_seen(event: NotesSeenEvent) -> FunctionResult<()> {
    let seen = serde_json::to_value(&event.data).unwrap_or_default();
    SEEN_NOTES.lock().unwrap().push(seen);
    Ok(None)
}

/// Upper-cases a note's text and scores it by its length; refuses two texts.
pub async fn note_before(event: NoteBeforeEvent) -> FunctionResult<NoteBeforeData> {
    let mut data = event.data;
    match data.text.as_deref() {
        Some("forbidden") => Err("Notes may not say that".into()),
        Some("object") => Err(FunctionError::Object(json!({ "field": "text" }))),
        Some("keep") => Ok(None),
        Some(text) => {
            data.score = Some(text.len() as i32);
            data.text = Some(text.to_uppercase());
            Ok(Some(data))
        }
        None => Ok(None),
    }
}

/// Adds `!` to the text of an updated note's payload.
pub async fn note_after(event: NoteAfterEvent) -> FunctionResult<NoteAfterData> {
    let mut data = event.data;
    data.text = data.text.map(|t| format!("{t}!"));
    Ok(Some(data))
}

/// Greets, says who called, and checks with `svc-lib` that the event's root token is accepted by
/// the service.
pub async fn rust_hello(event: RustHelloEvent) -> FunctionResult<RustHelloPayload> {
    let client = svc_lib::from_event(&event).map_err(|e| FunctionError::Message(e.to_string()))?;
    let name = event.data.name.unwrap_or_else(|| "World".to_owned());
    if name == "sleepy" {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    let times = event.data.times.unwrap_or(1).max(0) as usize;
    let token_works = if name == "check token" {
        // Admins only: the permission schema.
        let url = format!("{}/permissions", client.endpoints().simple);
        let out: serde_json::Value = reqwest::Client::new()
            .post(url)
            .bearer_auth(client.token().unwrap_or_default())
            .json(&json!({ "query": "{ SomeNoteExists }" }))
            .send()
            .await
            .map_err(|e| FunctionError::Message(e.to_string()))?
            .json()
            .await
            .map_err(|e| FunctionError::Message(e.to_string()))?;
        let notes = client
            .simple("{ _allNotesMeta { count } }", json!({}))
            .await
            .map_err(|e| FunctionError::Message(e.to_string()))?;
        Some(out["data"]["SomeNoteExists"].is_boolean() && notes["_allNotesMeta"]["count"].is_u64())
    } else {
        None
    };
    Ok(Some(RustHelloPayload {
        message: format!("Hello {name}").repeat(times),
        caller: event.context.auth.map(|a| a.type_name),
        service_id: client.service_id().to_owned(),
        token_works,
    }))
}
