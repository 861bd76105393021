// Package printer prints a sweep's report as its reader asked (-o): a table
// (text, or wide with more columns), JSON, whose schema is report.Report,
// versioned by report.ReportVersion, YAML, its mirror, or the names of the
// entries' objects, as kubectl's -o name does. Other commands' reports
// print through Object, naming their objects as the sweep's are named
// (ManagerName, EntryName); nsman validate's findings are a Validation.
package printer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/nsman/nsman/report"
)

// The formats of Report: a table, the same with more columns, JSON, YAML
// (the JSON's mirror), the entries' names.
const (
	Text = "text"
	Wide = "wide"
	JSON = "json"
	YAML = "yaml"
	Name = "name"
)

// Formats are the formats Report prints, as -o names them.
var Formats = []string{Text, Wide, JSON, YAML, Name}

// Report prints sweep report r in format (one of Formats): its entries in
// states only, when any are given (see ParseStates), all else. The
// summary's counts stay the sweep's; the table's says how many entries
// it left out.
func Report(w io.Writer, format string, r report.Report, states ...report.State) error {
	return Print(w, r, Options{Format: format, States: states})
}

// Options say how Print prints a report.
type Options struct {
	// Format is one of Formats.
	Format string
	// States are those of the entries printed, all when empty (see
	// ParseStates).
	States []report.State
	// Color colours the states of a table, for a terminal (the command
	// decides: console.Color).
	Color bool
}

// Print prints sweep report r as o says (see Report).
func Print(w io.Writer, r report.Report, o Options) error {
	format, states := o.Format, o.States
	all := len(r.Entries)
	if len(states) > 0 {
		r.Entries = inStates(r.Entries, states)
	}
	switch format {
	case JSON:
		return writeJSON(w, r)
	case YAML:
		return writeYAML(w, r)
	case Name:
		return writeNames(w, r.Entries)
	case Text, Wide:
	default:
		return CheckFormat(format, Formats)
	}
	if err := writeEntries(w, r.Entries, r.Summary.Now, o); err != nil {
		return err
	}
	if err := writeSummary(w, r.Summary); err != nil {
		return err
	}
	return writeLeftOut(w, all-len(r.Entries), all, states)
}

// writeEntries prints the table of a report's entries, a row each, with
// its effects, warnings, problems and the reasons it is stuck on lines of
// their own under the message; its target's owner is a line too, or a
// column when wide. DUE says how far from now, the sweep's clock, an entry
// is due, as kubectl says an age ("in 8m", "3h ago"); wide adds the time.
func writeEntries(w io.Writer, entries []report.Entry, now time.Time, o Options) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	wide := o.Format == Wide
	// The message's column, past the state's cell (as wide as on the
	// rows) and the cells up to the message.
	after := "\t\t\t\t"
	if wide {
		after = "\t\t\t\t\t\t"
	}
	under := "\t\t\t" + colored("", "", o.Color) + after + "  "
	if wide {
		fmt.Fprintf(tw, "MANAGER\tTARGET\tPOLICY\t%s\tACTION\tDUE\tDUE AT\tRECLAIMED\tOWNER\tMESSAGE\n", colored("STATE", "", o.Color))
	} else {
		fmt.Fprintf(tw, "MANAGER\tTARGET\tPOLICY\t%s\tACTION\tDUE\tRECLAIMED\tMESSAGE\n", colored("STATE", "", o.Color))
	}
	for _, e := range entries {
		name := e.Namespace + "/" + e.Name
		if e.Rule {
			name += " (rule)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t", name, dash(e.Target), dash(e.Policy), colored(string(e.State), stateColors[e.State], o.Color), dash(e.Action), DueIn(e.Due, now))
		if wide {
			fmt.Fprintf(tw, "%s\t", dueAt(e.Due))
		}
		fmt.Fprintf(tw, "%s\t", reclaimedColumn(e.Reclaimed))
		if wide {
			fmt.Fprintf(tw, "%s\t", dash(e.Owner))
		}
		fmt.Fprintf(tw, "%s\n", dash(e.Message))
		if e.Owner != "" && !wide {
			fmt.Fprintf(tw, "%sowner: %s\n", under, e.Owner)
		}
		for _, effect := range e.Effects {
			fmt.Fprintf(tw, "%s%s\n", under, effect)
		}
		for _, warning := range e.Warnings {
			fmt.Fprintf(tw, "%swarning: %s\n", under, warning)
		}
		for _, p := range e.Problems {
			fmt.Fprintf(tw, "%s%s\n", under, p)
		}
		if e.Stuck != nil {
			for _, reason := range e.Stuck.Reasons {
				fmt.Fprintf(tw, "%sstuck, %s: %s\n", under, reason.Reason, reason.Message)
			}
		}
	}
	return tw.Flush()
}

