// Command image builds quotagate's multi-platform OCI image with no Docker engine (see
// package tools/ociimage) and prints what it wrote and how much each platform weighs.
// `make image` runs it:
//
//	go run ./hack/image --version v0.2.0 --revision <commit> --ldflags "$(GO_LDFLAGS)" \
//	    --layout _output/image/oci --archive _output/image/quotagate-v0.2.0.oci.tar
//
// The created time is --source-date-epoch (default $SOURCE_DATE_EPOCH), else the commit
// time of HEAD, so that two builds of one commit give the same digests.
package main
