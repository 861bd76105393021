package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/internal/complete"
	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/policy"
)

// validateOptions turns the flags of 'nsman validate' into the list of files
// to check.
type validateOptions struct {
	// filenames are the -f values: files, directories, or "-" for stdin.
	filenames []string
	// recursive descends into subdirectories of directories named by -f.
	recursive bool

	// files are the manifests to read, and skipped the templates
	// directories of Helm charts not read, set by Complete.
	files   []string
	skipped []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// now is the clock a window's dates are judged past by.
	now func() time.Time
	// output is -o: one of printer.ValidateFormats.
	output string
}

// invalidManagersError reports that validation found invalid
// NamespaceManagers. Unlike a usageError it maps to ExitFailed: the command
// ran, the manifests are wrong.
type invalidManagersError struct{ invalid int }

func (e invalidManagersError) Error() string {
	return fmt.Sprintf("%s invalid", printer.NounCount(e.invalid, "NamespaceManager"))
}

func newValidateCommand() *cobra.Command {
	o := &validateOptions{now: time.Now}
	c := &cobra.Command{
		Use:   "validate -f FILE|DIR ...",
		Short: "Check NamespaceManager manifests offline, without a cluster",
		Long: `Check NamespaceManager manifests offline, without a cluster.

Reads YAML or JSON files (several documents each), skips every object that is
not a NamespaceManager, and validates each NamespaceManager as a sweep would
and as nsman's CRD does at admission, and refuses a window whose dates are
all past (it never opens again; a sweep says so, and does not refuse it).
A deactivated one (spec.deactivated:
true), which a sweep skips, is never invalid: its problems are warnings. A directory's Helm chart
templates are skipped, and said so: validate what they render (helm
template CHART | nsman validate -f -). Under the original operator's CRD,
admission checks less than validate does.
Prints one line per problem, FILE: NAMESPACE/NAME: FIELD: MESSAGE, and a
summary on stderr; -o json (nsman.validate/v1) and -o yaml print every file,
problem (error or warning) and count as one object, -o name a line per
invalid NamespaceManager, namespacemanager.k8s.consol.de/NAMESPACE/NAME, and
nothing on stderr but an unreadable file's error. Exits 1 when any NamespaceManager is invalid, 2 when a
file cannot be read or parsed.`,
		Example: `  nsman validate -f examples/
  nsman validate -f manager.yaml,other.yaml -f deploy/ -R
  kustomize build overlays/e2e | nsman validate -f -
  nsman validate -f deploy/ -R -o json | jq '.problems[] | select(.severity == "error")'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(c); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	c.Flags().StringSliceVarP(&o.filenames, "filename", "f", nil, "a manifest file, a directory of *.yaml, *.yml and *.json files, or - for stdin; repeatable and comma-separated")
	c.Flags().BoolVarP(&o.recursive, "recursive", "R", false, "also read the subdirectories of directories given with -f")
	c.Flags().StringVarP(&o.output, "output", "o", printer.Text, "report format: text (a line per problem, warnings and a summary on stderr), json, yaml or name (a line per invalid NamespaceManager)")
	complete.Choices(c, "output", printer.ValidateFormats...)
	return c
}

// Complete resolves the -f values into the files to read.
func (o *validateOptions) Complete(c *cobra.Command) error {
	o.stdin, o.stdout, o.stderr = c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr()
	files, skipped, err := expandManifestPaths(o.filenames, o.recursive)
	if err != nil {
		return usageError{err}
	}
	o.files, o.skipped = files, skipped
	return nil
}

// Validate checks that there is something to read.
func (o *validateOptions) Validate() error {
	if len(o.filenames) == 0 {
		return usageError{errors.New("no manifests given; use -f FILE or -f DIR")}
	}
	if err := printer.CheckFormat(o.output, printer.ValidateFormats); err != nil {
		return usageError{err}
	}
	return nil
}

// Run validates every file, then prints what it found as -o asks. Files
// that cannot be read or parsed do not stop the others; they make the
// result a usage error, which takes precedence over invalid managers.
func (o *validateOptions) Run(ctx context.Context) error {
	var total manifestReport
	var readErrs []error
	v := printer.Validation{Version: printer.ValidateVersion, Files: o.files, Skipped: append([]string{}, o.skipped...), Problems: []printer.Problem{}}
	now := o.now()
	for _, name := range o.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		report, err := o.validateFile(name, now)
		total.add(report)
		if err != nil {
			readErrs = append(readErrs, err)
			v.Unreadable = append(v.Unreadable, printer.Unreadable{File: name, Error: err.Error()})
		}
		for _, m := range report.invalid {
			v.Problems = append(v.Problems, m.problems(name, printer.SeverityError)...)
		}
		for _, m := range report.dormant {
			v.Problems = append(v.Problems, m.problems(name, printer.SeverityWarning)...)
		}
	}
	v.Counts = printer.Counts{Files: len(o.files), Managers: total.managers, Valid: total.managers - len(total.invalid) - total.deactivated,
		Invalid: len(total.invalid), Deactivated: total.deactivated, OtherObjects: total.others}
	if err := printer.PrintValidation(o.stdout, o.stderr, o.output, v); err != nil {
		return err
	}
	if len(readErrs) > 0 {
		return usageError{errors.Join(readErrs...)}
	}
	if len(total.invalid) > 0 {
		return invalidManagersError{invalid: len(total.invalid)}
	}
	return nil
}

func (o *validateOptions) validateFile(name string, now time.Time) (manifestReport, error) {
	if name == stdinName {
		return validateManifests(stdinName, o.stdin, now)
	}
	return validateManifestFile(name, now)
}

// validateManager checks one NamespaceManager object the way a sweep would,
// plus what nsman's CRD refuses at admission (policy.ParseStrict) and what
// only matters in a manifest: the exact apiVersion, a name, and windows
// whose dates are all past at now (policy.PastWindows). A
// deactivated manager's problems make it no invalid one, as a sweep skips
// it; they are warnings, since re-arming it brings them back.
func validateManager(obj *unstructured.Unstructured, now time.Time) (errs field.ErrorList, deactivated bool) {
	want := policy.Group + "/" + policy.Version
	if got := obj.GetAPIVersion(); got != want {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), got, []string{want}))
	}
	if obj.GetName() == "" && obj.GetGenerateName() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	m, parseErrs := policy.ParseStrict(obj)
	if len(parseErrs) == 0 {
		parseErrs = policy.PastWindows(m, now)
	}
	return append(errs, parseErrs...), m.Deactivated
}

func describeFieldError(e *field.Error) string {
	if e.Field == "" {
		return e.ErrorBody()
	}
	return e.Field + ": " + e.ErrorBody()
}
