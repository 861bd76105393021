package explain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// shellWord holds only characters that no POSIX shell gives a meaning to.
var shellWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote is s as one word of a POSIX shell command line: as it is when
// no character of it means anything to a shell, else in single quotes,
// within which only ' itself needs care: it is written '\”.
func shellQuote(s string) string {
	if shellWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printable reports whether s prints as it is: valid UTF-8 without control
// or formatting characters (escapes, newlines, bidirectional overrides).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// asciiJSON is s as a JSON string in printable ASCII without ': whatever
// else it holds is written \uXXXX, so that the string reaches a terminal
// and a shell's single quotes unchanged and a JSON reader gets s exactly.
func asciiJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= ' ' && r < 0x7f && r != '\'':
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b.WriteString(`\u` + hex4(r1) + `\u` + hex4(r2))
		default:
			b.WriteString(`\u` + hex4(r))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hex4(r rune) string {
	h := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", 4-len(h)) + h
}

// releaseChunk bounds the names of one command, in bytes, so that each
// stays far below a shell's limit on one argument (sh -c takes the whole
// command as one: 128 KiB on Linux).
const releaseChunk = 8 << 10

// unfinalize is the patch that removes every finalizer of an object, and
// succeeds on one that has none left.
const unfinalize = `--type=merge -p '{"metadata":{"finalizers":null}}'`

// Cluster is the cluster explain read, as kubectl is told it: the
// --kubeconfig and --context given to nsman, if any, so that a command
// pasted from the report runs against the cluster it was written for, not
// whatever context kubectl has by then.
type Cluster struct {
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
}

// kubectl is the start of every command explain prints: kubectl and the
// flags that name the cluster, each shell-quoted.
func (c Cluster) kubectl() string {
	cmd := "kubectl"
	if c.Kubeconfig != "" {
		cmd += " --kubeconfig " + shellQuote(c.Kubeconfig)
	}
	if c.Context != "" {
		cmd += " --context " + shellQuote(c.Context)
	}
	return cmd
}

// releaseCommands are the commands, each started by kubectl
// (Cluster.kubectl), that remove the finalizers of every object of names,
// of resource (kind in group version gv) in namespace. Names are shell-quoted, after --, since a name may begin with -. A name
// that does not print as it is (RBAC names, for one, may hold escapes and
// newlines) is not put on the command line: its object is given to kubectl
// on stdin, as JSON in printable ASCII.
func releaseCommands(kubectl, namespace, resource, gv, kind string, names []string) []string {
	var plain, other [][]string
	var plainBytes, otherBytes int
	add := func(chunks *[][]string, size *int, name string, n int) {
		if len(*chunks) == 0 || *size+n > releaseChunk {
			*chunks, *size = append(*chunks, nil), 0
		}
		last := &(*chunks)[len(*chunks)-1]
		*last, *size = append(*last, name), *size+n
	}
	for _, name := range names {
		if printable(name) {
			add(&plain, &plainBytes, shellQuote(name), len(shellQuote(name)))
		} else {
			item := `{"apiVersion":` + asciiJSON(gv) + `,"kind":` + asciiJSON(kind) + `,"metadata":{"namespace":` + asciiJSON(namespace) + `,"name":` + asciiJSON(name) + `}}`
			add(&other, &otherBytes, item, len(item))
		}
	}
	var out []string
	for _, chunk := range plain {
		out = append(out, kubectl+" -n "+shellQuote(namespace)+" patch "+unfinalize+" -- "+shellQuote(resource)+" "+strings.Join(chunk, " "))
	}
	for _, chunk := range other {
		list := `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(chunk, ",") + `]}`
		out = append(out, "printf '%s\\n' '"+list+"' | "+kubectl+" patch -f - "+unfinalize)
	}
	return out
}

// Visible is s with every byte or character that would not print as itself
// (control and formatting characters, invalid UTF-8) written as an escape:
// \x1b, \u202e. Hand-written: strconv.Quote would escape \ and " too,
// which a name keeps as they are.
func Visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
