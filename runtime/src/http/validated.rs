//! Validation in full once per query text. A text the executor answers (a mutation, a query
//! without a compiled plan) is validated in full the first time, and its checks are kept with
//! its parsed document ([`crate::plan::Checks`]). A later request with the same text whose
//! variables pass the checks runs through the same API's schema built in async-graphql's fast
//! validation mode ([`Fast`]), which still computes the depth and complexity the limits
//! bound; a request whose variables fail them is validated in full, with its errors. So every
//! request is answered as if validated in full. Full validation was about 14 % of the server's
//! CPU under creates (docs/benchmarks.md).
//!
//! Why a second schema and not an extension that skips the rules: with any extension
//! registered, async-graphql resolves each field through a path that names the field's parent
//! by its Rust type, which the types named at run time (the Relay API's payloads) fail.
//!
//! A third copy, the validator, runs the full validation of a document and stops there, never
//! executing it ([`Fast::valid`]): a request that leaves variables out runs a document pruned of
//! the arguments they fill (`omitted.rs`), which may be valid when its text is not (an unknown
//! argument pruned away). The text is validated by the validator first, and the pruned document
//! is validated in full as it runs, the first time; later requests with the same variables left
//! out pass the pruned document's checks.

use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Waker};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextRequest, NextValidation,
};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::registry::Registry;
use async_graphql::{
    Executor, ObjectType, Request, Response, Schema, SchemaBuilder, SchemaEnv, ServerError,
    SubscriptionType, ValidationMode, ValidationResult, Variables,
};

/// The error with which the validator stops a request its validation passed.
const VALIDATED: &str = "\u{0}validated, not run";

/// A client API's schema in the fast validation mode, the registry of its types, which the
/// checks read, and the validator. A schema whose texts are never learned (the permission
/// schema, the System API) has the validator and the registry only.
pub(crate) struct Fast<E> {
    pub(super) schema: Option<E>,
    /// The schema as built, with an extension that ends each request after its validation.
    validator: E,
    env: SchemaEnv,
}

impl<E> Fast<E> {
    /// The registry of the schema's types.
    pub(super) fn registry(&self) -> &Registry {
        &self.env.registry
    }
}

impl<E: Executor> Fast<E> {
    /// Whether `document`, the parsed `query`, passes a full validation with `variables` as the
    /// operation `operation` (it is not run).
    pub(super) async fn valid(
        &self,
        query: &str,
        document: ExecutableDocument,
        variables: Variables,
        operation: Option<&str>,
    ) -> bool {
        self.errors(query, document, variables, operation)
            .await
            .is_empty()
    }

    /// What a full validation of `document`, the parsed `query`, with `variables` as the
    /// operation `operation` finds wrong (it is not run); nothing when it passes.
    pub(super) async fn errors(
        &self,
        query: &str,
        document: ExecutableDocument,
        variables: Variables,
        operation: Option<&str>,
    ) -> Vec<ServerError> {
        let mut request = Request::new(query).variables(variables);
        if let Some(name) = operation {
            request = request.operation_name(name);
        }
        request.set_parsed_query(document);
        let mut errors = self.validator.execute(request).await.errors;
        errors.retain(|e| e.message != VALIDATED);
        errors
    }
}

/// The schema `build` makes, in the fast validation mode, with the registry of its types;
/// `None` if the registry could not be read (every request is then validated in full).
pub(super) fn fast<Q, M, Sub>(
    build: impl Fn() -> SchemaBuilder<Q, M, Sub>,
) -> Option<Fast<Schema<Q, M, Sub>>>
where
    Q: ObjectType + 'static,
    M: ObjectType + 'static,
    Sub: SubscriptionType + 'static,
{
    let mut fast = validator(&build)?;
    fast.schema = Some(build().validation_mode(ValidationMode::Fast).finish());
    Some(fast)
}

/// The validator of the schema `build` makes, with the registry of its types, and no schema in
/// the fast validation mode; `None` if the registry could not be read.
pub(super) fn validator<Q, M, Sub>(
    build: impl Fn() -> SchemaBuilder<Q, M, Sub>,
) -> Option<Fast<Schema<Q, M, Sub>>>
where
    Q: ObjectType + 'static,
    M: ObjectType + 'static,
    Sub: SubscriptionType + 'static,
{
    // async-graphql shows a schema's registry only to its extensions: the validator, a copy of
    // the schema with one that keeps it, runs one request.
    let slot = Arc::new(OnceLock::new());
    let validator = build().extension(Capture(slot.clone())).finish();
    {
        let run = validator.execute(Request::new("{ __typename }"));
        let mut run = pin!(run);
        // The extension's first hook runs at the first poll, before anything could wait.
        let _ = run.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    }
    let env = slot.get()?.clone();
    Some(Fast {
        schema: None,
        validator,
        env,
    })
}

