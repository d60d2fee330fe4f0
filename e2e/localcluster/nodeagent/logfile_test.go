package nodeagent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeLog writes records with the given times into a log file.
func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

func TestWriteLogs(t *testing.T) {
	path := writeLog(t,
		"2026-01-01T10:00:00.000000000Z stdout F one",
		"2026-01-01T10:00:01.000000000Z stderr F two",
		"2026-01-01T10:00:02.000000000Z stdout P thr",
		"2026-01-01T10:00:02.000000001Z stdout F ee",
		"2026-01-01T10:00:03.000000000Z stdout F ",
		"2026-01-01T10:00:04.000000000Z stdout P last",
	)
	since, _ := time.Parse(time.RFC3339, "2026-01-01T10:00:02Z")
	tests := []struct {
		name string
		opts logOptions
		want string
	}{
		{name: "all", opts: logOptions{tailLines: -1}, want: "one\ntwo\nthree\n\nlast"},
		{name: "timestamps", opts: logOptions{tailLines: 2, timestamps: true},
			want: "2026-01-01T10:00:03.000000000Z \n2026-01-01T10:00:04.000000000Z last"},
		{name: "tail 0", opts: logOptions{tailLines: 0}, want: ""},
		{name: "tail 1", opts: logOptions{tailLines: 1}, want: "last"},
		{name: "tail more than there is", opts: logOptions{tailLines: 100}, want: "one\ntwo\nthree\n\nlast"},
		{name: "limit", opts: logOptions{tailLines: -1, limitBytes: 6}, want: "one\ntw"},
		{name: "since", opts: logOptions{tailLines: -1, since: since}, want: "three\n\nlast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, writeLogs(context.Background(), &b, path, tt.opts, nil))
			assert.Equal(t, tt.want, b.String())
		})
	}
}

func TestTailOffsetAcrossChunks(t *testing.T) {
	var lines []string
	for i := range 5000 {
		lines = append(lines, fmt.Sprintf("2026-01-01T10:00:00.000000000Z stdout F line %d", i))
	}
	path := writeLog(t, lines...)
	var b bytes.Buffer
	require.NoError(t, writeLogs(context.Background(), &b, path, logOptions{tailLines: 3}, nil))
	assert.Equal(t, "line 4997\nline 4998\nline 4999\n", b.String())
}

func TestLogTail(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("2026-01-01T10:00:00.000000000Z stdout F %03d", i))
	}
	path := writeLog(t, lines...)
	got := logTail(path, 80, 2048)
	assert.True(t, strings.HasPrefix(got, "020\n"), got)
	got = logTail(path, 80, 8)
	assert.Equal(t, "098\n099\n", got)
}

func TestParseLogOptions(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	q := url.Values{"follow": {"true"}, "timestamps": {"1"}, "tailLines": {"5"}, "limitBytes": {"10"}, "sinceSeconds": {"60"}}
	o, err := parseLogOptions(q, now)
	require.NoError(t, err)
	assert.Equal(t, logOptions{follow: true, timestamps: true, tailLines: 5, limitBytes: 10, since: now.Add(-time.Minute)}, o)

	o, err = parseLogOptions(url.Values{"sinceTime": {"2026-01-01T09:00:00Z"}, "previous": {"true"}}, now)
	require.NoError(t, err)
	assert.True(t, o.previous)
	assert.Equal(t, int64(-1), o.tailLines)
	assert.Equal(t, now.Add(-time.Hour), o.since.UTC())

	for _, bad := range []url.Values{{"tailLines": {"-1"}}, {"follow": {"maybe"}}, {"sinceTime": {"yesterday"}}} {
		_, err := parseLogOptions(bad, now)
		assert.Error(t, err, bad)
	}
}

func TestLogSinkAndFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	sink, err := newLogSink(path)
	require.NoError(t, err)
	outR, outW := io.Pipe()
	sink.follow(outR, "stdout")
	running := make(chan struct{})

	var got bytes.Buffer
	done := make(chan error)
	go func() {
		done <- writeLogs(context.Background(), &got, path, logOptions{follow: true, tailLines: -1}, running)
	}()
	_, _ = outW.Write([]byte("hello\nwor"))
	time.Sleep(3 * logPollPeriod)
	_, _ = outW.Write([]byte("ld\nno newline"))
	require.NoError(t, outW.Close())
	sink.close(time.Second)
	close(running)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("following the log did not stop when the run ended")
	}
	assert.Equal(t, "hello\nworld\nno newline", got.String())

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z stdout F hello\n`, string(data))
}
