package main

import (
	"fmt"
	"slices"
	"strings"
)

// When says in which of renderings an object exists (present: their indexes): "always", or the settings every
// rendering that has it shares, and those that take it away ("with a; unless b, or c and
// d"). It fails when no such sentence is exact.
func When(renderings [][]Setting, present []int) (string, error) {
	if len(present) == len(renderings) {
		return "always", nil
	}
	holds := func(i int, group []Setting) bool {
		for _, s := range group {
			if !slices.ContainsFunc(renderings[i], func(x Setting) bool { return x.Text == s.Text }) {
				return false
			}
		}
		return true
	}
	var with []Setting
	for _, s := range renderings[present[0]] {
		if !slices.ContainsFunc(present, func(i int) bool { return !holds(i, []Setting{s}) }) {
			with = append(with, s)
		}
	}
	// A "with" setting is dropped when the sentence stays exact without it: the manager's
	// PodDisruptionBudget depends on manager.replicas, not on the admission mode the
	// renderings with two replicas happen to use.
	// It is dropped only when the sentence gets shorter, so that the webhook's objects
	// read "with admission.mode=webhook", not "unless admission.mode=auto".
	for k := len(with) - 1; k >= 0; k-- {
		fewer := slices.Delete(slices.Clone(with), k, k+1)
		now, err1 := unlessGroups(renderings, present, with, holds)
		then, err2 := unlessGroups(renderings, present, fewer, holds)
		if err2 == nil && (err1 != nil || len(fewer)+count(then) < len(with)+count(now)) {
			with = fewer
		}
	}
	unless, err := unlessGroups(renderings, present, with, holds)
	if err != nil {
		return "", err
	}
	// Keep the smallest groups: "unless a" says all that "unless a and b" does.
	slices.SortStableFunc(unless, func(a, b []Setting) int { return len(a) - len(b) })
	var clauses []string
	var kept [][]Setting
	for _, g := range unless {
		if slices.ContainsFunc(kept, func(k []Setting) bool { return subset(k, g) }) {
			continue
		}
		kept = append(kept, g)
		clauses = append(clauses, codeList(texts(g), " and "))
	}
	var parts []string
	if len(with) > 0 {
		parts = append(parts, "with "+codeList(texts(with), " and "))
	}
	if len(clauses) > 0 {
		parts = append(parts, "unless "+strings.Join(clauses, ", or "))
	}
	return strings.Join(parts, "; "), nil
}

// unlessGroups are, for each rendering with every setting of with that lacks the object,
// the fewest of its other settings that no rendering with the object has all of.
func unlessGroups(renderings [][]Setting, present []int, with []Setting, holds func(int, []Setting) bool) ([][]Setting, error) {
	var unless [][]Setting
	for i := range renderings {
		if slices.Contains(present, i) || !holds(i, with) {
			continue
		}
		// A rendering with every "with" setting that lacks the object: the fewest of its
		// other settings that no rendering with the object has all of take it away.
		var own []Setting
		for _, s := range renderings[i] {
			if !slices.ContainsFunc(with, func(w Setting) bool { return w.Text == s.Text }) {
				own = append(own, s)
			}
		}
		group := smallestGroup(own, func(g []Setting) bool {
			return !slices.ContainsFunc(present, func(p int) bool { return holds(p, g) })
		})
		if group == nil {
			return nil, fmt.Errorf("in %s but not in %s, and no setting tells them apart", describeAll(renderings, present), describe(renderings[i]))
		}
		unless = append(unless, group)
	}
	return unless, nil
}

func count(groups [][]Setting) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// smallestGroup is the first of the fewest settings of own that ok accepts, or nil.
func smallestGroup(own []Setting, ok func([]Setting) bool) []Setting {
	for size := 1; size <= len(own); size++ {
		if g := groupOf(own, size, nil, ok); g != nil {
			return g
		}
	}
	return nil
}

func groupOf(own []Setting, size int, chosen []Setting, ok func([]Setting) bool) []Setting {
	if len(chosen) == size {
		if ok(chosen) {
			return slices.Clone(chosen)
		}
		return nil
	}
	for i, s := range own {
		if g := groupOf(own[i+1:], size, append(chosen, s), ok); g != nil {
			return g
		}
	}
	return nil
}

// subset reports whether every setting of a is in b.
func subset(a, b []Setting) bool {
	for _, s := range a {
		if !slices.ContainsFunc(b, func(x Setting) bool { return x.Text == s.Text }) {
			return false
		}
	}
	return true
}

func texts(settings []Setting) []string {
	var out []string
	for _, s := range settings {
		out = append(out, s.Text)
	}
	return out
}

func codeList(words []string, sep string) string {
	var out []string
	for _, w := range words {
		out = append(out, code(w))
	}
	return strings.Join(out, sep)
}

func describeAll(renderings [][]Setting, present []int) string {
	var out []string
	for _, i := range present {
		out = append(out, "("+describe(renderings[i])+")")
	}
	return strings.Join(out, ", ")
}
