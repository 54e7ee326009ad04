package order

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestCompare(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	keys := map[string]Key{
		"high, newest":      Of(100, t0.Add(time.Hour), "z"),
		"low, oldest":       Of(-5, t0.Add(-time.Hour), "a"),
		"zero, old, uid a":  Of(0, t0, "a"),
		"zero, old, uid b":  Of(0, t0, "b"),
		"zero, a ns later":  Of(0, t0.Add(time.Nanosecond), "0"),
		"high, older":       Of(100, t0, "z"),
		"most negative":     Of(-2147483648, t0.Add(-24*time.Hour), ""),
		"highest, no uid":   Of(2147483647, t0.Add(24*time.Hour), ""),
		"no pod (zero Key)": {},
	}
	want := []string{
		"highest, no uid",
		"high, older",
		"high, newest",
		"no pod (zero Key)", // priority 0, created at the epoch: before every later pod of priority 0
		"zero, old, uid a",
		"zero, old, uid b",
		"zero, a ns later",
		"low, oldest",
		"most negative",
	}

	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ka, kb := keys[a], keys[b]
		return ka.Compare(&kb)
	})
	if !slices.Equal(names, want) {
		t.Errorf("order:\n got %q\nwant %q", names, want)
	}
	for a, ka := range keys {
		if c := ka.Compare(&ka); c != 0 {
			t.Errorf("%s compared with itself: %d, want 0", a, c)
		}
		for b, kb := range keys {
			if ab, ba := ka.Compare(&kb), kb.Compare(&ka); sign(ab) != -sign(ba) {
				t.Errorf("%s vs %s: %d, but %s vs %s: %d", a, b, ab, b, a, ba)
			}
		}
	}
}

func TestOfKeepsWhatItIsGiven(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 123, time.UTC)
	a, b := Of(3, t0, types.UID("u")), Of(3, t0.In(time.FixedZone("x", 3600)), types.UID("u"))
	if a != b {
		t.Errorf("the same instant in another zone: %+v != %+v", a, b)
	}
	if c := Of(3, t0, "u"); c.Compare(&a) != 0 || c == Of(3, t0.Add(1), "u") {
		t.Errorf("keys of one pod differ, or keys a nanosecond apart are equal")
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
