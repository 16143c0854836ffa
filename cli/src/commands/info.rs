//! `svc info`: the service's target, server state, endpoints and database.

use anyhow::Result;
use serde_json::{Value, json};

use super::context::{Context, TargetArg};
use crate::{rc, server};

pub fn info(target: &TargetArg, as_json: bool) -> Result<()> {
    let ctx = Context::load(target)?;
    let pid = if ctx.target.is_local() {
        server::running(&ctx.service)
    } else {
        None
    };
    let id = ctx.project_id()?;
    let base = ctx.base_url().ok();
    let database_url = ctx.database_url().unwrap_or_else(|| {
        format!(
            "sqlite://{}",
            ctx.service.state_dir().join("data.db").display()
        )
    });
    let endpoints = base.as_ref().map(|base| {
        json!({
            "simple": format!("{base}/simple/v1/{id}"),
            "playground": format!("{base}/simple/v1/{id}"),
            "relay": format!("{base}/relay/v1/{id}"),
            "subscriptions": format!("{}/subscriptions/v1/{id}", base.replacen("http", "ws", 1)),
            "file": format!("{base}/file/v1/{id}"),
            "files": format!("{base}/files/v1/{id}"),
            "images": format!("{base}/images/v1/{id}"),
            "system": format!("{base}/system"),
        })
    });
    let info = json!({
        "serviceDir": ctx.service.dir.display().to_string(),
        "target": ctx.target.name,
        "cluster": ctx.target.cluster,
        "serviceId": ctx.target.service_id,
        "port": ctx.port(),
        "pid": pid,
        "running": if ctx.target.is_local() { Value::from(pid.is_some()) } else { Value::Null },
        "databaseUrl": if ctx.target.is_local() { Value::from(rc::redact(&database_url)) } else { Value::Null },
        "endpoints": endpoints,
    });
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).unwrap_or_default()
        );
        return Ok(());
    }
    println!("Service:     {}", ctx.service.dir.display());
    println!(
        "Target:      {} ({}/{})",
        ctx.target.name,
        ctx.target.cluster,
        ctx.target
            .service_id
            .as_deref()
            .unwrap_or("not deployed yet")
    );
    if ctx.target.is_local() {
        match (pid, ctx.port()) {
            (Some(pid), Some(port)) => println!("Server:      running, pid {pid}, port {port}"),
            (None, Some(port)) => println!("Server:      stopped (port {port})"),
            _ => println!("Server:      never deployed"),
        }
        println!("Database:    {}", rc::redact(&database_url));
    }
    if let Some(base) = base {
        println!("Simple API:  {base}/simple/v1/{id}");
        println!("Playground:  {base}/simple/v1/{id}");
        println!("Relay API:   {base}/relay/v1/{id}");
        println!("File API:    {base}/file/v1/{id}");
        println!("Images:      {base}/images/v1/{id}");
        println!("System API:  {base}/system");
    }
    Ok(())
}
