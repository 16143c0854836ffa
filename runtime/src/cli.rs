//! The command line of a service binary: `serve` (and later `migrate`, `info`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use async_graphql::ObjectType;
use clap::{Parser, Subcommand};

use crate::meta::ServiceMeta;
use crate::server::{Service, serve};
use crate::state::State;
use crate::storage::{Backend, Db, ddl};
use crate::value::cuid;

#[derive(Debug, Parser)]
#[command(about = "An svc service: a GraphQL backend generated from its data model")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the database tables if needed and serve the APIs.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Port to listen on.
    #[arg(long, env = "SVC_PORT", default_value_t = 60000)]
    port: u16,
    /// `sqlite://PATH` or `postgres://…`; default: a SQLite file under the service's `.svc/`.
    #[arg(long, env = "SVC_DATABASE_URL")]
    database_url: Option<String>,
    /// Service id used in API paths; default: the id stored in the database at first start.
    #[arg(long, env = "SVC_SERVICE_ID")]
    service_id: Option<String>,
    /// Alias accepted in API paths instead of the id; default: the service's name.
    #[arg(long, env = "SVC_ALIAS")]
    alias: Option<String>,
}

/// Entry point of a generated service binary.
pub fn run<Q, M>(service: &'static ServiceMeta, service_dir: &str) -> ExitCode
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => actix_web::rt::System::new()
            .block_on(serve_command::<Q, M>(service, service_dir, args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The default database: `<service dir>/.svc/data.db`, or `./.svc/data.db` when the directory the
/// service was built from is gone.
fn default_database_url(service_dir: &str) -> Result<String, String> {
    let base = if Path::new(service_dir).is_dir() {
        Path::new(service_dir).to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?
    };
    let dir = base.join(".svc");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    Ok(format!("sqlite://{}", dir.join("data.db").display()))
}

async fn serve_command<Q, M>(
    service: &'static ServiceMeta,
    service_dir: &str,
    args: ServeArgs,
) -> Result<(), String>
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let url = match args.database_url {
        Some(url) => url,
        None => default_database_url(service_dir)?,
    };
    let db = Db::connect(&url)
        .await
        .map_err(|e| format!("cannot connect to the database: {e}"))?;
    db.execute_script(&ddl::create_statements(service, db.backend()))
        .await
        .map_err(|e| format!("cannot create the tables: {e}"))?;
    let stored_id = stored_service_id(&db)
        .await
        .map_err(|e| format!("cannot read the service id: {e}"))?;
    let service_id = args.service_id.unwrap_or(stored_id);
    let alias = args.alias.unwrap_or_else(|| service.name.to_owned());
    let state = Arc::new(State { db, service });
    let svc = Service::<Q, M>::new(state, service_id.clone(), alias.clone());

    let base = format!("http://localhost:{}", args.port);
    let shown_url = redact(&url);
    println!("svc: serving `{alias}` (service id {service_id}) on {shown_url}");
    println!("  Simple API   {base}/simple/v1/{service_id}  (alias /simple/v1/{alias})");
    println!("  Playground   GET {base}/simple/v1/{service_id}");
    println!("  Health       {base}/status");
    serve(svc, args.port)
        .await
        .map_err(|e| format!("cannot serve on port {}: {e}", args.port))
}

/// The service id stored at first start (a new cuid then).
async fn stored_service_id(db: &Db) -> Result<String, sea_orm::DbErr> {
    use sea_orm::ConnectionTrait;
    let table = ddl::META_TABLE;
    let placeholder = match db.backend() {
        Backend::Sqlite => "?",
        Backend::Postgres => "$1",
    };
    let insert = sea_orm::Statement::from_sql_and_values(
        db.reader().get_database_backend(),
        format!(
            "INSERT INTO \"{table}\" (\"key\", \"value\") VALUES ('service_id', {placeholder}) ON CONFLICT DO NOTHING"
        ),
        [sea_orm::Value::String(Some(cuid()))],
    );
    let tx = db.begin().await?;
    tx.execute_raw(insert).await?;
    let select = sea_orm::Statement::from_string(
        tx.get_database_backend(),
        format!("SELECT \"value\" FROM \"{table}\" WHERE \"key\" = 'service_id'"),
    );
    let row = tx.query_one_raw(select).await?;
    tx.commit().await?;
    match row {
        Some(row) => row.try_get_by_index(0),
        None => Err(sea_orm::DbErr::RecordNotFound("service id".into())),
    }
}

/// Hides the password of a database URL before printing it.
fn redact(url: &str) -> String {
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
