package doctor

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// About says what each check looks at, by its name: the ABOUT column of
// the wide text report.
var About = map[string]string{
	"apiServer":       "the API server's version",
	"crd":             "the NamespaceManager CRD",
	"permissions":     "what nsman's ServiceAccount may do",
	"ownerKinds":      "the kinds that own namespaces",
	"namespaces":      "the namespaces nsman trusts and protects",
	"webhooks":        "where webhooks may be sent",
	"cronJob":         "nsman's installed CronJob",
	"admissionPolicy": "the admission policy that fences nsman",
	"javaOperator":    "the Java operator nsman replaces",
}

// WriteText prints a doctor report: a line per check, its details and its
// fix below it, then a verdict; wide, with an ABOUT column that says what
// each check looks at (About).
func WriteText(w io.Writer, r Report, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	under := "\t\t  "
	if wide {
		fmt.Fprintln(tw, "CHECK\tSTATUS\tABOUT\tFINDING")
		under = "\t\t\t  "
	} else {
		fmt.Fprintln(tw, "CHECK\tSTATUS\tFINDING")
	}
	for _, ch := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t", ch.Name, strings.ToUpper(string(ch.Status)))
		if wide {
			fmt.Fprintf(tw, "%s\t", dash(About[ch.Name]))
		}
		fmt.Fprintf(tw, "%s\n", ch.Message)
		for _, d := range ch.Details {
			fmt.Fprintf(tw, "%s%s\n", under, d)
		}
		if ch.Fix != "" {
			fmt.Fprintf(tw, "%sfix: %s\n", under, ch.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "all is well"
	if n, warnings := r.Count(Failed), r.Count(Warning); n > 0 {
		verdict = fmt.Sprintf("%d check(s) failed", n)
	} else if warnings > 0 {
		verdict = fmt.Sprintf("no check failed; %d warning(s)", warnings)
	}
	_, err := fmt.Fprintln(w, "\n"+verdict)
	return err
}

// Count is how many of r's checks are of status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, ch := range r.Checks {
		if ch.Status == s {
			n++
		}
	}
	return n
}

// Names name each check that did not pass (failed, or warned), in order,
// as check/NAME: -o name's lines.
func (r Report) Names() []string {
	var names []string
	for _, ch := range r.Checks {
		if ch.Status != OK {
			names = append(names, "check/"+ch.Name)
		}
	}
	return names
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
