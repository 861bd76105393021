// Package bench measures nsman at scale against a real API server (issue 6):
// it seeds thousands of NamespaceManagers, times a minimal client-go floor
// and the built nsman binary, and writes the results to BENCHMARKS.md.
//
// It runs only under `make bench` (NSMAN_BENCH=1); `make test` leaves it out.
package bench
