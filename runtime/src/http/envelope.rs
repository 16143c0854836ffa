//! The client APIs' request envelope: one GraphQL request per body or a batch (a JSON array of
//! them), variables as an object or as JSON text, each request answered by its compiled plan
//! when it has one that applies, or by the executor, and rendered in the reference's shapes.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{Executor, Request, Variables};

use super::nulls::Nullability;
use super::omitted;
use super::positions;
use super::render::{rejected, render};
use super::validated::Fast;
use crate::api::Whitelist;
use crate::auth::Principal;
use crate::engine::{self, State};
use crate::plan::{self, Checks, Plan, Plans};
use crate::storage::Counter;

/// What became of the body of a client API request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Executed (a batch always is, whatever became of its requests).
    Executed,
    /// Not executed: the request object's parameters, its document's syntax or validation, or
    /// its variables were refused.
    Rejected,
    /// The body is not JSON at all.
    Malformed,
}

/// A client API body's response body and what became of it.
pub(super) struct Answer {
    pub(super) body: Vec<u8>,
    pub(super) outcome: Outcome,
}

/// What the GraphQL requests of one HTTP request share.
pub(super) struct Envelope<'a> {
    pub(super) state: &'a Arc<State>,
    pub(super) nulls: &'a Nullability,
    /// The plan cache, for the client API (`None` for the permission schema).
    pub(super) plans: Option<&'a Plans>,
    pub(super) request_id: &'a str,
    pub(super) counter: &'a Arc<Counter>,
    pub(super) principal: &'a Principal,
    /// Where the request came from, for the functions it invokes.
    pub(super) origin: &'a engine::Origin,
    /// How many requests a plan answered.
    pub(super) direct: AtomicU32,
    /// How many requests the executor ran without validating them in full.
    pub(super) checked: AtomicU32,
    /// The most requests a batch may hold.
    pub(super) max_batch: usize,
}

