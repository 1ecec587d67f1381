# Build a static binary, then ship it alone in a minimal non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/turnstile ./cmd/turnstile && \
    mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/turnstile /turnstile
# The data directory (--dir /data): snapshots, the append-only log and the
# clock's state. Owned by the image's non-root user (65532), and a volume,
# so the data outlives the container: mount one (-v turnstile-data:/data).
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
VOLUME ["/data"]
EXPOSE 6379
# The Raft port of a cluster node (--raft-addr 0.0.0.0:16379).
EXPOSE 16379
# The image has no shell and no redis-cli: the binary sends PING itself.
# PONG, or NOAUTH when a password is set, is healthy. A TLS-only server
# (--port 0) needs its own check: see README.md, Container.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/turnstile", "ping", "-p", "6379"]
# Inside a container, listen on all interfaces. protected-mode stays on:
# until a password is set (--requirepass, best from a config file), clients
# from outside the container get Redis's DENIED error.
ENTRYPOINT ["/turnstile", "--bind", "0.0.0.0", "--dir", "/data"]
