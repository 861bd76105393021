// Package due tells what nsman will do soon, for nsman due: from a dry
// run's report now, the subjects due within a time, and, from dry runs at
// their due times (as nsman sweep --dry-run --at evaluates), when each will
// act and what puts it off: a hold, a window, a freeze, a webhook's
// backoff. It runs no sweep itself: the command hands it one (Run), so
// that it reads what a dry run reads and writes nothing.
package due
