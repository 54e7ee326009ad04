// Package deploy is `make deploy IMG=registry/repository:tag`: quotagate from a checkout
// onto the cluster of the current kubeconfig, with no Docker and no helm CLI.
//
//  1. Push takes the image `make image` wrote (the OCI layout under _output/image/oci,
//     read by LayoutIndex) and pushes its multi-platform index to the registry IMG
//     names, with the credentials of the standard Docker config (authn.DefaultKeychain:
//     ~/.docker/config.json, $DOCKER_CONFIG and its credential helpers). For a kind or
//     k3d cluster, which pulls from no registry of yours, WriteArchive writes an OCI
//     archive instead, its index named IMG (io.containerd.image.name) so that `kind load
//     image-archive` and `k3d image import` import it under that name.
//  2. Published.Values are the chart values that run that image: image.repository, and
//     image.digest (pinned by content) after a push or image.tag after an archive.
//  3. Apply is `helm upgrade --install` with the Helm SDK.
//
// Run does the three for hack/deploy (and Uninstall for `make undeploy`). The e2e tests
// take the same path: they push to an in-process registry and install through
// test/localinstall, which runs its Helm actions through Apply and Uninstall.
package deploy
