// Command stagehand-deployer is the built-in strategy image's binary: it carries out one
// revision's rollout (Recreate or Rolling) and exits with the deployer-pod contract's codes
// (docs/deployer-contract.md).
package main

import (
	"os"

	"github.com/stagehand-dev/stagehand/deployer"
)

func main() {
	os.Exit(deployer.Main("stagehand-deployer", os.Args[1:], deployer.BuiltIn))
}
