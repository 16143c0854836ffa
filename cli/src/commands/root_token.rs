//! `svc root-token`: lists the service's root tokens, or prints the one named, read through the
//! System API with a platform token.

use anyhow::{Result, anyhow};
use serde_json::Value;

use super::context::{Context, TargetArg, graphql, platform_token};

pub fn root_token(target: &TargetArg, name: Option<&str>) -> Result<()> {
    let ctx = Context::load(target)?;
    ctx.require_running()?;
    let base = ctx.base_url()?;
    let id = ctx.project_id()?;
    let token = platform_token(&ctx)?;
    let query = format!(
        "{{ viewer {{ project(id: {}) {{ permanentAuthTokens {{ edges {{ node {{ name token }} }} }} }} }} }}",
        Value::from(id.clone())
    );
    let data = graphql(&format!("{base}/system"), &token, &query)?;
    let edges = data["viewer"]["project"]["permanentAuthTokens"]["edges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tokens: Vec<(String, String)> = edges
        .iter()
        .map(|e| {
            (
                e["node"]["name"].as_str().unwrap_or_default().to_owned(),
                e["node"]["token"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    match name {
        Some(name) => match tokens.iter().find(|(n, _)| n == name) {
            Some((_, token)) => {
                println!("{token}");
                Ok(())
            }
            None => Err(anyhow!(
                "the service has no root token named `{name}`; its root tokens: {}",
                if tokens.is_empty() {
                    "none (add names to `rootTokens:` in svc.yml and deploy)".to_owned()
                } else {
                    tokens
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        },
        None => {
            if tokens.is_empty() {
                eprintln!(
                    "The service has no root tokens (add names to `rootTokens:` in svc.yml)."
                );
            }
            for (name, _) in tokens {
                println!("{name}");
            }
            Ok(())
        }
    }
}
