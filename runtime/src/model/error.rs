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
    /// 3000: a single-node query (`User(…)`) got none of its unique arguments, or only nulls:
    /// `None of the following arguments provided: List(<names>)`. Holds the names of the
    /// model's unique arguments, in declaration order.
    NoArgumentsProvided(Vec<&'static str>),
    /// 3001: an id that cannot be a node id (not 1 to 25 characters of `[a-zA-Z0-9-_]`):
    /// `The given id '<id>' is invalid.` Holds the id as given.
    IdIsInvalid(String),
    /// 3002: the node an update, a delete or a permission check names does not exist:
    /// `'<model>' has no item with id '<id>'`.
    DataItemDoesNotExist {
        /// The model's name.
        model: &'static str,
        /// The id as given.
        id: String,
    },
    /// 3007: a `String` or `ID` value longer than 262,144 characters, or a list or `Json`
    /// value whose JSON text is: `Value for field <f> is too long.` Holds the field's name.
    ValueTooLong(&'static str),
    /// 3010: a write would give two nodes the same value of an `@isUnique` field:
    /// `A unique constraint would be violated on <model>. Details: Field name = <field>`.
    UniqueConstraintViolation {
        /// The model's name.
        model: &'static str,
        /// The field, when the database names it; `None` gives the text `… Details: Sorry, no
        /// more details available.`
        field: Option<&'static str>,
    },
    /// 3014: a list field got both `first` and `last`: `Including a value for both first and
    /// last is not supported. See the spec for a discussion of why …`.
    InvalidConnectionArguments,
    /// 3020: a write sets a required field to null (on a create, one without a default), or
    /// the `operationBefore` data of a create gives no value for such a field: `You are trying
    /// to set a required field to null. … Fieldname if known: <f>`. Holds the field's name.
    FieldCannotBeNull(&'static str),
    /// 3019: a write sets a field only the system writes (`File.secret`, …):
    /// `The field <f> is read only.`
    ReadonlyField(&'static str),
    /// 3026: a negative `first`: `The 'first' argument must be non negative`.
    InvalidFirstArgument,
    /// 3027: a negative `last`: `The 'last' argument must be non negative`.
    InvalidLastArgument,
    /// 3028: a negative `skip`: `The 'skip' argument must be non negative`.
    InvalidSkipArgument,
    /// 2041: `first` or `last` over 1000: `You requested <n> nodes. We will only return up to
    /// 1000 nodes per query.` Holds the requested count.
    TooManyNodesRequested(i32),
    /// 2041 (our text): the request's list fields read more nodes than `--max-nodes`.
    TooManyNodesInRequest(u64),
    /// 3033: `<f>_some`, `<f>_every` or `<f>_none: null` in a filter: `The field '<f>' is a
    /// toMany relation. This cannot be filtered by null.` Holds the relation field's name.
    FilterCannotBeNullOnToManyField(&'static str),
    /// 3011: an edge to a node that does not exist: `You are referencing a node that does not
    /// exist. … Id if available: <id>`. Holds the first missing id.
    NodeDoesNotExist(String),
    /// 3013: the node a relation mutation names is gone: `Node with id <id> not found`.
    NodeNotFound(String),
    /// 3032: the write would leave a required to-one relation empty: `The field '<field>' on
    /// type '<model>' is required. Performing this mutation would violate the constraint`.
    RelationIsRequired {
        /// The required relation field.
        field: &'static str,
        /// The model that declares `field`.
        model: &'static str,
    },
    /// 3036: an explicit null for a required field that has a default, or a function's value
    /// that does not fit the field's type: `The input value <value> was not valid for field
    /// <field> of type <model>.`
    InputInvalid {
        /// The value as JSON text (`null` for a null).
        value: String,
        /// The field's name.
        field: &'static str,
        /// The model's name.
        model: &'static str,
    },
    /// 3037: a `Json` value that is not an object or an array: `The value in the field
    /// '<field>' is not a valid Json: '<value>'`.
    ValueNotAValidJson {
        /// The field's name.
        field: &'static str,
        /// The value as JSON text.
        value: String,
    },
    /// 3008: a permission check failed; the text says which (`Insufficient permissions for this
    /// mutation`, `Insufficient Permissions`, `No CONNECT permissions`, …).
    InsufficientPermissions(&'static str),
    /// 3008: a permission query failed when it ran: `Permission Query is invalid. Could not be
    /// executed. Error Message: <message>`. Holds the message, which names the query.
    PermissionQueryInvalid(String),
    /// 4028: `generateNodeToken` with a credential that is not valid for the service:
    /// `The provided pat is not valid for project '<service>'`. Holds the service the request
    /// names, as given.
    InvalidRootToken(String),
    /// 3005: keys a write does not have (a before-hook's data): `The parameters List(<names>)
    /// were present in the argument list, but are not present in the model <model>.`
    ExtraArguments {
        /// The unknown keys.
        names: Vec<String>,
        /// The model's name.
        model: &'static str,
    },
    /// 5000–5008 (and 2063): a function failed or returned what it may not (reference §7.3);
    /// `detail` is the function's own error (`functionError`) for 5001 and 5002.
    Function {
        /// The error code: 5000 to 5008, or 2063 for a resolver whose payload is required and
        /// that returned null.
        code: u32,
        /// The whole error text (`function execution error: <text>` for 5001, …).
        message: String,
        /// The function's own error, sent as `functionError`; `None` but for 5001 and 5002.
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
    /// A `DateTime` value that is not a string in one of the ISO-8601 forms
    /// [`super::parse_datetime`] reads.
    #[error("Date value expected")]
    DateExpected,
    /// An `Int` value that is not a 32-bit signed integer (out of range, or with a fraction);
    /// holds the number as written.
    #[error("Int cannot represent value: {0}")]
    IntOutOfRange(String),
    /// A `Float` number that is not a 64-bit float; holds the number as written.
    #[error("invalid Float {0}")]
    InvalidFloat(String),
    /// A `Json` value that is not JSON: a string that does not parse as JSON text, or a value
    /// with no JSON form. Holds the parser's message.
    #[error("Not valid JSON: {0}")]
    InvalidJson(String),
    /// A value of a kind the field does not take (an object for a `String` field, …); holds
    /// the value as GraphQL writes it.
    #[error("unexpected value {0}")]
    Unexpected(String),
    /// A filter that is not an object.
    #[error("expected an object of type `{0}`")]
    NotAFilter(&'static str),
    /// A filter key that names no field of the type, or a suffix the field does not have
    /// (`_contains` on an `Int`, `_some` on a to-one relation, …); holds the key.
    #[error("unknown filter field `{0}`")]
    UnknownFilterField(String),
    /// A filter key's suffix with no comparison behind it; holds the suffix (`_lt`, …).
    #[error("unknown filter suffix `{0}`")]
    UnknownFilterSuffix(String),
    /// A write input that is not an object.
    #[error("expected an input object")]
    NotAnInputObject,
    /// A write input key that names no writable field and no relation argument (`<f>`,
    /// `<f>Id`, `<f>Ids`) of the model; holds the key.
    #[error("unknown field `{0}`")]
    UnknownField(String),
    /// An `<f>Id` value, or an `<f>Ids` item, that is neither a string nor an integer; holds
    /// the value.
    #[error("expected an ID, found {0}")]
    NotAnId(String),
    /// A relation argument of the wrong shape (`<f>Ids` on a to-one field, a single nested
    /// create for a list, a nested create the relation does not have, …); holds the key.
    #[error("unexpected value for `{0}`")]
    UnexpectedValueFor(String),
    /// An `orderBy` value its enum does not have (in a permission query).
    #[error("unknown order `{0}`")]
    UnknownOrder(String),
    /// An `orderBy` value that is not an enum value (in a permission query).
    #[error("unexpected orderBy value {0}")]
    NotAnOrder(String),
    /// A `skip`, `first` or `last` value that is not an integer (in a permission query).
    #[error("expected an Int, found {0}")]
    NotAnInt(String),
    /// An `after` or `before` value that is not a string (in a permission query).
    #[error("expected a String, found {0}")]
    NotAString(String),
}
