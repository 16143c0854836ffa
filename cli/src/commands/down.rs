//! `svc down`: stops the local server `svc deploy` started.

use anyhow::Result;

use crate::project::Service;
use crate::server;

pub fn down() -> Result<()> {
    let service = Service::find()?;
    match server::stop(&service)? {
        Some(pid) => println!("Stopped the server (pid {pid})."),
        None => println!("No local server is running."),
    }
    Ok(())
}
