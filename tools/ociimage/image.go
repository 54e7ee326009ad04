package ociimage

import (
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// What the image holds, and how it runs. The Dockerfile must say the same (a test
// checks it); the chart's podSecurityContext runs the containers as UID and GID.
const (
	// UID and GID are the nonroot user and group of /etc/passwd and /etc/group.
	UID = 65532
	GID = 65532
	// WorkingDir is the containers' working directory.
	WorkingDir = "/"
	// Path is the PATH of the image's environment (what Docker gives an image built
	// FROM scratch); the binaries sit at the root, not on it, and are named absolutely.
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

	// Source, Title and Description are the image's org.opencontainers.image labels.
	Source      = "https://github.com/quotagate/quotagate"
	Title       = "quotagate"
	Description = "quotagate's admission webhook (/webhook) and quota manager (/manager): " +
		"pods wait behind a scheduling gate until their Budget has room"
)

// User is the image config's user, numeric so that the kubelet can check runAsNonRoot
// without reading /etc/passwd.
var User = strconv.Itoa(UID) + ":" + strconv.Itoa(GID)

// Entrypoint runs the manager; the chart sets the command of each container (/webhook
// or /manager) itself.
var Entrypoint = []string{"/manager"}

// Binary is one program in the image: the Go package built into Path.
type Binary struct {
	Path    string // absolute, in the image
	Package string // relative to the module root
}

// Binaries are the programs in the image. Each Path is "/" and the base name of its
// Package, the name `go build -o dir/` gives it.
var Binaries = []Binary{
	{Path: "/webhook", Package: "./cmd/webhook"},
	{Path: "/manager", Package: "./cmd/manager"},
}

// Platforms are the platforms of the image index, in its order.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// The org.opencontainers.image keys the image's labels and the index's annotations use.
const (
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelCreated     = "org.opencontainers.image.created"
	// RefName names the index in the OCI layout's index.json: the version, i.e. the tag.
	RefName = "org.opencontainers.image.ref.name"
)

// Metadata is what varies from one build to the next.
type Metadata struct {
	Version  string    // e.g. v0.2.0: the tag, and what the binaries say of themselves
	Revision string    // the git commit
	Created  time.Time // the commit time or SOURCE_DATE_EPOCH, never the clock
}

// Labels are the image config's labels and the index's annotations.
func Labels(m Metadata) map[string]string {
	return map[string]string{
		LabelVersion:     m.Version,
		LabelRevision:    m.Revision,
		LabelSource:      Source,
		LabelTitle:       Title,
		LabelDescription: Description,
		LabelCreated:     FormatCreated(m.Created),
	}
}

// FormatCreated is the RFC 3339 form, in UTC, of a created time.
func FormatCreated(t time.Time) string { return t.UTC().Format(time.RFC3339) }
