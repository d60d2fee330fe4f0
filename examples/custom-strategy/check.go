package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/stagehand-dev/stagehand/strategies"
)

// Check is the canary's HTTP check. It is configured by the DeploymentConfig's
// spec.strategy.customParams.environment, which the controller adds to the deployer pod.
type Check struct {
	// URL is fetched with GET; any 2xx answer passes. Empty skips the check.
	URL string `envconfig:"CHECK_URL"`
	// Timeout bounds each attempt.
	Timeout time.Duration `envconfig:"CHECK_TIMEOUT" default:"5s"`
	// Attempts is how many times the check runs before it fails.
	Attempts int `envconfig:"CHECK_ATTEMPTS" default:"3"`
	// Interval is the pause between two attempts.
	Interval time.Duration `envconfig:"CHECK_INTERVAL" default:"2s"`
}

// LoadCheck reads the Check from the environment. A bad value is a
// strategies.InvalidError: the deployer exits 2.
func LoadCheck() (Check, error) {
	var c Check
	if err := envconfig.Process("", &c); err != nil {
		return c, strategies.Invalidf("reading the canary check's settings: %v; fix customParams.environment", err)
	}
	if c.Attempts < 1 || c.Timeout <= 0 || c.Interval < 0 {
		return c, strategies.Invalidf("CHECK_ATTEMPTS must be at least 1 and CHECK_TIMEOUT above 0 (got %d and %s); fix customParams.environment",
			c.Attempts, c.Timeout)
	}
	return c, nil
}

// CheckFailedError is a check that did not pass in any of its attempts.
type CheckFailedError struct {
	URL      string
	Attempts int
	// Last is why the last attempt failed.
	Last error
}

func (e *CheckFailedError) Error() string {
	return fmt.Sprintf("GET %s did not answer 2xx in %d attempts; the last one: %v", e.URL, e.Attempts, e.Last)
}

func (e *CheckFailedError) Unwrap() error { return e.Last }

// Run runs the check until an attempt passes, printing one progress line per attempt with
// printf. It returns nil when an attempt passed or when no URL is set, a
// *CheckFailedError when every attempt failed, and ctx's error when ctx ends first.
func (c Check) Run(ctx context.Context, client *http.Client, printf func(format string, args ...any)) error {
	if c.URL == "" {
		printf("Canary check skipped: CHECK_URL is not set")
		return nil
	}
	var last error
	for attempt := 1; attempt <= c.Attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("checking the canary: %w", ctx.Err())
			case <-time.After(c.Interval):
			}
		}
		status, err := c.get(ctx, client)
		if err == nil {
			printf("Canary check passed: GET %s answered %s", c.URL, status)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("checking the canary: %w", ctx.Err())
		}
		last = err
		printf("Canary check attempt %d of %d failed: %v", attempt, c.Attempts, err)
	}
	return &CheckFailedError{URL: c.URL, Attempts: c.Attempts, Last: last}
}

// errNot2xx is an answer outside 200–299.
var errNot2xx = errors.New("not a 2xx answer")

// get runs one attempt and returns the answer's status.
func (c Check) get(ctx context.Context, client *http.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return "", fmt.Errorf("building the request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s (timeout %s): %w", c.URL, c.Timeout, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("GET %s answered %s: %w", c.URL, resp.Status, errNot2xx)
	}
	return resp.Status, nil
}
