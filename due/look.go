package due

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/duration"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/policy/durtext"
	"github.com/nsman/nsman/report"
)

// DefaultWithin is how far ahead nsman due looks unless told.
const DefaultWithin = 24 * time.Hour

// MaxRuns bounds the dry runs of one nsman due after the first: one per
// distinct due time (and per time a delay ends), each reading what a dry
// run reads. Subjects due later than the last one evaluated are listed as
// due, and say they were not evaluated.
const MaxRuns = 100

// Formats are the formats Print prints, as -o names them: those of a
// sweep's report.
var Formats = printer.Formats

// Options are nsman due's own flags.
type Options struct {
	Within        time.Duration
	AllNamespaces bool
	Output        string
}

// AddFlags adds o's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Within = DefaultWithin
	fs.Var((*duration.Value)(&o.Within), "within", "list what is due within this time from now (and what acts now), e.g. 1h, 2d, 1w")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "managers in every namespace, as without -n, and whatever -n nsman's CronJob sweeps with (--config-from)")
	fs.StringVarP(&o.Output, "output", "o", printer.Text, "format: text, wide (DUE AT, ACTS AT and REASON columns besides), json, yaml or name (a line per subject due: its manager, or the namespace of a rule's pair, as nsman sweep -o name names them)")
}

// Check refuses flags that do not go together; namespace is -n's.
func (o Options) Check(namespace string) error {
	switch {
	case o.Within <= 0:
		return errors.New("--within must be positive, e.g. 24h or 2d")
	case o.AllNamespaces && namespace != "":
		return errors.New("-A and -n: give one, not both")
	}
	return printer.CheckFormat(o.Output, Formats)
}

// Run is a dry run at a time, zero for the API server's now: nsman
// sweep --dry-run --at, with the command's flags.
type Run func(ctx context.Context, at time.Time) (report.Report, error)

// Look runs the dry runs of nsman due: one now, then one at each time a
// subject it found is due within o.Within, and at each time what puts one
// off ends, up to MaxRuns. The error is run's.
func (o Options) Look(ctx context.Context, run Run) (List, error) {
	rep, err := run(ctx, time.Time{})
	if err != nil {
		return List{}, err
	}
	l := start(rep, o.Within)
	for runs := 0; runs < MaxRuns; {
		times := l.pending()
		if len(times) == 0 {
			break
		}
		for _, t := range times[:min(len(times), MaxRuns-runs)] {
			if rep, err = run(ctx, t); err != nil {
				return List{}, err
			}
			runs++
			l.at(t, rep)
		}
	}
	return l.list(MaxRuns), nil
}

// Print prints l as o.Output asks, and on stderr, when nothing is due,
// that nothing is.
func (o Options) Print(stdout, stderr io.Writer, l List) error {
	if len(l.Items) == 0 {
		fmt.Fprintf(stderr, "nothing due within %s\n", durtext.Format(o.Within))
		if o.Output == printer.Text || o.Output == printer.Wide || o.Output == printer.Name {
			return nil
		}
	}
	return printer.Object(stdout, o.Output, l, func(w io.Writer, format string) error {
		if format == printer.Name {
			return printer.WriteNames(w, l.Names())
		}
		return writeTable(w, l, format == printer.Wide)
	})
}

// Names name what l's items are about, as nsman sweep -o name names its
// entries: a manager, or a rule's pair's namespace, once each.
func (l List) Names() []string {
	names, seen := make([]string, 0, len(l.Items)), make(map[string]bool, len(l.Items))
	for _, it := range l.Items {
		if name := printer.EntryName(it.Namespace, it.Name, it.Rule, it.Target); !seen[name] {
			names, seen[name] = append(names, name), true
		}
	}
	return names
}

// writeTable prints l as kubectl prints a list: a row per item. DUE says
// when its policy comes due from the first dry run's now ("in 3h"), DELAYED
// BY what puts it off and when it acts then; wide adds the times and the
// reason.
func writeTable(w io.Writer, l List, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NAMESPACE\tMANAGER\tTARGET\tPOLICY\tACTION\tDUE\tDELAYED BY"
	if wide {
		header += "\tDUE AT\tACTS AT\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, it := range l.Items {
		name := it.Name
		if it.Rule {
			name += " (rule)"
		}
		due := it.Due
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", it.Namespace, name, dash(it.Target), dash(it.Policy), dash(it.Action), printer.DueIn(&due, l.Now), delayed(it, l.Now))
		if wide {
			fmt.Fprintf(tw, "\t%s\t%s\t%s", stamp(it.Due), stampOf(it.ActsAt), dash(it.Reason))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// delayed is the DELAYED BY column: what puts the item off ("hold",
// "window, freeze") and when it acts then, or until when it still waits;
// "-" when nothing does.
func delayed(it Item, now time.Time) string {
	if len(it.DelayedBy) == 0 {
		return "-"
	}
	by := make([]string, 0, len(it.DelayedBy))
	for _, d := range it.DelayedBy {
		by = append(by, d.By)
	}
	if it.ActsAt != nil {
		return fmt.Sprintf("%s (acts %s)", strings.Join(by, ", "), printer.DueIn(it.ActsAt, now))
	}
	last := it.DelayedBy[len(it.DelayedBy)-1].Until
	return fmt.Sprintf("%s (still waiting %s)", strings.Join(by, ", "), printer.DueIn(&last, now))
}

func stampOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
