package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// RolloutRequestAnnotation on a DeploymentConfig asks the controller for a rollout that no
// trigger would start: a manual rollout, a rollback or a retry. Its value is a
// RolloutRequest as JSON. The controller is the only writer of revisions; a client (the
// kubectl plugin, or any other) writes this annotation, with the resourceVersion it read,
// and the controller acts on it once.
const RolloutRequestAnnotation = GroupName + "/rollout-request"

// RequestAnnotation on a revision holds the ID of the rollout request that created it, or
// that last restarted it (a retry).
const RequestAnnotation = GroupName + "/request"

// RetriedAtAnnotation on a retried revision holds when the retry reset it to New
// (RFC 3339). Deadlines that count from the revision's start count from then.
const RetriedAtAnnotation = GroupName + "/retried-at"

// RollbackToAnnotation on a revision created by a rollback holds the revision number it
// rolled back to.
const RollbackToAnnotation = GroupName + "/rollback-to"

// RolloutRequestAction is what a RolloutRequest asks for.
type RolloutRequestAction string

const (
	// RolloutRequestLatest asks for a new revision of the current spec: cause Manual.
	RolloutRequestLatest RolloutRequestAction = "Latest"
	// RolloutRequestRollback asks for a new revision of the current spec, which the client
	// set from an earlier revision's snapshot in the same update: cause Rollback.
	RolloutRequestRollback RolloutRequestAction = "Rollback"
	// RolloutRequestRetry asks to run the Failed latest revision again: its deployer and
	// hook pods are deleted and it is reset to New. No new revision is created.
	RolloutRequestRetry RolloutRequestAction = "Retry"
)

// RolloutRequest is the value of the rollout-request annotation.
//
// A request holds the latestVersion its client read. A Latest or Rollback request is
// pending while status.latestVersion still equals it, and the controller answers it with
// revision latestVersion+1; a Retry request is pending while that revision is the latest,
// is Failed, and does not carry the request's ID yet. A request is therefore acted on at
// most once, however often the controller syncs or restarts.
type RolloutRequest struct {
	// ID identifies the request; a retried client write with the same ID is the same request.
	ID string `json:"id"`
	// Action is Latest, Rollback or Retry.
	Action RolloutRequestAction `json:"action"`
	// LatestVersion is status.latestVersion when the client made the request.
	LatestVersion int64 `json:"latestVersion"`
	// RollbackTo is the revision a Rollback request took its spec from.
	RollbackTo int64 `json:"rollbackTo,omitempty"`
	// Message is a free text recorded in status.details.message.
	Message string `json:"message,omitempty"`
}

// Cause is the cause of the revision that a Latest or Rollback request creates.
func (r *RolloutRequest) Cause() DeploymentCauseType {
	if r.Action == RolloutRequestRollback {
		return DeploymentCauseRollback
	}
	return DeploymentCauseManual
}

// Encode renders the annotation value.
func (r *RolloutRequest) Encode() string {
	raw, _ := json.Marshal(r) // a struct of strings and integers always encodes
	return string(raw)
}

// ParseRolloutRequest reads the rollout-request annotation of a DeploymentConfig. It
// returns nil and no error when there is none.
func ParseRolloutRequest(dc *DeploymentConfig) (*RolloutRequest, error) {
	raw, ok := dc.Annotations[RolloutRequestAnnotation]
	if !ok {
		return nil, nil
	}
	r := &RolloutRequest{}
	if err := json.Unmarshal([]byte(raw), r); err != nil {
		return nil, fmt.Errorf("annotation %s is not a rollout request (JSON with id, action and latestVersion): %w", RolloutRequestAnnotation, err)
	}
	switch {
	case r.ID == "":
		return nil, fmt.Errorf("annotation %s: id must not be empty", RolloutRequestAnnotation)
	case r.Action != RolloutRequestLatest && r.Action != RolloutRequestRollback && r.Action != RolloutRequestRetry:
		return nil, fmt.Errorf("annotation %s: action %q must be Latest, Rollback or Retry", RolloutRequestAnnotation, r.Action)
	case r.LatestVersion < 0:
		return nil, fmt.Errorf("annotation %s: latestVersion must not be negative", RolloutRequestAnnotation)
	case r.Action == RolloutRequestRollback && r.RollbackTo <= 0:
		return nil, fmt.Errorf("annotation %s: a Rollback needs rollbackTo, the revision it rolls back to", RolloutRequestAnnotation)
	}
	return r, nil
}
