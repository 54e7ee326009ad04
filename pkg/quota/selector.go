package quota

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SelectorError is a podSelector or namespaceSelector that does not parse. It gets past
// the API server only through a CRD older than its validation rules, or through a label
// syntax error that CEL cannot afford to check; the budget then reports InvalidSelector.
type SelectorError struct {
	// Field is "podSelector" or "namespaceSelector".
	Field string
	// Err lists what does not parse, by field path.
	Err error
	// Holds says what the budget covers until the selector is fixed: the widened
	// selector, in words.
	Holds string
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("invalid %s: %v; until it is fixed the budget covers %s, and admits nothing", e.Field, e.Err, e.Holds)
}

func (e *SelectorError) Unwrap() error { return e.Err }

// parseSelector converts a label selector; nil stays nil (the field is unset). A
// selector that does not parse is replaced by a wider one that still matches everything
// its author could have meant, trusting its keys and operators, and a *SelectorError
// says so (all and some describe what the wider selector covers: all when it is empty,
// some, formatted with its string, otherwise):
//
//   - a requirement that parses is kept as written;
//   - a requirement whose key and operator are valid but whose values are not keeps what
//     the operator asks of the key whatever the values: In (and a matchLabels entry)
//     becomes Exists, since every In needs the key; Exists and DoesNotExist stay; NotIn,
//     which matches objects without the key too, is dropped;
//   - a requirement with an invalid key or an unknown operator is dropped.
//
// Requirements are ANDed, so dropping or widening one only widens the selector: every
// object the author could have meant is still matched, and so held by a budget that
// admits nothing until it is fixed. A ClusterBudget whose namespaceSelector names no
// valid requirement at all holds every namespace.
func parseSelector(name string, ls *metav1.LabelSelector, all, some string) (labels.Selector, error) {
	if ls == nil {
		return nil, nil
	}
	sel, parseErr := metav1.LabelSelectorAsSelector(ls)
	if parseErr == nil {
		return sel, nil
	}
	var reqs []labels.Requirement
	keep := func(key string, op selection.Operator, values []string) {
		if r, err := labels.NewRequirement(key, op, values); err == nil {
			reqs = append(reqs, *r)
			return
		}
		if len(validation.IsQualifiedName(key)) > 0 {
			return
		}
		switch op {
		case selection.Equals, selection.In, selection.Exists:
			op = selection.Exists
		case selection.DoesNotExist:
		default:
			return
		}
		if r, err := labels.NewRequirement(key, op, nil); err == nil {
			reqs = append(reqs, *r)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ls.MatchLabels)) {
		keep(k, selection.Equals, []string{ls.MatchLabels[k]})
	}
	for _, e := range ls.MatchExpressions {
		if op, ok := selectorOperators[e.Operator]; ok {
			keep(e.Key, op, slices.Clone(e.Values))
		}
	}
	sel = labels.NewSelector().Add(reqs...)
	holds := all
	if !sel.Empty() {
		holds = fmt.Sprintf(some, sel.String())
	}
	// The API server's own wording for selectors of built-in kinds, with field paths.
	var msgs []string
	for _, e := range metav1validation.ValidateLabelSelector(ls, metav1validation.LabelSelectorValidationOptions{}, field.NewPath(name)) {
		msgs = append(msgs, e.Error())
	}
	if len(msgs) == 0 {
		msgs = append(msgs, parseErr.Error())
	}
	return sel, &SelectorError{Field: name, Err: errors.New(strings.Join(msgs, "; ")), Holds: holds}
}

var selectorOperators = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}
