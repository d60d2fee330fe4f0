// Command verifydockerfiles checks that each Dockerfile of the repository that builds a Go
// binary puts into its build stage every file that `go build` needs: the Go files (and
// embedded files) of every package of this repository that the binary depends on, per
// `go list -deps`, and the go.mod and go.sum of the modules involved. A file counts as
// there when a COPY (or ADD) of the build stage copies it to the place the build expects
// and the .dockerignore does not leave it out of the build context.
//
// No machine here runs Docker, so this is what keeps `make images` from breaking silently
// when a package moves or a new one appears. See docs/images.md.
//
// Usage (from hack/verify-dockerfiles.sh):
//
//	verifydockerfiles [-root DIR] [-dockerfiles DIR] [-list] [DOCKERFILE...]
//
// Exit status: 0 all good, 1 a Dockerfile misses something, 2 the check could not run
// (a Dockerfile or .dockerignore it cannot parse, or go list failed).
//
// This program is part of the build-only module hack/images and imports nothing from the product.
package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

func main() {
	root := flag.String("root", ".", "the build context: the repository root, whose Go sources go list reads")
	dfDir := flag.String("dockerfiles", "", "read the Dockerfiles and .dockerignore files from this `dir` (laid out like the root) instead of the root; the self-test checks mutated copies this way")
	list := flag.Bool("list", false, "print DOCKERFILE<tab>PACKAGE_DIR for each repository package a Dockerfile's binary needs, and check nothing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [-root DIR] [-dockerfiles DIR] [-list] [DOCKERFILE...]\n"+
			"DOCKERFILEs are relative to the Dockerfiles dir; by default every Dockerfile found there.\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(*root, *dfDir, *list, flag.Args(), os.Stdout, os.Stderr))
}

func run(root, dfDir string, list bool, dockerfiles []string, stdout, stderr io.Writer) int {
	var err error
	if root, err = filepath.Abs(root); err != nil {
		fmt.Fprintln(stderr, "verify-dockerfiles:", err)
		return 2
	}
	if dfDir == "" {
		dfDir = root
	}
	if dfDir, err = filepath.Abs(dfDir); err != nil {
		fmt.Fprintln(stderr, "verify-dockerfiles:", err)
		return 2
	}
	if len(dockerfiles) == 0 {
		if dockerfiles, err = findDockerfiles(dfDir); err != nil {
			fmt.Fprintln(stderr, "verify-dockerfiles:", err)
			return 2
		}
	}
	c := &checker{root: root, dfDir: dfDir}
	// Check the Dockerfiles concurrently (go list is most of the time); report in order.
	results := make([][]buildResult, len(dockerfiles))
	errs := make([]error, len(dockerfiles))
	var wg sync.WaitGroup
	for i, df := range dockerfiles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = c.check(filepath.ToSlash(df))
		}()
	}
	wg.Wait()
	var problems []string
	for i, df := range dockerfiles {
		res, err := results[i], errs[i]
		if err != nil {
			fmt.Fprintln(stderr, "verify-dockerfiles:", err)
			return 2
		}
		if list {
			for _, b := range res {
				for _, d := range b.pkgDirs {
					fmt.Fprintf(stdout, "%s\t%s\n", df, d)
				}
			}
			continue
		}
		if len(res) == 0 {
			fmt.Fprintf(stdout, "skip %s: it runs no go build\n", df)
		}
		for _, b := range res {
			if len(b.problems) == 0 {
				fmt.Fprintf(stdout, "ok   %s:%d: go build %s: %d package directories and %d module files of this repository, all in the build stage\n",
					df, b.line, strings.Join(b.pkgs, " "), len(b.pkgDirs), b.moduleFiles)
			}
			problems = append(problems, b.problems...)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, "FAIL "+p)
		}
		fmt.Fprintf(stderr, "verify-dockerfiles: %d problem(s). `docker build` of these Dockerfiles would fail: "+
			"copy what is missing (COPY . . copies the whole module) or stop the .dockerignore from excluding it; see docs/images.md.\n", len(problems))
		return 1
	}
	return 0
}

// findDockerfiles lists the Dockerfiles under dir: files named Dockerfile, Dockerfile.*,
// *.Dockerfile or Containerfile, outside .git, bin, testdata and the like.
func findDockerfiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			switch name {
			case ".git", "bin", ".localcluster", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".dockerignore") {
			return nil
		}
		if name == "Dockerfile" || name == "Containerfile" || strings.HasPrefix(name, "Dockerfile.") || strings.HasSuffix(name, ".Dockerfile") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

type checker struct {
	root  string // the build context and Go source tree, absolute
	dfDir string // where the Dockerfiles and ignore files are read, absolute
}

// buildResult is the outcome for one go build of a Dockerfile.
type buildResult struct {
	line        int
	pkgs        []string
	pkgDirs     []string // context-relative package directories it needs, sorted
	moduleFiles int
	problems    []string
}

// need is a file the build needs, context-relative, and what it belongs to.
type need struct {
	file string
	what string // for messages: "package directory x/ (import/path)" or "module file go.mod"
	dir  string // the package directory, "" for module files
}

