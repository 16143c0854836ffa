//! `svc login`: stores a platform token, or a cluster's secret, in `~/.svcrc`.

use anyhow::Result;

use crate::rc;

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The platform token (or, with `--cluster`, the cluster's secret) to store.
    #[arg(short = 'T', long, env = "SVC_PLATFORM_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Store the token as `clusters.<NAME>.clusterSecret` instead of `platformToken`.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// With `--cluster`: the cluster's base URL, e.g. `http://localhost:60000`.
    #[arg(long, value_name = "URL", requires = "cluster")]
    pub host: Option<String>,
}

pub fn login(args: &LoginArgs) -> Result<()> {
    let mut global = rc::global()?;
    match &args.cluster {
        Some(cluster) => {
            global.set(
                &["clusters", cluster, "clusterSecret"],
                serde_yaml::Value::from(args.token.clone()),
            );
            if let Some(host) = &args.host {
                global.set(
                    &["clusters", cluster, "host"],
                    serde_yaml::Value::from(host.clone()),
                );
            }
        }
        None => global.set(
            &["platformToken"],
            serde_yaml::Value::from(args.token.clone()),
        ),
    }
    global.save()?;
    println!(
        "Stored the {} in {}.",
        match &args.cluster {
            Some(cluster) => format!("secret of the cluster `{cluster}`"),
            None => "platform token".to_owned(),
        },
        global.path.display()
    );
    Ok(())
}
