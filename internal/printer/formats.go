package printer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/report"
)

// managerKind is how kubectl's -o name names a NamespaceManager's kind,
// <kind>.<group> in lower case: the prefix of a manager's line.
const managerKind = "namespacemanager.k8s.consol.de"

// writeYAML writes r as YAML, the mirror of what writeJSON writes (the
// same fields, the same values; keys sorted, as kubectl's -o yaml sorts
// them), so that whatever reads one reads the other. Unlike the JSON it
// holds the whole report as text once before it writes.
func writeYAML(w io.Writer, r report.Report) error {
	var j bytes.Buffer
	if err := writeJSON(&j, r); err != nil {
		return err
	}
	return writeAsYAML(w, j.Bytes())
}

// writeAsYAML writes JSON text j as YAML.
func writeAsYAML(w io.Writer, j []byte) error {
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return fmt.Errorf("print YAML: %w", err)
	}
	_, err = w.Write(y)
	return err
}

// writeNames writes a line per entry that names its object (EntryName).
func writeNames(w io.Writer, entries []report.Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		writeName(bw, EntryName(e.Namespace, e.Name, e.Rule, e.Target))
	}
	return bw.Flush()
}

// ManagerName names a NamespaceManager (or a rule itself) as kubectl's -o
// name names an object, <kind>.<group>/<name>, with the namespace between
// them since nsman's reports span namespaces:
// namespacemanager.k8s.consol.de/NAMESPACE/NAME.
func ManagerName(namespace, name string) string {
	return managerKind + "/" + namespace + "/" + name
}

// EntryName names what a report's entry is about: a manager, or a rule
// itself (ManagerName). A rule's pair is about the namespace it acts on,
// which is what a reader of, say, the failed pairs wants: namespace/TARGET,
// as kubectl names a namespace (kubectl get namespace/TARGET takes it as it
// is).
func EntryName(namespace, name string, rule bool, target string) string {
	if rule && target != "" {
		return "namespace/" + target
	}
	return ManagerName(namespace, name)
}

// WriteNames writes names a line each, as -o name prints them: a name that
// would not print as it is (a control character in a tenant's name) is
// quoted as Go quotes it.
func WriteNames(w io.Writer, names []string) error {
	bw := bufio.NewWriter(w)
	for _, name := range names {
		writeName(bw, name)
	}
	return bw.Flush()
}

func writeName(bw *bufio.Writer, name string) {
	if strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		name = fmt.Sprintf("%q", name)
	}
	_, _ = bw.WriteString(name)
	_ = bw.WriteByte('\n')
}

// Object prints v, a command's report other than a sweep's (nsman
// explain's, nsman doctor's, nsman due's, nsman validate's), as format
// asks: JSON as json.Encoder with a two-space indent writes it, YAML its
// mirror, any other format (text, wide, name) as write writes it. The
// command checks format first (CheckFormat), against the formats it takes.
func Object(w io.Writer, format string, v any, write func(w io.Writer, format string) error) error {
	if format != JSON && format != YAML {
		return write(w, format)
	}
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if format == YAML {
		return writeAsYAML(w, j.Bytes())
	}
	_, err := w.Write(j.Bytes())
	return err
}

// CheckFormat refuses a format that is not one of formats, naming them.
func CheckFormat(format string, formats []string) error {
	if slices.Contains(formats, format) {
		return nil
	}
	return fmt.Errorf("-o %q: want %s", format, strings.Join(formats, ", "))
}
