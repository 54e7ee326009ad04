# syntax=docker/dockerfile:1
#
# quotagate's image, for those who build with Docker. `make image` builds the same image
# with no Docker engine (tools/ociimage, docs/images.md); a test there parses this file
# and fails if the two drift apart: same binaries at the same paths, same ldflags, same
# base files, user, entrypoint and labels.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(make -s version) --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ) \
#     -t ghcr.io/quotagate/quotagate:$(make -s version) .

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
WORKDIR /src
# The API is its own module (api/go.mod), which go.mod replaces with ./api.
COPY go.mod go.sum ./
COPY api/go.mod api/go.sum ./api/
RUN go mod download
COPY . .
# Static binaries, stamped with the version, as `make build` and `make image` build them.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/quotagate/quotagate/internal/version.version=${VERSION} -X github.com/quotagate/quotagate/internal/version.revision=${REVISION}" \
      -o /out/ ./cmd/webhook ./cmd/manager
# The base: /etc/passwd and /etc/group with the nonroot user 65532, and /tmp. No shell,
# no CA bundle (the binaries trust only the cluster's CA, from the service account).
COPY tools/ociimage/rootfs/ /rootfs/
RUN mkdir -m 1777 /rootfs/tmp && chmod 644 /rootfs/etc/passwd /rootfs/etc/group

FROM scratch
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /rootfs/ /
COPY --from=build /out/webhook /out/manager /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/quotagate/quotagate" \
      org.opencontainers.image.title="quotagate" \
      org.opencontainers.image.description="quotagate's admission webhook (/webhook) and quota manager (/manager): pods wait behind a scheduling gate until their Budget has room"
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/manager"]
