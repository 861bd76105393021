// Package report is what a sweep says it did: one Entry per manager (and
// per rule and namespace), each in one of the States, and a Summary. Its
// JSON form is a stable schema (ReportVersion); the text report, the
// metrics and the manager's status are all written from it.
package report
