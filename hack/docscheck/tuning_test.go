package docscheck

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	manager "github.com/quotagate/quotagate/cmd/manager/app"
	"github.com/quotagate/quotagate/tools/chartrender"
)

// tuningDoc has the table of the manager's flags.
const tuningDoc = "docs/tuning.md"

// tuningRow is a row of docs/tuning.md's table of the manager's flags.
type tuningRow struct {
	l        line
	flags    []string
	defaults []string
	values   []string // chart values, none when the chart does not set the flag
}

var tuningFlag = regexp.MustCompile("`(--?[a-z][a-z0-9-]*)`")

// tuningTable reads docs/tuning.md's table of the manager's flags: | flags | default | chart
// value | what it does |. A flag abbreviated after another (`--leader-elect-lease-duration`
// / `-renew-deadline`) is the manager flag that ends so.
func tuningTable(t *testing.T, flags *pflag.FlagSet) []tuningRow {
	t.Helper()
	var rows []tuningRow
	for _, l := range readLines(t, tuningDoc) {
		if !strings.HasPrefix(l.text, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("%s: want 4 cells (flag, default, chart value, what it does), found %d", l.pos(), len(cells))
		}
		r := tuningRow{l: l, defaults: strings.Split(cells[1], " / ")}
		for _, m := range tuningFlag.FindAllStringSubmatch(cells[0], -1) {
			name := m[1]
			if !strings.HasPrefix(name, "--") && len(r.flags) > 0 {
				name = expandFlag(flags, r.flags[len(r.flags)-1], name)
			}
			r.flags = append(r.flags, name)
		}
		if !strings.HasPrefix(cells[2], "—") {
			for _, v := range strings.Split(cells[2], " / ") {
				r.values = append(r.values, strings.Trim(v, "`"))
			}
		}
		rows = append(rows, r)
	}
	if len(rows) < 8 {
		t.Fatalf("%s: only %d rows in the table of the manager's flags", tuningDoc, len(rows))
	}
	return rows
}

// expandFlag is the manager flag that abbreviation (-renew-deadline) stands for after
// full (--leader-elect-lease-duration), or the abbreviation itself.
func expandFlag(flags *pflag.FlagSet, full, abbreviation string) string {
	parts := strings.Split(strings.TrimPrefix(full, "--"), "-")
	for i := len(parts) - 1; i >= 1; i-- {
		name := strings.Join(parts[:i], "-") + abbreviation
		if flags.Lookup(name) != nil {
			return "--" + name
		}
	}
	return abbreviation
}

// sameDefault compares a default as docs/tuning.md writes it (5m) with pflag's (5m0s).
func sameDefault(doc, flag string) bool {
	if doc == flag {
		return true
	}
	d1, err1 := time.ParseDuration(doc)
	d2, err2 := time.ParseDuration(flag)
	return err1 == nil && err2 == nil && d1 == d2
}

// docs/tuning.md's table of the manager's flags says the manager's defaults, and which chart
// value sets each flag: the chart passes a flag with a value, set to that value's
// default, and does not pass one without (the user gives it in manager.extraArgs).
func TestTuningTableMatchesManagerAndChart(t *testing.T) {
	cmd := manager.NewCommand()
	flags := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	flags.AddFlagSet(cmd.Flags())
	flags.AddFlagSet(cmd.PersistentFlags())
	rel, err := chartrender.Render(filepath.Join(repoRoot, "charts", "quotagate"), "quotagate", "quotagate-system",
		chartrender.Cluster{KubeVersion: "v1.37.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := managerArgs(t, rel)
	values := readValues(t)
	var p problems
	for _, r := range tuningTable(t, flags) {
		if len(r.defaults) != len(r.flags) {
			p.add(r.l.pos(), "%d flags but %d defaults", len(r.flags), len(r.defaults))
			continue
		}
		if len(r.values) > 0 && len(r.values) != len(r.flags) {
			p.add(r.l.pos(), "%d flags but %d chart values", len(r.flags), len(r.values))
			continue
		}
		for i, name := range r.flags {
			f := flags.Lookup(strings.TrimPrefix(name, "--"))
			if f == nil {
				p.add(r.l.pos(), "%s: not a flag of the manager", name)
				continue
			}
			if !sameDefault(r.defaults[i], f.DefValue) {
				p.add(r.l.pos(), "%s: the table says its default is %s, the manager's is %s", name, r.defaults[i], f.DefValue)
			}
			arg, passed := args[name]
			if len(r.values) == 0 {
				if passed && name != "--leader-elect" {
					p.add(r.l.pos(), "%s: the chart passes it (%s=%s); name the value that sets it", name, name, arg)
				}
				continue
			}
			def, ok := values.scalar(r.values[i])
			switch {
			case !ok:
				p.add(r.l.pos(), "%s: %s is not a value of the chart", name, r.values[i])
			case !passed:
				p.add(r.l.pos(), "%s: the chart does not pass it, so %s does not set it", name, r.values[i])
			case arg != def:
				p.add(r.l.pos(), "%s: the chart passes %s=%s, but %s defaults to %s", name, name, arg, r.values[i], def)
			}
		}
	}
	p.report(t, "rows of docs/tuning.md's table of the manager's flags that are wrong")
}

// managerArgs are the flags the chart passes to the manager: --name to value.
func managerArgs(t *testing.T, rel chartrender.Release) map[string]string {
	t.Helper()
	for _, o := range rel.Objects {
		if o.GetKind() != "Deployment" || !strings.HasSuffix(o.GetName(), "-manager") {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c, _ := c.(map[string]any)
			if c["name"] != "manager" {
				continue
			}
			args := map[string]string{}
			list, _ := c["args"].([]any)
			for _, a := range list {
				name, value, _ := strings.Cut(a.(string), "=")
				args[name] = value
			}
			return args
		}
	}
	t.Fatal("the chart renders no manager Deployment with a container named manager")
	return nil
}

// scalar is the default of a value, as it is written in values.yaml.
func (v chartValues) scalar(path string) (string, bool) {
	cur := v.root
	for _, name := range strings.Split(path, ".") {
		if cur.Kind != yaml.MappingNode {
			return "", false
		}
		i := slices.IndexFunc(cur.Content, func(n *yaml.Node) bool { return n.Value == name })
		if i < 0 || i%2 == 1 || i+1 >= len(cur.Content) {
			return "", false
		}
		cur = cur.Content[i+1]
	}
	return cur.Value, cur.Kind == yaml.ScalarNode
}
