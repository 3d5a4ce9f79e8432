//! Shared helpers for the integration tests under `tests/tests/`.
