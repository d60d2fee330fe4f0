package localcluster

import (
	"testing"

	"github.com/sirupsen/logrus"
)

// testLog is a logger that writes to the test's output.
func testLog(t *testing.T) *logrus.Entry {
	logger := logrus.New()
	logger.SetOutput(t.Output())
	return logrus.NewEntry(logger)
}
