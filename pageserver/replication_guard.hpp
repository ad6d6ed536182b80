// replication_guard.hpp: authenticates the replication connections of a
// qs-pageserver site, and keeps the sites of two groups apart.
//
// Berkeley DB 5.3's replication manager authenticates nothing, and has no
// hook for it: it calls connect() and accept() on sockets of its own. So
// qs-pageserver defines both functions (an executable's definitions come
// before the C library's for every library of the process, Berkeley DB's
// included) and, once the guard is armed, puts a handshake in front of
// every replication connection before the replication manager sees it:
//
// * connect(): a blocking TCP connect that succeeds is a replication
//   manager's (its connector threads make them; nothing else in the server
//   does: the server's own probe of its peers is non-blocking). It sends
//   the hello (magic, this site's group identity, the shared secret) and
//   reads the peer's answer within 2 s. A refusal, or no answer, fails the
//   connect with ECONNREFUSED, and the replication manager tries again a
//   second later. A peer that does not accept the connection at all is
//   logged too: once for each change in what a peer says, not every retry.
// * accept() on this site's replication port reads the hello within 1 s
//   (in the replication manager's own thread: a peer that sends nothing
//   holds it up that long), checks the secret and the group and answers.
//   A bad hello closes the connection and fails the accept with
//   ECONNABORTED, which the replication manager ignores; it is logged,
//   at most once a minute for each address and reason.
//
// The group identity is 16 random bytes, in hexadecimal in
// DIR/replication-group. The site that creates the group makes it
// (create_group); a site without one takes the identity of the first site
// whose hello it accepts or who accepts its own (a site joining, or one
// whose file was lost). Two sites of two groups (two databases) refuse each
// other's connections, so that a site named by mistake can neither join
// nor be initialised from a group it does not belong to.
//
// The secret crosses the network as the clients' does, in the clear: a
// site on a non-loopback address needs a trusted network or a tunnel
// against eavesdroppers; the guard keeps out whoever lacks the secret.
//
// Thread-safety: every function, from any thread. Before arm(), connect()
// and accept() only call the C library's.
#pragma once

#include <string>

namespace qs::server {

// From now on, connections to and from replication port `port` of this
// site (`dir`: the database directory, where the group identity lives)
// present `secret`.
void arm_replication_guard(const std::string& dir, unsigned port, const std::string& secret);

// This site creates its group: makes and stores a new identity (when it
// has none).
void create_replication_group();

// Why a peer refused this site (a wrong secret, another group), or "" when
// none has: a site that cannot join its group says so.
std::string replication_refusal();

}  // namespace qs::server
