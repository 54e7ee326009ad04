// Package ociimage builds quotagate's container image without a Docker engine: it
// cross-compiles the static /webhook and /manager binaries for each platform, puts them
// on a base it makes itself, and writes a multi-platform OCI image index as an OCI
// layout directory and as one tar of that layout (what `skopeo copy oci-archive:` reads).
//
// The base is two files and a directory, not a distribution image: /etc/passwd and
// /etc/group with the nonroot user and group 65532 (the chart's runAsUser and runAsGroup),
// and /tmp (1777). There is no shell and no CA bundle: the binaries talk only to the
// cluster's API server, trusted through the service account's ca.crt, and serve TLS
// with the certificate mounted from a Secret. Copying the build host's bundle would make
// the image depend on the host; a vendored bundle would be one more thing to keep fresh
// for a trust no quotagate connection uses.
//
// Everything in the image is fixed by its inputs: every file's time and the config's
// created time are the Metadata's Created (the commit time by default, or
// SOURCE_DATE_EPOCH), owners are root, and layers are gzipped with a fixed header, so
// two builds of one commit with one Go toolchain give the same digests.
//
// The repository's Dockerfile builds the same image with Docker; a test compares it
// with the constants here.
package ociimage
