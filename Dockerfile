# syntax=docker/dockerfile:1
# Multi-stage build: static binaries of every flashsale command, run as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./ingress ./consumer ./reaper ./setup ./bench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
# The command is chosen per service in compose.yaml / Kubernetes.
ENTRYPOINT ["/usr/local/bin/ingress"]
