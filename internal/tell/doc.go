// Package tell says what a sweep did to the people who watch it: Events on
// managers and rules (on a rule at most three per sweep, whatever the
// number of its namespaces), and the notifications of --notify-url, in JSON
// or as a Slack or Mattermost message whose tenant-written words are
// escaped and whose URL, a credential, no error or log shows.
package tell
