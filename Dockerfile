# nsman's image: a static binary on distroless, run as uid/gid 65532.
#
#   make image                                        # this machine's platform, tags ghcr.io/nsman/nsman:$(VERSION) without its v
#   make image PLATFORMS=linux/amd64,linux/arm64      # multi-arch, with docker buildx
#   docker build --build-arg VERSION=v1.2.3 -t nsman .
#
# The build stage runs on the builder's own platform and cross-compiles for
# the target's (TARGETOS/TARGETARCH, which BuildKit sets per platform): a
# multi-arch build needs no emulation, since the binary is pure Go.
#
# Both bases are pinned by their multi-arch index digest, so a rebuild of
# the same commit uses the same toolchain and base layers; the tag beside
# each digest says what it is (Docker ignores the tag when a digest is
# given). Bump a digest deliberately, in a reviewed change: resolve the new
# one with `docker buildx imagetools inspect golang:1.26`. The release
# workflow builds the binaries with this same Go version (it reads it here).

# Go 1.26.8; go.mod needs 1.26.
FROM --platform=$BUILDPLATFORM golang:1.26.8@sha256:6c2a5538f964f1c82f97ad14988bf05de100d922d159d0e398b54c7b0ca0c6c9 AS build
WORKDIR /src
# Modules first, so a change to the code alone reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -ldflags "-s -w -X github.com/nsman/nsman/cmd.version=${VERSION}" -o /nsman ./cmd/nsman

# No shell, no package manager. Webhook TLS does not depend on the base's CA
# bundle: the binary embeds fallback roots, used where the base has none
# (internal/roots).
# static-debian13 is the maintained line (distroless no longer updates its
# -debian12 images).
FROM gcr.io/distroless/static-debian13:nonroot@sha256:e2e927ec666bae08560abb3c55d0659eceabb657f56b6782ab500a9fc7f555e3
# OCI image annotations (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
# make image and the release workflow pass VERSION (the git tag or describe)
# and REVISION (the commit).
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="nsman" \
	org.opencontainers.image.description="Delete, scale down or notify ephemeral namespaces when their NamespaceManager says so" \
	org.opencontainers.image.source="https://github.com/nsman/nsman" \
	org.opencontainers.image.licenses="Apache-2.0" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}"
COPY --from=build /nsman /nsman
# Apache-2.0 4(a): the license travels with the binary.
COPY LICENSE /LICENSE
# The base's nonroot user, by number, so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/nsman"]
