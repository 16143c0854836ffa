//! Running a service inside another program, on a background thread (the behaviour tests and the
//! benchmarks do).

use std::sync::Arc;

use super::Options;
use super::start::{StartError, start};
use crate::engine::Observer;
use crate::http::Closing;
use crate::model::ServiceDef;

/// A service running on a background thread.
pub struct Running {
    /// The port the server listens on (the one picked when the options asked for 0).
    pub port: u16,
    /// The service id in API paths: the option's, or the one stored in the database.
    pub service_id: String,
    handle: actix_web::dev::ServerHandle,
    closing: Closing,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.closing.close();
            self.closing.wait_closed(std::time::Duration::from_secs(3));
            let handle = self.handle.clone();
            // The server's own system drives the stop; wait for it from this thread.
            let stopper = std::thread::spawn(move || {
                actix_web::rt::System::new().block_on(handle.stop(true));
            });
            let _ = stopper.join();
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the service on a background thread and returns once it listens.
pub fn spawn<S: ServiceDef>(options: Options) -> Result<Running, StartError> {
    spawn_observed::<S>(options, Vec::new())
}

/// [`spawn`] with `observers`, which are told of every committed mutation.
pub fn spawn_observed<S: ServiceDef>(
    options: Options,
    observers: Vec<Arc<dyn Observer>>,
) -> Result<Running, StartError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            match start::<S>(options, observers).await {
                Ok(started) => {
                    let handle = started.server.handle();
                    let closing = started.closing.clone();
                    let _ = tx.send(Ok((started.port, started.service_id, handle, closing)));
                    let _ = started.server.await;
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
    });
    match rx.recv() {
        Ok(Ok((port, service_id, handle, closing))) => Ok(Running {
            port,
            service_id,
            handle,
            closing,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(StartError::ThreadEnded),
    }
}