// DueIn says when due is from now as kubectl says an age, with
// apimachinery's HumanDuration: "in 8m", "3h ago", "now" within a second;
// "-" for none.
func DueIn(due *time.Time, now time.Time) string {
	if due == nil {
		return "-"
	}
	switch d := due.Sub(now); {
	case d >= time.Second:
		return "in " + duration.HumanDuration(d)
	case d <= -time.Second:
		return duration.HumanDuration(-d) + " ago"
	default:
		return "now"
	}
}

// dueAt is the time due, RFC 3339, or "-" for none.
func dueAt(due *time.Time) string {
	if due == nil {
		return "-"
	}
	return due.Format(time.RFC3339)
}

// writeSummary prints the lines under the table: the sweep's counts, what
// it freed, and what it left to whoever reads it (a freeze, trusted
// namespaces that do not exist, namespaces stuck in Terminating).
func writeSummary(w io.Writer, summary report.Summary) error {
	mode := "sweep"
	if summary.DryRun {
		mode = "dry run"
	}
	var states []string
	for _, s := range slices.Sorted(maps.Keys(summary.States)) {
		states = append(states, fmt.Sprintf("%d %s", summary.States[s], s))
	}
	requests := SumRequests(summary.Requests)
	if _, err := fmt.Fprintf(w, "\n%s at %s: %d managers (%s); %d API requests in %.2fs\n",
		mode, summary.Now.Format(time.RFC3339), summary.Managers, strings.Join(states, ", "), requests, summary.DurationSeconds); err != nil {
		return err
	}
	if freed := summary.Reclaimed; freed != nil {
		verb := "reclaimed"
		if summary.DryRun {
			verb = "would reclaim"
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", verb, freed); err != nil {
			return err
		}
	}
	if q := summary.TrafficQueries; q != nil {
		if _, err := fmt.Fprintf(w, "traffic queries: %d answered, %d unanswered\n", q["answered"], q["unanswered"]); err != nil {
			return err
		}
	}
	if n := summary.ReclaimUnknown; n > 0 {
		if _, err := fmt.Fprintf(w, "what %d DELETE(s) freed is not known: their effects say why\n", n); err != nil {
			return err
		}
	}
	if until := summary.FrozenUntil; until != nil {
		if _, err := fmt.Fprintf(w, "frozen until %s: no action started; what is due waits until then\n", until.Format(time.RFC3339)); err != nil {
			return err
		}
	}
	if missing := summary.MissingTrusted; len(missing) > 0 {
		if _, err := fmt.Fprintf(w, "trusted namespace(s) that do not exist: %s: whoever may create namespaces may create one, and its managers and rules would be trusted; create them yourself, or leave them out of --trusted-namespaces\n", strings.Join(missing, ", ")); err != nil {
			return err
		}
	}
	if summary.Stuck > 0 {
		_, err := fmt.Fprintf(w, "%d namespace(s) stuck in Terminating: nsman explain NAMESPACE says what holds each\n", summary.Stuck)
		return err
	}
	return nil
}

// SumRequests is the number of API requests in requests, counted by
// method.
func SumRequests(requests map[string]int) int {
	var n int
	for _, by := range requests {
		n += by
	}
	return n
}

// jsonChunk is how many entries writeJSON marshals side by side before it
// writes them: the text of one chunk is all it holds (a few hundred KiB),
// and every CPU marshals (one alone took a tenth of the CPU of a no-op
// sweep of 10,000 managers, at its end: a CPU profile of make bench's).
const jsonChunk = 256

