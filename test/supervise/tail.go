package supervise

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// LogTailLines is how many lines of its log an *ExitError quotes.
const LogTailLines = 30

// tailWindow is how much of the end of a log TailFile reads: log lines are short, and
// this holds many more than anyone quotes.
const tailWindow = 64 << 10

// TailFile returns the last n lines of a file without a trailing newline, or a note
// saying why it cannot, for quoting in an error.
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.Size() > tailWindow {
		if _, err := f.Seek(-tailWindow, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return lastLines(data, n)
}

// lastLines returns the last n lines of data, without a trailing newline.
func lastLines(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