/// The validator's extension: it keeps its schema's environment, and ends every request once
/// its validation has passed.
struct Capture(Arc<OnceLock<SchemaEnv>>);

impl ExtensionFactory for Capture {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Capture(self.0.clone()))
    }
}

#[async_trait::async_trait]
impl Extension for Capture {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        let _ = self.0.set(ctx.schema_env.clone());
        next.run(ctx).await
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx).await?;
        Err(vec![ServerError::new(VALIDATED, None)])
    }
}

/// A schema of every kind of input type, for the tests of validation (`positions.rs` too).
#[cfg(test)]
pub(super) mod tests {
    use async_graphql::{
        EmptyMutation, EmptySubscription, Enum, ID, InputObject, Object, OneofObject, Schema,
        Variables,
    };
    use serde_json::json;

    use super::fast;
    use crate::plan::Checks;

    #[derive(Enum, Clone, Copy, PartialEq, Eq)]
    pub(in crate::http) enum Color {
        Red,
        Green,
    }

    #[derive(InputObject)]
    pub(in crate::http) struct Point {
        x: i32,
        #[graphql(default = 0)]
        y: i32,
        tag: Option<String>,
        colors: Option<Vec<Color>>,
    }

    #[derive(OneofObject)]
    enum Pick {
        A(i32),
        B(String),
    }

    pub(in crate::http) struct Root;

    #[Object]
    impl Root {
        #[allow(clippy::too_many_arguments)]
        async fn f(
            &self,
            a: Option<i32>,
            b: i32,
            #[graphql(default = 5)] d: i32,
            s: Option<String>,
            id: Option<ID>,
            c: Option<Color>,
            p: Option<Point>,
            l: Option<Vec<i32>>,
            ll: Option<Vec<Option<Vec<Option<i32>>>>>,
            o: Option<Pick>,
            fl: Option<f64>,
            bo: Option<bool>,
        ) -> i32 {
            let _ = (a, d, s, id, c, p, l, ll, o, fl, bo);
            b
        }

        async fn g(&self) -> Root {
            Root
        }
    }

    /// For a text validated once, the checks pass exactly when a full validation of the same
    /// text with the same variables reports no fault: every kind of input type, each valid and
    /// invalid, variables alone and inside literal objects and lists, missing and null.
    #[tokio::test]
    async fn checks_pass_exactly_when_full_validation_does() {
        let build = || Schema::build(Root, EmptyMutation, EmptySubscription);
        let strict = build().finish();
        let fast = fast(build).expect("the registry is read");
        let text = "query ($a: Int, $b: Int!, $s: String, $id: ID, $c: Color, $x: Int, \
                    $cs: [Color!], $l: [Int!], $ll: [[Int]], $o: Pick, $oa: Int, $fl: Float, \
                    $bo: Boolean) { f(a: $a, b: $b, s: $s, id: $id, c: $c, l: $l, ll: $ll, \
                    o: $o, fl: $fl, bo: $bo) g { f(b: 1, p: {x: $x, tag: $s, colors: $cs}, \
                    o: {a: $oa}) } }";
        let doc = async_graphql::parser::parse_query(text).expect("a document");
        let checks = Checks::of(fast.registry(), &doc).expect("the document has checks");
        let cases = [
            json!({"b": 1}),
            json!({"b": 1, "a": 2, "s": "x", "id": "i", "c": "RED", "x": 3, "cs": ["GREEN"],
                   "l": [1, 2], "ll": [[1, null], null], "o": {"b": "t"}, "oa": 4, "fl": 1.5,
                   "bo": true}),
            json!({}),
            json!({"b": null}),
            json!({"b": "1"}),
            json!({"b": 1.5}),
            json!({"b": 1, "a": "2"}),
            json!({"b": 1, "a": 4_000_000_000_i64}),
            json!({"b": 1, "s": 5}),
            json!({"b": 1, "s": null}),
            json!({"b": 1, "id": 7}),
            json!({"b": 1, "id": 1.5}),
            json!({"b": 1, "id": true}),
            json!({"b": 1, "c": "BLUE"}),
            json!({"b": 1, "c": 1}),
            json!({"b": 1, "cs": "RED"}),
            json!({"b": 1, "cs": ["RED", "BLUE"]}),
            json!({"b": 1, "cs": ["RED", null]}),
            json!({"b": 1, "x": null}),
            json!({"b": 1, "x": "3"}),
            json!({"b": 1, "x": 3, "s": 4}),
            json!({"b": 1, "l": 3}),
            json!({"b": 1, "l": [1, null]}),
            json!({"b": 1, "l": [[1]]}),
            json!({"b": 1, "ll": [1, 2]}),
            json!({"b": 1, "ll": [["a"]]}),
            json!({"b": 1, "o": {"a": 1, "b": "t"}}),
            json!({"b": 1, "o": {"a": null}}),
            json!({"b": 1, "o": {}}),
            json!({"b": 1, "o": {"c": 1}}),
            json!({"b": 1, "o": 3}),
            json!({"b": 1, "oa": null}),
            json!({"b": 1, "oa": "4"}),
            json!({"b": 1, "fl": "1.5"}),
            json!({"b": 1, "fl": 2}),
            json!({"b": 1, "bo": 1}),
        ];
        let mut failing = 0;
        for vars in cases {
            let variables = Variables::from_json(vars.clone());
            let full = strict
                .execute(async_graphql::Request::new(text).variables(variables.clone()))
                .await;
            let valid = full.errors.iter().all(|e| !e.path.is_empty());
            failing += usize::from(!valid);
            assert_eq!(
                checks.pass(fast.registry(), &variables),
                valid,
                "{vars}: {:?}",
                full.errors
            );
        }
        assert!(failing > 20, "most cases are invalid: {failing}");
    }

