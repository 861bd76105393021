package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

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
prints the command, with what running it costs.

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
			r, err := explain.Explain(c.Context(), clients.Kube, clients.Metadata, clients.Dynamic, args[0])
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
func writeExplain(w io.Writer, r explain.Report) error {
	var b strings.Builder
	if r.DeletionTimestamp == nil {
		fmt.Fprintf(&b, "namespace %s is %s: it is not being deleted\n", r.Namespace, r.Phase)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "namespace %s: %s since %s\n", r.Namespace, r.Phase, r.DeletionTimestamp.UTC().Format(time.RFC3339))
	if len(r.Conditions) > 0 {
		b.WriteString("\nconditions:\n")
		for _, c := range r.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if len(r.Finalizers) > 0 {
		fmt.Fprintf(&b, "\nthe namespace's own finalizers: %s\n", strings.Join(r.Finalizers, ", "))
	}
	if len(r.Remaining) > 0 {
		b.WriteString("\nobjects left:\n")
		for _, res := range r.Remaining {
			fmt.Fprintf(&b, "  %s: %d, %d with finalizers\n", res.Resource, res.Count, len(res.Finalized))
			for _, o := range res.Finalized {
				fmt.Fprintf(&b, "    %s: %s\n", o.Name, strings.Join(o.Finalizers, ", "))
			}
		}
	}
	if len(r.UnavailableAPIServices) > 0 {
		b.WriteString("\nunavailable APIServices:\n")
		for _, a := range r.UnavailableAPIServices {
			fmt.Fprintf(&b, "  %s (Service %s): %s: %s\n", a.Name, a.Service, a.Reason, a.Message)
		}
	}
	if len(r.Unlisted) > 0 {
		b.WriteString("\nnot read:\n")
		for _, u := range r.Unlisted {
			fmt.Fprintf(&b, "  %s: %s\n", u.What, u.Error)
		}
	}
	if len(r.Unblock) == 0 {
		b.WriteString("\nnothing found that holds it: the namespace controller may not have got to it yet\n")
	} else {
		b.WriteString("\nto unblock it:\n")
		for i, s := range r.Unblock {
			fmt.Fprintf(&b, "  %d. %s\n     %s\n", i+1, s.Holds, s.Unblock)
			if s.Command != "" {
				fmt.Fprintf(&b, "     a person could run (nsman does not): %s\n     warning: %s\n", s.Command, s.Warning)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
