package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// FlagsReference renders every command's usage, help, examples and flags
// as Markdown; docs/flags.md holds this text, `make docs` writes it there,
// and a test fails when it is stale.
func FlagsReference() string {
	var b strings.Builder
	root := newRootCommand(io.Discard, io.Discard)
	// Cobra adds --help when it runs.
	root.InitDefaultHelpFlag()
	writeCommandReference(&b, root)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		writeCommandReference(&b, c)
	}
	return b.String()
}

func writeCommandReference(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "## `%s`\n\n%s.\n\n```\n%s\n```\n\n", c.CommandPath(), c.Short, c.UseLine())
	if c.Long != "" {
		fmt.Fprintf(b, "%s\n\n", markdownEscaper.Replace(c.Long))
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```\n%s\n```\n\n", c.Example)
	}
	if !c.HasAvailableLocalFlags() {
		return
	}
	b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		switch {
		case def == "" || def == "[]":
			def = ""
		default:
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(f.Usage, "|", "\\|"))
	})
	b.WriteString("\n")
}

// markdownEscaper keeps help's plain text plain in Markdown.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", `\<`, "`", "\\`")
