// Command kubectl-stagehand is the kubectl plugin: kubectl stagehand rollout ... and kubectl stagehand convert.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stagehand-dev/stagehand/internal/version"
)

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("kubectl-stagehand"))
		return
	}
	fmt.Fprintln(os.Stderr, "kubectl-stagehand: not implemented yet. The rollout commands (latest, cancel, retry, history, undo, status, logs) and convert arrive with the CLI issue.")
	os.Exit(2)
}
