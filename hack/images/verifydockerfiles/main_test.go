package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIgnore(t *testing.T) {
	f, err := parseIgnore([]byte("# comment\n\nbin\n/docs/\n**/*_test.go\n**/testdata\ne2e\n!e2e/testapp\nexamples/*.yaml\nx/**\n"), ".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]bool{
		"bin/tool":                 true,
		"cmd/bin/tool":             false, // a pattern is anchored at the context root
		"docs/api.md":              true,
		"controller/dc_test.go":    true,
		"a_test.go":                true,
		"controller/dc.go":         false,
		"api/testdata/x/y.yaml":    true,
		"e2e/cli_test.go":          true,
		"e2e/framework/f.go":       true,
		"e2e/testapp/main.go":      false, // re-included by the "!" line
		"e2e/testapp/main_test.go": false, // the last matching line wins
		"examples/hello.yaml":      true,
		"examples/custom/main.go":  false,
		"x/y/z.go":                 true,
		"xy/z.go":                  false,
	} {
		if got, _ := f.excluded(file); got != want {
			t.Errorf("excluded(%q) = %v, want %v", file, got, want)
		}
	}
	_, p := f.excluded("e2e/framework/f.go")
	if p == nil || p.line != 7 {
		t.Errorf("excluded(e2e/framework/f.go) decided by %+v, want line 7", p)
	}
}

// TestIgnoreBadPattern: a pattern that moby/patternmatcher refuses stops the check (exit 2
// from run), naming the file.
func TestIgnoreBadPattern(t *testing.T) {
	for _, pat := range []string{"[z-a", "a[", `x\`} {
		if _, err := parseIgnore([]byte("ok\n"+pat+"\n"), ".dockerignore"); err == nil || !strings.Contains(err.Error(), ".dockerignore") {
			t.Errorf("parseIgnore(%q): err = %v, want an error naming the file", pat, err)
		}
	}
}

func TestParseDockerfileUnsupported(t *testing.T) {
	root := t.TempDir()
	for _, df := range []string{
		"FROM golang\nRUN sh -c 'go build ./x'\n",
		"FROM golang\nWORKDIR $DIR\n",
		"FROM golang\nCOPY --parents a/ /src/\n",
		"FROM golang\nCOPY <<EOF /x\nhi\nEOF\n",
		"FROM golang\nRUN --mount=type=bind,target=/src cd /src && go build ./x\n",
	} {
		writeTree(t, root, map[string]string{"Dockerfile": df})
		_, err := parseDockerfile(filepath.Join(root, "Dockerfile"), "Dockerfile", root)
		t.Logf("%q: %v", df, err)
		if err == nil || !strings.Contains(err.Error(), "not") {
			t.Errorf("parseDockerfile(%q): err = %v, want a loud refusal", df, err)
		}
	}
}

// writeTree writes files (slash paths) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseDockerfile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"go.mod": "module m\n", "api/a.go": "", "cmd/x/main.go": "", "README.md": ""})
	writeTree(t, root, map[string]string{"Dockerfile": `# syntax=docker/dockerfile:1
ARG GO=1.26
FROM golang:${GO} AS build
WORKDIR /src
COPY ["go.mod", "./"]
COPY api cmd/ ./
# a comment
RUN --mount=type=cache,target=/root/.cache \
    # a comment inside the continuation
    cd cmd && GOARCH=arm64 go build -trimpath -tags "a b" \
      -ldflags "-X m/v.V=${V}" -o /out/x ./x
FROM build AS more
COPY README.md /doc
RUN go install
FROM scratch
COPY --from=build /out/x /x
`})
	builds, err := parseDockerfile(filepath.Join(root, "Dockerfile"), "Dockerfile", root)
	if err != nil {
		t.Fatal(err)
	}
	if len(builds) != 2 {
		t.Fatalf("got %d builds, want 2: %+v", len(builds), builds)
	}
	b := builds[0]
	if b.line != 8 || b.dir != "/src/cmd" || strings.Join(b.pkgs, " ") != "./x" || b.env["GOARCH"] != "arm64" || strings.Join(b.flags, " ") != "-tags=a b" {
		t.Errorf("first build = %+v", b)
	}
	var got []string
	for _, op := range b.copies {
		for _, s := range op.srcs {
			got = append(got, s.rel+"->"+s.to)
		}
	}
	if want := "go.mod->/src/go.mod api->/src cmd->/src"; strings.Join(got, " ") != want {
		t.Errorf("copies = %q, want %q", got, want)
	}
	b = builds[1]
	if b.dir != "/src" || strings.Join(b.pkgs, " ") != "." || len(b.copies) != 3 || b.copies[2].srcs[0].to != "/doc" {
		t.Errorf("second build = %+v", b)
	}
}

// TestCheck runs the whole check on a small module: it must pass when the Dockerfile
// copies everything, and fail naming the package when a COPY line or the .dockerignore
// leaves one out.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":          "module example.com/m\n\ngo 1.22\n",
		"a/a.go":          "package a\n\nconst A = 1\n",
		"b/b.go":          "package b\n\nimport _ \"embed\"\n\n//go:embed data.txt\nvar B string\n",
		"b/data.txt":      "data\n",
		"b/b_test.go":     "package b\n",
		"c/c.go":          "package c\n", // not imported
		"cmd/x/main.go":   "package main\n\nimport (\n\t\"example.com/m/a\"\n\t\"example.com/m/b\"\n)\n\nfunc main() { println(a.A, b.B) }\n",
		"docs/readme.txt": "",
	})
	const head = "FROM golang:1.26 AS build\nWORKDIR /src\nCOPY go.mod ./\nRUN go mod download\n"
	const tail = "RUN CGO_ENABLED=0 go build -o /out/x ./cmd/x\n"
	for _, tc := range []struct {
		name, copies, ignore string
		want                 []string // in the failure output; none: the check passes
	}{
		{name: "whole module", copies: "COPY . .\n", ignore: "docs\n**/*_test.go\nc\n"},
		{name: "every directory", copies: "COPY a/ a/\nCOPY b b\nCOPY cmd/x/ cmd/x/\n"},
		{name: "a COPY line missing", copies: "COPY a/ a/\nCOPY cmd/ cmd/\n",
			want: []string{"Dockerfile:7: go build ./cmd/x needs package directory b/ (example.com/m/b)", "no COPY line copies b/b.go (to /src/b/b.go) (and 1 more of its files)"}},
		{name: "copied elsewhere", copies: "COPY a/ a/\nCOPY b/ lib/b/\nCOPY cmd/ cmd/\n",
			want: []string{"package directory b/", "b/b.go is not copied to /src/b/b.go (line 6 copies it to /src/lib/b/b.go)"}},
		{name: "ignored package", copies: "COPY . .\n", ignore: "docs\nb\n",
			want: []string{"package directory b/ (example.com/m/b)", `excluded from the build context by .dockerignore:2 ("b")`}},
		{name: "ignored embedded file", copies: "COPY . .\n", ignore: "**/*.txt\n",
			want: []string{"package directory b/", `b/data.txt is excluded from the build context by .dockerignore:1 ("**/*.txt")`}},
		{name: "ignored go.mod", copies: "COPY . .\n", ignore: "go.mod\n",
			want: []string{"needs module file go.mod", `.dockerignore:1 ("go.mod")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dfDir := t.TempDir()
			writeTree(t, dfDir, map[string]string{"Dockerfile": head + tc.copies + tail, ".dockerignore": tc.ignore})
			var stdout, stderr bytes.Buffer
			code := run(root, dfDir, false, nil, &stdout, &stderr)
			if len(tc.want) == 0 {
				if code != 0 {
					t.Fatalf("exit %d, want 0:\n%s%s", code, stdout.String(), stderr.String())
				}
				if want := "3 package directories and 1 module files"; !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout %q does not count %s", stdout.String(), want)
				}
				return
			}
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s%s", code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, stderr.String())
				}
			}
			if strings.Count(stderr.String(), "FAIL ") != 1 {
				t.Errorf("want exactly one problem:\n%s", stderr.String())
			}
		})
	}
}

