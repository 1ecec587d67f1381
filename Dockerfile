# Build a static binary, then ship it alone in a minimal non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/turnstile ./cmd/turnstile

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/turnstile /turnstile
USER nonroot:nonroot
EXPOSE 6379
# The Raft port of a cluster node (--raft-addr 0.0.0.0:16379).
EXPOSE 16379
# Inside a container, listen on all interfaces; set --requirepass in production.
ENTRYPOINT ["/turnstile", "--bind", "0.0.0.0"]
