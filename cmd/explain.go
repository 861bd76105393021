package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/explain"
)

func newExplainCommand() *cobra.Command {
	kube := kubeOptions{quiet: true}
	var output string
	c := &cobra.Command{
		Use:   "explain NAMESPACE",
		Short: "Say why a namespace being deleted will not go, and what would unblock it",
		Long: `Reads, with your own credentials, what holds a namespace in Terminating: the
namespace controller's conditions, the namespace's own finalizers, the objects
left in it and the finalizers on them (discovery and a list of every namespaced
resource), the API groups that could not be discovered and the APIServices
that are unavailable (either stalls every namespace deletion in the cluster).
Then, a step each, what would unblock it.

It changes nothing and never removes a finalizer: where a person could, it
prints the commands, with what running them costs. Together a step's commands
release every object it names; every name in them is shell-quoted, and a name
that would not print as it is reaches kubectl as JSON on stdin. The text
report shows a control character of a name escaped (\x1b); -o json keeps
names exact. Each command names the cluster that was read with the
--kubeconfig (made absolute) and --context given here, so that, pasted,
it does not run against whatever context kubectl has by then.

Exit status: 0 when it could tell, 1 when the namespace does not exist, 2 on a
usage error or when the cluster cannot be reached.`,
		Example: `  nsman explain e2e-1234
  nsman explain e2e-1234 -o json | jq '.unblock[].holds'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageError{fmt.Errorf("-o %q: want text or json", output)}
			}
			clients, err := kube.reachableClients()
			if err != nil {
				return err
			}
			r, err := explain.Explain(c.Context(), clients.Kube, clients.Metadata, clients.Dynamic, args[0], kube.cluster())
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return writeExplain(c.OutOrStdout(), r)
		},
	}
	kube.addFlags(c.Flags())
	c.Flags().StringVarP(&output, "output", "o", "text", "report format: text or json")
	return c
}

// writeExplain prints what holds a namespace, then the steps to unblock it.
// What the cluster said (names, messages) is printed visible: a control
// character of it reaches the terminal escaped, never as itself. The
// commands print as they are: explain builds them printable, so that they
// can be pasted.
func writeExplain(w io.Writer, r explain.Report) error {
	var b strings.Builder
	v := visible
	if r.DeletionTimestamp == nil {
		fmt.Fprintf(&b, "namespace %s is %s: it is not being deleted\n", v(r.Namespace), v(r.Phase))
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "namespace %s: %s since %s\n", v(r.Namespace), v(r.Phase), r.DeletionTimestamp.UTC().Format(time.RFC3339))
	if len(r.Conditions) > 0 {
		b.WriteString("\nconditions:\n")
		for _, c := range r.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s: %s\n", v(string(c.Type)), v(string(c.Status)), v(c.Reason), v(c.Message))
		}
	}
	if len(r.Finalizers) > 0 {
		fmt.Fprintf(&b, "\nthe namespace's own finalizers: %s\n", v(strings.Join(r.Finalizers, ", ")))
	}
	if len(r.Remaining) > 0 {
		b.WriteString("\nobjects left:\n")
		for _, res := range r.Remaining {
			fmt.Fprintf(&b, "  %s: %d, %d with finalizers\n", v(res.Resource), res.Count, len(res.Finalized))
			for _, o := range res.Finalized {
				fmt.Fprintf(&b, "    %s: %s\n", v(o.Name), v(strings.Join(o.Finalizers, ", ")))
			}
		}
	}
	if len(r.UnavailableAPIServices) > 0 {
		b.WriteString("\nunavailable APIServices:\n")
		for _, a := range r.UnavailableAPIServices {
			fmt.Fprintf(&b, "  %s (Service %s): %s: %s\n", v(a.Name), v(a.Service), v(a.Reason), v(a.Message))
		}
	}
	if len(r.Unlisted) > 0 {
		b.WriteString("\nnot read:\n")
		for _, u := range r.Unlisted {
			fmt.Fprintf(&b, "  %s: %s\n", v(u.What), v(u.Error))
		}
	}
	if len(r.Unblock) == 0 {
		b.WriteString("\nnothing found that holds it: the namespace controller may not have got to it yet\n")
	} else {
		b.WriteString("\nto unblock it:\n")
		for i, s := range r.Unblock {
			fmt.Fprintf(&b, "  %d. %s\n     %s\n", i+1, v(s.Holds), v(s.Unblock))
			if len(s.Commands) > 0 {
				b.WriteString("     a person could run (nsman does not):\n")
				for _, c := range s.Commands {
					fmt.Fprintf(&b, "       %s\n", v(c))
				}
				fmt.Fprintf(&b, "     warning: %s\n", v(s.Warning))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// visible is s with every byte or character that would not print as itself
// (control and formatting characters, invalid UTF-8) written as an escape:
// \x1b, \u202e. Hand-written: strconv.Quote would escape \ and " too,
// which a name keeps as they are.
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
