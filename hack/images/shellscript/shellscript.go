// Package shellscript reads the simple commands of a RUN script with mvdan.cc/sh's shell
// parser: each command's words with the quotes taken off, and the VAR=value assignments
// before it. It runs nothing and expands no variable: a parameter expansion stays in the
// word as ${NAME}, and a word it cannot expand statically (a command substitution) keeps its
// source text, so a caller that wants literal words can refuse any word with a "$".
package shellscript

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command of a script.
type Command struct {
	// Assigns are the VAR=value words before the command, in order.
	Assigns []Assign
	// Args are the command's words: Args[0] is the program. Empty for a line of assignments.
	Args []string
}

// Assign is one VAR=value.
type Assign struct {
	Name, Value string
}

// Commands parses script and returns its simple commands in the order they appear, whatever
// joins them (&&, ||, ;, |, a subshell).
func Commands(script string) ([]Command, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, fmt.Errorf("parsing the shell script %q: %w", script, err)
	}
	var out []Command
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.CmdSubst); ok {
			return false // part of a word, not a command of the script
		}
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		var c Command
		for _, a := range call.Assigns {
			v := ""
			if a.Value != nil {
				v = assigned(a.Value)
			}
			c.Assigns = append(c.Assigns, Assign{Name: a.Name.Value, Value: v})
		}
		for _, w := range call.Args {
			c.Args = append(c.Args, word(w))
		}
		out = append(out, c)
		return true
	})
	return out, nil
}

// markers stands in for every variable: $V and ${V} both read as ${V}. A Config keeps
// state while it expands, so each expansion takes a fresh one: the Dockerfiles check
// parses several Dockerfiles at once, and a shared one mixed their words.
func markers() *expand.Config {
	return &expand.Config{Env: expand.FuncEnviron(func(name string) string { return "${" + name + "}" })}
}

// word removes the quotes and backslashes of w, as the shell does.
func word(w *syntax.Word) string {
	if f, err := expand.Fields(markers(), w); err == nil {
		return strings.Join(f, " ")
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "$?" // unprintable: still refused as a variable
	}
	return b.String()
}

// assigned is the value of VAR=value: no field splitting, as in an assignment.
func assigned(w *syntax.Word) string {
	if s, err := expand.Literal(markers(), w); err == nil {
		return s
	}
	return word(w)
}
