package controller

import "github.com/sirupsen/logrus"

// syncLog is the one place that builds a sync's log entry, so that every line about a
// DeploymentConfig carries the same fields. revision may be empty.
func syncLog(base *logrus.Entry, namespace, dc, revision string) *logrus.Entry {
	fields := logrus.Fields{"namespace": namespace, "dc": dc}
	if revision != "" {
		fields["revision"] = revision
	}
	return base.WithFields(fields)
}
