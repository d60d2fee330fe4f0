package executionhook

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// The output kept of an attempt: its last lines, bounded in lines and in bytes.
const (
	tailLines = 10
	tailBytes = 1024
	// keepBytes is what the tail buffer holds while the command runs.
	keepBytes = 4 * tailBytes
)

// pidMarker starts the line that the wrapper prints before it becomes the command.
const pidMarker = "stagehand-exec-pid:"

// outputTail keeps the end of a command's output and takes the wrapper's first line
// (pidMarker and the PID) out of it. It is safe for the two streams' writers at once.
type outputTail struct {
	mu     sync.Mutex
	buf    []byte
	first  []byte // the first line, until it is complete or too long for a marker
	judged bool   // the first line is known to be a marker or not
	pid    int    // the PID the marker gave, 0 if none
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if !t.judged {
		t.first = append(t.first, p...)
		i := bytes.IndexByte(t.first, '\n')
		if i < 0 && len(t.first) < len(pidMarker)+32 {
			return n, nil
		}
		t.judged = true
		rest := t.first
		if i >= 0 && bytes.HasPrefix(t.first, []byte(pidMarker)) {
			if pid, err := strconv.Atoi(string(t.first[len(pidMarker):i])); err == nil {
				t.pid, rest = pid, t.first[i+1:]
			}
		}
		t.first = nil
		p = rest
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > keepBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keepBytes:]...)
	}
	return n, nil
}

// PID is the command's process ID as the wrapper printed it, 0 if it did not.
func (t *outputTail) PID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pid
}

// String is the last tailLines lines, at most tailBytes bytes of them, as valid UTF-8.
func (t *outputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := append(append([]byte{}, t.buf...), t.first...)
	s := strings.TrimRight(string(all), "\n")
	if lines := strings.Split(s, "\n"); len(lines) > tailLines {
		s = strings.Join(lines[len(lines)-tailLines:], "\n")
	}
	return strings.ToValidUTF8(podstatus.Tail(s, tailBytes), "")
}
