package figures

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// tcpStates counts the TCP sockets of this machine with one end on port, by state
// (/proc/net/tcp state codes: "01" established, "06" time-wait). Many time-wait sockets
// after a series of webhook calls mean the API server opened a connection, and paid a
// TLS handshake, per call.
func tcpStates(port int) (map[string]int, error) {
	out := map[string]int{}
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		err = countTCP(bufio.NewScanner(f), port, out)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return out, nil
}

func countTCP(sc *bufio.Scanner, port int, out map[string]int) error {
	want := fmt.Sprintf("%04X", port)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		if portOf(f[1]) == want || portOf(f[2]) == want {
			out[stateName(f[3])]++
		}
	}
	return sc.Err()
}

func portOf(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return ""
	}
	return addr[i+1:]
}

func stateName(code string) string {
	switch code {
	case "01":
		return "established"
	case "06":
		return "time-wait"
	}
	n, err := strconv.ParseUint(code, 16, 8)
	if err != nil {
		return code
	}
	return "state-" + strconv.FormatUint(n, 10)
}
