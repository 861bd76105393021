// Package execute carries out what a sweep, or a command, decided. It
// holds the workload changes of SCALE_DOWN and nsman restore (a workload
// changed conditional on the version read, read again on a conflict) and
// the writes of nsman hold and nsman touch; every request goes through the
// Writer of package write. The executor of a sweep (claims, the action
// cap, records, Events) is still package sweep's.
package execute
