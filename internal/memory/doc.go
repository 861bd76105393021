// Package memory sets how much memory the nsman process lets its heap take:
// the GC target, over a floor below which a sweep does not collect, and Go's
// soft memory limit from the container's. main applies both before
// anything else; nothing else in nsman changes them.
package memory
