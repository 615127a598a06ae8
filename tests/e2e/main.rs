//! End-to-end tests: the `some` command against real files, a real lake on a
//! local folder and on a real S3 server. One binary, one module per area.

mod annotation;
mod delta;
mod distributed;
mod embedder;
mod episodes;
mod harness;
mod ingestion;
mod judging;
mod lake;
mod mcp;
mod parity;
mod queries;
mod queue_conformance;
mod served;
mod sim;
mod sim_research;
mod sim_review;
mod tools;
mod view;
mod world;
mod world_backend_conformance;
