package nodeagent

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilexec "k8s.io/utils/exec"
)

// ServeExec reports the exit code only for errors that implement utilexec.ExitError; a
// bare *exec.ExitError does not (it has no ExitStatus method), which is why the executor
// wraps it.
func TestExitErrorsCarryTheExitCode(t *testing.T) {
	err := exec.Command("sh", "-c", "exit 4").Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee))

	_, bare := error(ee).(utilexec.ExitError)
	assert.False(t, bare, "a bare *exec.ExitError is not a utilexec.ExitError")

	wrapped, ok := error(exitError{ee}).(utilexec.ExitError)
	require.True(t, ok)
	assert.True(t, wrapped.Exited())
	assert.Equal(t, 4, wrapped.ExitStatus())

	notFound, ok := error(codeExitError{err: errors.New("exec: nope"), code: 127}).(utilexec.ExitError)
	require.True(t, ok)
	assert.True(t, notFound.Exited())
	assert.Equal(t, 127, notFound.ExitStatus())
}
