//! The plans of the query texts seen so far, and for texts the executor answers, their parsed
//! documents: bounded in the number of texts and in the length of each.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_graphql::parser::types::ExecutableDocument;

use super::{Api, Checks, Plan};

/// How many query texts the cache keeps; when full it starts again (clients send a few fixed
/// texts, so this bounds only clients that build a new text per request).
const MAX_PLANS: usize = 1024;

/// The longest query text that gets a plan: the cache keeps the texts, so this bounds its memory
/// (1024 × 16 KiB) however large the requests; longer texts go to the executor.
const MAX_PLANNED_TEXT: usize = 16 * 1024;

/// The longest query text whose parsed document is kept when it has no plan (the executor then
/// reuses the document instead of parsing the text again): a few KiB of document each, so at
/// most a few MiB for a full cache.
const MAX_KEPT_DOCUMENT: usize = 2 * 1024;

/// The plans of the query texts of one API seen so far, and for texts the executor answers,
/// their parsed documents.
pub struct Plans {
    api: Api,
    by_query: RwLock<HashMap<String, Vec<Known>>>,
}

/// What is known of a query text run as one operation.
struct Known {
    operation: Option<String>,
    plan: Option<Arc<Plan>>,
    document: Option<Arc<ExecutableDocument>>,
    checks: Option<Arc<Checks>>,
}

/// What [`Plans::get`] tells of a text seen before.
#[derive(Default)]
pub struct Seen {
    /// Its plan; `None` when the executor answers it.
    pub plan: Option<Arc<Plan>>,
    /// Without a plan, the text's parsed document (short texts only).
    pub document: Option<Arc<ExecutableDocument>>,
    /// With the document, what its validation depends on, when it has checks.
    pub checks: Option<Arc<Checks>>,
}

impl Plans {
    /// The plans of `api`'s queries.
    pub fn new(api: Api) -> Plans {
        Plans {
            api,
            by_query: RwLock::default(),
        }
    }

    /// The API whose queries the plans answer.
    pub fn api(&self) -> Api {
        self.api
    }

    /// What is known of `query` run as `operation`: `None` when it has not been seen.
    pub fn get(&self, query: &str, operation: Option<&str>) -> Option<Seen> {
        if query.len() > MAX_PLANNED_TEXT {
            return Some(Seen::default());
        }
        let map = self.by_query.read().unwrap_or_else(|e| e.into_inner());
        map.get(query)?
            .iter()
            .find(|known| known.operation.as_deref() == operation)
            .map(|known| Seen {
                plan: known.plan.clone(),
                document: known.document.clone(),
                checks: known.checks.clone(),
            })
    }

    /// Remembers the plan of a query text the executor has validated, or without one its
    /// parsed `document` and the `checks` of its validation.
    pub fn insert(
        &self,
        query: &str,
        operation: Option<&str>,
        plan: Option<Arc<Plan>>,
        document: Option<ExecutableDocument>,
        checks: Option<Checks>,
    ) {
        let document = match (&plan, document) {
            (None, Some(doc)) if query.len() <= MAX_KEPT_DOCUMENT => Some(Arc::new(doc)),
            _ => None,
        };
        let checks = checks.filter(|_| document.is_some()).map(Arc::new);
        let mut map = self.by_query.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_PLANS {
            map.clear();
        }
        let entry = map.entry(query.to_owned()).or_default();
        if !entry
            .iter()
            .any(|known| known.operation.as_deref() == operation)
        {
            entry.push(Known {
                operation: operation.map(str::to_owned),
                plan,
                document,
                checks,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::InlineReads;

    fn doc(text: &str) -> ExecutableDocument {
        async_graphql::parser::parse_query(text).expect("a valid document")
    }

    /// Texts the executor answers keep their parsed document (short ones only); texts with a
    /// plan keep the plan alone; each operation of a text is known on its own.
    #[test]
    fn the_cache_keeps_documents_of_short_texts_without_a_plan() {
        let plans = Plans::new(Api::Simple);
        let text = "mutation A { a } mutation B { b }";
        assert!(plans.get(text, Some("A")).is_none(), "not seen yet");
        plans.insert(text, Some("A"), None, Some(doc(text)), None);
        let known = plans.get(text, Some("A")).expect("seen");
        assert!(known.plan.is_none());
        let kept = known.document.expect("the document is kept");
        assert_eq!(kept.operations.iter().count(), 2);
        assert!(plans.get(text, Some("B")).is_none(), "another operation");

        let long = format!("{{ a }} # {}", "x".repeat(MAX_KEPT_DOCUMENT));
        plans.insert(&long, None, None, Some(doc(&long)), None);
        let known = plans.get(&long, None).expect("seen");
        assert!(known.plan.is_none() && known.document.is_none());

        let planned = "{ c }";
        let plan = Arc::new(Plan {
            vars: Vec::new(),
            roots: Vec::new(),
            inline: InlineReads::default(),
        });
        plans.insert(planned, None, Some(plan), Some(doc(planned)), None);
        let known = plans.get(planned, None).expect("seen");
        assert!(known.plan.is_some() && known.document.is_none());
    }
}
