// Package privsep is system mode's privilege separation: root judges, records and counts; a
// worker per user, running as that user, does all of the user's session-folder work.
//
// A worker (`coworkbridge run --worker`, started by Supervisor with the user's uid, group and
// groups, its environment cleared) runs the injector and the collector over the user's sessions
// roots: discovery, the hooks put in place and repaired, spools and offsets, decision files,
// transcripts. What it makes is the user's because the user makes it. For each call it works
// out, as the user, where the call's links lead, and asks root over its socket pair to judge;
// its records go to root, which writes them stamped with the user root started it as (the
// kernel's word, never the worker's). A worker that ends is started again with backoff; one
// that stalls holds up only its own user, since each link is served on its own.
//
// The package never judges a call and never writes the decision log itself: Root, which the
// daemon implements, does. Nor does root, through it, open, create, chown, rename or remove
// anything under a user's home: it looks only at each home's name in its root-owned parent.
package privsep
