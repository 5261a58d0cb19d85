/*
 * primary.h - a primary's side of replication: the links of its replicas
 * (each a socket a PSYNC handed over), their full syncs, the stream of
 * each loop turn framed into the backlog and sent, their acknowledgements
 * and the WAITs that count them.
 *
 * The stream. Each loop turn's records (core->stream: the journal's
 * encoding, journal.h, with its name records repeated per turn) become one
 * frame: 8 bytes ("SR", two zero bytes, the body's length as 32 bits
 * little-endian) then the records. A turn with nothing sends nothing, but
 * an empty frame goes at least once a second (the replica's sign of life).
 * Frames go into the backlog at once and to a replica in gathered writes
 * (FLUSH_BYTES, FLUSH_USEC in primary.c; at once while a WAIT waits).
 * Offsets count the frames' bytes since the replication id began.
 *
 * Moved slots (issue 33). A CLUSTER SLOTMERGE ... SAVE STREAM's image goes
 * into the stream as it came (cluster_move.h), where it was taken among
 * the turn's records (a frame of those before it, then the image, then a
 * frame of the rest): "SI", two zero bytes, its length, the image. A
 * replica takes it as the primary did and snapshots the filters it
 * changed; until they are written its offset is not durable and it
 * acknowledges no further than the image's start (replica.h). A replica
 * says it can with "REPLCONF capa seend-slots" in its handshake; an
 * older one is closed instead and syncs fully, since its PSYNC from
 * before an image is refused.
 *
 * A full sync, after "+FULLRESYNC <replid> <offset>": "$IMAGE <n>\r\n", then
 * per filter "<name> <size> <deadline>\r\n" (EXPIRE's, Unix ms; 0:
 * none) and its snapshot file's size bytes; then
 * the frames from offset. A partial one: "+CONTINUE <replid>\r\n", then
 * the frames from the offset the replica asked for.
 *
 * A replica sends "REPLCONF ACK <offset>\r\n" when it has applied and
 * journaled the stream up to offset.
 */
#ifndef SEEND_PRIMARY_H
#define SEEND_PRIMARY_H

#include <stddef.h>
#include <stdint.h>

struct core;
struct event_base;
struct primary;
struct save_wait;

#define PRIMARY_FRAME_HEAD	8

/* done answers a WAIT's token (as the saver's done does a SAVE's). */
struct primary	*primary_new(struct core *, struct event_base *,
		    void (*done)(void *, struct save_wait *), void *arg);
void		 primary_free(struct primary *);
/*
 * A connection asked PSYNC replid offset: fd (the caller's copy is closed
 * by the caller) becomes a replica's link, over ssl if it came to
 * tls_listen (the session is ours from now on, bound to fd). ip and port
 * (REPLCONF listening-port) name it in INFO and ROLE, node_id (REPLCONF
 * node-id, "" if none) in CLUSTER SLOTS, SHARDS and NODES; slots: it
 * takes images of moved slots in the stream (REPLCONF capa seend-slots).
 */
struct ssl_st;
void		 primary_attach(struct primary *, int fd, struct ssl_st *ssl,
		    const char *ip, unsigned port, const char *node_id,
		    int slots, const char *replid, uint64_t offset);
/* After the journal's write: the turn's records framed, kept and sent;
 * new full syncs captured here; WAITs counted. */
void		 primary_turn_end(struct primary *);
/* Once a second: the heartbeat frame, lag. */
void		 primary_tick(struct primary *);
/* From now on each turn's records are kept for replicas (the first
 * PSYNC, a promotion: its replicas-to-be continue from its offsets). */
void		 primary_keep_stream(struct primary *);
/* Every link closed (the server became a replica). */
void		 primary_drop_all(struct primary *, const char *why);
/* Every link made to resync fully (MERGE, LOADCHUNK, a lost record). */
void		 primary_resync_all(struct primary *, const char *why);

#endif
