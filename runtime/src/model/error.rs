//! API errors with the reference's codes and message texts.
//!
//! Resolvers return [`ApiError`]; it becomes a GraphQL field error carrying `code` (moved to the
//! top level of the error object by the HTTP layer, next to `requestId`). Anything unexpected is
//! [`ApiError::Internal`]: logged with its cause, shown to the client only as the "Whoops" text.

use async_graphql::ErrorExtensions;

/// The errors the client APIs report.
///
/// Deliberately not `Display`: `async_graphql::Error` converts from anything `Display` and would
/// drop the code, so the only conversion is the explicit `From` below. `Clone`, because a
/// batch's error is every waiter's.
#[derive(Debug, Clone)]
pub enum ApiError {
    NoArgumentsProvided(Vec<&'static str>),
    IdIsInvalid(String),
    DataItemDoesNotExist {
        model: &'static str,
        id: String,
    },
    ValueTooLong(&'static str),
    UniqueConstraintViolation {
        model: &'static str,
        field: Option<&'static str>,
    },
    InvalidConnectionArguments,
    FieldCannotBeNull(&'static str),
    /// 3019: a write sets a field only the system writes (`File.secret`, …).
    ReadonlyField(&'static str),
    InvalidFirstArgument,
    InvalidLastArgument,
    InvalidSkipArgument,
    TooManyNodesRequested(i32),
    /// 2041 (our text): the request's list fields read more nodes than `--max-nodes`.
    TooManyNodesInRequest(u64),
    FilterCannotBeNullOnToManyField(&'static str),
    /// 3011: an edge to a node that does not exist.
    NodeDoesNotExist(String),
    /// 3013: the node a relation mutation names is gone.
    NodeNotFound(String),
    /// 3032: the write would leave a required to-one relation empty.
    RelationIsRequired {
        field: &'static str,
        model: &'static str,
    },
    InputInvalid {
        value: String,
        field: &'static str,
        model: &'static str,
    },
    ValueNotAValidJson {
        field: &'static str,
        value: String,
    },
    /// 3008: a permission check failed; the text says which (`Insufficient permissions for this
    /// mutation`, `Insufficient Permissions`, `No CONNECT permissions`, …).
    InsufficientPermissions(&'static str),
    /// 3008: a permission query failed when it ran.
    PermissionQueryInvalid(String),
    /// 4028: `generateNodeToken` with a credential that is not valid for the service.
    InvalidRootToken(String),
    /// 3005: keys a write does not have (a before-hook's data).
    ExtraArguments {
        names: Vec<String>,
        model: &'static str,
    },
    /// 5000–5008: a function failed or returned what it may not (reference §7.3); `detail`
    /// is the function's own error (`functionError`) for 5001 and 5002.
    Function {
        code: u32,
        message: String,
        detail: Option<serde_json::Value>,
    },
    /// 3036 (our text): a value holds the character U+0000, which PostgreSQL cannot store or
    /// compare.
    NulCharacter,
    /// Something the client cannot fix; the cause is logged, never sent.
    Internal(String),
    /// PostgreSQL rolled the transaction back to break a deadlock (40P01) or a serialization
    /// conflict (40001): running it again can succeed. Reported like [`ApiError::Internal`] when
    /// it persists.
    Conflict(String),
}

impl ApiError {
    /// The reference's message text.
    pub fn message(&self) -> String {
        match self {
            ApiError::NoArgumentsProvided(names) => {
                format!("None of the following arguments provided: List({})", names.join(", "))
            }
            ApiError::IdIsInvalid(id) => format!("The given id '{id}' is invalid."),
            ApiError::DataItemDoesNotExist { model, id } => {
                format!("'{model}' has no item with id '{id}'")
            }
            ApiError::ValueTooLong(f) => format!("Value for field {f} is too long."),
            ApiError::UniqueConstraintViolation { model, field } => match field {
                Some(f) => format!(
                    "A unique constraint would be violated on {model}. Details: Field name = {f}"
                ),
                None => format!(
                    "A unique constraint would be violated on {model}. Details: Sorry, no more details available."
                ),
            },
            ApiError::InvalidConnectionArguments => "Including a value for both first and last is not supported. See the spec for a discussion of why https://facebook.github.io/relay/graphql/connections.htm#sec-Pagination-algorithm".to_owned(),
            ApiError::FieldCannotBeNull(f) => format!(
                "You are trying to set a required field to null. If you are using GraphQL arguments, make sure that you specify a value for all arguments. Fieldname if known: {f}"
            ),
            ApiError::ReadonlyField(f) => format!("The field {f} is read only."),
            ApiError::InvalidFirstArgument => "The 'first' argument must be non negative".to_owned(),
            ApiError::InvalidLastArgument => "The 'last' argument must be non negative".to_owned(),
            ApiError::InvalidSkipArgument => "The 'skip' argument must be non negative".to_owned(),
            ApiError::TooManyNodesRequested(n) => {
                format!("You requested {n} nodes. We will only return up to 1000 nodes per query.")
            }
            ApiError::TooManyNodesInRequest(budget) => format!(
                "This request reads more than {budget} nodes, the most one request may read. Ask for fewer nodes, or split the request."
            ),
            ApiError::FilterCannotBeNullOnToManyField(f) => {
                format!("The field '{f}' is a toMany relation. This cannot be filtered by null.")
            }
            ApiError::NodeDoesNotExist(id) => format!(
                "You are referencing a node that does not exist. Please check your mutation to make sure you are only creating edges between existing nodes. Id if available: {id}"
            ),
            ApiError::NodeNotFound(id) => format!("Node with id {id} not found"),
            ApiError::RelationIsRequired { field, model } => format!(
                "The field '{field}' on type '{model}' is required. Performing this mutation would violate the constraint"
            ),
            ApiError::InputInvalid { value, field, model } => {
                format!("The input value {value} was not valid for field {field} of type {model}.")
            }
            ApiError::ValueNotAValidJson { field, value } => {
                format!("The value in the field '{field}' is not a valid Json: '{value}'")
            }
            ApiError::InsufficientPermissions(text) => (*text).to_owned(),
            ApiError::PermissionQueryInvalid(message) => format!(
                "Permission Query is invalid. Could not be executed. Error Message: {message}"
            ),
            ApiError::InvalidRootToken(project) => {
                format!("The provided pat is not valid for project '{project}'")
            }
            ApiError::ExtraArguments { names, model } => format!(
                "The parameters List({}) were present in the argument list, but are not present in the model {model}.",
                names.join(", ")
            ),
            ApiError::Function { message, .. } => message.clone(),
            ApiError::NulCharacter => "A value holds the character U+0000, which this service's database (PostgreSQL) cannot store or compare. Remove it from the value.".to_owned(),
            ApiError::Internal(cause) | ApiError::Conflict(cause) => {
                format!("internal error: {cause}")
            }
        }
    }

    /// The reference's error code.
    pub fn code(&self) -> Option<u32> {
        Some(match self {
            ApiError::NoArgumentsProvided(_) => 3000,
            ApiError::IdIsInvalid(_) => 3001,
            ApiError::DataItemDoesNotExist { .. } => 3002,
            ApiError::ValueTooLong(_) => 3007,
            ApiError::UniqueConstraintViolation { .. } => 3010,
            ApiError::InvalidConnectionArguments => 3014,
            ApiError::FieldCannotBeNull(_) => 3020,
            ApiError::ReadonlyField(_) => 3019,
            ApiError::InvalidFirstArgument => 3026,
            ApiError::InvalidLastArgument => 3027,
            ApiError::InvalidSkipArgument => 3028,
            ApiError::TooManyNodesRequested(_) | ApiError::TooManyNodesInRequest(_) => 2041,
            ApiError::FilterCannotBeNullOnToManyField(_) => 3033,
            ApiError::NodeDoesNotExist(_) => 3011,
            ApiError::NodeNotFound(_) => 3013,
            ApiError::RelationIsRequired { .. } => 3032,
            ApiError::InputInvalid { .. } | ApiError::NulCharacter => 3036,
            ApiError::ValueNotAValidJson { .. } => 3037,
            ApiError::InsufficientPermissions(_) | ApiError::PermissionQueryInvalid(_) => 3008,
            ApiError::InvalidRootToken(_) => 4028,
            ApiError::ExtraArguments { .. } => 3005,
            ApiError::Function { code, .. } => *code,
            ApiError::Internal(_) | ApiError::Conflict(_) => return None,
        })
    }
}

/// Marker extension for errors whose text must not reach the client.
pub const INTERNAL: &str = "svcInternal";

/// The extension (and the error's key in responses) holding a function's own error.
pub const FUNCTION_ERROR: &str = "functionError";

impl From<ApiError> for async_graphql::Error {
    fn from(err: ApiError) -> Self {
        match err.code() {
            Some(code) => {
                let detail = match &err {
                    ApiError::Function {
                        detail: Some(d), ..
                    } => async_graphql::Value::from_json(d.clone()).ok(),
                    _ => None,
                };
                async_graphql::Error::new(err.message()).extend_with(|_, e| {
                    e.set("code", code);
                    if let Some(d) = detail {
                        e.set(FUNCTION_ERROR, d);
                    }
                })
            }
            // Logged where it is answered, with the request's id (`http/render.rs`).
            None => {
                async_graphql::Error::new(err.message()).extend_with(|_, e| e.set(INTERNAL, true))
            }
        }
    }
}

/// Result type of the generic resolvers.
pub type ApiResult<T> = Result<T, ApiError>;

/// An argument value that does not fit what it is given for: a value of the wrong kind for a
/// field, or a filter or write input object with a key its type does not have. Validation
/// catches most of these first; the text becomes part of the client's parse error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("Date value expected")]
    DateExpected,
    #[error("Int cannot represent value: {0}")]
    IntOutOfRange(String),
    #[error("invalid Float {0}")]
    InvalidFloat(String),
    #[error("Not valid JSON: {0}")]
    InvalidJson(String),
    #[error("unexpected value {0}")]
    Unexpected(String),
    /// A filter that is not an object.
    #[error("expected an object of type `{0}`")]
    NotAFilter(&'static str),
    #[error("unknown filter field `{0}`")]
    UnknownFilterField(String),
    #[error("unknown filter suffix `{0}`")]
    UnknownFilterSuffix(String),
    /// A write input that is not an object.
    #[error("expected an input object")]
    NotAnInputObject,
    #[error("unknown field `{0}`")]
    UnknownField(String),
    #[error("expected an ID, found {0}")]
    NotAnId(String),
    #[error("unexpected value for `{0}`")]
    UnexpectedValueFor(String),
    /// An `orderBy` value its enum does not have (in a permission query).
    #[error("unknown order `{0}`")]
    UnknownOrder(String),
    #[error("unexpected orderBy value {0}")]
    NotAnOrder(String),
    #[error("expected an Int, found {0}")]
    NotAnInt(String),
    #[error("expected a String, found {0}")]
    NotAString(String),
}
