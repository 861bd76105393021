// Package execute carries out what a sweep, or a command, decided. The
// Executor of a sweep is the one place a decision is acted on, for a
// manager and for one namespace of a rule alike: the places of
// --max-actions (FairShare), the claim, the action (a DELETE, SCALE_DOWN's
// workload changes, a WEBHOOK routed as the trust of its manager's
// namespace allows), the notification, the record of the outcome and the
// Events. It also holds nsman restore and the writes of nsman hold, nsman
// wake and nsman touch. Every request goes through the Writer of package write.
// Each action type is carried out by a home of its own (action_*.go),
// behind the action interface and registered once (actions.go).
package execute
