// Package durtext says a duration as nsman's users write one: whole days
// first, then hours, minutes and seconds, without the zero units Go prints
// (30d, 1d12h, 2h30m, 1m30s rather than 720h0m0s, 36h0m0s, 2h30m0s). What
// it prints, nsman's duration flags take back.
//
// It imports nothing but the standard library, and lives under policy so
// that every package that says a duration may import it: policy's own
// messages (a TTL, an idle time, a grace), which may import nothing of
// nsman but policy's own packages, as well as the commands and serve's
// pages. internal/duration, which imports nothing of nsman, prints its flag
// values the same way on its own; cmd's tests hold the two to each other.
package durtext
