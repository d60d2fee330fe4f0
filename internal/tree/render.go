package tree

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Style says how a View is drawn.
type Style struct {
	// Color wraps each status in an ANSI colour; only for a terminal.
	Color bool
	// ASCII draws marks and the tree in ASCII, for terminals and logs without UTF-8.
	ASCII bool
	// Now gives the ages; zero leaves the AGE column out, so that two renders differ
	// only when what they show differs.
	Now time.Time
}

// The marks, as symbols and in ASCII, and their colours.
var (
	markSymbols = map[mark]string{markOK: "✔", markProgress: "◌", markFailed: "✖", markDegraded: "⚠", markInactive: "○", markNone: " "}
	markASCII   = map[mark]string{markOK: "+", markProgress: "~", markFailed: "x", markDegraded: "!", markInactive: "o", markNone: " "}
	markColors  = map[mark]string{markOK: "\x1b[32m", markProgress: "\x1b[33m", markFailed: "\x1b[31m", markDegraded: "\x1b[35m", markInactive: "\x1b[90m"}
)

const colorReset = "\x1b[0m"

// treeLines are the prefixes of the box-drawing tree: a child that is not the last, the
// last one, and what continues below each.
type treeLines struct{ branch, last, pipe, space string }

var (
	boxLines   = treeLines{branch: "├── ", last: "└── ", pipe: "│   ", space: "    "}
	asciiLines = treeLines{branch: "|-- ", last: "`-- ", pipe: "|   ", space: "    "}
)

func (s Style) mark(m mark) string {
	if s.ASCII {
		return markASCII[m]
	}
	return markSymbols[m]
}

// paint colours text by its mark, when colours are on.
func (s Style) paint(m mark, text string) string {
	if c := markColors[m]; s.Color && c != "" {
		return c + text + colorReset
	}
	return text
}

// Render draws v: the header, the conditions and the tree as a table of NAME, KIND,
// STATUS, AGE and INFO.
func (v *View) Render(w io.Writer, s Style) {
	var b strings.Builder
	for _, h := range v.header {
		key := ""
		if h.key != "" {
			key = h.key + ":"
		}
		text := oneLine(h.text)
		if h.mark != markNone {
			text = s.paint(h.mark, s.mark(h.mark)+" "+text)
		}
		fmt.Fprintf(&b, "%-12s %s\n", key, text)
	}
	if len(v.conditions) > 0 {
		b.WriteString("Conditions:\n")
		rows := [][]cell{{{text: "  TYPE"}, {text: "STATUS"}, {text: "REASON"}, {text: "MESSAGE"}}}
		for _, c := range v.conditions {
			rows = append(rows, []cell{{text: "  " + s.mark(c.mark) + " " + c.typ, mark: c.mark}, {text: c.status},
				{text: c.reason}, {text: c.message}})
		}
		writeTable(&b, rows, s)
	}
	b.WriteString("\n")

	header := []cell{{text: "NAME"}, {text: "KIND"}, {text: "STATUS"}, {text: "AGE"}, {text: "INFO"}}
	if s.Now.IsZero() {
		header = append(header[:3], header[4])
	}
	rows := [][]cell{header}
	lines := boxLines
	if s.ASCII {
		lines = asciiLines
	}
	var walk func(n *treeNode, prefix, childPrefix string)
	walk = func(n *treeNode, prefix, childPrefix string) {
		row := []cell{{text: prefix + n.name}, {text: n.kind}, {text: s.mark(n.mark) + " " + n.status, mark: n.mark}}
		if !s.Now.IsZero() {
			row = append(row, cell{text: age(n.created, s.Now)})
		}
		rows = append(rows, append(row, cell{text: strings.Join(n.info, ", ")}))
		for i, c := range n.children {
			if i == len(n.children)-1 {
				walk(c, childPrefix+lines.last, childPrefix+lines.space)
			} else {
				walk(c, childPrefix+lines.branch, childPrefix+lines.pipe)
			}
		}
	}
	walk(v.root, "", "")
	writeTable(&b, rows, s)
	_, _ = io.WriteString(w, b.String())
}

// cell is one cell of a table; a cell with a mark is painted in its colour.
type cell struct {
	text string
	mark mark
}

// oneLine folds a text of several lines (a termination message, a reason that quotes a
// log) into one, so that it does not break the tree.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// writeTable pads the columns to their widths in characters (tabwriter would count the
// colour codes) and leaves the last column unpadded.
func writeTable(b *strings.Builder, rows [][]cell, s Style) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(oneLine(c.text)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			c.text = oneLine(c.text)
			text := c.text
			if i < len(r)-1 {
				text += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2)
			}
			if c.mark != markNone {
				text = s.paint(c.mark, c.text) + text[len(c.text):]
			}
			line.WriteString(text)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// age is kubectl's short age ("5m", "2d3h"), or "-" without a time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}
