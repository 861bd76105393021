package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// WriteText prints what holds a namespace, then the steps to unblock it:
// nsman explain's text report, or, wide, the same with what the text
// leaves out: when the namespace was made, the cluster read (--kubeconfig,
// --context), when each condition last changed, and the action of each
// rule that deleted it before. What the cluster said (names, messages) is
// printed visible: a control character of it reaches the terminal
// escaped, never as itself. The commands print as they are: explain builds
// them printable, so that they can be pasted.
func WriteText(w io.Writer, r Report, wide bool) error {
	var b strings.Builder
	v := Visible
	if r.DeletionTimestamp == nil {
		fmt.Fprintf(&b, "namespace %s is %s: it is not being deleted\n", v(r.Namespace), v(r.Phase))
		writeWide(&b, r, wide)
		writeOwner(&b, r, wide)
		writeUnlisted(&b, r.Unlisted)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "namespace %s: %s since %s\n", v(r.Namespace), v(r.Phase), stamp(r.DeletionTimestamp.Time))
	writeWide(&b, r, wide)
	writeOwner(&b, r, wide)
	writeConditions(&b, r, wide)
	if len(r.Finalizers) > 0 {
		fmt.Fprintf(&b, "\nthe namespace's own finalizers: %s\n", v(strings.Join(r.Finalizers, ", ")))
	}
	if len(r.Remaining) > 0 {
		b.WriteString("\nobjects left:\n")
		for _, res := range r.Remaining {
			fmt.Fprintf(&b, "  %s: %d, %d with finalizers\n", v(res.Resource), res.Count, len(res.Finalized))
			for _, o := range res.Finalized {
				fmt.Fprintf(&b, "    %s: %s\n", v(o.Name), v(strings.Join(o.Finalizers, ", ")))
			}
		}
	}
	if len(r.UnavailableAPIServices) > 0 {
		b.WriteString("\nunavailable APIServices:\n")
		for _, a := range r.UnavailableAPIServices {
			fmt.Fprintf(&b, "  %s (Service %s): %s: %s\n", v(a.Name), v(a.Service), v(a.Reason), v(a.Message))
		}
	}
	writeUnlisted(&b, r.Unlisted)
	writeSteps(&b, r.Unblock)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWide prints, wide, when the namespace was made and the cluster
// read, as the commands of the steps name it.
func writeWide(b *strings.Builder, r Report, wide bool) {
	if !wide {
		return
	}
	fmt.Fprintf(b, "created: %s\n", stamp(r.Created.Time))
	read := "the kubeconfig's current context"
	if c := r.Cluster; c.Kubeconfig != "" || c.Context != "" {
		read = strings.TrimPrefix(c.kubectl(), "kubectl ")
	}
	fmt.Fprintf(b, "read from: %s\n", Visible(read))
}

// writeConditions prints the namespace controller's conditions; wide, with
// when each last changed.
func writeConditions(b *strings.Builder, r Report, wide bool) {
	if len(r.Conditions) == 0 {
		return
	}
	b.WriteString("\nconditions:\n")
	v := Visible
	for _, c := range r.Conditions {
		fmt.Fprintf(b, "  %s=%s %s: %s", v(string(c.Type)), v(string(c.Status)), v(c.Reason), v(c.Message))
		if wide {
			fmt.Fprintf(b, " (since %s)", stamp(c.LastTransitionTime.Time))
		}
		b.WriteByte('\n')
	}
}

// writeSteps prints what would unblock the deletion, a numbered step each.
func writeSteps(b *strings.Builder, steps []Step) {
	v := Visible
	if len(steps) == 0 {
		b.WriteString("\nnothing found that holds it: the namespace controller may not have got to it yet\n")
		return
	}
	b.WriteString("\nto unblock it:\n")
	for i, s := range steps {
		fmt.Fprintf(b, "  %d. %s\n     %s\n", i+1, v(s.Holds), v(s.Unblock))
		if len(s.Commands) > 0 {
			b.WriteString("     a person could run (nsman does not):\n")
			for _, c := range s.Commands {
				fmt.Fprintf(b, "       %s\n", v(c))
			}
			fmt.Fprintf(b, "     warning: %s\n", v(s.Warning))
		}
	}
}

// writeOwner prints who owns the namespace, the rules that deleted it
// before it was made (wide, with their action), and, both there and the
// owner existing, what deletes it for good.
func writeOwner(b *strings.Builder, r Report, wide bool) {
	if r.Owner != nil {
		fmt.Fprintf(b, "owner: %s\n", Visible(r.Owner.String()))
	}
	for _, c := range r.CameBack {
		sentence := c.Sentence(r.Created.Time)
		if wide {
			sentence = strings.TrimSuffix(sentence, ")") + ", action " + c.Action + ")"
		}
		fmt.Fprintf(b, "came back: %s\n", Visible(sentence))
	}
	if len(r.CameBack) > 0 && r.Owner != nil && r.Owner.Presence == OwnerExists {
		fmt.Fprintf(b, "  %s\n", Visible(ForGood(r.Owner.Ref)))
	}
}

// writeUnlisted prints what could not be read, and why.
func writeUnlisted(b *strings.Builder, unlisted []Unlisted) {
	if len(unlisted) == 0 {
		return
	}
	b.WriteString("\nnot read:\n")
	for _, u := range unlisted {
		fmt.Fprintf(b, "  %s: %s\n", Visible(u.What), Visible(u.Error))
	}
}

// Names name the objects the report is about, a line each as kubectl's -o
// name names an object (kubectl get takes each as it is): the namespace,
// its owner (<resource>.<group>/<namespace>/<name>), each rule that
// deleted it before, as manager names a NamespaceManager, each object left
// in it that carries finalizers (<resource>.<group>/<name>, in the
// namespace) and each unavailable APIService.
func (r Report) Names(manager func(namespace, name string) string) []string {
	names := []string{"namespace/" + r.Namespace}
	if r.Owner != nil && r.Owner.Ref != "" {
		names = append(names, r.Owner.Ref)
	}
	for _, c := range r.CameBack {
		namespace, name, _ := strings.Cut(c.Rule, "/")
		names = append(names, manager(namespace, name))
	}
	for _, res := range r.Remaining {
		for _, o := range res.Finalized {
			names = append(names, res.Resource+"/"+o.Name)
		}
	}
	for _, a := range r.UnavailableAPIServices {
		names = append(names, "apiservice.apiregistration.k8s.io/"+a.Name)
	}
	return slices.Compact(names)
}

// stamp is t as the text report says a time: RFC 3339, in UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
