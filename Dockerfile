# syntax=docker/dockerfile:1
# Multi-stage build: static binaries of every flashsale command, run as non-root.
# .dockerignore keeps .stack/ (local secrets and data) out of the context.
#   docker build --build-arg VERSION=v1.2.0 --build-arg REVISION=$(git rev-parse HEAD) .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
# The context has no .git, so the revision comes in as a build argument and
# lands in flashsale_build_info and -version (pkg/buildinfo).
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags="-s -w -X github.com/flashsale-dev/flashsale/pkg/buildinfo.Version=${VERSION} -X github.com/flashsale-dev/flashsale/pkg/buildinfo.Revision=${REVISION}" \
    -o /out/ ./ingress ./consumer ./reaper ./setup ./bench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
# The command is chosen per service in compose.yaml / Kubernetes.
ENTRYPOINT ["/usr/local/bin/ingress"]
