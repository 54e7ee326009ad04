package localinstall

import "testing"

func TestSelfManagedCerts(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   bool
	}{
		{nil, false},
		{map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{}}}, false},
		{map[string]any{"certManager": map[string]any{"enabled": true}}, false},
		{map[string]any{"certManager": map[string]any{"enabled": false}}, true},
	} {
		if got := SelfManagedCerts(c.values); got != c.want {
			t.Errorf("SelfManagedCerts(%v) = %v, want %v", c.values, got, c.want)
		}
	}
}
