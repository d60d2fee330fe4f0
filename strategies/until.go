package strategies

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUntilReached stops a rollout at the point that --until names. It is a success: the
// deployer exits 0, and a later run without --until continues from there.
var ErrUntilReached = errors.New("stopped where --until asked")

// Until is where a rollout stops early (stagehand-deployer --until). The zero value runs
// the whole rollout.
type Until struct {
	// Stage is pre or mid: stop right after that hook.
	Stage string
	// Percent (1–100) stops once that share of the desired replicas, rounded up, is
	// available on the new revision. 100 stops after the rollout, before the post hook.
	Percent int32
}

// ParseUntil parses pre, mid or N% (1 ≤ N ≤ 100); "" is the zero Until.
func ParseUntil(s string) (Until, error) {
	switch s {
	case "":
		return Until{}, nil
	case StagePre, StageMid:
		return Until{Stage: s}, nil
	}
	number, ok := strings.CutSuffix(s, "%")
	n, err := strconv.ParseInt(number, 10, 32)
	if !ok || err != nil || n < 1 || n > 100 {
		return Until{}, Invalidf("--until=%s: use pre, mid, or a percentage from 1%% to 100%%", s)
	}
	return Until{Percent: int32(n)}, nil
}

// IsZero reports whether u runs the whole rollout.
func (u Until) IsZero() bool { return u == Until{} }

func (u Until) String() string {
	if u.Percent > 0 {
		return fmt.Sprintf("%d%%", u.Percent)
	}
	return u.Stage
}

// Target is the new revision's replicas at which u stops: ceil(Percent% × desired);
// desired when u stops at no percentage.
func (u Until) Target(desired int32) int32 {
	if u.Percent <= 0 || u.Percent >= 100 {
		return desired
	}
	return int32((int64(desired)*int64(u.Percent) + 99) / 100)
}

// AfterHook returns the ErrUntilReached of u when u stops right after the hook of stage.
func (u Until) AfterHook(stage, revision string) error {
	if u.Stage != stage {
		return nil
	}
	return fmt.Errorf("%w: %s: after the %s hook of %s", ErrUntilReached, u, stage, revision)
}

// AtPercent returns the ErrUntilReached of u when u stops at a percentage, with the
// available pods it reached.
func (u Until) AtPercent(revision string, available, desired int32) error {
	if u.Percent <= 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s has %d of %d pods available", ErrUntilReached, u, revision, available, desired)
}
