# syntax=docker/dockerfile:1
# The image deploy/k8s/soak-job.yaml runs: the `epochlab` binary on a slim Debian, as a non-root user.
#   docker build -t epochlab:latest .
#   docker run --rm -v "$PWD/results:/results" epochlab:latest soak --seeds 0..1000 --results /results/run.jsonl
# (the directory mounted at /results must be writable by uid 10001).

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY . .
# The embedded Jaeger's build script needs protoc: `cargo xtask protoc` prints the path of the one vendored
# by the protoc-bin-vendored crate, so no system package is needed. .cargo/config.toml (copied above) gives
# the xtask alias and the RUSTC_BOOTSTRAP the executors need. The caches keep crates and build artifacts
# between builds; the binary is copied out of the target cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    PROTOC="$(cargo xtask protoc)" \
    && export PROTOC \
    && cargo build --release --locked -p epochlab-cli \
    && cp target/release/epochlab /usr/local/bin/epochlab

FROM debian:${DEBIAN_RELEASE}-slim
RUN groupadd --gid 10001 epochlab \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin epochlab \
    && mkdir /results \
    && chown epochlab:epochlab /results
COPY --from=build /usr/local/bin/epochlab /usr/local/bin/epochlab
USER 10001:10001
WORKDIR /results
EXPOSE 9464
ENTRYPOINT ["epochlab"]
CMD ["soak", "--help"]
