package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"
)

// Container logs are stored like CRI logs, one record a line:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <F|P> <content>
//
// F ends a line of output; P is a piece of a line that had no newline yet (a very long line,
// or the last output before the stream closed). Readers strip the prefix unless timestamps
// were asked for.
const (
	logTimeFormat  = "2006-01-02T15:04:05.000000000Z07:00" // fixed width, like the kubelet's
	maxLogLineSize = 16 * 1024
	logPollPeriod  = 100 * time.Millisecond
)

// logSink writes the output streams of one container run into its log file.
type logSink struct {
	mu sync.Mutex
	f  *os.File
	wg sync.WaitGroup
}

func newLogSink(path string) (*logSink, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening container log: %w", err)
	}
	return &logSink{f: f}, nil
}

// follow copies r (one output stream) into the log until r is closed.
func (s *logSink) follow(r io.ReadCloser, stream string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer r.Close()
		br := bufio.NewReaderSize(r, maxLogLineSize)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				tag := "P"
				if line[len(line)-1] == '\n' {
					tag, line = "F", line[:len(line)-1]
				}
				s.write(stream, tag, line)
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return
			}
		}
	}()
}

func (s *logSink) write(stream, tag string, content []byte) {
	var b bytes.Buffer
	b.Grow(len(content) + 48)
	b.WriteString(time.Now().UTC().Format(logTimeFormat))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
	s.mu.Lock()
	_, _ = s.f.Write(b.Bytes())
	s.mu.Unlock()
}

// close waits up to timeout for the streams to end, then closes the file.
func (s *logSink) close(timeout time.Duration) {
	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(timeout):
	}
	s.mu.Lock()
	_ = s.f.Close()
	s.mu.Unlock()
}

// logRecord is one parsed line of a log file.
type logRecord struct {
	ts      time.Time
	tsText  []byte
	content []byte
	partial bool
}

func parseLogRecord(line []byte) logRecord {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) < 3 {
		return logRecord{content: line}
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return logRecord{content: line}
	}
	r := logRecord{ts: ts, tsText: fields[0], partial: string(fields[2]) == "P"}
	if len(fields) == 4 {
		r.content = fields[3]
	}
	return r
}

// logOptions are the query parameters of the kubelet's containerLogs endpoint.
type logOptions struct {
	follow, timestamps, previous bool
	tailLines                    int64 // < 0: all
	limitBytes                   int64 // <= 0: no limit
	since                        time.Time
}

func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	o := logOptions{tailLines: -1}
	var err error
	parseBool := func(name string) bool {
		v := q.Get(name)
		if v == "" || err != nil {
			return false
		}
		b, e := strconv.ParseBool(v)
		if e != nil {
			err = fmt.Errorf("invalid %s %q: %w", name, v, e)
		}
		return b
	}
	parseInt := func(name string, def int64) int64 {
		v := q.Get(name)
		if v == "" || err != nil {
			return def
		}
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil || n < 0 {
			err = fmt.Errorf("invalid %s %q: want a non-negative integer", name, v)
		}
		return n
	}
	o.follow = parseBool("follow")
	o.timestamps = parseBool("timestamps")
	o.previous = parseBool("previous")
	o.tailLines = parseInt("tailLines", -1)
	o.limitBytes = parseInt("limitBytes", 0)
	if s := parseInt("sinceSeconds", 0); s > 0 {
		o.since = now.Add(-time.Duration(s) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" && err == nil {
		t, e := time.Parse(time.RFC3339, v)
		if e != nil {
			err = fmt.Errorf("invalid sinceTime %q: %w", v, e)
		}
		o.since = t
	}
	return o, err
}

// writeLogs writes the log file at path to w as opts say. When running is not nil and not
// yet closed and opts.follow is set, it keeps following the file until running is closed
// (the container run ended and its output was drained) or ctx is done.
func writeLogs(ctx context.Context, w io.Writer, path string, opts logOptions, running <-chan struct{}) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening container log: %w", err)
	}
	defer f.Close()
	if opts.tailLines >= 0 {
		off, err := tailOffset(f, opts.tailLines)
		if err != nil {
			return err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("seeking container log: %w", err)
		}
	}
	out := &limitedWriter{w: w, limit: opts.limitBytes}
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(f, 64*1024)
	var pending []byte
	for {
		line, err := br.ReadBytes('\n')
		pending = append(pending, line...)
		if err == nil {
			if werr := writeRecord(out, parseLogRecord(pending), opts); werr != nil {
				return nil // client gone or limit reached
			}
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading container log: %w", err)
		}
		// At the end of what was written so far.
		if flusher != nil {
			flusher.Flush()
		}
		if !opts.follow || running == nil {
			return nil
		}
		select {
		case <-running:
			// One more pass picks up what was written before the run ended.
			running = nil
		case <-ctx.Done():
			return nil
		case <-time.After(logPollPeriod):
		}
	}
}

func writeRecord(w io.Writer, r logRecord, opts logOptions) error {
	if !opts.since.IsZero() && !r.ts.IsZero() && r.ts.Before(opts.since) {
		return nil
	}
	var b bytes.Buffer
	if opts.timestamps && r.tsText != nil {
		b.Write(r.tsText)
		b.WriteByte(' ')
	}
	b.Write(r.content)
	if !r.partial {
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

var errLimitReached = errors.New("log limit reached")

// limitedWriter passes at most limit bytes on when limit > 0, then fails.
type limitedWriter struct {
	w              io.Writer
	limit, written int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.limit <= 0 {
		return l.w.Write(p)
	}
	left := l.limit - l.written
	if int64(len(p)) < left {
		n, err := l.w.Write(p)
		l.written += int64(n)
		return n, err
	}
	n, err := l.w.Write(p[:left])
	l.written += int64(n)
	if err == nil {
		err = errLimitReached
	}
	return n, err
}

// tailOffset returns the offset of the first of the last n lines of f.
func tailOffset(f *os.File, n int64) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading container log: %w", err)
	}
	size := fi.Size()
	if n == 0 {
		return size, nil
	}
	need := n
	buf := make([]byte, 32*1024)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("reading container log: %w", err)
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' || start+int64(i) == size-1 {
				continue // the newline that ends the file does not start a line
			}
			need--
			if need == 0 {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}

// logTail returns the content (without prefixes) of the last lines of the log at path, at
// most maxLines lines and maxBytes bytes. It is the fallback termination message.
func logTail(path string, maxLines, maxBytes int64) string {
	var b bytes.Buffer
	opts := logOptions{tailLines: maxLines}
	if err := writeLogs(context.Background(), &b, path, opts, nil); err != nil {
		return ""
	}
	out := b.Bytes()
	if int64(len(out)) > maxBytes {
		out = out[int64(len(out))-maxBytes:]
	}
	return string(out)
}
