// Package effects is the classifier's middle layer: it turns facts into typed effects, each a
// kind with its program and targets (a delete and what it deletes, a send and what it carries, an
// open of a secret or of a persistence location, a reverse shell, a database statement that
// destroys data), whatever program causes them. Effects come from the programs' tables (tools.go),
// from the capability table package facts holds, from the paths any program is handed, from how
// data flows between the commands of one text (flows.go), from SQL wherever it is sent, and from
// the shape of connectors' arguments.
//
// It decides no verdict: the rules of package classifier match the effects' text and say deny, ask
// or allow. The one thing it knows of the policy is which paths hold secrets, handed in as a
// function (Finder), so that there is one list of them. It imports facts and never classifier.
package effects
