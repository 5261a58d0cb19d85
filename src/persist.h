/*
 * persist.h - the journal in the running server: replay at start, the
 * write (and fsync) at the end of each loop turn, the segments that
 * snapshots make redundant, journal_max (a bound on the live segments'
 * bytes: persist.c, check_size), faults, and emptying a filter durably
 * (INTERFACE.md, "Journal"; seend(8), JOURNAL).
 */
#ifndef SEEND_PERSIST_H
#define SEEND_PERSIST_H

#include <stddef.h>
#include <stdint.h>

struct core;
struct filter;
struct buf;

/*
 * After the snapshots are loaded, before listening: replays the journal
 * in data_dir into core->reg and opens it for appending (journal != off,
 * or segments left by an earlier run). Returns 0, or -1 after logging why
 * (damage: the file, the offset and the way out; nothing is changed).
 */
int	persist_open(struct core *);
/* Once the saver runs: starts the everysec thread and tells the saver. */
void	persist_start(struct core *);
/*
 * The end of a loop turn, before any reply of the turn leaves: writes
 * (always: and fsyncs) the turn's records - one write and one fsync for
 * every client of the turn (group commit). Returns what the server must
 * do with the turn's replies: 0 let them go, 1 (always, the write or
 * fsync failed) hold those of connections that got a 0 this turn until
 * persist_tick says the fault is over.
 */
int	persist_turn_end(struct core *);
/*
 * Once a second: faults and recovery, dropping covered segments,
 * rotation and journal_max. Returns 1 when a fault has ended (a snapshot
 * holds every key acknowledged during it): the held replies may go.
 */
int	persist_tick(struct core *);
/* A reload's new journal mode; returns 0, or -1 with a message. */
int	persist_reload(struct core *, char *err, size_t errlen);
/* After the final snapshots: writes, syncs, drops what they cover. */
void	persist_close(struct core *);
/* A start that failed after persist_open: frees, touches no file. */
void	persist_abort(struct core *);

/*
 * Empties filter f durably and keeps its config: DEL of a config-file
 * filter, RESET. In memory f loses every key and slice and takes a new
 * hash seed (filter_reset); on disk:
 *   - with a journal (everysec, always; or off while segments of an
 *     earlier mode remain): a reset record ('E', journal.h) goes into the
 *     journal in order with the keys around it and is written (always:
 *     and fsynced) at the end of this loop turn, before any reply of the
 *     turn leaves - so the caller must mark its connection journaled
 *     (c->journaled = 1), as for a key answered new, so that a failed
 *     write holds the reply with always. Replay empties the filter where
 *     the record stands: keys journalled before it are forgotten, keys
 *     after it kept, a snapshot older than it (the old seed) emptied and
 *     one taken after it left alone. The snapshot file stays until the
 *     next snapshot (the filter is dirty) replaces it.
 *   - journal = off and no segment: the snapshot file is removed and the
 *     directory fsynced before this returns (a runtime filter, which is
 *     its file, gets a snapshot of the empty filter queued instead, and
 *     is durably empty once that is written). If a snapshot captured
 *     before the reset is being written at that moment, a kill -9 before
 *     the follow-up snapshot lands can bring its keys back: journal = off
 *     promises nothing across a crash.
 * Returns 0, or -1 with a reason in err and nothing changed: journal =
 * always while the journal is in fault ("journal <reason>", the words a
 * refused SEEN gets), or the snapshot file cannot be removed.
 */
int	persist_filter_reset(struct core *, struct filter *, char *err,
	    size_t errlen);

/* The same with the new seed given (a replica applies its primary's). */
int	persist_filter_reset_to(struct core *, struct filter *, uint64_t seed,
	    char *err, size_t errlen);
/* A key's record (JOURNAL_OP_*) into the replication stream
 * (core->stream, not NULL): command.c's new keys. */
void	persist_stream_key(struct core *, struct filter *, int op, uint64_t h);

/* A runtime filter's EXPIRE deadline (Unix ms; 0: PERSIST) into the
 * replication stream (deadlines are kept in their own file, not the
 * journal). */
void	persist_stream_deadline(struct core *, struct filter *, int64_t at_ms);

/* A CLUSTER SLOTMERGE ... SAVE's image of len bytes (copied) for the
 * replication stream, framed at the turn's end after its records
 * (primary.h): replicas take the moved slots as this node did. Nothing
 * without a stream (no replica ever came); out of memory, every replica
 * resyncs fully instead. */
void	persist_stream_slots(struct core *, const unsigned char *img,
	    size_t len);

/* Makes room for n appends before a batch sets its keys (only while
 * core->journal is not NULL). Returns 0 if the keys may be set (and
 * acknowledged), -1 if they must be refused. */
int	persist_make_room(struct core *, size_t n);
/* journal_append into core->journal failed after a key was set
 * (everysec): write and retry, else count it as lost to the journal. */
void	persist_append_failed(struct core *, struct filter *, uint64_t h);
/*
 * A runtime filter made by a command, or dropped (DEL, UNLINK, a
 * deadline): a journal record in order with the keys ('r', 'x'), so that
 * replay makes it again before its keys (it may have no snapshot yet) and
 * does not bring back one that was dropped. Written at the turn's end,
 * before the reply, like a key's.
 */
void	persist_filter_created(struct core *, struct filter *);
void	persist_filter_dropped(struct core *, struct filter *);
/*
 * A runtime filter made whole from an image (a dump loaded, a MERGE into a
 * new name), whose first snapshot is queued: an 'r' record marked as an
 * image's, so that replay keeps the snapshot it finds against an earlier
 * 'x' of the same name and seed (the same filter deleted and loaded
 * again), and makes no empty filter when the snapshot never came (the
 * client had no reply). Not streamed: replicas take it by a full sync.
 */
void	persist_filter_restored(struct core *, struct filter *);
/* A cuckoo filter's forget or extra copy (JOURNAL_OP_FORGET, _COPY)
 * into the journal (after persist_make_room), as journal_key does for a
 * new key: a failed append is retried, else counted lost. */
void	persist_key_op(struct core *, struct filter *, int op, uint64_t h);
/* Whether a journal is open in data_dir: always when it is on (it cannot
 * start or be turned on otherwise), and when off with segments snapshots
 * do not cover yet (then it reopens there if turned on). */
int	persist_has_journal(const struct core *);
/* Why the journal is in fault ("" if it is not). */
const char *persist_reason(const struct core *);
/* "ok", "off" or "error <reason>", for INFO and metrics. */
const char *persist_status(const struct core *);
/* INFO's journal fields: journal_mode, journal_status, journal_bytes,
 * journal_segments, journal_sync_age_seconds, journal_lost,
 * journal_bytes_peak (the most bytes the live segments have held since
 * the start: at most journal_max unless the log says otherwise),
 * journal_max_waits (loop turns that waited for snapshots to stay within
 * journal_max), filters_retired. */
void	persist_info(const struct core *, struct buf *);
/* For metrics: bytes, segments, seconds since the last sync, 1 if ok. */
void	persist_figures(const struct core *, uint64_t *bytes,
	    uint64_t *segments, double *age, int *ok);

#endif
