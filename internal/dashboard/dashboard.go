// Package dashboard reads the Grafana dashboard shipped in deploy/grafana: which of the
// controller's series its queries read. Both the controller's unit test and the e2e
// scrape test check those names against what the controller exports.
package dashboard

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// Path is the dashboard's file, from the repository's root.
const Path = "deploy/grafana/stagehand.json"

// seriesName matches the controller's series in a PromQL expression.
var seriesName = regexp.MustCompile(`\b(?:stagehand|workqueue|rest_client)_[a-z_]+\b`)

// Series lists, sorted and without repeats, every controller series that the dashboard's
// panel queries and template variables read.
func Series(raw []byte) ([]string, error) {
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		return nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	var out []string
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			out = append(out, seriesName.FindAllString(target.Expr, -1)...)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			out = append(out, seriesName.FindAllString(q, -1)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
