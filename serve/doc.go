// Package serve is nsman serve: a small, stateless HTTP server that answers
// the signed links of package links. A GET shows a page and writes nothing
// (chat apps fetch links to preview them); the page's button POSTs the same
// signed token, and only then does serve write what nsman hold --for or
// nsman wake --for writes (internal/execute), bound to the namespace's UID,
// capped by --max-hold, at most once per link and minute.
//
// What a person may do through serve is what the link says, and no more:
// the key that signs links never leaves the process, and every page is
// written with each field it shows escaped (page.render).
package serve
