// Command stagehand-deployer is the built-in strategy image's binary: it carries out one revision's rollout and exits with the deployer-pod contract's codes (docs/deployer-contract.md).
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
		fmt.Println(version.String("stagehand-deployer"))
		return
	}
	fmt.Fprintln(os.Stderr, "stagehand-deployer: not implemented yet. The built-in Recreate and Rolling strategies arrive with the rollout-loop issue.")
	os.Exit(2)
}
