package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

type listedPackage struct {
	Dir, ImportPath string
	Standard        bool
	Module          *struct {
		GoMod   string
		Replace *struct{ GoMod string }
	}
	GoFiles, CgoFiles, CFiles, CXXFiles, MFiles, HFiles, FFiles, SFiles []string
	SwigFiles, SwigCXXFiles, SysoFiles, EmbedFiles                      []string
}

// needs lists the context files that go build b needs, by running go list in the host
// directory hostDir with the build's GOOS, GOARCH (amd64 and arm64 unless the RUN fixes
// one), CGO_ENABLED and -tags.
func (c *checker) needs(b goBuild, hostDir string, at func(string) string, ign *ignoreFile) ([]need, error) {
	var needs []need
	seen := map[string]bool{}
	add := func(n need) {
		if !seen[n.file] {
			seen[n.file] = true
			needs = append(needs, n)
		}
	}
	addModule := func(gomod string) {
		rel, ok := c.rel(gomod)
		if !ok {
			return
		}
		add(need{file: rel, what: "module file " + rel})
		sum := path.Join(path.Dir(rel), "go.sum")
		if c.exists(sum) {
			add(need{file: sum, what: "module file " + sum})
		}
	}

	// A go.work that goes into the image makes the build a workspace build, which needs
	// every module the workspace uses. One that does not, does not count.
	gowork := "off"
	for d := hostDir; ; d = path.Dir(d) {
		w := path.Join(d, "go.work")
		if c.exists(w) {
			if reason(w, at(w), b.copies, ign) == "" {
				gowork = filepath.Join(c.root, filepath.FromSlash(w))
				add(need{file: w, what: "workspace file " + w})
				if s := w + ".sum"; c.exists(s) {
					add(need{file: s, what: "workspace file " + s})
				}
				uses, err := c.workspaceModules(w)
				if err != nil {
					return nil, err
				}
				for _, u := range uses {
					addModule(filepath.Join(c.root, filepath.FromSlash(u), "go.mod"))
				}
			}
			break
		}
		if d == "." {
			break
		}
	}

	env := map[string]string{"GOOS": "linux", "GOWORK": gowork}
	for k, v := range b.env {
		env[k] = v
	}
	archs := []string{"amd64", "arm64"}
	if a, ok := b.env["GOARCH"]; ok {
		archs = []string{a}
	}
	for _, arch := range archs {
		env["GOARCH"] = arch
		args := append([]string{"list", "-deps", "-json=Dir,ImportPath,Standard,Module,GoFiles,CgoFiles,CFiles,CXXFiles,MFiles,HFiles,FFiles,SFiles,SwigFiles,SwigCXXFiles,SysoFiles,EmbedFiles"}, b.flags...)
		args = append(args, b.pkgs...)
		out, err := c.goCmd(hostDir, env, args...)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listedPackage
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("decoding go list output: %v", err)
			}
			if p.Standard {
				continue
			}
			if p.Module != nil {
				gomod := p.Module.GoMod
				if p.Module.Replace != nil && p.Module.Replace.GoMod != "" {
					gomod = p.Module.Replace.GoMod
				}
				addModule(gomod)
			}
			dir, ok := c.rel(p.Dir)
			if !ok {
				continue // the module cache or GOROOT
			}
			what := fmt.Sprintf("package directory %s/ (%s)", dir, p.ImportPath)
			if dir == "." {
				what = fmt.Sprintf("the package in the context root (%s)", p.ImportPath)
			}
			for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.MFiles, p.HFiles, p.FFiles, p.SFiles, p.SwigFiles, p.SwigCXXFiles, p.SysoFiles, p.EmbedFiles} {
				for _, f := range list {
					add(need{file: path.Join(dir, f), what: what, dir: dir})
				}
			}
		}
	}
	return needs, nil
}

func (c *checker) workspaceModules(w string) ([]string, error) {
	out, err := c.goCmd(".", nil, "work", "edit", "-json", w)
	if err != nil {
		return nil, err
	}
	var wf struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &wf); err != nil {
		return nil, fmt.Errorf("reading %s: %v", w, err)
	}
	var dirs []string
	for _, u := range wf.Use {
		dirs = append(dirs, path.Join(path.Dir(w), filepath.ToSlash(u.DiskPath)))
	}
	return dirs, nil
}

func (c *checker) goCmd(hostDir string, env map[string]string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(c.root, filepath.FromSlash(hostDir))
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s) failed: %v\n%s(if the tree is in the middle of an edit, retry in a minute)",
			strings.Join(args, " "), cmd.Dir, err, stderr.String())
	}
	return out, nil
}

// rel returns the context-relative, slash-separated form of a host path inside the root.
func (c *checker) rel(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	r, err := filepath.Rel(c.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

func (c *checker) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	return err == nil
}
