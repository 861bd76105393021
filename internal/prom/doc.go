// Package prom asks a Prometheus (or an API that answers as one: Thanos,
// Mimir, Cortex) an instant query, each answer bounded in time, bytes and
// series, with the platform's credentials. It knows nothing of what a
// query means: package probe asks it the traffic queries of a sweep.
package prom