// TestCheckTwoModules covers a module of its own in a subdirectory (as e2e/ is to become)
// that uses the root module through a replace directive, and a go.work that goes into the
// image.
func TestCheckTwoModules(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":          "module example.com/m\n\ngo 1.22\n",
		"a/a.go":          "package a\n\nconst A = 1\n",
		"sub/go.mod":      "module example.com/m/sub\n\ngo 1.22\n\nrequire example.com/m v0.0.0\n\nreplace example.com/m => ../\n",
		"sub/cmd/y/y.go":  "package main\n\nimport \"example.com/m/a\"\n\nfunc main() { println(a.A) }\n",
		"work/go.work":    "go 1.22\n\nuse (\n\t.\n\t./w\n)\n",
		"work/go.mod":     "module example.com/work\n\ngo 1.22\n",
		"work/z/main.go":  "package main\n\nfunc main() {}\n",
		"work/w/go.mod":   "module example.com/w\n\ngo 1.22\n",
		"work/w/w.go":     "package w\n",
		"docs/readme.txt": "",
	})
	for _, tc := range []struct {
		name, dockerfile, ignore string
		want                     []string
	}{
		{name: "sub module", dockerfile: "FROM golang AS b\nWORKDIR /src\nCOPY . .\nRUN cd sub && go build -o /y ./cmd/y\n"},
		{name: "sub module, root go.mod left out", dockerfile: "FROM golang AS b\nWORKDIR /src\nCOPY . .\nRUN cd sub && go build -o /y ./cmd/y\n", ignore: "/go.mod\n",
			want: []string{"Dockerfile:4: go build ./cmd/y needs module file go.mod", `.dockerignore:1 ("/go.mod")`}},
		{name: "sub module, root package left out", dockerfile: "FROM golang AS b\nWORKDIR /src/sub\nCOPY sub/ ./\nCOPY go.mod ../\nRUN go build -o /y ./cmd/y\n",
			want: []string{"needs package directory a/ (example.com/m/a)", "no COPY line copies a/a.go (to /src/a/a.go)"}},
		{name: "workspace", dockerfile: "FROM golang\nWORKDIR /src\nCOPY work/ ./\nRUN go build -o /z ./z\n"},
		{name: "workspace, used module left out", dockerfile: "FROM golang\nWORKDIR /src\nCOPY work/ ./\nRUN go build -o /z ./z\n", ignore: "work/w\n",
			want: []string{"needs module file work/w/go.mod"}},
		{name: "workspace file left out", dockerfile: "FROM golang\nWORKDIR /src\nCOPY work/ ./\nRUN go build -o /z ./z\n", ignore: "work/w\n**/go.work\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dfDir := t.TempDir()
			writeTree(t, dfDir, map[string]string{"Dockerfile": tc.dockerfile, ".dockerignore": tc.ignore})
			var stdout, stderr bytes.Buffer
			code := run(root, dfDir, false, nil, &stdout, &stderr)
			want := 0
			if len(tc.want) > 0 {
				want = 1
			}
			if code != want {
				t.Fatalf("exit %d, want %d:\n%s%s", code, want, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