    /// Documents whose validation is always run in full have no checks.
    #[test]
    fn fragments_directives_and_several_operations_have_no_checks() {
        let build = || Schema::build(Root, EmptyMutation, EmptySubscription);
        let fast = fast(build).expect("the registry is read");
        for text in [
            "query ($b: Int!) { ...F } fragment F on Root { f(b: $b) }",
            "query ($b: Int!) { ... on Root { f(b: $b) } }",
            "query ($b: Int!, $i: Boolean!) { f(b: $b) @include(if: $i) }",
            "query A { f(b: 1) } query B { f(b: 2) }",
        ] {
            let doc = async_graphql::parser::parse_query(text).expect("a document");
            assert!(Checks::of(fast.registry(), &doc).is_none(), "{text}");
        }
        let doc = async_graphql::parser::parse_query("query ($b: Int!) { __typename f(b: $b) }")
            .expect("a document");
        assert!(Checks::of(fast.registry(), &doc).is_some());
    }

    /// What the validator runs: resolvers count their calls.
    struct Counted;

    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[Object]
    impl Counted {
        async fn h(&self, n: i32, s: Option<String>) -> i32 {
            let _ = s;
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            n
        }
    }

    /// The validator answers what a full validation answers, and runs nothing.
    #[tokio::test]
    async fn the_validator_validates_without_running() {
        let build = || Schema::build(Counted, EmptyMutation, EmptySubscription);
        let strict = build().finish();
        let fast = fast(build).expect("the registry is read");
        let cases = [
            ("query ($n: Int!) { h(n: $n) }", json!({ "n": 1 }), None),
            ("query ($n: Int!) { h(n: $n) }", json!({}), None),
            ("query ($n: Int!) { h(n: $n) }", json!({ "n": "1" }), None),
            ("query ($s: String) { h(n: 1, nope: $s) }", json!({}), None),
            ("query ($s: Int) { h(n: 1, s: $s) }", json!({}), None),
            ("query ($s: Nope) { h(n: 1, s: $s) }", json!({}), None),
            ("query ($s: String) { h(n: 1) }", json!({}), None),
            ("{ h(n: 1) h2: h(n: 2) }", json!({}), None),
            (
                "query A { h(n: 1) } query B { h(n: 2, s: 3) }",
                json!({}),
                Some("A"),
            ),
            (
                "query A { h(n: 1) } query B { h(n: 2, s: 3) }",
                json!({}),
                Some("B"),
            ),
        ];
        let mut valid = 0;
        for (text, vars, operation) in cases {
            let variables = Variables::from_json(vars);
            let doc = async_graphql::parser::parse_query(text).expect("a document");
            let before = CALLS.load(std::sync::atomic::Ordering::SeqCst);
            let passes = fast.valid(text, doc, variables.clone(), operation).await;
            assert_eq!(
                CALLS.load(std::sync::atomic::Ordering::SeqCst),
                before,
                "{text}: run"
            );
            let mut request = async_graphql::Request::new(text).variables(variables);
            if let Some(name) = operation {
                request = request.operation_name(name);
            }
            let full = strict.execute(request).await;
            // Errors with a path are the execution's, after the validation passed.
            let validated = full.errors.iter().all(|e| !e.path.is_empty());
            assert_eq!(passes, validated, "{text}: {:?}", full.errors);
            valid += usize::from(passes);
        }
        assert_eq!(valid, 4, "the first two, the aliases and operation A");
    }
}
