//! The plans of the query texts seen so far, and for texts the executor answers, their parsed
//! documents: bounded in the number of texts and in the length of each.
//!
//! Requests of one text that leave out different variables run different documents (the text
//! pruned of the arguments those variables fill, `http/omitted.rs`), so what is known of a text
//! is kept per set of variables left out ([`Omits`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{Name, Variables};

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

/// How many sets of variables left out are known of one text (a text with `n` optional
/// variables has `2^n`; clients send a few).
const MAX_VARIANTS: usize = 16;

/// The plans of the query texts of one API seen so far, and for texts the executor answers,
/// their parsed documents.
pub struct Plans {
    api: Api,
    by_query: RwLock<HashMap<String, Vec<Known>>>,
}

/// What is known of a query text run as one operation by the requests that leave out the same
/// variables.
struct Known {
    operation: Option<String>,
    omits: Omits,
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
    /// Whether the plan and the document are of the text pruned of the variables the request
    /// leaves out: the text itself was validated in full when they were learned, and is
    /// validated again if the request's variables fail the checks.
    pub pruned: bool,
}

/// Which requests of a text an entry is for.
#[derive(Debug, Clone, Default)]
pub struct Omits {
    /// The variables of the operation a request may leave out (nullable, without a default).
    pub optional: Arc<[Name]>,
    /// Those these requests leave out.
    pub left_out: Vec<Name>,
    /// Whether the document they run is pruned of arguments (some of `left_out` fill one).
    pub pruned: bool,
}

/// Those of `optional` that `variables` leaves out, in their order.
pub fn left_out(optional: &[Name], variables: &Variables) -> Vec<Name> {
    optional
        .iter()
        .filter(|name| !variables.contains_key(*name))
        .cloned()
        .collect()
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

    /// What is known of `query` run as `operation` with `variables`: `None` when it has not
    /// been seen with the same variables left out.
    pub fn get(&self, query: &str, operation: Option<&str>, variables: &Variables) -> Option<Seen> {
        if query.len() > MAX_PLANNED_TEXT {
            return Some(Seen::default());
        }
        let map = self.by_query.read().unwrap_or_else(|e| e.into_inner());
        let mut entries = map
            .get(query)?
            .iter()
            .filter(|known| known.operation.as_deref() == operation)
            .peekable();
        // Empty (no allocation) when the request gives every variable.
        let left = left_out(&entries.peek()?.omits.optional, variables);
        let known = entries.find(|known| known.omits.left_out == left)?;
        Some(Seen {
            plan: known.plan.clone(),
            document: known.document.clone(),
            checks: known.checks.clone(),
            pruned: known.omits.pruned,
        })
    }

    /// Remembers the plan of a query text the executor has validated, for the requests that
    /// leave out the variables `omits` tells, or without one the parsed `document` they run and
    /// the `checks` of its validation.
    pub fn insert(
        &self,
        query: &str,
        operation: Option<&str>,
        omits: Omits,
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
        if entry.len() < MAX_VARIANTS
            && !entry.iter().any(|known| {
                known.operation.as_deref() == operation && known.omits.left_out == omits.left_out
            })
        {
            entry.push(Known {
                operation: operation.map(str::to_owned),
                omits,
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
        let none = Variables::default();
        let text = "mutation A { a } mutation B { b }";
        assert!(plans.get(text, Some("A"), &none).is_none(), "not seen yet");
        plans.insert(
            text,
            Some("A"),
            Omits::default(),
            None,
            Some(doc(text)),
            None,
        );
        let known = plans.get(text, Some("A"), &none).expect("seen");
        assert!(known.plan.is_none());
        let kept = known.document.expect("the document is kept");
        assert_eq!(kept.operations.iter().count(), 2);
        assert!(
            plans.get(text, Some("B"), &none).is_none(),
            "another operation"
        );

        let long = format!("{{ a }} # {}", "x".repeat(MAX_KEPT_DOCUMENT));
        plans.insert(&long, None, Omits::default(), None, Some(doc(&long)), None);
        let known = plans.get(&long, None, &none).expect("seen");
        assert!(known.plan.is_none() && known.document.is_none());

        let planned = "{ c }";
        let plan = Arc::new(Plan {
            vars: Vec::new(),
            roots: Vec::new(),
            inline: InlineReads::default(),
        });
        plans.insert(
            planned,
            None,
            Omits::default(),
            Some(plan),
            Some(doc(planned)),
            None,
        );
        let known = plans.get(planned, None, &none).expect("seen");
        assert!(known.plan.is_some() && known.document.is_none());
    }

    /// Requests of a text that leave out different variables find what is known of their own
    /// set alone.
    #[test]
    fn each_set_of_variables_left_out_is_known_on_its_own() {
        let plans = Plans::new(Api::Simple);
        let text = "query ($s: String, $t: String, $n: Int!) { a(s: $s, t: $t, n: $n) }";
        let optional: Arc<[Name]> = [Name::new("s"), Name::new("t")].into();
        let vars = |v: serde_json::Value| Variables::from_json(v);
        let given_s = vars(serde_json::json!({ "s": "x", "n": 1 }));
        let given_both = vars(serde_json::json!({ "s": "x", "t": null, "n": 1 }));
        let given_t = vars(serde_json::json!({ "t": "y", "n": 1 }));
        assert!(plans.get(text, None, &given_s).is_none(), "not seen yet");
        let omits = Omits {
            optional: optional.clone(),
            left_out: vec![Name::new("t")],
            pruned: true,
        };
        let pruned = "query ($s: String, $n: Int!) { a(s: $s, n: $n) }";
        plans.insert(text, None, omits, None, Some(doc(pruned)), None);
        let seen = plans.get(text, None, &given_s).expect("this set is known");
        assert!(seen.pruned && seen.document.is_some());
        assert!(
            plans.get(text, None, &given_both).is_none(),
            "none left out"
        );
        assert!(plans.get(text, None, &given_t).is_none(), "another set");
        let all = Omits {
            optional,
            left_out: Vec::new(),
            pruned: false,
        };
        plans.insert(text, None, all, None, Some(doc(text)), None);
        let seen = plans.get(text, None, &given_both).expect("known now");
        assert!(!seen.pruned);
        assert!(plans.get(text, None, &given_s).expect("still known").pruned);
    }
}
