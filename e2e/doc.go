// Package e2e holds the end-to-end tests of quotagate: the user's journey on a real
// local control plane (test/localcluster) with quotagate installed from its Helm
// chart (test/localinstall). The tests carry the build tag e2e:
//
//	make e2e    # go test -count=1 -timeout 30m -tags e2e -v ./e2e/...
//
// They need the control plane's binaries (`make tools`).
package e2e
