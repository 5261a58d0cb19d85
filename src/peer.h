/*
 * peer.h - passing the cluster's map on (issue 33, step 2): a node that
 * takes a newer map sends it to every other node the map names (CLUSTER
 * SETMAP over a connection of its own, as a replica reaches its primary:
 * TLS when tls_replication is on, AUTH as primary_user), and a peer that
 * answers that it holds a newer one is asked for it (CLUSTER GETMAP) and
 * that map is offered to this node in turn. Retried once a second until
 * every named node holds this node's epoch or a newer one.
 */
#ifndef SEEND_PEER_H
#define SEEND_PEER_H

struct core;

/* This node took a new map (cluster.c): tell the others. */
void	peer_map_changed(struct core *core);
/* Once a second from the daemon's tick: retries, timeouts. */
void	peer_tick(struct core *core);
/* The daemon stops: links closed, memory released. */
void	peer_shutdown(struct core *core);

#endif
