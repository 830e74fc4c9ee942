// Package tuning keeps NIC interrupts, the server and the client off each
// other's cores: a profile (YAML/JSON) resolved against the host, a plan
// that changes nothing, Apply after a snapshot, Verify, and Revert to the
// snapshot; a Tuner holds a profile on a host for a run (the local
// provider's and every agent's). All access goes through a Host rooted at
// a path, so fixture trees stand in for a real host. docs/tuning.md has the fields and rules.
package tuning