// writeJSON writes r as json.Encoder with a two-space indent would, a
// chunk of entries at a time: the whole report is never held twice more
// as text.
func writeJSON(w io.Writer, r report.Report) error {
	bw := bufio.NewWriter(w)
	write := func(v any, prefix string) { _, _ = bw.Write(marshalIndent(v, prefix)) }
	_, _ = bw.WriteString("{\n  \"version\": ")
	write(r.Version, "  ")
	_, _ = bw.WriteString(",\n  \"managers\": ")
	switch {
	case len(r.Entries) == 0: // never null (see report.Report.MarshalJSON)
		_, _ = bw.WriteString("[]")
	default:
		_, _ = bw.WriteString("[\n")
		for first := 0; first < len(r.Entries); first += jsonChunk {
			for j, text := range marshalChunk(r.Entries[first:min(first+jsonChunk, len(r.Entries))], "    ") {
				_, _ = bw.WriteString("    ")
				_, _ = bw.Write(text)
				if first+j < len(r.Entries)-1 {
					_ = bw.WriteByte(',')
				}
				_ = bw.WriteByte('\n')
			}
		}
		_, _ = bw.WriteString("  ]")
	}
	_, _ = bw.WriteString(",\n  \"summary\": ")
	write(r.Summary, "  ")
	_, _ = bw.WriteString("\n}\n")
	return bw.Flush()
}

// marshalIndent is v as json.MarshalIndent writes it with prefix and a
// two-space indent: json.Marshal's text, indented by indent rather than
// by json.Indent, whose scanner took half the CPU of printing a report of
// 1,000 entries (BenchmarkPrintJSON).
func marshalIndent(v any, prefix string) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // a Report always marshals
	}
	return indent(make([]byte, 0, len(data)*2), data, prefix)
}

// indent appends to dst src, the compact JSON json.Marshal writes, as
// json.Indent would with prefix and a two-space indent: a newline, prefix
// and the depth's indent after each opening brace or bracket (but for an
// empty object or list, kept as {} and []) and each comma, before each
// closing one, and a space after each colon, all outside strings, which
// it copies whole. Its only state is the depth: json.Marshal's text is
// valid and holds no space outside strings.
func indent(dst, src []byte, prefix string) []byte {
	depth, opened := 0, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if opened && c != '}' && c != ']' {
			opened = false
			depth++
			dst = newline(dst, prefix, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end+1]...)
			i = end
		case '{', '[':
			opened = true
			dst = append(dst, c)
		case ',':
			dst = newline(append(dst, c), prefix, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if opened {
				opened = false
			} else {
				depth--
				dst = newline(dst, prefix, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd is the index of the quote that closes the JSON string that
// opens at src[start]: the next quote not escaped by a backslash (which
// escapes the byte after it).
func stringEnd(src []byte, start int) int {
	end := start + 1
	for {
		rest := src[end:]
		q := bytes.IndexByte(rest, '"')
		if b := bytes.IndexByte(rest[:q], '\\'); b >= 0 {
			end += b + 2
			continue
		}
		return end + q
	}
}

// newline appends a newline, prefix and depth two-space indents to dst.
func newline(dst []byte, prefix string, depth int) []byte {
	dst = append(append(dst, '\n'), prefix...)
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// marshalChunk marshals entries (see marshalIndent), on as many goroutines
// as Go runs at once, each taking the next.
func marshalChunk(entries []report.Entry, prefix string) [][]byte {
	texts := make([][]byte, len(entries))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(entries); i = int(next.Add(1)) - 1 {
				texts[i] = marshalIndent(entries[i], prefix)
			}
		})
	}
	wg.Wait()
	return texts
}

// reclaimedColumn is what an entry's action freed, in a few characters:
// "cpu=1500m mem=2Gi storage=10Gi lb=1", or "-".
func reclaimedColumn(r *report.Reclaimed) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("cpu=%s mem=%s storage=%s lb=%d", r.CPU.String(), r.Memory.String(), r.Storage.String(), r.LoadBalancers)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
