/*
 * persist.h - the journal in the running server: replay at start, the
 * write (and fsync) at the end of each loop turn, the segments that
 * snapshots make redundant, journal_max, and faults (INTERFACE.md,
 * "Journal"; seend(8), JOURNAL).
 */
#ifndef SEEND_PERSIST_H
#define SEEND_PERSIST_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct filter;
struct buf;

/*
 * After the snapshots are loaded, before listening: replays the journal
 * in data_dir into srv->reg and opens it for appending (journal != off,
 * or segments left by an earlier run). Returns 0, or -1 after logging why
 * (damage: the file, the offset and the way out; nothing is changed).
 */
int	persist_open(struct server *);
/* Once the saver runs: starts the everysec thread and tells the saver. */
void	persist_start(struct server *);
/* The end of a loop turn: writes (always: and fsyncs) the turn's records,
 * then lets the replies of the turn go (conn_release_turn). */
void	persist_turn_end(struct server *);
/* Once a second: faults and recovery, dropping covered segments,
 * rotation and journal_max. */
void	persist_tick(struct server *);
/* A reload's new journal mode; returns 0, or -1 with a message. */
int	persist_reload(struct server *, char *err, size_t errlen);
/* After the final snapshots: writes, syncs, drops what they cover. */
void	persist_close(struct server *);
/* A start that failed after persist_open: frees, touches no file. */
void	persist_abort(struct server *);

/* Makes room for n appends before a batch sets its keys. Returns 0 if the
 * keys may be set (and acknowledged), -1 if they must be refused. */
int	persist_make_room(struct server *, size_t n);
/* journal_append failed after a key was set (everysec): write and retry,
 * else count it as lost to the journal. */
void	persist_append_failed(struct server *, struct filter *, uint64_t h);
/* Whether a journal is open in data_dir: always when it is on (it cannot
 * start or be turned on otherwise), and when off with segments snapshots
 * do not cover yet (then it reopens there if turned on). */
int	persist_has_journal(const struct server *);
/* Why the journal is in fault ("" if it is not). */
const char *persist_reason(const struct server *);
/* "ok", "off" or "error <reason>", for INFO and metrics. */
const char *persist_status(const struct server *);
void	persist_info(const struct server *, struct buf *);
/* For metrics: bytes, segments, seconds since the last sync, 1 if ok. */
void	persist_figures(const struct server *, uint64_t *bytes,
	    uint64_t *segments, double *age, int *ok);

#endif
