// Package release writes quotagate's release artifacts for one version into a
// directory: the packaged Helm chart, the CRDs, a kustomize-rendered install.yaml, the
// kubectl plugin for each platform with its krew manifest, the image tarball `make
// image` built, a CycloneDX SBOM of each artifact that holds binaries (sbom.go),
// checksums.txt over all of them, and an in-toto provenance statement of everything
// (provenance.go).
//
// Run does it step by step, timing each, and returns the artifacts with their sizes;
// hack/release is its command line and `make release VERSION=vX.Y.Z` the way to run it.
// Nothing in the working tree is rewritten: the chart's version and appVersion are set
// in the package only, the image tag in the rendered install.yaml only.
package release
