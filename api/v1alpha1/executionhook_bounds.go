package v1alpha1

// The bounds of an ExecutionHook's status. The controller rewrites the whole status
// when an attempt starts and when it ends, so a hook of n containers writes it about 2n
// times; the status must stay far below etcd's object limit (about 1.5 MiB; the
// apiserver's request limit is 3 MiB) and cheap to write that often. The fixed part of
// an entry (names, timestamps, counters, error type and reason) takes at most about
// 700 bytes, so 1000 entries (MaxExecutionHookContainers) take at most about 700 KiB;
// the entries' outputs and error messages share ExecutionHookStatusTextBudget on top of
// that, which leaves room for the metadata and the spec.
const (
	// MaxExecutionHookContainers bounds the pod × container entries of one hook.
	MaxExecutionHookContainers = 1000
	// ExecutionHookStatusTextBudget is the bytes that the outputs and error messages
	// of all the entries of one hook may take together.
	ExecutionHookStatusTextBudget = 256 << 10
	// MaxEntryOutputBytes and MaxEntryMessageBytes bound one entry's output and error
	// message whatever the number of entries.
	MaxEntryOutputBytes  = 1024
	MaxEntryMessageBytes = 1024
)

// EntryTextBounds is the bytes one entry's output and its error message may take in a
// hook of n entries: an equal share of ExecutionHookStatusTextBudget, three quarters
// for the output and one for the message, each at most its Max above.
func EntryTextBounds(n int) (output, message int) {
	share := ExecutionHookStatusTextBudget / max(n, 1)
	output = min(share*3/4, MaxEntryOutputBytes)
	message = min(share-share*3/4, MaxEntryMessageBytes)
	return output, message
}
