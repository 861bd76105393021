// Package duration is the value of nsman's duration flags: a Go duration
// (90s, 1h30m) that may begin with weeks and days (1w, 2d, 1d12h), since a
// hold or a wake is planned in days. A day is 24h, whatever a time zone's
// clocks do. It is printed back by policy/durtext; cmd binds it to
// its flags.
package duration
