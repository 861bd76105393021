package e2e

// The CI steps nsman ships (action.yml, deploy/ci/nsman.gitlab-ci.yml) run
// here as a runner runs them, with a locally built nsman standing in for the
// release. These files sort after nsman_test.go on purpose: TestNsmanBinary
// sweeps before the CRD is installed, and these tests install it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/test/nsmantest"
)

// releasePath is where GitHub serves a release's files, below the host.
const releasePath = "/nsman/nsman/releases/download"

// thisAsset is the release binary's name for this machine.
var thisAsset = "nsman-" + runtime.GOOS + "-" + runtime.GOARCH

// release serves a built nsman as the release testVersion's binary for this
// machine, with a checksums.txt that lists every release binary, laid out as
// GitHub's release downloads are. It records the paths asked for.
type release struct {
	URL    string // the base URL, as NSMAN_DOWNLOAD_URL takes it
	SHA256 string // the binary's, in hex, as NSMAN_SHA256 pins it

	mu        sync.Mutex
	requested []string
}

// serveRelease serves bin; checksums, when not nil, rewrites checksums.txt.
func serveRelease(t *testing.T, bin string, checksums func(string) string) *release {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	var lines strings.Builder
	for _, asset := range []string{"nsman-darwin-amd64", "nsman-darwin-arm64", "nsman-linux-amd64", "nsman-linux-arm64"} {
		hash := hex.EncodeToString(sum[:])
		if asset != thisAsset {
			other := sha256.Sum256([]byte(asset))
			hash = hex.EncodeToString(other[:])
		}
		fmt.Fprintf(&lines, "%s  %s\n", hash, asset)
	}
	sums := lines.String()
	if checksums != nil {
		sums = checksums(sums)
	}
	files := map[string][]byte{
		releasePath + "/" + testVersion + "/" + thisAsset:  data,
		releasePath + "/" + testVersion + "/checksums.txt": []byte(sums),
	}
	r := &release{SHA256: hex.EncodeToString(sum[:])}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requested = append(r.requested, req.URL.Path)
		r.mu.Unlock()
		body, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + releasePath
	return r
}

func (r *release) Requested() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requested)
}

// actionFile is what the tests read of action.yml.
type actionFile struct {
	Inputs map[string]struct {
		Required bool    `json:"required"`
		Default  *string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Value string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

type actionStep struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	Shell string            `json:"shell"`
	Env   map[string]string `json:"env"`
	Run   string            `json:"run"`
	If    string            `json:"if"`
}

func readAction(t *testing.T) actionFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

var (
	// runScript is the only form a step's run may take: a call of a script
	// of the action's own, which the tests run.
	runScript = regexp.MustCompile(`^"\$GITHUB_ACTION_PATH/([A-Za-z0-9_./-]+)"$`)
	// expression is a GitHub expression in an env value.
	expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
)

// actionRun is what a run of the action left.
type actionRun struct {
	code      int               // the exit status of the last step run
	stepsRun  int               // how many steps ran
	outputs   map[string]string // the action's outputs
	summary   string            // the job summary the steps wrote
	log       string            // stdout and stderr of the steps
	workspace string            // the working directory
	installed string            // where the install step puts nsman
}

// runAction runs action.yml's steps as a GitHub runner runs a composite
// action's: each run with bash --noprofile --norc -eo pipefail, in the
// workspace, with the step's env resolved from inputs (their defaults
// otherwise) and runner.temp, over the job's environment jobEnv; a step that
// fails ends the run.
func runAction(t *testing.T, inputs map[string]string, jobEnv ...string) actionRun {
	t.Helper()
	a := readAction(t)
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("action.yml has no input %q", name)
		}
	}
	temp, res := t.TempDir(), actionRun{workspace: t.TempDir(), outputs: map[string]string{}}
	res.installed = filepath.Join(temp, "nsman", "nsman")
	stepOutputs := map[string]map[string]string{}
	var log bytes.Buffer
	for i, step := range a.Runs.Steps {
		m := runScript.FindStringSubmatch(step.Run)
		if m == nil || step.Shell != "bash" || step.If != "" {
			t.Fatalf("step %d runs %q in %q (if %q): want a script call in bash, always", i, step.Run, step.Shell, step.If)
		}
		env := append(baseEnv(t), jobEnv...)
		for k, v := range step.Env {
			env = append(env, k+"="+resolve(t, a, inputs, v, temp))
		}
		outFile, summaryFile := filepath.Join(temp, fmt.Sprintf("output-%d", i)), filepath.Join(temp, fmt.Sprintf("summary-%d", i))
		for _, f := range []string{outFile, summaryFile} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		env = append(env, "GITHUB_ACTION_PATH="+nsmantest.RepoRoot(), "RUNNER_TEMP="+temp,
			"GITHUB_OUTPUT="+outFile, "GITHUB_STEP_SUMMARY="+summaryFile)
		script := filepath.Join(temp, fmt.Sprintf("step-%d.sh", i))
		if err := os.WriteFile(script, []byte(step.Run+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir, cmd.Env = res.workspace, env
		res.code = runLogged(t, &log, cmd)
		res.stepsRun++
		stepOutputs[step.ID] = readOutputs(t, outFile)
		summary, err := os.ReadFile(summaryFile)
		if err != nil {
			t.Fatal(err)
		}
		res.summary += string(summary)
		if res.code != 0 {
			break
		}
	}
	for name, out := range a.Outputs {
		m := regexp.MustCompile(`^\$\{\{ steps\.([a-z-]+)\.outputs\.([a-z-]+) \}\}$`).FindStringSubmatch(out.Value)
		if m == nil {
			t.Fatalf("output %s is %q: want a step's output", name, out.Value)
		}
		res.outputs[name] = stepOutputs[m[1]][m[2]]
	}
	res.log = log.String()
	return res
}

// resolve evaluates the expressions of an env value of action.yml: the
// inputs and runner.temp only.
func resolve(t *testing.T, a actionFile, inputs map[string]string, value, temp string) string {
	t.Helper()
	return expression.ReplaceAllStringFunc(value, func(e string) string {
		expr := expression.FindStringSubmatch(e)[1]
		if expr == "runner.temp" {
			return temp
		}
		name, ok := strings.CutPrefix(expr, "inputs.")
		in, declared := a.Inputs[name]
		if !ok || !declared {
			t.Fatalf("env value %q: the tests know only declared inputs and runner.temp", value)
		}
		if v, given := inputs[name]; given {
			return v
		}
		if in.Default != nil {
			return *in.Default
		}
		return ""
	})
}

// readOutputs reads a GITHUB_OUTPUT file of name=value lines.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q is not name=value", line)
		}
		out[k] = v
	}
	return out
}

