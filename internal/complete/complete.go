package complete

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flags whose value is a file nsman reads, besides those named *-file.
var fileFlags = []string{"kubeconfig", "client-certificate", "client-key", "certificate-authority"}

// manifests are the extensions of the files --filename reads.
var manifests = []string{"yaml", "yml", "json"}

// Register completes the flags and arguments of root's commands, but for
// those already completed: words gives the choices of flags with fixed
// ones, by flag name (a command whose flag of that name takes other words
// registers its own first). A flag with nothing to complete completes no
// file name, where cobra's default would offer any.
func Register(root *cobra.Command, words map[string][]string) {
	for _, c := range append([]*cobra.Command{root}, all(root)...) {
		if c.ValidArgsFunction == nil && c.ValidArgs == nil && !c.HasSubCommands() {
			c.ValidArgsFunction = arguments
		}
		c.Flags().VisitAll(func(f *pflag.Flag) { registerFlag(c, f, words[f.Name]) })
	}
}

// Choices completes c's flag with words, over what Register would.
func Choices(c *cobra.Command, flag string, words ...string) {
	_ = c.RegisterFlagCompletionFunc(flag, fixed(words))
}

// all are root's commands below it.
func all(root *cobra.Command) []*cobra.Command {
	var cs []*cobra.Command
	for _, c := range root.Commands() {
		cs = append(append(cs, c), all(c)...)
	}
	return cs
}

// registerFlag registers what f of c completes, unless c has already or
// f takes no value (a boolean).
func registerFlag(c *cobra.Command, f *pflag.Flag, words []string) {
	if _, done := c.GetFlagCompletionFunc(f.Name); done || f.NoOptDefVal != "" {
		return
	}
	var fn cobra.CompletionFunc
	switch {
	case f.Name == "filename":
		_ = c.MarkFlagFilename(f.Name, manifests...)
		return
	case slices.Contains(fileFlags, f.Name) || strings.HasSuffix(f.Name, "-file"):
		_ = c.MarkFlagFilename(f.Name)
		return
	case words != nil:
		fn = fixed(words)
	case f.Name == "context" || f.Name == "cluster" || f.Name == "user":
		fn = kubeconfigNames(f.Name)
	case f.Name == "namespace" || strings.HasSuffix(f.Name, "-namespace") || strings.HasSuffix(f.Name, "-namespaces"):
		fn = namespaces
	case f.Name == "manager":
		fn = managers
	default:
		fn = cobra.NoFileCompletions
	}
	_ = c.RegisterFlagCompletionFunc(f.Name, listed(c, f, fn))
}

// listed is fn for a flag that takes a comma-separated list (--state,
// --trusted-namespaces): the word after the last comma completes, after
// the words before it, which it does not offer again.
func listed(c *cobra.Command, f *pflag.Flag, fn cobra.CompletionFunc) cobra.CompletionFunc {
	if _, ok := f.Value.(pflag.SliceValue); !ok || f.Value.Type() == "stringArray" {
		return fn
	}
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cut := strings.LastIndex(toComplete, ",") + 1
		got, directive := fn(c, args, toComplete[cut:])
		if cut == 0 {
			return got, directive
		}
		given := strings.Split(toComplete[:cut-1], ",")
		got = slices.DeleteFunc(got, func(w string) bool { return slices.Contains(given, w) })
		for i := range got {
			got[i] = toComplete[:cut] + got[i]
		}
		return got, directive | cobra.ShellCompDirectiveNoSpace
	}
}

// fixed completes the words that begin as toComplete does.
func fixed(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return prefixed(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// prefixed are the words that begin with prefix, sorted.
func prefixed(words []string, prefix string) []string {
	var got []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			got = append(got, w)
		}
	}
	slices.Sort(got)
	return got
}

// arguments completes the arguments of a command whose usage line names
// NAMESPACE arguments (hold, wake, touch, explain, restore) with the
// cluster's namespaces, as many as the usage line takes (NAMESPACE...,
// any number; else one, by argument or -n); another's with nothing.
func arguments(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if !strings.Contains(c.Use, "NAMESPACE") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if !strings.Contains(c.Use, "NAMESPACE...") && (len(args) > 0 || flagValue(c, "namespace") != "") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	got, directive := namespaces(c, args, toComplete)
	return slices.DeleteFunc(got, func(ns string) bool { return slices.Contains(args, ns) }), directive
}

// flagValue is the value of c's flag name, "" when it has none.
func flagValue(c *cobra.Command, name string) string {
	if f := c.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
