//! The deployment settings of a running service: flags and `SVC_*` environment variables.

use std::fmt;

/// `--sqlite-cache-mib` by default.
const DEFAULT_SQLITE_CACHE_MIB: u32 = crate::storage::sqlite::readers::READER_CACHE_KIB / 1024;
/// The largest `--sqlite-cache-mib`, 512 GiB: the writer's twice as much, in KiB, still fits
/// SQLite's setting (a 32-bit integer).
const MAX_SQLITE_CACHE_MIB: i64 = 1 << 19;

/// Deployment settings of a running service. [`Options::default`] is what the flags default to
/// without an environment (a server started from code, such as the tests', sets what it needs
/// and takes the rest from it).
#[derive(Clone, clap::Args)]
pub struct Options {
    /// Port to listen on (0 picks a free port).
    #[arg(long, env = "SVC_PORT", default_value_t = 60000)]
    pub port: u16,
    /// `sqlite://PATH` or `postgres://…`; default: a SQLite file under the service's `.svc/`.
    #[arg(long, env = "SVC_DATABASE_URL")]
    pub database_url: Option<String>,
    /// On SQLite, the most memory in MiB each connection that reads may keep as its page cache
    /// (the writer's connection: twice as much). A cache holds only pages its connection has
    /// read, so it costs nothing until a request reads that much.
    #[arg(
        long,
        env = "SVC_SQLITE_CACHE_MIB",
        default_value_t = DEFAULT_SQLITE_CACHE_MIB,
        value_parser = clap::value_parser!(u32).range(1..=MAX_SQLITE_CACHE_MIB)
    )]
    pub sqlite_cache_mib: u32,
    /// Service id used in API paths; default: the id stored in the database at first start.
    #[arg(long, env = "SVC_SERVICE_ID")]
    pub service_id: Option<String>,
    /// Alias accepted in API paths instead of the id; default: the service's name.
    #[arg(long, env = "SVC_ALIAS")]
    pub alias: Option<String>,
    /// Secret that signs and checks tokens (HS256); default: a random secret generated at first
    /// start and kept in the database, shared by every instance on it.
    #[arg(
        long,
        env = "SVC_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub secret: Option<String>,
    /// Master token that the System API's `authenticateCustomer` exchanges for a platform
    /// token; default: none (`authenticateCustomer` always fails).
    #[arg(
        long,
        env = "SVC_MASTER_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub master_token: Option<String>,
    /// Milliseconds between the keep-alive messages of subscription sockets (`ka` of
    /// `graphql-ws`, `keepalive` of `graphql-subscriptions`); 0 sends none.
    #[arg(long, env = "SVC_KEEPALIVE_MS", default_value_t = 10_000)]
    pub keepalive_ms: u64,
    /// Milliseconds a subscription socket may go without a message from its client before it
    /// is closed (60 minutes, as the original service); 0 never closes it.
    #[arg(long, env = "SVC_IDLE_TIMEOUT_MS", default_value_t = 3_600_000)]
    pub idle_timeout_ms: u64,
    /// Milliseconds a `graphql-transport-ws` socket may take to send `connection_init` before
    /// it is closed with 4408 (the `graphql-ws` library's default, 3 seconds); 0 waits forever.
    #[arg(long, env = "SVC_INIT_TIMEOUT_MS", default_value_t = 3_000)]
    pub init_timeout_ms: u64,
    /// The most characters of element text one NDF export response holds (the reference's
    /// 10 MB).
    #[arg(long, env = "SVC_EXPORT_PAGE_LIMIT", default_value_t = 10_000_000)]
    pub export_page_limit: usize,
    /// Where uploaded files are stored: a directory, a `file://` URL, or an S3-compatible store
    /// as `s3://BUCKET[/PREFIX][?endpoint=URL&region=R]` (credentials from `AWS_*` variables or
    /// the URL); default: `files/` under the service's `.svc/`.
    #[arg(long, env = "SVC_FILE_STORE")]
    pub file_store: Option<String>,
    /// The most bytes one upload may hold (the seed's 200 MB).
    #[arg(long, env = "SVC_MAX_UPLOAD_BYTES", default_value_t = crate::files::DEFAULT_MAX_UPLOAD)]
    pub max_upload_bytes: u64,
    /// `{files_url}`: the public base address of downloads; a file's `url` is
    /// `{files_url}/<service id>/<secret>`. Default: this server's `/files/v1` at the address an
    /// upload was sent to.
    #[arg(long, env = "SVC_FILES_URL")]
    pub files_url: Option<String>,
    /// The public base address of this server (`https://api.example.org`), as the events of
    /// functions name its endpoints. Default: `http://localhost:<port>`.
    #[arg(long, env = "SVC_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// How many times a server-side subscription function is invoked for one event whose
    /// receiver fails (no answer, a status other than 2xx, a timeout) before the event is
    /// given up.
    #[arg(long, env = "SVC_FUNCTION_ATTEMPTS", default_value_t = 10)]
    pub function_attempts: u32,
    /// Milliseconds before the second attempt of a failed server-side subscription delivery;
    /// the wait doubles after each failure, up to ten minutes.
    #[arg(long, env = "SVC_FUNCTION_BACKOFF_MS", default_value_t = 1_000)]
    pub function_backoff_ms: u64,
    /// The Node.js binary that runs JavaScript handlers (`code:`); needed only by services
    /// that have some.
    #[arg(long, env = "SVC_NODE", default_value = "node")]
    pub node: String,
    /// How many Node.js worker processes run JavaScript handlers at once.
    #[arg(long, env = "SVC_NODE_WORKERS", default_value_t = 2)]
    pub node_workers: usize,
    /// Each Node.js worker's heap limit in megabytes; a handler that allocates past it fails
    /// with 5008 and its worker is replaced.
    #[arg(long, env = "SVC_NODE_MEMORY_MB", default_value_t = 256)]
    pub node_memory_mb: u32,
    /// What one request of a client may ask for.
    #[command(flatten)]
    pub limits: crate::http::Limits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port: 60000,
            database_url: None,
            sqlite_cache_mib: DEFAULT_SQLITE_CACHE_MIB,
            service_id: None,
            alias: None,
            secret: None,
            master_token: None,
            keepalive_ms: 10_000,
            idle_timeout_ms: 3_600_000,
            init_timeout_ms: 3_000,
            export_page_limit: 10_000_000,
            file_store: None,
            max_upload_bytes: crate::files::DEFAULT_MAX_UPLOAD,
            files_url: None,
            public_url: None,
            function_attempts: 10,
            function_backoff_ms: 1_000,
            node: "node".to_owned(),
            node_workers: 2,
            node_memory_mb: 256,
            limits: crate::http::Limits::default(),
        }
    }
}

