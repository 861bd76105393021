// Package e2e tests nsman's built commands the way people run them: as
// processes, against a control plane they start themselves.
package e2e
