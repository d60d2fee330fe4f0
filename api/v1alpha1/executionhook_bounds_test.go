package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEntryTextBoundsShareTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name            string
		n               int
		output, message int
	}{
		{name: "one entry gets the maxima", n: 1, output: MaxEntryOutputBytes, message: MaxEntryMessageBytes},
		{name: "no entries count as one", n: 0, output: MaxEntryOutputBytes, message: MaxEntryMessageBytes},
		{name: "200 entries share the budget", n: 200, output: 982, message: 328},
		{name: "the most entries", n: MaxExecutionHookContainers, output: 196, message: 66},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, m := EntryTextBounds(tc.n)
			assert.Equal(t, tc.output, o)
			assert.Equal(t, tc.message, m)
			assert.LessOrEqual(t, max(tc.n, 1)*(o+m), ExecutionHookStatusTextBudget, "all entries fit the budget")
		})
	}
}