impl Envelope<'_> {
    /// Runs a body of the client APIs: one request object, or a batch (a JSON array of them),
    /// through `schema`, or through `fast` where a text's checks pass ([`Fast`]).
    pub(super) async fn run<E: Executor>(
        &self,
        schema: &E,
        fast: Option<&Fast<E>>,
        body: &[u8],
    ) -> Answer {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(serde_json::Value::Array(items)) if items.len() > self.max_batch => Answer {
                body: to_json(&serde_json::json!({
                    "error": format!(
                        "A batch may hold at most {} requests; this one holds {}. Send them in several batches.",
                        self.max_batch,
                        items.len()
                    ),
                })),
                outcome: Outcome::Rejected,
            },
            Ok(serde_json::Value::Array(items)) => {
                let mut out = vec![b'['];
                for (i, item) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(self.run_one(schema, fast, item).await.0);
                }
                out.push(b']');
                Answer {
                    body: out,
                    outcome: Outcome::Executed,
                }
            }
            Ok(item @ serde_json::Value::Object(_)) => {
                let (body, outcome) = self.run_one(schema, fast, item).await;
                Answer { body, outcome }
            }
            parsed => Answer {
                body: to_json(&serde_json::json!({
                    "error": format!("input could not be parsed: '{}'", String::from_utf8_lossy(body)),
                })),
                outcome: if parsed.is_err() {
                    Outcome::Malformed
                } else {
                    Outcome::Rejected
                },
            },
        }
    }

    /// Runs one GraphQL request of the envelope and renders it in the reference's shapes: by
    /// its compiled plan when it has one that applies, otherwise by the executor (through
    /// `fast` when the text was validated before and its checks pass).
    async fn run_one<E: Executor>(
        &self,
        schema: &E,
        fast: Option<&Fast<E>>,
        item: serde_json::Value,
    ) -> (Vec<u8>, Outcome) {
        let incoming = match read_request(item, self.request_id) {
            Ok(incoming) => incoming,
            Err(error) => return (to_json(&error), Outcome::Rejected),
        };
        let known = self.plans.map(|p| {
            p.get(
                &incoming.query,
                incoming.operation.as_deref(),
                &incoming.variables,
            )
        });
        if let Some(Some(plan::Seen {
            plan: Some(plan), ..
        })) = &known
            && let Some(out) = self.direct(plan, &incoming.variables).await
        {
            self.direct.fetch_add(1, Ordering::Relaxed);
            return (out, Outcome::Executed);
        }
        let seen = known.as_ref().and_then(Option::as_ref);
        let document = seen.and_then(|seen| seen.document.clone());
        let mut request = match incoming.into_request(document.as_deref()) {
            Ok(request) => request,
            Err(error) => return (to_json(&error), Outcome::Rejected),
        };
        let operation = request.operation_name.clone();
        // A text the cache does not know is checked for variables used where their types do
        // not fit, the rule async-graphql does not run (`positions.rs`); the answer to one that
        // fails is every error of its validation.
        if !matches!(known, Some(Some(_)))
            && let Some(fast) = fast
            && let Some(response) = positions::refused(fast, &mut request).await
        {
            let out = to_json(&render(response, self.request_id, None));
            return (out, Outcome::Rejected);
        }
        // Variables the request leaves out: the document runs without the arguments they fill
        // (`omitted.rs`). The document kept for the text and those variables is pruned already;
        // the text's own is pruned here, and kept as `original`, which is what is validated.
        let mut pruned = document.is_some() && seen.is_some_and(|seen| seen.pruned);
        let mut omits = None;
        let mut original = None;
        let variables = std::mem::take(&mut request.variables);
        if document.is_none()
            && let Ok(doc) = request.parsed_query()
            && let Some(optional) = omitted::optional(doc, operation.as_deref())
        {
            let left_out = plan::left_out(&optional, &variables);
            let run = omitted::pruned(doc, operation.as_deref(), &left_out);
            pruned = run.is_some();
            if let Some(run) = run {
                original = Some(doc.clone());
                request.set_parsed_query(run);
            }
            omits = Some(plan::Omits {
                optional: optional.into(),
                left_out,
                pruned,
            });
        }
        request.variables = variables;
        // A text validated before, with the same variables left out, is validated in full again
        // only when its variables fail its checks (`validated.rs`): `checked` is then the schema
        // in the fast validation mode that runs it.
        let checked = fast.and_then(|fast| {
            let pass = seen
                .and_then(|seen| seen.checks.as_ref())
                .is_some_and(|checks| checks.pass(fast.registry(), &request.variables));
            fast.schema.as_ref().filter(|_| pass)
        });
        // Otherwise a pruned document runs only if its text passes a full validation (the
        // arguments pruned away could be what is wrong with it; `omitted::check_text`), and
        // is then validated in full itself, as it runs. A text that does not pass runs as it
        // is, with its left-out variables null, and its validation's errors are the answer.
        // Without a validator (its schema's registry could not be read), the pruned document
        // alone is validated, and nothing is learned from it.
        if checked.is_none() && pruned {
            let text = original.or_else(|| async_graphql::parser::parse_query(&request.query).ok());
            match (fast, text) {
                (Some(fast), Some(text)) => {
                    let op = operation.as_deref();
                    let vars = &request.variables;
                    if let Err(variables) =
                        omitted::check_text(fast, &request.query, &text, op, vars).await
                    {
                        omits = None;
                        request.variables = variables;
                        request.set_parsed_query(text);
                    }
                }
                _ => omits = None,
            }
        }
        // A text not seen before with these variables left out: compile what it runs now (the
        // executor consumes the document), and keep the plan, or without one the document, once
        // the executor has validated the text.
        let learned = match (&known, request.parsed_query(), omits) {
            (Some(None), Ok(doc), Some(omits)) => {
                let api = self.plans.map_or(plan::Api::Simple, Plans::api);
                let plan = plan::compile(self.state.service, api, doc, operation.as_deref());
                let doc = plan.is_none().then(|| doc.clone());
                let checks = match (&doc, fast) {
                    (Some(doc), Some(fast)) => Checks::of(fast.registry(), doc),
                    _ => None,
                };
                Some((omits, plan.map(Arc::new), doc, checks))
            }
            _ => None,
        };
        let request = request
            .data(engine::Request::from(
                self.state.clone(),
                self.counter.clone(),
                self.principal.clone(),
                self.origin.clone(),
            ))
            .data(Whitelist::default());
        let query = request.query.clone();
        let response = match checked {
            Some(fast_schema) => {
                self.checked.fetch_add(1, Ordering::Relaxed);
                fast_schema.execute(request).await
            }
            None => schema.execute(request).await,
        };
        let outcome = if rejected(&response) {
            Outcome::Rejected
        } else {
            Outcome::Executed
        };
        // The query's document, which the executor consumed: the one kept for the text or
        // just learned, else parsed again.
        let parsed: Option<Cow<'_, ExecutableDocument>> = match (&document, &learned) {
            (Some(doc), _) => Some(Cow::Borrowed(&**doc)),
            (None, Some((_, _, Some(doc), _))) => Some(Cow::Borrowed(doc)),
            _ => async_graphql::parser::parse_query(&query)
                .ok()
                .map(Cow::Owned),
        };
        let types = (self.nulls, parsed.as_deref(), operation.as_deref());
        let errors_at_fields = response.errors.iter().all(|e| !e.path.is_empty());
        let out = to_json(&render(response, self.request_id, Some(types)));
        drop(parsed);
        // Errors without a path are the document's (syntax, validation, operation choice).
        if let (Some(plans), Some((omits, plan, doc, checks))) = (self.plans, learned)
            && errors_at_fields
        {
            plans.insert(&query, operation.as_deref(), omits, plan, doc, checks);
        }
        (out, outcome)
    }

    /// Runs `plan`; `None` when the executor must answer. The statements of a run that gives
    /// up are not counted.
    async fn direct(&self, plan: &Plan, variables: &Variables) -> Option<Vec<u8>> {
        let counter = Counter::with_node_budget(self.counter.nodes_left());
        let run = plan::Execution {
            plan,
            db: &self.state.db,
            reads: &self.state.reads,
            principal: self.principal,
            variables,
            counter: &counter,
        };
        let out = run.execute().await?;
        self.counter.add(counter.get());
        // Within the budget: the run gives up otherwise.
        let _ = self
            .counter
            .read_nodes(usize::try_from(counter.nodes()).unwrap_or(usize::MAX));
        Some(out)
    }
}

