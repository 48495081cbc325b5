// Package facts is the classifier's lowest layer: what a shell command or a piece of interpreter
// code says it does, read statically. It parses the command (repairing what it can), reaches every
// simple command through pipelines, substitutions, nested shells, wrappers, functions, here-documents
// and file descriptors, folds what can be computed (printf, base64 -d, rev), and records for each
// command its program, arguments, input and upstream commands, and for the whole text the files it
// writes, reads and fetches, the code it hands interpreters and what that code does (CodeActs). It
// also holds the table of what known programs can do through which options (capabilities.txt), as
// data.
//
// It judges nothing: whether a path is a secret or an action harmful is decided above it, by
// package effects (what the facts amount to) and package classifier (the rules). It never reads
// the files or runs the programs it describes, and imports neither of those packages.
package facts
