package app

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats the commands render themselves; every other -o value goes to
// cli-runtime's printers.
const (
	formatDefault = ""
	formatWide    = "wide"
)

// outputFlags are kubectl's output flags for a read command: -o through cli-runtime's
// printers (json, yaml, kyaml, name, go-template, jsonpath, ...), the formats the
// command renders itself (its default table or text, and wide where it has one), and
// --no-headers for its tables.
type outputFlags struct {
	format    string
	print     *genericclioptions.PrintFlags
	own       []string
	noHeaders bool
}

// newOutputFlags returns the flags of a command whose default output is its own
// table or text; withName offers -o name, and own lists further formats the command
// renders itself (wide).
func newOutputFlags(withName bool, own ...string) *outputFlags {
	o := &outputFlags{print: genericclioptions.NewPrintFlags(""), own: own}
	o.print.OutputFormat = &o.format
	if !withName {
		o.print.NamePrintFlags = nil
	}
	return o
}

// allowed lists every -o value, sorted as kubectl lists them.
func (o *outputFlags) allowed() []string {
	formats := append(o.print.AllowedFormats(), o.own...)
	slices.Sort(formats)
	return formats
}

// addFlags binds -o, the printers' own flags (--template, --show-managed-fields, ...),
// and, for a command whose default output is a table, --no-headers.
func (o *outputFlags) addFlags(cmd *cobra.Command, table bool) {
	o.print.JSONYamlPrintFlags.AddFlags(cmd)
	o.print.TemplatePrinterFlags.AddFlags(cmd)
	def := "text"
	if table {
		def = "table"
	}
	cmd.Flags().StringVarP(&o.format, "output", "o", o.format,
		fmt.Sprintf("Output format. One of: (%s); empty for the default %s.", strings.Join(o.allowed(), ", "), def))
	o.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
	_ = cmd.RegisterFlagCompletionFunc("output", completeFixed(o.allowed()...))
	if table {
		cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "When using the default or wide output format, don't print headers (default print headers).")
	}
}

// printer returns cli-runtime's printer for -o, or nil when the command renders the
// output itself (the default, and wide). An unknown format is an error that lists the
// allowed ones, in kubectl's words.
func (o *outputFlags) printer() (printers.ResourcePrinter, error) {
	if o.rendersItself() {
		return nil, nil
	}
	p, err := o.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		format := o.format
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: o.allowed()}
	}
	if err != nil {
		return nil, fmt.Errorf("--output %s: %w", o.format, err)
	}
	return p, nil
}

// rendersItself reports whether -o names a format the command renders itself.
func (o *outputFlags) rendersItself() bool {
	templateGiven := o.print.TemplatePrinterFlags != nil && o.print.TemplatePrinterFlags.TemplateArgument != nil &&
		*o.print.TemplatePrinterFlags.TemplateArgument != ""
	if o.format == formatDefault {
		return !templateGiven // --template alone means -o go-template, as in kubectl
	}
	return slices.Contains(o.own, o.format)
}

func (o *outputFlags) wide() bool { return o.format == formatWide }

func (o *outputFlags) isName() bool { return strings.EqualFold(o.format, "name") }

// printTable prints rows under columns with cli-runtime's table printer, as kubectl
// prints tables: upper-case headers, columns of Priority > 0 only with -o wide, and no
// header with --no-headers.
func (o *outputFlags) printTable(w io.Writer, columns []metav1.TableColumnDefinition, rows []metav1.TableRow) error {
	p := printers.NewTablePrinter(printers.PrintOptions{NoHeaders: o.noHeaders, Wide: o.wide()})
	return p.PrintObj(&metav1.Table{ColumnDefinitions: columns, Rows: rows}, w)
}

// column is a table column; wideOnly columns show with -o wide only.
func column(name string, wideOnly bool) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: "string"}
	if wideOnly {
		c.Priority = 1
	}
	return c
}

// tableRow is a row of string cells.
func tableRow(cells ...string) metav1.TableRow {
	r := metav1.TableRow{Cells: make([]any, len(cells))}
	for i, c := range cells {
		r.Cells[i] = c
	}
	return r
}

// toList wraps objects, their apiVersion and kind set, in a v1 List, as kubectl -o
// json prints several objects.
func toList(objs []runtime.Object) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""},
	}}
	list.Items = make([]unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("converting %s for printing: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: u})
	}
	return list, nil
}

// printNames prints each object as kubectl -o name does, kind.group/name, once each.
// With qualify, a namespaced object is prefixed by its namespace (NAMESPACE/kind/name)
// because the output spans namespaces and kind/name alone would not say which.
func printNames(w io.Writer, objs []runtime.Object, qualify bool) error {
	p := &printers.NamePrinter{}
	seen := map[string]bool{}
	for _, obj := range objs {
		var buf bytes.Buffer
		if err := p.PrintObj(obj, &buf); err != nil {
			return err
		}
		line := buf.String()
		if qualify {
			if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" {
				line = m.GetNamespace() + "/" + line
			}
		}
		if seen[line] {
			continue
		}
		seen[line] = true
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	return nil
}

// printObjects prints one object as itself and several (or none, with many) as a v1
// List, with a printer of cli-runtime.
func printObjects(w io.Writer, p printers.ResourcePrinter, objs []runtime.Object, many bool) error {
	if len(objs) == 1 && !many {
		return p.PrintObj(objs[0], w)
	}
	list, err := toList(objs)
	if err != nil {
		return err
	}
	return p.PrintObj(list, w)
}
