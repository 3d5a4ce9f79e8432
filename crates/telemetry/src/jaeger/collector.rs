//! The OTLP/gRPC trace service: every batch received goes into the [`SpanIndex`].

use otlp_embedded::TraceService;
use otlp_embedded::proto::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tonic::{Request, Response, Status};

use super::api::SharedIndex;

pub struct Collector {
    index: SharedIndex,
}

impl Collector {
    pub fn new(index: SharedIndex) -> Self {
        Self { index }
    }
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let batches = request.into_inner().resource_spans;
        let mut index = self.index.write().await;
        let rejected: u64 = batches.into_iter().map(|b| index.record(b)).sum();
        drop(index);
        // OTLP's partial success: the exporter logs the refused spans instead of retrying them.
        let partial_success = (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
            error_message: "spans without ids, or beyond the collector's byte budget for one trace"
                .into(),
        });
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success,
        }))
    }
}
