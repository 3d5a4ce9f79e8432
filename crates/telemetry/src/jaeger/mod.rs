//! An OTLP collector with the Jaeger UI in this process, on its own real-time runtime thread.
//!
//! The spans go into epochlab's own bounded [`SpanIndex`] (`index`), which serves Jaeger's query API
//! (`api`: search by service, operation, tags, duration and time, as Jaeger's own store does). otlp-embedded
//! supplies the OTLP protocol types and the Jaeger UI's assets; its own store is not used (its search filters
//! only by service and root operation).

mod api;
mod collector;
mod duration;
mod index;
mod local;
mod query;
mod render;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// HTTP/2 flow-control windows of the OTLP server.
const OTLP_WINDOW_BYTES: u32 = 8 << 20;

pub use duration::{DurationError, parse_duration};
pub use query::{DEFAULT_LIMIT, QueryError, TraceQuery};

use index::{IndexLimits, SpanIndex};

/// How many traces the collector keeps: enough that a run's failing trace is still listed when it ends.
pub const MAX_TRACES: u32 = 5000;

/// The collector's budget for its spans (estimated as each span's encoded size plus a fixed overhead). When
/// either bound is exceeded the least recently updated trace goes.
pub const MAX_INDEX_BYTES: usize = 1 << 30;

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
    index: api::SharedIndex,
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
        // Bound here and kept until the server takes it: a port picked, dropped and bound again could be
        // taken meanwhile by another process (tests run side by side).
        let otlp = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(JaegerError::OtlpPort)?;
        let otlp_addr = otlp.local_addr().map_err(JaegerError::OtlpPort)?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Ready>();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let limits = IndexLimits {
            max_traces: MAX_TRACES as usize,
            max_bytes: MAX_INDEX_BYTES,
        };
        let index = Arc::new(tokio::sync::RwLock::new(SpanIndex::new(limits)));
        let served = index.clone();
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
                let listen = Listen {
                    ui_addr,
                    otlp,
                    index: served,
                };
                rt.block_on(serve(listen, handle, ready_tx, shutdown_rx));
            })
            .map_err(|source| JaegerError::Start {
                what: "thread",
                source,
            })?;
        let (ui_addr, handle) = ready_rx.recv().map_err(|_| JaegerError::Stopped)??;
        Ok(Self {
            index,
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

    /// A span processor that puts a run's spans straight into this collector's index when the run is flushed
    /// (no OTLP/gRPC round trip); the run started at `wall0`.
    pub fn processor(&self, wall0: std::time::SystemTime) -> local::LocalProcessor {
        local::LocalProcessor::new(self.index.clone(), wall0)
    }

    /// The collector's runtime (exporters are built on it).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

/// Where the collector listens, and the index it serves.
struct Listen {
    ui_addr: SocketAddr,
    /// OTLP/gRPC's listener, bound already.
    otlp: std::net::TcpListener,
    index: api::SharedIndex,
}

/// Listen on both addresses, say so on `ready`, and serve until `shutdown`.
async fn serve(
    Listen {
        ui_addr,
        otlp,
        index,
    }: Listen,
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
    let otlp_addr = otlp.local_addr().ok();
    let incoming = match tokio::net::TcpListener::from_std(otlp) {
        // No Nagle delay on a batch's last segment, which the exporter waits for at the end of a run.
        Ok(l) => tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true)),
        Err(source) => {
            let _ = ready.send(Err(JaegerError::Listen {
                addr: otlp_addr.unwrap_or(ui_addr),
                source,
            }));
            return;
        }
    };
    let service = otlp_embedded::TraceServiceServer::new(collector::Collector::new(index.clone()));
    // Windows large enough that a batch of spans arrives without waiting for flow-control updates.
    let grpc = tonic::transport::Server::builder()
        .initial_stream_window_size(OTLP_WINDOW_BYTES)
        .initial_connection_window_size(OTLP_WINDOW_BYTES)
        .add_service(service)
        .serve_with_incoming(incoming);
    // otlp-embedded's UI router serves the assets; its store stays empty (our routes answer the API).
    let assets = otlp_embedded::State::new(otlp_embedded::Config {
        max_length: 1,
        max_memory_usage: 0,
    });
    let app = api::router(index, otlp_embedded::ui_app(assets, "/"));
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
