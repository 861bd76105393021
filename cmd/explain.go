package cmd

import (
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/nsman/nsman/explain"
	"github.com/nsman/nsman/internal/complete"
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
names exact; -o name quotes such a name as Go quotes a string. -o wide adds
what the text leaves out: when the namespace was made, the cluster read, when
each condition last changed. Each command names the cluster that was read with the
--kubeconfig (made absolute) and --context given here, so that, pasted,
it does not run against whatever context kubectl has by then.

Exit status: 0 when it could tell, 1 when the namespace does not exist, 2 on a
usage error or when the cluster cannot be reached.`,
		Example: `  nsman explain e2e-1234
  nsman explain e2e-1234 -o json | jq '.unblock[].holds'
  nsman explain e2e-1234 -o name`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := printer.CheckFormat(output, printer.Formats); err != nil {
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
			return printExplain(c.OutOrStdout(), output, r)
		},
	}
	kube.addFlags(c.Flags())
	c.Flags().StringVarP(&output, "output", "o", "text", "report format: text, wide (the times and the cluster read besides), json, yaml or name (a line per object the report names: the namespace, its owner, rules, objects left, APIServices)")
	complete.Choices(c, "output", printer.Formats...)
	c.Flags().StringVar(&argoCDNamespace, "argocd-namespace", sweep.DefaultArgoCDNamespace, argoCDNamespaceHelp)
	return c
}

// printExplain prints r as format asks: -o name names its objects as nsman
// sweep -o name names a manager.
func printExplain(w io.Writer, format string, r explain.Report) error {
	return printer.Object(w, format, r, func(w io.Writer, format string) error {
		if format == printer.Name {
			return printer.WriteNames(w, r.Names(printer.ManagerName))
		}
		return explain.WriteText(w, r, format == printer.Wide)
	})
}
