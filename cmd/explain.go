package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/sweep"
)

func newExplainCommand() *cobra.Command {
	kube := kubeOptions{quiet: true}
	var output, argoCDNamespace string
	c := &cobra.Command{
		Use:   "explain NAMESPACE",
		Short: "Say who owns a namespace, whether it came back, and why one being deleted will not go",
		Long: `Reads, with your own credentials, who owns a namespace, as nsman's sweep
reads it: the first owner marker it carries (nsman.k8s.consol.de/owner, Argo
CD's tracking id, Flux's labels), else an Argo CD Application in
--argocd-namespace that creates it, and whether that owner exists, is gone,
or cannot be told (why). And whether it came back: the rules whose status
lists a DELETE of a namespace of its name, before it was made.

For a namespace in Terminating it reads what holds it: the
namespace controller's conditions, the namespace's own finalizers, the objects
left in it and the finalizers on them (discovery and a list of every namespaced
resource), the API groups that could not be discovered and the APIServices
that are unavailable (either stalls every namespace deletion in the cluster).
Then, a step each, what would unblock it.

It changes nothing and never removes a finalizer: where a person could, it
prints the commands, with what running them costs. Together a step's commands
release every object it names; every name in them is shell-quoted, and a name
that would not print as it is reaches kubectl as JSON on stdin. The text
report shows a control character of a name escaped (\x1b); -o json and -o yaml keep
names exact. Each command names the cluster that was read with the
--kubeconfig (made absolute) and --context given here, so that, pasted,
it does not run against whatever context kubectl has by then.

Exit status: 0 when it could tell, 1 when the namespace does not exist, 2 on a
usage error or when the cluster cannot be reached.`,
		Example: `  nsman explain e2e-1234
  nsman explain e2e-1234 -o json | jq '.unblock[].holds'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := printer.CheckFormat(output, printer.ObjectFormats); err != nil {
				return usageError{err}
			}
			clients, err := kube.reachableClients()
			if err != nil {
				return err
			}
			r, err := explain.Explain(c.Context(), clients, args[0], explain.Options{Cluster: kube.cluster(), ArgoCDNamespace: argoCDNamespace, Log: slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))})
			if err != nil {
				return err
			}
			return printer.Object(c.OutOrStdout(), output, r, func(w io.Writer) error { return writeExplain(w, r) })
		},
	}
	kube.addFlags(c.Flags())
	c.Flags().StringVarP(&output, "output", "o", "text", "report format: text, json or yaml")
	c.Flags().StringVar(&argoCDNamespace, "argocd-namespace", sweep.DefaultArgoCDNamespace, argoCDNamespaceHelp)
	return c
}

// writeExplain prints what holds a namespace, then the steps to unblock it.
// What the cluster said (names, messages) is printed visible: a control
// character of it reaches the terminal escaped, never as itself. The
// commands print as they are: explain builds them printable, so that they
// can be pasted.
func writeExplain(w io.Writer, r explain.Report) error {
	var b strings.Builder
	v := explain.Visible
	if r.DeletionTimestamp == nil {
		fmt.Fprintf(&b, "namespace %s is %s: it is not being deleted\n", v(r.Namespace), v(r.Phase))
		writeOwner(&b, r)
		writeUnlisted(&b, r.Unlisted)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "namespace %s: %s since %s\n", v(r.Namespace), v(r.Phase), r.DeletionTimestamp.UTC().Format(time.RFC3339))
	writeOwner(&b, r)
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
	writeUnlisted(&b, r.Unlisted)
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

// writeOwner prints who owns the namespace, the rules that deleted it before
// it was made, and, both there and the owner existing, what deletes it for good.
func writeOwner(b *strings.Builder, r explain.Report) {
	if r.Owner != nil {
		fmt.Fprintf(b, "owner: %s\n", explain.Visible(r.Owner.String()))
	}
	for _, c := range r.CameBack {
		fmt.Fprintf(b, "came back: %s\n", explain.Visible(c.Sentence(r.Created.Time)))
	}
	if len(r.CameBack) > 0 && r.Owner != nil && r.Owner.Presence == explain.OwnerExists {
		fmt.Fprintf(b, "  %s\n", explain.Visible(explain.ForGood(r.Owner.Ref)))
	}
}

// writeUnlisted prints what could not be read, and why.
func writeUnlisted(b *strings.Builder, unlisted []explain.Unlisted) {
	if len(unlisted) == 0 {
		return
	}
	b.WriteString("\nnot read:\n")
	for _, u := range unlisted {
		fmt.Fprintf(b, "  %s: %s\n", explain.Visible(u.What), explain.Visible(u.Error))
	}
}
