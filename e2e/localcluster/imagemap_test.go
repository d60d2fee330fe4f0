package localcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAbsolutizeImageMap(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "relative", in: "a:*=bin/a", want: "a:*=/base/bin/a"},
		{name: "absolute kept", in: "a:*=/x/a", want: "a:*=/x/a"},
		{name: "spaces trimmed", in: " a:* = bin/a ", want: "a:*=/base/bin/a"},
		{name: "comments and blanks kept", in: "# c\n\na=b", want: "# c\n\na=/base/b"},
		{name: "malformed left for the parser", in: "nonsense", want: "nonsense"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, absolutizeImageMap(tt.in, "/base"))
		})
	}
}
