// Package webhook delivers nsman's WEBHOOK actions: the body the original
// operator posted, the headers, the HMAC signatures, bounded retries, and
// the address policy that decides which receivers may be dialled (a deny
// list that always applies, an optional allow list, and for a tenant's
// receiver public addresses or a Service of its own namespace; see Route).
//
// It stands alone, importing nothing but the standard library, so that a
// receiver (test/webhook-receiver, or a user's Go service) can verify
// nsman's signatures with VerifyRequest (or VerifySignatureV2) without
// pulling in client-go or the rest of nsman. Package sweep decides when a
// webhook fires, with which Idempotency-Key and Route; this package only
// sends it.
package webhook
