// Package webhook delivers nsman's WEBHOOK actions: the body the original
// operator posted, the headers, the HMAC signature, bounded retries, and the
// address policy that decides which receivers may be dialled (a deny list
// that always applies, and an optional allow list).
//
// It stands alone, importing nothing but the standard library, so that a
// receiver (test/webhook-receiver, or a user's Go service) can verify nsman's
// signatures with VerifySignature without pulling in client-go or the rest of
// nsman. Package sweep decides when a webhook fires and with which
// Idempotency-Key; this package only sends it.
package webhook
