FROM rust:1.95-bookworm AS build
RUN cargo install s3s-fs --version 0.14.1 --features binary --locked --root /out
FROM debian:bookworm-slim
COPY --from=build /out/bin/s3s-fs /usr/local/bin/s3s-fs
ENTRYPOINT ["s3s-fs"]
