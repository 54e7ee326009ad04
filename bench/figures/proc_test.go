package figures

import "testing"

func TestParseStatusMemory(t *testing.T) {
	got, err := parseStatusMemory("Name:\tetcd\nVmPeak:\t  99 kB\nVmRSS:\t   2048 kB\nRssAnon:\t  512 kB\nRssFile:\t 1500 kB\nRssShmem:\t 36 kB\nThreads: 9\n")
	want := Memory{RSS: 2048 << 10, Anon: 512 << 10, File: 1500 << 10}
	if err != nil || got != want {
		t.Fatalf("parseStatusMemory = %+v, %v; want %+v", got, err, want)
	}
	for _, status := range []string{"Name:\tzombie\n", "VmRSS:\t 2048 kB\nRssAnon:\t 512 kB\n", "VmRSS:\t 2048 MB\nRssAnon:\t 512 kB\nRssFile:\t 1 kB\n"} {
		if m, err := parseStatusMemory(status); err == nil {
			t.Errorf("parseStatusMemory(%q) = %+v, want an error", status, m)
		}
	}
}
