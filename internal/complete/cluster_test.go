package complete

import (
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/internal/connect"
)

// A completion reaches the cluster the command's own flags name: those
// given on the line being completed are carried over, repeated ones
// (--as-group) whole.
func TestConnectionTakesTheFlagsGiven(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want connect.Flags
	}{
		{"none", nil, connect.Flags{}},
		{"kubeconfig and context", []string{"--kubeconfig", "/k", "--context", "beta"}, connect.Flags{Kubeconfig: "/k", Context: "beta"}},
		{"server, token and groups", []string{"-s", "https://api:6443", "--token", "t", "--as", "ann", "--as-group", "a", "--as-group", "b"}, func() connect.Flags {
			var f connect.Flags
			f.Overrides.ClusterInfo.Server, f.Overrides.AuthInfo.Token = "https://api:6443", "t"
			f.Overrides.AuthInfo.Impersonate, f.Overrides.AuthInfo.ImpersonateGroups = "ann", []string{"a", "b"}
			return f
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cobra.Command{Use: "hold"}
			var kubeconfig, context string
			c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "")
			c.Flags().StringVar(&context, "context", "", "")
			connect.Bind(c.Flags(), &clientcmd.ConfigOverrides{})
			if err := c.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			tt.want.Overrides.Timeout = "0" // --request-timeout's default
			if got := connection(c); fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("connection\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

// A list flag completes its last word, offering none given before it.
func TestListed(t *testing.T) {
	c := &cobra.Command{Use: "sweep"}
	c.Flags().StringSlice("state", nil, "")
	c.Flags().String("one", "", "")
	words := fixed([]string{"failed", "fired", "planned"})
	for _, tt := range []struct{ flag, toComplete, want string }{
		{"state", "f", "[failed fired]"},
		{"state", "fired,", "[fired,failed fired,planned]"},
		{"state", "fired,failed,p", "[fired,failed,planned]"},
		{"one", "fired,", "[]"},
	} {
		got, _ := listed(c, c.Flags().Lookup(tt.flag), words)(c, nil, tt.toComplete)
		if fmt.Sprint(got) != tt.want {
			t.Errorf("--%s %s completes %v, want %s", tt.flag, tt.toComplete, got, tt.want)
		}
	}
}
