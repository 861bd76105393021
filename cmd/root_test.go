package cmd

import (
	"bytes"
	"strings"
	"testing"
)

func TestExecuteExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "version", args: []string{"version"}, wantCode: ExitOK, wantStdout: "nsman dev "},
		{name: "no command prints help", args: nil, wantCode: ExitOK, wantStdout: "Usage:"},
		{name: "unknown command", args: []string{"swep"}, wantCode: ExitUsage, wantStderr: `unknown command "swep"`},
		{name: "unknown flag", args: []string{"--bogus"}, wantCode: ExitUsage, wantStderr: "unknown flag: --bogus"},
		{name: "extra argument", args: []string{"version", "extra"}, wantCode: ExitUsage, wantStderr: `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Execute(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
