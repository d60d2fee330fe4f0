package strategies

import (
	"fmt"
	"io"
	"sync"
)

// Progress writes the user-facing progress lines ("--> Scaling web-2 down to 0") that
// make `kubectl logs <rs>-deploy` tell the story of a rollout. It is the only place that
// prints them; a nil *Progress discards them.
type Progress struct {
	mu sync.Mutex
	w  io.Writer
}

// NewProgress returns a Progress that writes to w (the deployer uses stdout).
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w}
}

// Printf writes one line, prefixed with "--> ".
func (p *Progress) Printf(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "--> "+format+"\n", args...)
}

// Println writes line as it is, without the "--> " prefix: a hook's streamed log line.
func (p *Progress) Println(line string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}
