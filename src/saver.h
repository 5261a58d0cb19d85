/*
 * saver.h - snapshots on a worker thread, so the event loop never waits on
 * the disk.
 *
 * The event loop submits jobs (a filter, the data_dir, the bit count at that
 * moment); one worker thread writes them in order with snapshot_write; the
 * loop learns of each finished job through a pipe (the server watches
 * saver_fd and calls saver_complete: the saver knows no event loop) and
 * updates the filter's status and any SAVE waiting for it. Only the loop thread touches filters'
 * bookkeeping and reference counts; the worker only reads the bit array.
 */
#ifndef SEEND_SAVER_H
#define SEEND_SAVER_H

#include <stdint.h>

struct filter;
struct saver;

/* A SAVE request waiting for its jobs; owner (the waiting connection) is
 * NULL once it has gone. */
struct save_wait {
	void		*owner;
	int		 pending;
	int		 failed;
	char		 err[600];
	/* WAIT: the reply is count, an integer (primary.c) */
	int		 counted;
	long long	 count;
	/* not a client's: then is told instead (replica.c) */
	void		(*then)(void *arg, struct save_wait *);
	void		*then_arg;
};

/* Called on the loop thread when the last job of a SAVE's wait is done
 * (w->owner NULL: the client has gone); w is freed after it returns. */
typedef void	(*saver_done_fn)(void *arg, struct save_wait *w);

struct saver	*saver_start(saver_done_fn, void *arg);
/* The descriptor that becomes readable when jobs are done; then the loop
 * calls saver_complete, which runs their completions. */
int		 saver_fd(const struct saver *);
void		 saver_complete(struct saver *);
/* Queues a snapshot of f (a reference is held until it is done). */
int		 saver_submit(struct saver *, struct filter *, const char *dir,
		    struct save_wait *);
/*
 * A full sync's image of f (primary.c): captured now as a snapshot is, so
 * that the images of every filter captured in one loop turn are one
 * consistent state, and written by the worker into an unnamed file in dir
 * (O_TMPFILE: it goes when closed). It is no snapshot: the filter's
 * bookkeeping is untouched. fn runs on the loop thread with the open
 * descriptor (the callee owns it) and its size, or -1 and why.
 */
typedef void	(*saver_image_fn)(void *arg, struct filter *f, int fd,
		    uint64_t size, const char *err);
int		 saver_submit_image(struct saver *, struct filter *,
		    const char *dir, saver_image_fn fn, void *arg);
struct journal;
/* The journal whose segment a job records at submission (NULL: none). */
void		 saver_set_journal(struct saver *, struct journal *);
/*
 * Releases a hold the caller put on w (pending counted one for it, as
 * SAVE does while it queues): when no job holds w any more, its owner is
 * told now (the done callback) and w freed. MERGE holds its client's
 * wait this way until the merge is done and its snapshot queued.
 */
void		 saver_wait_done(struct saver *, struct save_wait *w);
/* Jobs queued or running. */
int		 saver_busy(const struct saver *);
/* Blocks until every queued job is written, then processes completions. */
/*
 * Fills, by at least max_bytes each, the copies of cuckoo tables that
 * queued jobs wait for (filter_capture), a step per loop turn so that a
 * big table never stops the loop; a job goes to the worker once its
 * copies are whole. Returns 1 while some remain.
 */
int		 saver_work(struct saver *, size_t max_bytes);
void		 saver_drain(struct saver *);
void		 saver_stop(struct saver *);

#endif
