# some-s3, the single-node S3 server of the tests (s3s-fs with atomic
# conditional writes, which the lake's commits need).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p some-s3 && cp target/release/some-s3 /usr/local/bin/some-s3

FROM debian:bookworm-slim
COPY --from=build /usr/local/bin/some-s3 /usr/local/bin/some-s3
ENTRYPOINT ["some-s3"]
