//! `svc playground`: the GraphQL playground's URL, opened in a browser with `--web`.

use std::process::Command;

use anyhow::{Context as _, Result};

use super::context::{Context, TargetArg};

pub fn playground(target: &TargetArg, web: bool) -> Result<()> {
    let ctx = Context::load(target)?;
    let url = format!("{}/simple/v1/{}", ctx.base_url()?, ctx.project_id()?);
    println!("{url}");
    if web {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        Command::new(opener)
            .arg(&url)
            .status()
            .with_context(|| format!("cannot open a browser with `{opener}`"))?;
    }
    Ok(())
}
