/*
 * peer.h - passing the cluster's map on (issue 33, step 2): a node that
 * takes a newer map sends it to every other node the map names (CLUSTER
 * SETMAP over a connection of its own, as a replica reaches its primary:
 * TLS when tls_replication is on, AUTH as primary_user), and a peer that
 * answers that it holds a newer one is asked for it (CLUSTER GETMAP) and
 * that map is offered to this node in turn. Retried once a second until
 * every named node holds this node's epoch or a newer one, a node that
 * fails waiting 1, 2, 4 ... 30 s between attempts (a warning a minute at
 * most says why), at most 8 connections at a time.
 *
 * These are called only by the daemon (server.c, and cmd_cluster.c's
 * SETMAP): peer_start names the loop the connections join. Nothing happens inside peer_map_changed itself:
 * the work runs from the loop, so it may be called while a request or a
 * peer's reply is being handled.
 */
#ifndef SEEND_PEER_H
#define SEEND_PEER_H

#include <stddef.h>

struct core;
struct event_base;

/* The daemon starts in cluster mode: the connections to peers will join
 * base's loop. 0, or -1 when out of memory. */
int	peer_start(struct core *core, struct event_base *base);

/* This node took a new map (cluster.c): tell the others. */
void	peer_map_changed(struct core *core);
/* Once a second from the daemon's tick: retries, timeouts. */
void	peer_tick(struct core *core);
/* The daemon stops: links closed, memory released. */
void	peer_shutdown(struct core *core);
/* How many nodes of the map are not known to hold this node's map (for
 * INFO's cluster_peers_behind): a count, no I/O. */
size_t	peer_behind(const struct core *core);

#endif
