package cmd

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/duration"
)

// durationVar defines a duration flag, as pflag's DurationVar does, whose
// value also takes weeks and days (2d, 1w, 1d12h; duration.Value): every
// duration flag of nsman is one.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*duration.Value)(p), name, usage)
}
