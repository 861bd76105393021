package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nsman/nsman/sweep"
)

// writeReport prints a sweep report as a table or as JSON (the schema is
// sweep.Report, versioned by sweep.ReportVersion).
func writeReport(w io.Writer, format string, r sweep.Report) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MANAGER\tTARGET\tPOLICY\tSTATE\tACTION\tDUE\tMESSAGE")
	for _, e := range r.Entries {
		due := "-"
		if e.Due != nil {
			due = e.Due.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Namespace, e.Name, dash(e.Target), dash(e.Policy), e.State, dash(e.Action), due, dash(e.Message))
		for _, effect := range e.Effects {
			fmt.Fprintf(tw, "\t\t\t\t\t\t  %s\n", effect)
		}
		for _, p := range e.Problems {
			fmt.Fprintf(tw, "\t\t\t\t\t\t  %s\n", p)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	mode := "sweep"
	if r.Summary.DryRun {
		mode = "dry run"
	}
	var states []string
	for _, s := range slices.Sorted(maps.Keys(r.Summary.States)) {
		states = append(states, fmt.Sprintf("%d %s", r.Summary.States[s], s))
	}
	var requests int
	for _, n := range r.Summary.Requests {
		requests += n
	}
	_, err := fmt.Fprintf(w, "\n%s at %s: %d managers (%s); %d API requests in %.2fs\n",
		mode, r.Summary.Now.Format(time.RFC3339), r.Summary.Managers, strings.Join(states, ", "), requests, r.Summary.DurationSeconds)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
