// Package cmd holds nsman's command line: one file per command. Flags land in
// an options struct that is completed into a typed configuration, validated,
// then run; the domain packages never see cobra.
package cmd
