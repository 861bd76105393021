package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/complete"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/internal/tell"
)

// Exit codes shared by every command.
const (
	// ExitOK means every attempted action succeeded.
	ExitOK = 0
	// ExitFailed means at least one manager or action failed.
	ExitFailed = 1
	// ExitUsage means the command could not run: a bad flag, no cluster, a
	// missing CRD.
	ExitUsage = 2
)

// usageError marks an error that stems from how the command was invoked, so
// that Execute maps it to ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// newRootCommand builds the command tree. Output goes to the given writers so
// that tests can capture it.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "nsman",
		Short: "Delete, scale down, put to sleep or notify about ephemeral namespaces when their NamespaceManager says so",
		Long: `nsman sweeps namespaces as their NamespaceManagers say: each sweep evaluates
every manager's policies and applies the first that holds, DELETE, SCALE_DOWN,
SLEEP (scaled down while the policy holds, woken after) or WEBHOOK (a
notification). A CronJob in the cluster runs the sweeps; from a laptop, plan
with nsman sweep --dry-run, check an installation with nsman doctor, and keep
a namespace with nsman hold, wake or touch.

Installed as kubectl-nsman on PATH, it runs as kubectl nsman.`,
		Example: `  nsman sweep --dry-run
  nsman hold preview-4711 --for 2d
  nsman doctor`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable so that an unknown command is a usage error rather than
		// cobra's plain error.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if v, _ := c.Flags().GetBool("version"); v && len(args) == 0 {
				_, err := io.WriteString(c.OutOrStdout(), versionLine())
				return err
			}
			if len(args) == 0 {
				return c.Help()
			}
			err := fmt.Errorf("unknown command %q; see '%s --help'", args[0], c.CommandPath())
			if suggested := c.SuggestionsFor(args[0]); len(suggested) > 0 {
				err = fmt.Errorf("%w; did you mean %s?", err, strings.Join(suggested, " or "))
			}
			return usageError{err}
		},
		// What SuggestionsFor offers for a mistyped command: cobra's own
		// default, which only its unknown-command error would set.
		SuggestionsMinimumDistance: 2,
	}
	// --version prints what nsman version does, by RunE: not cobra's
	// Version, whose template (text/template) keeps every exported method
	// in the binary, 28 MB and each sweep's RSS 11 MiB.
	root.Flags().BoolP("version", "v", false, "print nsman's version, as nsman version does")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newSweepCommand(), newValidateCommand(), newRestoreCommand(), newHoldCommand(), newWakeCommand(), newTouchCommand(), newDoctorCommand(), newExplainCommand(), newDueCommand(), newServeCommand())
	complete.Register(root, map[string][]string{"state": strings.Split(printer.StateList, ", "), "config-from": {configFromAuto, configFromNone},
		"notify-format": tell.FormatNames(), "log-format": {"json", "text"}, "log-level": {"debug", "info", "warn", "error"}})
	return root
}

// Execute runs nsman with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, newRootCommand(stdout, stderr), args, stderr)
}

// ExecuteAs is Execute for a binary started as argv0 (os.Args[0]). Named
// kubectl-nsman on PATH, kubectl runs the binary as the plugin
// 'kubectl nsman', and its usage lines, examples and error hints say so.
func ExecuteAs(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	if isKubectlPlugin(argv0) {
		renameAsKubectlPlugin(root)
	}
	return runCommand(ctx, root, args, stderr)
}

func runCommand(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.DisplayName(), err)
	var usage usageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitFailed
}

// The file name under which kubectl finds nsman as a plugin, and the command
// people then type.
const (
	pluginBinary  = "kubectl-nsman"
	pluginCommand = "kubectl nsman"
)

// isKubectlPlugin reports whether argv0 names the plugin binary, however it
// was reached: kubectl passes the full path of what it found on PATH.
func isKubectlPlugin(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == pluginBinary
}

// exampleCommand matches "nsman" where an example invokes it: at the start
// of a line's command or after a pipe, followed by a space or the line's end.
var exampleCommand = regexp.MustCompile(`(?m)(^[ \t]*|\|[ \t]*)nsman( |$)`)

// renameAsKubectlPlugin makes root render as 'kubectl nsman' in usage lines,
// command paths (and so cobra's argument errors), examples and long help.
// Examples and long help spell the command "nsman"; here each invocation
// becomes 'kubectl nsman'. The root's name becomes the binary's, which
// shell completion scripts are generated for.
func renameAsKubectlPlugin(root *cobra.Command) {
	root.Use = pluginBinary
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = pluginCommand
	var names []string
	for _, c := range root.Commands() {
		names = append(names, regexp.QuoteMeta(c.Name()))
	}
	invoked := regexp.MustCompile(`\bnsman\s+(?:` + strings.Join(names, "|") + `)\b`)
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Example = exampleCommand.ReplaceAllString(c.Example, "${1}"+pluginCommand+"${2}")
		c.Long = asPluginInProse(c.Long, invoked)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// asPluginInProse is text with each invocation of a command of nsman that
// invoked matches ("nsman sweep --dry-run") said as 'kubectl nsman': not
// one already said so, nor a word that only ends in nsman (kubectl-nsman),
// nor nsman the product ("nsman's CronJob"). A paragraph of prose that
// changed is wrapped again at proseWidth; one indented (a list, a
// command) is left as it was laid out.
func asPluginInProse(text string, invoked *regexp.Regexp) string {
	paragraphs := strings.Split(text, "\n\n")
	for i, p := range paragraphs {
		var b strings.Builder
		last := 0
		for _, m := range invoked.FindAllStringIndex(p, -1) {
			before := p[:m[0]]
			if before != "" && strings.ContainsAny(before[len(before)-1:], "-/._") ||
				strings.HasSuffix(strings.TrimRight(before, " \t\n"), "kubectl") {
				continue
			}
			b.WriteString(p[last:m[0]])
			b.WriteString("kubectl ")
			last = m[0]
		}
		if last == 0 && b.Len() == 0 {
			continue
		}
		b.WriteString(p[last:])
		paragraphs[i] = b.String()
		if !indented.MatchString(p) {
			paragraphs[i] = wrap(paragraphs[i], proseWidth)
		}
	}
	return strings.Join(paragraphs, "\n\n")
}

// proseWidth is the width of the commands' long help.
const proseWidth = 80

// indented matches a paragraph with a line laid out by hand: indented, or
// an item of a list.
var indented = regexp.MustCompile(`(?m)^(?:[ \t]|- |\* )`)

// wrap is text's words in lines of at most width columns, a longer word
// on a line of its own; a flag or its value "-" stays on the line of the
// word before it, which may then run over.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+len(w) > width && !strings.HasPrefix(w, "-"):
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// usageArgs marks the errors of an argument validator as usage errors.
func usageArgs(validate cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := validate(c, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// namespaceFlag is -n, which names a namespace as an argument does, for
// the commands that act on namespaces they are given (hold, wake, touch,
// restore): kubectl's habit, and nsman's argument, both take.
func namespaceFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVarP(p, "namespace", "n", "", "the namespace, as the NAMESPACE argument names it: give either, or both naming the same")
}

// namespaceArgs are the namespaces a command is given, -n's and its
// arguments, each once.
func namespaceArgs(flag string, args []string) []string {
	var names []string
	for _, name := range append([]string{flag}, args...) {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// oneNamespace is the namespace of a command that acts on one.
func oneNamespace(flag string, args []string) (string, error) {
	if names := namespaceArgs(flag, args); len(names) == 1 {
		return names[0], nil
	}
	return "", usageError{errors.New("give one namespace: NAMESPACE, or -n NAMESPACE")}
}
