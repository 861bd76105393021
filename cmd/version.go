package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/spf13/cobra"
)

// version is set at link time by make build and the release builds:
// -ldflags "-X github.com/nsman/nsman/cmd.version=v1.2.3".
var version = "dev"

// Version returns nsman's version: the one set at link time; else the one
// Go stamps into a binary built without it (go install …@v1.2.3 stamps
// the module's version, go build in a git checkout a pseudo-version that
// names the commit, +dirty when the tree had changes); else the commit
// alone; dev only when the build recorded none of these.
var Version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionOf(version, info)
})

// versionOf is Version of a binary linked with version linked and built
// as info says (nil: no build information).
func versionOf(linked string, info *debug.BuildInfo) string {
	if linked != "dev" || info == nil {
		return linked
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	revision := settings["vcs.revision"]
	if revision == "" {
		return linked
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if settings["vcs.modified"] == "true" {
		revision += "+dirty"
	}
	return "dev-" + revision
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print nsman's version",
		Long: `Print nsman's version, the Go release it was built with, and its platform.

The version is the one a release or make build set; for a binary built with
go install …@VERSION, that version; for one built with go build in a git
checkout, a pseudo-version that names the commit (+dirty for a tree with
changes); dev when the build recorded neither (go build -buildvcs=false).
nsman --version prints the same.`,
		Example: `  nsman version
  nsman --version`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what nsman version and nsman --version print.
func versionLine() string {
	return fmt.Sprintf("nsman %s %s %s/%s\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