impl Options {
    /// How the database's connections are set up.
    pub fn connect_options(&self) -> crate::storage::ConnectOptions {
        crate::storage::ConnectOptions {
            sqlite_cache_kib: self.sqlite_cache_mib.saturating_mul(1024),
        }
    }
}

/// Secrets stay out of debug output.
impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("Options")
            .field("port", &self.port)
            .field("database_url", &self.database_url.as_deref().map(redact))
            .field("sqlite_cache_mib", &self.sqlite_cache_mib)
            .field("service_id", &self.service_id)
            .field("alias", &self.alias)
            .field("secret", &hidden(&self.secret))
            .field("master_token", &hidden(&self.master_token))
            .field("keepalive_ms", &self.keepalive_ms)
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .field("init_timeout_ms", &self.init_timeout_ms)
            .field("export_page_limit", &self.export_page_limit)
            .field(
                "file_store",
                &self.file_store.as_deref().map(crate::files::redacted),
            )
            .field("max_upload_bytes", &self.max_upload_bytes)
            .field("files_url", &self.files_url)
            .field("public_url", &self.public_url)
            .field("function_attempts", &self.function_attempts)
            .field("function_backoff_ms", &self.function_backoff_ms)
            .field("node", &self.node)
            .field("node_workers", &self.node_workers)
            .field("node_memory_mb", &self.node_memory_mb)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Hides the password of a database URL before printing it.
pub(super) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        options: super::Options,
    }

    /// `Options::default()` is what the flags default to; the request limits are flags.
    #[test]
    fn limits_are_flags_with_their_defaults() {
        let cli = Cli::try_parse_from(["svc"]).expect("no flags");
        assert_eq!(
            format!("{:?}", cli.options),
            format!("{:?}", super::Options::default())
        );
        assert_eq!(cli.options.limits, crate::http::Limits::default());
        let cli = Cli::try_parse_from([
            "svc",
            "--max-batch",
            "5",
            "--max-depth",
            "8",
            "--max-complexity",
            "300",
            "--max-body-bytes",
            "1000",
            "--max-nodes",
            "70",
        ])
        .expect("the limits' flags");
        let limits = cli.options.limits;
        assert_eq!(
            (
                limits.max_batch,
                limits.max_depth,
                limits.max_complexity,
                limits.max_body_bytes,
                limits.max_nodes
            ),
            (5, 8, 300, 1000, 70)
        );
    }
}