fn to_json(value: &serde_json::Value) -> Vec<u8> {
    // A `serde_json::Value` always serialises.
    serde_json::to_vec(value).unwrap_or_default()
}

/// A request object's parts: `query`, `variables` (an object or JSON text) and
/// `operationName`.
struct Incoming {
    query: String,
    variables: Variables,
    operation: Option<String>,
}

/// Reads one request object; `Err` holds the error body (3024 for bad variables).
fn read_request(item: serde_json::Value, request_id: &str) -> Result<Incoming, serde_json::Value> {
    let serde_json::Value::Object(mut obj) = item else {
        return Err(serde_json::json!({ "error": format!("input could not be parsed: '{item}'") }));
    };
    let query = match obj.remove("query") {
        Some(serde_json::Value::String(q)) => q,
        _ => String::new(),
    };
    let variables = match obj.remove("variables") {
        None | Some(serde_json::Value::Null) => Variables::default(),
        Some(serde_json::Value::String(text)) if text.trim().is_empty() => Variables::default(),
        Some(serde_json::Value::String(text)) => match serde_json::from_str(&text) {
            Ok(v) => Variables::from_json(v),
            Err(_) => {
                return Err(serde_json::json!({
                    "code": 3024,
                    "requestId": request_id,
                    "error": format!("Variables could not be parsed as json: {text}"),
                }));
            }
        },
        Some(v) => Variables::from_json(v),
    };
    let operation = match obj.remove("operationName") {
        Some(serde_json::Value::String(name)) => Some(name),
        _ => None,
    };
    Ok(Incoming {
        query,
        variables,
        operation,
    })
}

impl Incoming {
    /// The request, its query parsed (or `document`, the query's document parsed before);
    /// `Err` holds the reference's syntax-error body.
    fn into_request(
        self,
        document: Option<&ExecutableDocument>,
    ) -> Result<Request, serde_json::Value> {
        let mut request = Request::new(self.query).variables(self.variables);
        if let Some(name) = self.operation {
            request = request.operation_name(name);
        }
        if let Some(doc) = document {
            request.set_parsed_query(doc.clone());
        } else if let Err(err) = request.parsed_query() {
            return Err(serde_json::json!({
                "error": format!("Syntax error while parsing GraphQL query. {}", err.message),
            }));
        }
        Ok(request)
    }
}

/// Reads one request object and parses its query; `Err` holds the error body.
pub(super) fn parse_request(
    item: serde_json::Value,
    request_id: &str,
) -> Result<Request, serde_json::Value> {
    read_request(item, request_id)?.into_request(None)
}
