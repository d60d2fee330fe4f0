package framework

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strings"
)

// MetricsService is the Service in front of the controllers' /metrics (deploy/).
const MetricsService = "stagehand-controller-metrics"

// Series is one sample line of a Prometheus text exposition: its name and labels.
type Series struct {
	Name   string
	Labels map[string]string
	Value  string
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// ParseMetrics reads the samples of a Prometheus text exposition.
func ParseMetrics(text string) []Series {
	var out []Series
	scanner := bufio.NewScanner(strings.NewReader(text))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := Series{Labels: map[string]string{}}
		head, value := line, ""
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			head, value = line[:i], line[i+1:]
		}
		s.Value = value
		if open := strings.IndexByte(head, '{'); open >= 0 {
			s.Name = head[:open]
			for _, m := range labelPair.FindAllStringSubmatch(head[open:], -1) {
				s.Labels[m[1]] = m[2]
			}
		} else {
			s.Name = head
		}
		out = append(out, s)
	}
	return out
}

// ScrapeControllerService reads /metrics through the controllers' Service, by the
// apiserver's service proxy: the answer comes from one of its ready endpoints.
func (e *Env) ScrapeControllerService(ctx context.Context) (string, error) {
	raw, err := e.Kube.CoreV1().Services(ControllerNamespace).ProxyGet("http", MetricsService, "metrics", "/metrics", nil).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("scraping service %s/%s: %w", ControllerNamespace, MetricsService, err)
	}
	return string(raw), nil
}