func (c *checker) check(df string) ([]buildResult, error) {
	builds, err := parseDockerfile(filepath.Join(c.dfDir, filepath.FromSlash(df)), df, c.root)
	if err != nil {
		return nil, err
	}
	if len(builds) == 0 {
		return nil, nil
	}
	// BuildKit prefers <Dockerfile>.dockerignore next to the Dockerfile over the context's
	// .dockerignore.
	ignName := df + ".dockerignore"
	if _, err := os.Stat(filepath.Join(c.dfDir, filepath.FromSlash(ignName))); err != nil {
		ignName = ".dockerignore"
	}
	ign, err := readIgnoreFile(filepath.Join(c.dfDir, filepath.FromSlash(ignName)), ignName)
	if err != nil {
		return nil, err
	}

	var results []buildResult
	for _, b := range builds {
		where := fmt.Sprintf("%s:%d: go build %s", df, b.line, strings.Join(b.pkgs, " "))
		hostDir, ok := invert(b.copies, b.dir)
		if !ok {
			return nil, fmt.Errorf("%s: runs in %s, which no COPY of the build context fills, so the check cannot tell which directory of the context it is (copy the module with COPY . . into the WORKDIR)", where, b.dir)
		}
		// Each file must be where it is on the host, relative to the directory the build
		// runs in: the build finds packages, go.mod and replaced modules by those paths.
		at := func(rel string) string {
			r, _ := filepath.Rel(filepath.FromSlash(hostDir), filepath.FromSlash(rel))
			return path.Join(b.dir, filepath.ToSlash(r))
		}
		needs, err := c.needs(b, hostDir, at, ign)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		res := buildResult{line: b.line, pkgs: b.pkgs}
		missing := map[string][]string{} // what -> reasons, in order
		var order []string
		dirs := map[string]bool{}
		for _, n := range needs {
			if n.dir != "" {
				dirs[n.dir] = true
			} else {
				res.moduleFiles++
			}
			if why := reason(n.file, at(n.file), b.copies, ign); why != "" {
				if _, seen := missing[n.what]; !seen {
					order = append(order, n.what)
				}
				missing[n.what] = append(missing[n.what], why)
			}
		}
		for d := range dirs {
			res.pkgDirs = append(res.pkgDirs, d)
		}
		sort.Strings(res.pkgDirs)
		sort.Strings(order)
		for _, what := range order {
			whys := missing[what]
			msg := fmt.Sprintf("%s needs %s, which the image would not have: %s", where, what, whys[0])
			if len(whys) > 1 {
				msg += fmt.Sprintf(" (and %d more of its files)", len(whys)-1)
			}
			res.problems = append(res.problems, msg)
		}
		results = append(results, res)
	}
	return results, nil
}

// reason tells why the context file rel would not be at want in the build stage, or
// returns "" when it would be.
func reason(rel, want string, copies []copyOp, ign *ignoreFile) string {
	if out, p := ign.excluded(rel); out {
		return fmt.Sprintf("%s is excluded from the build context by %s:%d (%q)", rel, ign.name, p.line, p.text)
	}
	var elsewhere []string
	for _, op := range copies {
		for _, s := range op.srcs {
			to := ""
			if s.isDir {
				if r, ok := under(s.rel, rel); ok {
					to = path.Join(s.to, r)
				}
			} else if s.rel == rel {
				to = s.to
			}
			if to == "" {
				continue
			}
			if to == want {
				return ""
			}
			elsewhere = append(elsewhere, fmt.Sprintf("line %d copies it to %s", op.line, to))
		}
	}
	if len(elsewhere) > 0 {
		return fmt.Sprintf("%s is not copied to %s (%s)", rel, want, strings.Join(elsewhere, "; "))
	}
	return fmt.Sprintf("no COPY line copies %s (to %s)", rel, want)
}

// under returns p relative to base when p is base or below it ("." is the root of
// whatever tree both are in, context or container).
func under(base, p string) (string, bool) {
	switch {
	case base == p:
		return ".", true
	case base == "." && !path.IsAbs(p):
		return p, true
	case base == "/" && path.IsAbs(p):
		return strings.TrimPrefix(p, "/"), true
	case strings.HasPrefix(p, base+"/"):
		return strings.TrimPrefix(p, base+"/"), true
	}
	return "", false
}

// invert finds the context directory that the container directory dir holds, from the
// copies: inside a copied directory, or above a copied file or directory whose context
// path ends the same way (COPY go.mod ./ into /src makes /src the context root).
func invert(copies []copyOp, dir string) (string, bool) {
	for i := len(copies) - 1; i >= 0; i-- {
		for _, s := range copies[i].srcs {
			if s.isDir {
				if r, ok := under(s.to, dir); ok {
					return path.Join(s.rel, r), true
				}
			}
			if r, ok := under(dir, s.to); ok && r != "." {
				if s.rel == r {
					return ".", true
				}
				if strings.HasSuffix(s.rel, "/"+r) {
					return strings.TrimSuffix(s.rel, "/"+r), true
				}
			}
		}
	}
	return "", false
}
