# Recipes for what people type. `just --list` shows them.
# Every recipe runs the same scripts the README names, so they set up
# what they need on a fresh machine.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The main job on the embedded default: models, queries, a small world, one
# query of every task with the built-in model over HTTP, judged, reported.
demo *ARGS:
    infra/demo.sh {{ARGS}}

# Every test (installs and starts what the tests need first).
test *ARGS:
    infra/test.sh {{ARGS}}

# Paper-scale lake benchmarks: synth posts/s, SearchPost latency.
bench-lake:
    source infra/env.sh && cargo bench -p some-workers --bench lake

# Harness throughput: episodes/s with an instant scripted endpoint.
bench-episodes:
    source infra/env.sh && cargo bench -p some-workers --bench episodes

# All real queries on the paper-scale world through RabbitMQ with 2 workers.
bench-distributed:
    source infra/env.sh && ensure_rabbitmq && cargo build --release --locked --workspace --bins && cargo bench --locked --workspace --bench distributed

# Simulation: 10,000 agents for one simulated week, in-process and through RabbitMQ with 2 workers.
bench-sim:
    source infra/env.sh && ensure_rabbitmq && cargo build --release --locked --workspace --bins --bench sim_week && cargo bench --locked --workspace --bench sim_week

# CPU kernels: top-k bandwidth, batch top-k and clustering against numpy (and numba, as the reference uses).
bench-kernels:
    source infra/env.sh && ensure_numpy && cargo bench -p some-jobs --bench kernels

# The CUDA kernels on a GPU: queries/s and bandwidth against the device's
# peak (prints why it is skipped where there is no GPU).
bench-cuda:
    infra/cuda-check.sh --bench

# The CUDA kernels compile without a GPU (NVRTC + ptxas), as CI checks.
cuda-check:
    infra/cuda-check.sh --self-test

# The nightly regression evaluation (sampled run vs the stored baseline).
nightly:
    infra/nightly.sh

# RabbitMQ, an S3 server and N workers on this machine (`local-down` stops them).
local-up WORKERS="2":
    infra/local.sh up {{WORKERS}}

local-down:
    infra/local.sh down

# Run `some` (the build the demo and the tests share) against $SOME_LAKE (default ./some-lake).
some *ARGS:
    source infra/env.sh && build_workspace && "$CARGO_TARGET_DIR/debug/some" {{ARGS}}

# SQL over the lake.
sql QUERY:
    just some sql "{{QUERY}}"

# Formatting, clippy, and the direction of dependencies between crates.
lint:
    source infra/env.sh && cargo fmt --all --check && cargo clippy --workspace --all-targets -- -D warnings
    infra/check-deps.sh

fmt:
    cargo fmt --all
