// Package links makes and checks nsman's signed links: a URL that lets
// whoever holds it extend a namespace's hold or wake it, for a duration
// nsman chose, until the link expires, and nothing else. A link names the
// namespace, its UID (so that a namespace deleted and made again under the
// same name is not the one the link meant), the action, the duration and
// the expiry, and carries an HMAC-SHA256 over all of them with a key that
// nsman sweep (which makes links) and nsman serve (which honours them)
// share.
//
// It stands alone, importing nothing but the standard library, as package
// webhook does: it knows nothing of clusters. Package serve answers links;
// internal/execute puts them in notifications.
package links
