package dockerfile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFinalStage(t *testing.T) {
	fs, err := ReadBytes([]byte(`FROM golang AS build
USER 1:1
FROM base:1 AS final
WORKDIR /app
ENV A=1 B="two words"
COPY --from=build /out/x bin/
USER 0:0
RUN mkdir -p /bin && ln -sf /busybox/sh /bin/sh; ln -s x /app/bin/y
RUN ["/busybox/sh", "-c", "ln -s a b"]
USER 65532:65532
EXPOSE 8080 53/udp
ENTRYPOINT ["/app/bin/x"]
CMD run it
`))
	require.NoError(t, err)
	assert.Equal(t, FinalStage{
		From: "base:1", User: "65532:65532", WorkDir: "/app",
		Entrypoint: []string{"/app/bin/x"}, Cmd: []string{"/bin/sh", "-c", "run it"},
		Env:    []string{"A=1", "B=two words"},
		Expose: []string{"53/udp", "8080/tcp"},
		Copies: []Copy{{From: "build", Src: "/out/x", Dest: "/app/bin/x", Line: 6}},
		Links:  []Link{{Path: "/bin/sh", Target: "/busybox/sh"}, {Path: "/app/bin/y", Target: "x"}, {Path: "/app/b", Target: "a"}},
		Dirs:   []string{"/bin"},
	}, fs)
}

// TestReadRefusesWhatItDoesNotUnderstand: a final stage that the image builder could not
// reproduce is an error, never a silent gap.
func TestReadRefusesWhatItDoesNotUnderstand(t *testing.T) {
	for name, text := range map[string]string{
		"another command":     "FROM a\nRUN apk add curl\n",
		"a variable":          "FROM a\nENV PATH=$PATH:/x\n",
		"COPY from context":   "FROM a\nCOPY x /x\n",
		"COPY --chmod":        "FROM b AS b\nFROM a\nCOPY --from=b --chmod=700 x /x\n",
		"ADD":                 "FROM a\nADD x /x\n",
		"ln without -s":       "FROM a\nRUN ln a b\n",
		"a RUN mount":         "FROM a\nRUN --mount=type=cache,target=/c ln -s a b\n",
		"exec form, no shell": "FROM a\nRUN [\"/bin/ln\", \"-s\", \"a\", \"b\"]\n",
		"no FROM":             "# nothing\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadBytes([]byte(text))
			assert.Error(t, err)
		})
	}
}
