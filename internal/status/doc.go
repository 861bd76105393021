// Package status is what nsman writes about its subjects: a manager's
// Status (the nsman.k8s.consol.de/status annotation and the status
// subresource), a rule's summary, the record of a rule on one namespace
// (PairStatus), and every nsman.k8s.consol.de/* key nsman writes. The keys
// policy reads (expiry, touched) are policy's, which imports nothing of
// nsman. Its JSON forms are a stable schema: fields are added, never
// renamed.
package status
