package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/policy"
)

// stdinName is the -f value, and the file name in messages, for stdin.
const stdinName = "-"

// manifestExtensions are the files a directory contributes, as with kubectl.
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// expandManifestPaths turns -f values into files: a file stands for itself
// whatever its name, a directory for the manifest files in it (and below it
// when recursive), but for the templates of a Helm chart, which are no
// manifests until rendered: skipped lists their directories. A directory
// without any file is an error, as it is most likely the wrong one.
func expandManifestPaths(paths []string, recursive bool) (files, skipped []string, err error) {
	for _, p := range paths {
		if p == stdinName {
			files = append(files, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		found, templates, err := manifestsInDir(p, recursive)
		if err != nil {
			return nil, nil, err
		}
		if len(found) == 0 && len(templates) == 0 {
			return nil, nil, fmt.Errorf("%s: no %s files", p, strings.Join(manifestExtensions, ", "))
		}
		files, skipped = append(files, found...), append(skipped, templates...)
	}
	return files, skipped, nil
}

// manifestsInDir lists the manifest files in dir, in name order, and the
// templates directories of Helm charts it skipped (a chart is a directory
// with a Chart.yaml). It follows dir itself when it is a symbolic link, but
// no link below it, so that a recursive walk cannot loop.
func manifestsInDir(dir string, recursive bool) (files, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	chart := slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "Chart.yaml" && !e.IsDir() })
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && chart && e.Name() == "templates":
			skipped = append(skipped, path)
		case e.IsDir():
			if !recursive {
				continue
			}
			sub, subSkipped, err := manifestsInDir(path, true)
			if err != nil {
				return nil, nil, err
			}
			files, skipped = append(files, sub...), append(skipped, subSkipped...)
		case slices.Contains(manifestExtensions, filepath.Ext(path)):
			files = append(files, path)
		}
	}
	return files, skipped, nil
}

// manifestReport counts what validating manifests found.
type manifestReport struct {
	// managers counts NamespaceManagers, valid or not.
	managers int
	// deactivated counts the managers with spec.deactivated: true, which
	// a sweep skips: their problems, in dormant, are warnings.
	deactivated int
	dormant     []invalidManager
	// others counts objects of other kinds, which are skipped.
	others int
	// invalid lists the managers with problems, in file order.
	invalid []invalidManager
}

// invalidManager is a NamespaceManager and its problems.
type invalidManager struct {
	// ref names the manager: NAMESPACE/NAME, NAME without a namespace, or its
	// document's position without a name.
	ref                       string
	namespace, name, position string
	errs                      field.ErrorList
}

func (r *manifestReport) add(o manifestReport) {
	r.managers += o.managers
	r.deactivated += o.deactivated
	r.dormant = append(r.dormant, o.dormant...)
	r.others += o.others
	r.invalid = append(r.invalid, o.invalid...)
}

func validateManifestFile(name string, now time.Time) (manifestReport, error) {
	f, err := os.Open(name)
	if err != nil {
		return manifestReport{}, err
	}
	defer f.Close()
	return validateManifests(name, f, now)
}

// validateManifests reads a stream of YAML documents or JSON objects and
// validates the NamespaceManagers in it, also those inside a List. It stops
// at the first document it cannot parse and returns what it found so far.
// now is when windows' dates are judged past.
func validateManifests(name string, r io.Reader, now time.Time) (manifestReport, error) {
	var report manifestReport
	decoder := yaml.NewYAMLOrJSONDecoder(r, 4096)
	for doc := 1; ; doc++ {
		// Decode to JSON first, then to a map with apimachinery's JSON
		// rules, so that numbers come out as int64 as from the API server.
		var raw json.RawMessage
		err := decoder.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return report, nil
		}
		if err != nil {
			return report, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return report, fmt.Errorf("%s: document %d: not an object: %w", name, doc, err)
		}
		report.addObject(&unstructured.Unstructured{Object: obj}, fmt.Sprintf("document %d", doc), now)
	}
}

func (r *manifestReport) addObject(obj *unstructured.Unstructured, position string, now time.Time) {
	if obj.IsList() {
		items, _ := obj.Object["items"].([]any)
		for i, item := range items {
			if m, ok := item.(map[string]any); ok {
				r.addObject(&unstructured.Unstructured{Object: m}, fmt.Sprintf("%s, item %d", position, i+1), now)
			}
		}
		return
	}
	if obj.GetKind() != policy.Kind {
		r.others++
		return
	}
	r.managers++
	errs, deactivated := validateManager(obj, now)
	switch {
	case deactivated:
		r.deactivated++
		if len(errs) > 0 {
			r.dormant = append(r.dormant, newInvalidManager(obj, position, errs))
		}
	case len(errs) > 0:
		r.invalid = append(r.invalid, newInvalidManager(obj, position, errs))
	}
}

func newInvalidManager(obj *unstructured.Unstructured, position string, errs field.ErrorList) invalidManager {
	p := printer.Problem{Document: position, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	return invalidManager{ref: p.Ref(), namespace: p.Namespace, name: p.Name, position: position, errs: errs}
}

// problems are m's problems in file, of severity.
func (m invalidManager) problems(file, severity string) []printer.Problem {
	out := make([]printer.Problem, 0, len(m.errs))
	for _, e := range m.errs {
		out = append(out, printer.Problem{File: file, Document: m.position, Namespace: m.namespace, Name: m.name, Field: e.Field, Message: e.ErrorBody(), Severity: severity})
	}
	return out
}
