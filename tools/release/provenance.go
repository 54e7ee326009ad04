package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// ProvenanceFile is the release's in-toto provenance statement.
const ProvenanceFile = "provenance.intoto.json"

// The provenance is an in-toto Statement v1 (https://in-toto.io/Statement/v1) whose
// predicate is SLSA Provenance v1 (https://slsa.dev/provenance/v1), built with the
// in-toto attestation Go types. Its subjects are every other file of the release and
// the image index, each with its SHA-256: what a user downloads can be checked against
// it. It says what built them (`make release` at a commit of the repository, with this
// Go toolchain and these settings) and where (GitHub Actions' release workflow, or a
// machine). It is not signed here: the statement is the payload a signer (cosign
// attest, a DSSE envelope) wraps. Like the rest of the release it carries no time, so
// that one commit releases the same bytes each time.

// ProvenanceBuildType names how the release is built: docs/releasing.md says it.
const ProvenanceBuildType = "https://github.com/quotagate/quotagate/blob/main/docs/releasing.md#sboms-and-provenance"

// provenanceInput is what the provenance says.
type provenanceInput struct {
	Version, Revision string
	// Subjects are the release's files by name, and the image by reference, with their
	// SHA-256 in hex.
	Subjects []provenanceSubject
	// Settings are the build settings the binaries were built with (CGO_ENABLED,
	// GOFLAGS, the platforms).
	Settings map[string]any
	// BuilderID is the builder: the release workflow on GitHub Actions, else the
	// machine that ran make release.
	BuilderID string
}

type provenanceSubject struct{ Name, SHA256 string }

// builderID is who ran the release: the GitHub Actions workflow run, or `make release`
// on a machine outside CI.
func builderID() string {
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		repo, ref, run := os.Getenv("GITHUB_REPOSITORY"), os.Getenv("GITHUB_WORKFLOW_REF"), os.Getenv("GITHUB_RUN_ID")
		return fmt.Sprintf("https://github.com/%s/actions/runs/%s#%s", repo, run, ref)
	}
	return "https://github.com/quotagate/quotagate/blob/main/docs/releasing.md#what-make-release-writes"
}

// newProvenance is the in-toto statement for in.
func newProvenance(in provenanceInput) (*intoto.Statement, error) {
	subjects := slices.Clone(in.Subjects)
	slices.SortFunc(subjects, func(a, b provenanceSubject) int { return strings.Compare(a.Name, b.Name) })
	st := &intoto.Statement{Type: intoto.StatementTypeUri, PredicateType: "https://slsa.dev/provenance/v1"}
	for _, s := range subjects {
		st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: s.Name, Digest: map[string]string{"sha256": s.SHA256}})
	}
	external, err := structpb.NewStruct(map[string]any{
		"repository": "https://github.com/quotagate/quotagate",
		"ref":        "refs/tags/" + in.Version,
		"version":    in.Version,
		"command":    "make release VERSION=" + in.Version,
	})
	if err != nil {
		return nil, err
	}
	internal, err := structpb.NewStruct(in.Settings)
	if err != nil {
		return nil, fmt.Errorf("the build settings: %w", err)
	}
	prov := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{
			BuildType:          ProvenanceBuildType,
			ExternalParameters: external,
			InternalParameters: internal,
			ResolvedDependencies: []*intoto.ResourceDescriptor{{
				Uri:    "git+https://github.com/quotagate/quotagate@refs/tags/" + in.Version,
				Digest: map[string]string{"gitCommit": in.Revision},
			}},
		},
		RunDetails: &slsa.RunDetails{
			Builder: &slsa.Builder{Id: in.BuilderID, Version: map[string]string{"go": runtime.Version()}},
		},
	}
	raw, err := protojson.Marshal(prov)
	if err != nil {
		return nil, err
	}
	st.Predicate = &structpb.Struct{}
	if err := protojson.Unmarshal(raw, st.Predicate); err != nil {
		return nil, err
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the provenance statement: %w", err)
	}
	return st, nil
}

// writeProvenance writes st as indented JSON with sorted keys: protojson's own output
// varies its spacing from run to run, and the release's bytes must not.
func writeProvenance(st *intoto.Statement, path string) error {
	raw, err := protojson.Marshal(st)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// provenanceSubjects are the files names of dir with their SHA-256, and the image
// index by reference when the release has one.
func provenanceSubjects(dir string, names []string, imageDigest, version string) ([]provenanceSubject, error) {
	var out []provenanceSubject
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, provenanceSubject{Name: n, SHA256: sum})
	}
	if imageDigest != "" {
		hex, ok := strings.CutPrefix(imageDigest, "sha256:")
		if !ok {
			return nil, fmt.Errorf("image digest %q is not sha256", imageDigest)
		}
		out = append(out, provenanceSubject{Name: ImageRepository + ":" + version, SHA256: hex})
	}
	return out, nil
}
