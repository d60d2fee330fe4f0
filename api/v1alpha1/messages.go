package v1alpha1

// MaxStatusMessage bounds a message that Stagehand copies into a status field, an
// annotation or an event from text it does not control: a deployer's termination message,
// a hook's log, a registry's error. api/podstatus.TruncateEnd cuts such a message to it.
const MaxStatusMessage = 1024
