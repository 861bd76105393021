package printer

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
)

// ValidateVersion is the schema of nsman validate's JSON form, versioned
// as the sweep's report (report.ReportVersion) and nsman due's are.
const ValidateVersion = "nsman.validate/v1"

// ValidateFormats are the formats Validation prints, as -o names them:
// no wide, since a problem's line holds every field it has.
var ValidateFormats = []string{Text, JSON, YAML, Name}

// What a problem of a manifest is: Problem.Severity.
const (
	// SeverityError makes the manager invalid.
	SeverityError = "error"
	// SeverityWarning is a deactivated manager's problem: a sweep skips
	// it, re-arming it brings the problem back.
	SeverityWarning = "warning"
)

// Validation is what nsman validate found in the manifests it read.
type Validation struct {
	Version string `json:"version"`
	// Files are the files read, in order ("-" for stdin), those that
	// could not be read or parsed included.
	Files []string `json:"files"`
	// Skipped are the directories not read: a Helm chart's templates.
	Skipped []string `json:"skipped"`
	// Problems are every problem of every NamespaceManager, in file order.
	Problems []Problem `json:"problems"`
	// Unreadable are the files that could not be read or parsed, with why
	// (what was found before it is counted).
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	Counts     Counts       `json:"counts"`
}

// Problem is one problem of a NamespaceManager in a manifest.
type Problem struct {
	File string `json:"file"`
	// Document is where in the file: "document 2", "document 1, item 3"
	// of a List.
	Document  string `json:"document"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Field is the field's path, empty for the object as a whole.
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// Unreadable is a file that could not be read or parsed.
type Unreadable struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// Counts count what the files held.
type Counts struct {
	Files       int `json:"files"`
	Managers    int `json:"managers"`
	Valid       int `json:"valid"`
	Invalid     int `json:"invalid"`
	Deactivated int `json:"deactivated"`
	// OtherObjects are the objects of other kinds, skipped.
	OtherObjects int `json:"otherObjects"`
}

// Ref names the problem's manager in the text: NAMESPACE/NAME, NAME
// without a namespace, its document without a name.
func (p Problem) Ref() string {
	switch {
	case p.Name == "":
		return p.Document
	case p.Namespace == "":
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

// detail is the problem without its file and manager: FIELD: MESSAGE.
func (p Problem) detail() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// PrintValidation prints v as format (one of ValidateFormats) asks: text
// is a line per error on stdout, FILE: NAMESPACE/NAME: FIELD: MESSAGE, and
// on stderr the warnings, the directories skipped and a summary; the other
// formats write stdout alone.
func PrintValidation(stdout, stderr io.Writer, format string, v Validation) error {
	return Object(stdout, format, v, func(w io.Writer, format string) error {
		if format == Name {
			return WriteNames(w, v.Names())
		}
		return v.writeText(w, stderr)
	})
}

// Names name each invalid NamespaceManager once, as nsman sweep -o name
// names a manager (ManagerName; NAME alone after the kind without a
// namespace); one without a name has none, and is left out.
func (v Validation) Names() []string {
	var names []string
	last := ""
	for _, p := range v.Problems {
		if p.Severity != SeverityError || p.Name == "" {
			continue
		}
		name := managerKind + "/" + p.Name
		if p.Namespace != "" {
			name = ManagerName(p.Namespace, p.Name)
		}
		if key := p.File + "\x00" + p.Document; key != last {
			names, last = append(names, name), key
		}
	}
	return names
}

// writeText writes v's errors to stdout, and its warnings, skipped
// directories and summary to stderr, in the order of Problems (a file's
// errors, then its warnings, file by file, as they were found).
func (v Validation) writeText(stdout, stderr io.Writer) error {
	out, errs := bufio.NewWriter(stdout), bufio.NewWriter(stderr)
	for _, p := range v.Problems {
		if p.Severity == SeverityError {
			fmt.Fprintf(out, "%s: %s: %s\n", p.File, p.Ref(), p.detail())
			continue
		}
		if err := out.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(errs, "%s: %s: warning, deactivated (a sweep skips it until it is re-armed): %s\n", p.File, p.Ref(), p.detail())
		if err := errs.Flush(); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for _, dir := range v.Skipped {
		fmt.Fprintf(errs, "%s: skipped: the templates of a Helm chart; validate what they render: helm template %s | nsman validate -f -\n", dir, filepath.Dir(dir))
	}
	c := v.Counts
	deactivated := ""
	if c.Deactivated > 0 {
		deactivated = fmt.Sprintf(", %d deactivated (a sweep skips it; its problems are warnings)", c.Deactivated)
	}
	fmt.Fprintf(errs, "%s in %s: %d valid, %d invalid%s; %s skipped\n",
		NounCount(c.Managers, "NamespaceManager"), NounCount(c.Files, "file"), c.Valid, c.Invalid, deactivated, NounCount(c.OtherObjects, "other object"))
	return errs.Flush()
}

// NounCount spells a count with its noun: "1 file", "2 files".
func NounCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
