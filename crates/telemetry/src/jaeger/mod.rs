//! An OTLP collector with the Jaeger UI in this process (otlp-embedded), on its own real-time runtime thread.

mod duration;

use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

pub use duration::{DurationError, parse_duration};

/// How many traces the collector keeps: enough that a run's failing trace is still listed when it ends.
pub const MAX_TRACES: u32 = 5000;

/// Why the collector could not start.
#[derive(Debug, thiserror::Error)]
pub enum JaegerError {
    #[error("cannot find a free port for OTLP: {0}")]
    OtlpPort(#[source] std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the collector {what}: {source}")]
    Start {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("the collector thread stopped before it listened")]
    Stopped,
}

pub struct EmbeddedJaeger {
    ui_addr: SocketAddr,
    otlp_addr: SocketAddr,
    handle: tokio::runtime::Handle,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

type Ready = Result<(SocketAddr, tokio::runtime::Handle), JaegerError>;

impl EmbeddedJaeger {
    /// Serve the Jaeger UI (and its HTTP API) on `ui_addr` and OTLP/gRPC on a free loopback port.
    pub fn start(ui_addr: SocketAddr) -> Result<Self, JaegerError> {
        let otlp_addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(JaegerError::OtlpPort)?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Ready>();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("epochlab-jaeger".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(source) => {
                        let _ = ready_tx.send(Err(JaegerError::Start {
                            what: "runtime",
                            source,
                        }));
                        return;
                    }
                };
                let handle = rt.handle().clone();
                rt.block_on(serve(ui_addr, otlp_addr, handle, ready_tx, shutdown_rx));
            })
            .map_err(|source| JaegerError::Start {
                what: "thread",
                source,
            })?;
        let (ui_addr, handle) = ready_rx.recv().map_err(|_| JaegerError::Stopped)??;
        Ok(Self {
            ui_addr,
            otlp_addr,
            handle,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        })
    }

    pub fn ui_addr(&self) -> SocketAddr {
        self.ui_addr
    }

    /// The endpoint exporters send to.
    pub fn otlp_endpoint(&self) -> String {
        format!("http://{}", self.otlp_addr)
    }

    /// The collector's runtime (exporters are built on it).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

/// Listen on both addresses, say so on `ready`, and serve until `shutdown`.
async fn serve(
    ui_addr: SocketAddr,
    otlp_addr: SocketAddr,
    handle: tokio::runtime::Handle,
    ready: std::sync::mpsc::Sender<Ready>,
    shutdown: oneshot::Receiver<()>,
) {
    let ui = match tokio::net::TcpListener::bind(ui_addr).await {
        Ok(l) => l,
        Err(source) => {
            let _ = ready.send(Err(JaegerError::Listen {
                addr: ui_addr,
                source,
            }));
            return;
        }
    };
    let incoming = match tonic::transport::server::TcpIncoming::bind(otlp_addr) {
        Ok(i) => i,
        Err(source) => {
            let _ = ready.send(Err(JaegerError::Listen {
                addr: otlp_addr,
                source,
            }));
            return;
        }
    };
    let state = otlp_embedded::State::new(otlp_embedded::Config {
        max_length: MAX_TRACES,
        max_memory_usage: 1 << 30,
    });
    let service =
        otlp_embedded::TraceServiceServer::new(otlp_embedded::TraceServiceImpl::new(state.clone()));
    let grpc = tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming(incoming);
    let app = otlp_embedded::ui_app(state, "/");
    let local = ui.local_addr().unwrap_or(ui_addr);
    let _ = ready.send(Ok((local, handle)));
    tokio::select! {
        biased;
        _ = shutdown => {}
        _ = grpc => {}
        _ = axum::serve(ui, app) => {}
    }
}

impl Drop for EmbeddedJaeger {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
