package v1alpha1

// MaxStatusMessage bounds a message that Stagehand copies into a status field, an
// annotation or an event from text it does not control: a deployer's termination message,
// a hook's log, a registry's error.
const MaxStatusMessage = 1024

// TruncateMessage returns s when it fits in max bytes. Otherwise it keeps the end of s,
// after "...": the last lines of a log say the most. It never splits a UTF-8 character.
func TruncateMessage(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "..."
	if max <= len(mark) {
		return mark[:max]
	}
	cut := len(s) - (max - len(mark))
	for cut < len(s) && s[cut]&0xC0 == 0x80 { // a UTF-8 continuation byte
		cut++
	}
	return mark + s[cut:]
}
