package ociimage_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/tools/ociimage"
)

// A Dockerfile, read the way BuildKit reads one: comment lines dropped, lines ending in
// a backslash joined to the next, then one instruction per line, split into stages at
// FROM. (BuildKit's own parser would bring its module's dependency upgrades with it.)
type instruction struct {
	cmd  string // upper case
	args string
}

type stage struct {
	from []string // FROM's words
	ins  []instruction
}

func parseDockerfile(text string) []stage {
	var stages []stage
	var line strings.Builder
	for raw := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && line.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(trimmed)
		cmd, args, _ := strings.Cut(strings.TrimSpace(line.String()), " ")
		line.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, stage{from: strings.Fields(in.args)})
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return stages
}

// all returns the arguments of every cmd instruction of the stage.
func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// words splits shell-like arguments, keeping double-quoted parts together and unquoted.
func words(s string) []string {
	var out []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

// expand replaces ${NAME} and $NAME with args[NAME].
func expand(s string, args map[string]string) string {
	return os.Expand(s, func(name string) string { return args[name] })
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfileBuildsWhatMakeImageBuilds(t *testing.T) {
	stages := parseDockerfile(readRepoFile(t, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("the Dockerfile has %d stages, want build and the final image", len(stages))
	}
	build, final := stages[0], stages[1]

	// The build stage: the Go of go.mod, the same packages, flags and ldflags as make image.
	goMod := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))
	wantFrom := []string{"--platform=$BUILDPLATFORM", "golang:" + goMod[1], "AS", "build"}
	if diff := cmp.Diff(wantFrom, build.from); diff != "" {
		t.Errorf("build stage FROM (-want +got):\n%s", diff)
	}
	goBuild := ""
	for _, run := range build.all("RUN") {
		if strings.Contains(run, "go build") {
			goBuild = run
		}
	}
	var pkgs []string
	for _, b := range ociimage.Binaries {
		pkgs = append(pkgs, b.Package)
	}
	w := words(goBuild)
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "-trimpath"} {
		if !slices.Contains(w, want) {
			t.Errorf("the Dockerfile's go build lacks %s: %s", want, goBuild)
		}
	}
	if i := slices.Index(w, "-o"); i < 0 || i+2 > len(w) || !cmp.Equal(w[i+2:], pkgs) || w[i+1] != "/out/" {
		t.Errorf("the Dockerfile's go build should end -o /out/ %s: %s", strings.Join(pkgs, " "), goBuild)
	}
	if i := slices.Index(w, "-ldflags"); i < 0 || i+1 >= len(w) {
		t.Errorf("the Dockerfile's go build has no -ldflags: %s", goBuild)
	} else {
		want := version.LDFlags("${VERSION}", "${REVISION}")
		if w[i+1] != want {
			t.Errorf("Dockerfile ldflags\n  %s\nwant (version.LDFlags)\n  %s", w[i+1], want)
		}
		makefile := regexp.MustCompile(`(?m)^GO_LDFLAGS\s*:?=\s*(.*)$`).FindStringSubmatch(readRepoFile(t, "Makefile"))
		if makefile == nil {
			t.Fatal("the Makefile defines no GO_LDFLAGS")
		}
		if got := strings.NewReplacer("$(VERSION)", "${VERSION}", "$(REVISION)", "${REVISION}").Replace(makefile[1]); got != w[i+1] {
			t.Errorf("Makefile GO_LDFLAGS\n  %s\nDockerfile\n  %s", makefile[1], w[i+1])
		}
	}
	for _, want := range []string{"VERSION=v0.0.0-dev", "REVISION=unknown", "TARGETOS", "TARGETARCH"} {
		if !slices.Contains(build.all("ARG"), want) {
			t.Errorf("the build stage does not declare ARG %s", want)
		}
	}
	if !slices.Contains(build.all("COPY"), ociimage.RootfsDir+"/ /rootfs/") {
		t.Errorf("the build stage does not copy the base's files from %s/ to /rootfs/", ociimage.RootfsDir)
	}
	if !slices.ContainsFunc(build.all("RUN"), func(s string) bool { return strings.Contains(s, "mkdir -m 1777 /rootfs/tmp") }) {
		t.Error("the build stage does not make /rootfs/tmp with mode 1777")
	}

	// The final stage: scratch, the base and the binaries, the config of make image.
	if diff := cmp.Diff([]string{"scratch"}, final.from); diff != "" {
		t.Errorf("final stage FROM (-want +got):\n%s", diff)
	}
	var wantCopies []string
	for _, b := range ociimage.Binaries {
		wantCopies = append(wantCopies, "/out"+b.Path)
	}
	wantCopy := []string{"--from=build /rootfs/ /", "--from=build " + strings.Join(wantCopies, " ") + " /"}
	if diff := cmp.Diff(wantCopy, final.all("COPY")); diff != "" {
		t.Errorf("final stage COPY (-want +got):\n%s", diff)
	}
	for cmd, want := range map[string][]string{
		"ENV":     {"PATH=" + ociimage.Path},
		"USER":    {ociimage.User},
		"WORKDIR": {ociimage.WorkingDir},
		"ARG":     {"VERSION=v0.0.0-dev", "REVISION=unknown", "CREATED=1970-01-01T00:00:00Z"},
	} {
		if diff := cmp.Diff(want, final.all(cmd)); diff != "" {
			t.Errorf("final stage %s (-want +got):\n%s", cmd, diff)
		}
	}
	var entrypoint []string
	if eps := final.all("ENTRYPOINT"); len(eps) != 1 || json.Unmarshal([]byte(eps[0]), &entrypoint) != nil {
		t.Errorf("final stage ENTRYPOINT %q: want one, in exec (JSON) form", eps)
	}
	if diff := cmp.Diff(ociimage.Entrypoint, entrypoint); diff != "" {
		t.Errorf("ENTRYPOINT (-want +got):\n%s", diff)
	}
	args := map[string]string{"VERSION": testMeta.Version, "REVISION": testMeta.Revision, "CREATED": ociimage.FormatCreated(testMeta.Created)}
	labels := map[string]string{}
	for _, l := range final.all("LABEL") {
		for _, kv := range words(l) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Errorf("LABEL %q: want key=value", kv)
			}
			labels[k] = expand(v, args)
		}
	}
	if diff := cmp.Diff(ociimage.Labels(testMeta), labels); diff != "" {
		t.Errorf("labels with VERSION, REVISION, CREATED set (-want +got):\n%s", diff)
	}
	for _, in := range final.ins {
		if !slices.Contains([]string{"ARG", "COPY", "ENV", "LABEL", "USER", "WORKDIR", "ENTRYPOINT"}, in.cmd) {
			t.Errorf("final stage has %s %s, which make image does not do", in.cmd, in.args)
		}
	}
}

// TestDockerContextHoldsTheSources: the base's files the Dockerfile copies are the ones
// make image embeds, and .dockerignore keeps every source the build needs.
func TestDockerContextHoldsTheSources(t *testing.T) {
	var files []string
	root := filepath.Join(repoRoot(t), filepath.FromSlash(ociimage.RootfsDir))
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"etc/group", "etc/passwd"}, files); diff != "" {
		t.Errorf("files in %s, which the Dockerfile copies whole (-want +got):\n%s", ociimage.RootfsDir, diff)
	}
	needed := []string{"go.mod", "go.sum", ociimage.RootfsDir, "internal/version", "api", "pkg"}
	for _, b := range ociimage.Binaries {
		needed = append(needed, strings.TrimPrefix(b.Package, "./"))
	}
	for pattern := range strings.SplitSeq(readRepoFile(t, ".dockerignore"), "\n") {
		pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "/")
		if pattern == "" || strings.HasPrefix(pattern, "#") {
			continue
		}
		for _, n := range needed {
			for p := n; p != "."; p = filepath.Dir(p) {
				if ok, _ := filepath.Match(pattern, p); ok {
					t.Errorf(".dockerignore pattern %q leaves %s out of the build context", pattern, n)
				}
			}
		}
	}
}
