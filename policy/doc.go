// Package policy is nsman's decision logic, free of I/O: it parses and
// validates NamespaceManagers, and decides for one manager at a given time
// which policy fires or what it waits for. It imports only the standard
// library and apimachinery types, takes the time as a parameter, and returns
// decisions as data; package sweep does the reading and the writing.
package policy
