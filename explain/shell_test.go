package explain

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostileNames are object names a tenant may choose: RBAC names, for
// one, may hold anything but / and %.
var hostileNames = []string{
	"plain", "-n", "--as=nobody", "a$(touch${IFS}x)", "b`touch y`", "c';touch z;'", `d"$HOME"\`, "e f\tg",
	"h\nnewline", "i\x1b]0;title\x07", "j\u202eevil", "k*?[a]~{1,2}", "l;|&<>()!#", "ü☃𝄞", "m\x7f\u0085",
}

// TestShellQuote: every name, quoted, reaches a command as one argument,
// exactly, whatever it holds; a name of plain characters stays as it is.
func TestShellQuote(t *testing.T) {
	dir := t.TempDir()
	for _, name := range hostileNames {
		cmd := exec.Command("sh", "-c", `printf '%s' `+shellQuote(name))
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil || string(out) != name {
			t.Errorf("%q quoted %s: sh printed %q (%v)", name, shellQuote(name), out, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("quoted names ran commands: %v", entries)
	}
	for _, plain := range []string{"w1", "widgets.explain.nsman.test", "/api/v1/namespaces/e2e-1/finalize", "v1.gone.nsman.test"} {
		if shellQuote(plain) != plain {
			t.Errorf("%s quoted %s; want it as it is", plain, shellQuote(plain))
		}
	}
}

// TestASCIIJSON: a name as asciiJSON writes it is printable ASCII without
// ', and decodes to the name exactly.
func TestASCIIJSON(t *testing.T) {
	for _, name := range hostileNames {
		enc := asciiJSON(name)
		for _, c := range []byte(enc) {
			if c < ' ' || c >= 0x7f || c == '\'' {
				t.Errorf("%q written %s: holds %q", name, enc, c)
			}
		}
		var got string
		if err := json.Unmarshal([]byte(enc), &got); err != nil || got != name {
			t.Errorf("%q written %s: decodes to %q (%v)", name, enc, got, err)
		}
	}
}

// TestReleaseCommands: the commands of a step name every object it
// holds, each exactly once, and print as they are: a name that does not
// is given on stdin as JSON. Run by sh with a kubectl that records its
// arguments and stdin, they reach kubectl intact, each naming the cluster
// explain read, and run nothing else.
func TestReleaseCommands(t *testing.T) {
	names := append([]string{}, hostileNames...)
	for i := range 600 {
		names = append(names, fmt.Sprintf("role-%s-%d", strings.Repeat("x", i%40), i))
	}
	cluster := Cluster{Kubeconfig: "/home/me/a kube's $(config)", Context: "prod; rm -rf ~"}
	cmds := releaseCommands(cluster.kubectl(), "team-a", "roles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "Role", names)
	if len(cmds) < 3 {
		t.Errorf("%d commands for %d names: want them split so that each stays short", len(cmds), len(names))
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "calls")
	if err := os.Mkdir(calls, 0o755); err != nil {
		t.Fatal(err)
	}
	// A kubectl that writes, a file per call, each argument and then its
	// stdin, each ended by a NUL.
	fake := "#!/bin/sh\nf=$(mktemp -p " + calls + ")\nfor a in \"$@\"; do printf '%s\\0' \"$a\" >>\"$f\"; done\ncase \" $* \" in *\" -f - \"*) cat >>\"$f\"; printf '\\0' >>\"$f\" ;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if !printable(c) || len(c) > 2*releaseChunk {
			t.Errorf("command %q: does not print as it is, or is long", c)
		}
		sh := exec.Command("sh", "-c", c)
		sh.Dir, sh.Env = work, append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) > 0 {
		t.Errorf("the commands ran something else: %v", entries)
	}
	files, err := os.ReadDir(calls)
	if err != nil || len(files) != len(cmds) {
		t.Fatalf("%d calls of kubectl (%v), want one per command, %d", len(files), err, len(cmds))
	}
	seen := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(calls, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if len(args) < 4 || !slices.Equal(args[:4], []string{"--kubeconfig", cluster.Kubeconfig, "--context", cluster.Context}) {
			t.Errorf("kubectl called with %.500q: want it to name the cluster first", args)
			continue
		}
		args = args[4:]
		switch {
		case len(args) > 7 && args[0] == "-n" && args[1] == "team-a" && args[2] == "patch" && strings.Join(args[3:7], " ") == `--type=merge -p {"metadata":{"finalizers":null}} --` && args[7] == "roles.rbac.authorization.k8s.io":
			for _, name := range args[8:] {
				seen[name]++
			}
		case len(args) == 7 && strings.Join(args[:6], " ") == `patch -f - --type=merge -p {"metadata":{"finalizers":null}}`:
			var list struct {
				Items []struct {
					APIVersion, Kind string
					Metadata         struct{ Namespace, Name string }
				}
			}
			if err := json.Unmarshal([]byte(args[6]), &list); err != nil {
				t.Fatalf("stdin %q: %v", args[6], err)
			}
			for _, it := range list.Items {
				if it.APIVersion != "rbac.authorization.k8s.io/v1" || it.Kind != "Role" || it.Metadata.Namespace != "team-a" {
					t.Errorf("object %+v: want a Role of team-a", it)
				}
				seen[it.Metadata.Name]++
			}
		default:
			t.Errorf("kubectl called with %.500q", args)
		}
	}
	for _, name := range names {
		if seen[name] != 1 {
			t.Errorf("%q released %d times, want once", name, seen[name])
		}
	}
	if len(seen) != len(names) {
		t.Errorf("released %d names, want the %d named", len(seen), len(names))
	}
}
