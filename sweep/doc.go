// Package sweep runs one sweep: it lists the NamespaceManagers, queues them
// to its workers, fans each rule out over the namespaces it matches, and
// assembles the report. It orchestrates the packages of internal/: reads
// come from internal/cluster, evidence about namespaces from
// internal/probe, decisions from internal/decide's Evaluator, and
// internal/execute's Executor carries them out (the action cap, claims,
// records, Events, notifications) through internal/write alone; a dry run
// differs in its writer. Clients and the clock are injected; nothing here
// builds a client or reads flags.
package sweep
