package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCreatedTime(t *testing.T) {
	head, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	headSecs, err := strconv.ParseInt(strings.TrimSpace(string(head)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		epoch   string
		want    time.Time
		wantErr string
	}{
		"SOURCE_DATE_EPOCH":        {epoch: "1767323045", want: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"the commit time of HEAD":  {epoch: "", want: time.Unix(headSecs, 0).UTC()},
		"not a number":             {epoch: "yesterday", wantErr: `SOURCE_DATE_EPOCH "yesterday": want seconds since 1970`},
		"before 1970 is a mistake": {epoch: "-1", wantErr: `SOURCE_DATE_EPOCH "-1": want seconds since 1970`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := createdTime(t.Context(), ".", tc.epoch)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("createdTime(%q) error %v, want %q", tc.epoch, err, tc.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Errorf("createdTime(%q) = %v, %v; want %v in UTC", tc.epoch, got, err, tc.want)
			}
		})
	}
}

func TestCreatedTimeOutsideGit(t *testing.T) {
	_, err := createdTime(t.Context(), t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "set SOURCE_DATE_EPOCH") {
		t.Errorf("createdTime outside a checkout: error %v, want one that says to set SOURCE_DATE_EPOCH", err)
	}
}
