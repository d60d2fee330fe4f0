package plumbing

import "github.com/sirupsen/logrus"

// SyncLog is the one place that builds a sync's log entry, so that every line about a
// DeploymentConfig carries the same fields. revision may be empty.
func SyncLog(base *logrus.Entry, namespace, dc, revision string) *logrus.Entry {
	fields := logrus.Fields{"namespace": namespace, "dc": dc}
	if revision != "" {
		fields["revision"] = revision
	}
	return base.WithFields(fields)
}
