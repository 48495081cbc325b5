// Package hostsocket is the channel between host hooks and a system-mode daemon: a unix socket in
// a folder of root's, which any user may connect to. The daemon learns who called from the
// kernel (the socket's peer credentials: SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS), never
// from what the caller says; one connection carries one request and its answer.
//
// It frames requests and answers, listens, and dials with a deadline. It does not judge calls,
// read configuration or know what a session is: the daemon's Handler does.
package hostsocket
