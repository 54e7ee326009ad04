package figures

import (
	"strings"
	"testing"
)

// Figure 8's rows: arms drawn alike are within noise (both intervals hold 1); an on
// arm three times slower is not.
func TestEstimatesRows(t *testing.T) {
	var alike, slower []float64
	for i := range 200 {
		v := 20 + float64(i%50)
		alike = append(alike, v)
		slower = append(slower, 3*v)
	}
	x := estimatesResult{N: 1000, Depth: 200,
		On:  EstimatesArm{ReactionMillis: alike, CreateMillis: slower},
		Off: EstimatesArm{ReactionMillis: alike, CreateMillis: alike},
	}
	rows := estimatesRows(x)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (reaction, create → ungate)", len(rows))
	}
	reaction, create := rows[0], rows[1]
	if reaction.Met != "yes" || !strings.HasPrefix(reaction.Ratio, "p50 1.00 (") {
		t.Errorf("reaction row %+v: want met, a p50 ratio of 1.00 with its interval", reaction)
	}
	if !strings.Contains(reaction.Figure, "200 and 200 samples") || reaction.Quotagate != "on: p50 44.0, p99 69.0" {
		t.Errorf("reaction row %+v: want 200 samples per arm, on at p50 44.0 and p99 69.0", reaction)
	}
	if create.Met == "yes" || !strings.HasPrefix(create.Ratio, "p50 3.00 (") {
		t.Errorf("create row %+v: want not met, a p50 ratio of 3.00", create)
	}
}
