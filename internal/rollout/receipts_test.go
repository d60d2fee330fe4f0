package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNotifiedTextSumsUpEachReceiver(t *testing.T) {
	assert.Equal(t, "ops: Complete 200, Started 200; chat: Failed 500 Pending", NotifiedText([]Receipt{
		{Receiver: "ops", Event: "Complete", Phase: "Delivered", Code: 200},
		{Receiver: "ops", Event: "Started", Phase: "Delivered", Code: 200},
		{Receiver: "chat", Event: "Failed", Phase: "Pending", Code: 500},
	}))
	assert.Equal(t, "ops: Started Sending", NotifiedText([]Receipt{{Receiver: "ops", Event: "Started", Phase: "Sending"}}))
	assert.Empty(t, NotifiedText(nil))
}