// baseEnv is a runner's environment with nothing of this machine's but PATH:
// no kubeconfig, cluster or home directory leaks in.
func baseEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
}

// runLogged runs cmd, its stdout and stderr into log, and returns its exit
// status.
func runLogged(t *testing.T, log *bytes.Buffer, cmd *exec.Cmd) int {
	t.Helper()
	cmd.Stdout, cmd.Stderr = log, log
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("%v: %v", cmd.Args, err)
	return 0
}

// gitlabJob is what the tests read of the GitLab CI template's job.
type gitlabJob struct {
	Script    []string          `json:"script"`
	Variables map[string]string `json:"variables"`
	Artifacts struct {
		When  string   `json:"when"`
		Paths []string `json:"paths"`
	} `json:"artifacts"`
}

func readGitLabJob(t *testing.T) gitlabJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "ci", "nsman.gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]gitlabJob
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("nsman.gitlab-ci.yml: %v", err)
	}
	job, ok := file[".nsman"]
	if !ok || len(file) != 1 {
		t.Fatalf("nsman.gitlab-ci.yml defines %d jobs: want the hidden job .nsman alone", len(file))
	}
	return job
}

// gitlabShell is a shell GitLab's runner runs a job's script in, and the
// line it starts the script with: bash where the job's image has it, else
// sh, which set -o pipefail would stop where it lacks pipefail (dash 0.5.12,
// Debian 12's /bin/sh).
type gitlabShell struct{ name, prelude string }

var gitlabShells = []gitlabShell{
	{"bash", "set -eo pipefail\n"},
	{"sh", "if set -o | grep -q pipefail; then set -o pipefail; fi; set -e\n"},
}

// runGitLab runs the template's script as GitLab's runner runs a job's: its
// entries one after the other in one shell, which reads them from its
// standard input after the shell's prelude, in the project directory, with
// the job's variables in the environment. It returns the exit status, the
// log and the project directory.
func runGitLab(t *testing.T, shell gitlabShell, variables ...string) (int, string, string) {
	t.Helper()
	return runGitLabIn(t, shell, t.TempDir(), variables...)
}

// runGitLabIn is runGitLab in the project directory given, as a runner
// that does not clean it between jobs leaves it.
func runGitLabIn(t *testing.T, shell gitlabShell, project string, variables ...string) (int, string, string) {
	t.Helper()
	job := readGitLabJob(t)
	cmd := exec.Command(shell.name, "-s")
	cmd.Dir, cmd.Env = project, append(append(baseEnv(t), "CI_PROJECT_DIR="+project), variables...)
	cmd.Stdin = strings.NewReader(shell.prelude + strings.Join(job.Script, "\n") + "\n")
	var log bytes.Buffer
	code := runLogged(t, &log, cmd)
	return code, log.String(), project
}
