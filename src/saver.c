/*
 * saver.c - the snapshot worker thread; see saver.h.
 *
 * Why a snapshot written beside the live array is correct: the loop thread
 * submits a job only after the keys it acknowledged have their bits stored,
 * and the queue's mutex orders those stores before the worker's reads. Bits
 * never go back to 0, so every word the worker copies holds at least the
 * bits it had at submission; the checksum is taken over the copied bytes, so
 * the file is consistent even if later keys appear in some words.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "filter.h"
#include "journal.h"
#include "saver.h"
#include "snapshot.h"

struct save_job {
	struct filter		*filter;
	char			*dir;
	/* the filter as it was at submission: its slices (each referenced,
	 * so that one a window drops stays mapped) with their counts */
	struct snapshot_info	 info;
	struct snapshot_slice	*slices;
	struct slice		**owners;
	uint64_t		 mutations;
	unsigned		 gen;		/* f->dir_gen at submission */
	uint64_t		 jseq;		/* the journal's segment then */
	/* its cuckoo tables' copies are still being filled on the loop
	 * (saver_work): the worker passes it by until they are whole */
	int			 copying;
	/* a full sync's image (saver_submit_image), not a snapshot */
	saver_image_fn		 image_fn;
	void			*image_arg;
	int			 image_fd;
	uint64_t		 image_size;
	struct save_wait	**waits;	/* SAVEs it answers */
	size_t			 nwaits;
	int			 ok;
	char			 err[256];
	double			 secs;
	struct save_job		*next;
};

struct saver {
	pthread_t		 thread;
	pthread_mutex_t		 mtx;
	pthread_cond_t		 cond;		/* work queued, or stop */
	pthread_cond_t		 idle;		/* the worker finished a job */
	struct save_job		*queue, **queue_tail;
	struct save_job		*done, **done_tail;
	int			 running;	/* a job is being written */
	int			 stop;
	int			 pending;	/* submitted, not yet completed */
	int			 pipe[2];	/* worker -> loop: "jobs are done" */
	saver_done_fn		 done_fn;	/* a SAVE's last job is done */
	void			*done_arg;
	struct journal		*journal;	/* or NULL */
};

static double
now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first queued job whose copies are whole, out of the queue; NULL
 * if none. Under the mutex. */
static struct save_job *
take_ready(struct saver *sv)
{
	struct save_job **pp, *job;

	for (pp = &sv->queue; (job = *pp) != NULL; pp = &job->next)
		if (!job->copying) {
			if ((*pp = job->next) == NULL)
				sv->queue_tail = pp;
			return job;
		}
	return NULL;
}

/* An image: an unnamed file in the job's dir (gone when closed), left
 * open for the loop; no fsync, nothing renamed. On the worker thread. */
static void
write_image(struct save_job *job)
{
	off_t end;

	job->ok = 0;
	job->image_fd = fileio_tmpfile(job->dir);
	if (job->image_fd == -1) {
		snprintf(job->err, sizeof(job->err), "open a file in %s: %s",
		    job->dir, strerror(errno));
		return;
	}
	if (snapshot_write_slices_fd(job->image_fd, job->filter->name,
	    &job->info, job->slices, job->err, sizeof(job->err)) == -1 ||
	    (end = lseek(job->image_fd, 0, SEEK_CUR)) == -1) {
		if (job->err[0] == '\0')
			snprintf(job->err, sizeof(job->err), "%s",
			    strerror(errno));
		close(job->image_fd);
		job->image_fd = -1;
		return;
	}
	job->image_size = (uint64_t)end;
	job->ok = 1;
}

static void *
worker(void *arg)
{
	struct saver	*sv = arg;
	struct save_job	*job;
	double		 t0;
	char		 c = 1;

	pthread_mutex_lock(&sv->mtx);
	for (;;) {
		while ((job = take_ready(sv)) == NULL && !sv->stop)
			pthread_cond_wait(&sv->cond, &sv->mtx);
		if (job == NULL)
			break;
		sv->running = 1;
		pthread_mutex_unlock(&sv->mtx);

		t0 = now_secs();
		if (job->image_fn != NULL)
			write_image(job);
		else
			job->ok = snapshot_write_slices(job->dir,
			    job->filter->name, &job->info, job->slices,
			    job->err, sizeof(job->err)) == 0;
		job->secs = now_secs() - t0;

		pthread_mutex_lock(&sv->mtx);
		job->next = NULL;
		*sv->done_tail = job;
		sv->done_tail = &job->next;
		sv->running = 0;
		pthread_cond_broadcast(&sv->idle);
		/* a full pipe already says "look": nothing is lost */
		(void)!write(sv->pipe[1], &c, 1);
	}
	pthread_mutex_unlock(&sv->mtx);
	return NULL;
}

/* The slices' references go back on the loop thread, where they were
 * taken: only the loop changes reference counts. */
static void
release_slices(struct save_job *job)
{
	for (uint32_t i = 0; i < job->info.nslices; i++)
		slice_unref(job->owners[i]);
	free(job->owners);
	free(job->slices);
}

static void
complete(struct saver *sv, struct save_job *job)
{
	struct filter		*f = job->filter;

	if (job->image_fn != NULL) {
		job->image_fn(job->image_arg, f, job->ok ? job->image_fd : -1,
		    job->image_size, job->err);
		release_slices(job);
		filter_unref(f);
		free(job->dir);
		free(job);
		return;
	}

	f->saving--;
	f->last_save_secs = job->secs;
	if (job->ok && f->deleted) {
		char path[4096];

		/* DEL removed the filter while this job was writing its file:
		 * the file goes too, or the filter would come back at start */
		if (snapshot_path(path, sizeof(path), job->dir, f->name) == 0)
			(void)unlink(path);
	}
	if (job->ok) {
		/* keys added during the write may or may not be in the file,
		 * so only what was there at submission counts as saved */
		if (job->mutations > f->saved)
			f->saved = job->mutations;
		/* a file in a data_dir that has since changed does not count */
		if (job->gen == f->dir_gen) {
			f->saved_gen = job->gen;
			/* it holds every key journalled before its segment */
			if (job->jseq > f->journal_covered)
				f->journal_covered = job->jseq;
		}
		f->last_save = time(NULL);
		f->last_save_ok = 1;
		f->last_save_error[0] = '\0';
		f->saves_ok++;
		log_debug("filter %s: snapshot written in %.3f s", f->name,
		    job->secs);
	} else {
		f->last_save_ok = 0;
		f->saves_failed++;
		snprintf(f->last_save_error, sizeof(f->last_save_error), "%s",
		    job->err);
		log_error("filter %s: snapshot failed, the previous one is "
		    "kept: %s", f->name, job->err);
	}
	for (size_t i = 0; i < job->nwaits; i++) {
		struct save_wait *w = job->waits[i];

		if (!job->ok && !w->failed) {
			w->failed = 1;
			snprintf(w->err, sizeof(w->err), "snapshot of %s "
			    "failed: %s", f->name, job->err);
		}
		if (--w->pending == 0) {
			/* the owner routes it to the waiting client */
			sv->done_fn(sv->done_arg, w);
			free(w);
		}
	}
	free(job->waits);
	release_slices(job);
	filter_unref(f);
	free(job->dir);
	free(job);
}

static void
process_done(struct saver *sv)
{
	struct save_job *list, *next;

	pthread_mutex_lock(&sv->mtx);
	list = sv->done;
	sv->done = NULL;
	sv->done_tail = &sv->done;
	pthread_mutex_unlock(&sv->mtx);
	for (; list != NULL; list = next) {
		next = list->next;
		sv->pending--;
		complete(sv, list);
	}
}

int
saver_fd(const struct saver *sv)
{
	return sv->pipe[0];
}

void
saver_complete(struct saver *sv)
{
	char buf[256];

	while (read(sv->pipe[0], buf, sizeof(buf)) > 0)
		;
	process_done(sv);
}

struct saver *
saver_start(saver_done_fn done_fn, void *done_arg)
{
	struct saver *sv;

	if ((sv = calloc(1, sizeof(*sv))) == NULL)
		return NULL;
	sv->done_fn = done_fn;
	sv->done_arg = done_arg;
	sv->queue_tail = &sv->queue;
	sv->done_tail = &sv->done;
	pthread_mutex_init(&sv->mtx, NULL);
	pthread_cond_init(&sv->cond, NULL);
	pthread_cond_init(&sv->idle, NULL);
	sv->pipe[0] = sv->pipe[1] = -1;
	if (pipe2(sv->pipe, O_NONBLOCK | O_CLOEXEC) == -1)
		goto fail;
	if ((errno = pthread_create(&sv->thread, NULL, worker, sv)) != 0)
		goto fail;
	return sv;
fail:
	log_error("cannot start the snapshot thread: %s", strerror(errno));
	if (sv->pipe[0] != -1) {
		close(sv->pipe[0]);
		close(sv->pipe[1]);
	}
	free(sv);
	return NULL;
}

/*
 * What the job writes, taken now: the counts are those of keys whose bits
 * are already stored (see the top of this file), and each slice is
 * referenced so that the worker may read it whatever the loop does next.
 */
static int
capture(struct save_job *job, struct filter *f, struct journal *j)
{
	size_t n = filter_nall(f);

	job->slices = calloc(n ? n : 1, sizeof(*job->slices));
	job->owners = calloc(n ? n : 1, sizeof(*job->owners));
	if (job->slices == NULL || job->owners == NULL) {
		free(job->slices);
		free(job->owners);
		return -1;
	}
	memset(&job->info, 0, sizeof(job->info));
	job->info.nslices = (uint32_t)n;
	job->info.seed = f->seed;
	job->info.capacity = f->capacity;
	job->info.error_rate = f->error_rate;
	job->info.growth = f->growth;
	job->info.expire_ms = (uint64_t)f->expire_ms;
	job->info.cuckoo = filter_is_cuckoo(f);
	job->info.slot_major = f->slot_major;
	job->copying = 0;
	job->info.max_kicks = f->max_kicks;
	job->info.forgotten = f->forgotten;
	/* a cuckoo filter's replay starts after this point */
	if (j != NULL)
		job->info.joff = journal_position(j, &job->info.jseq);
	switch (filter_capture(f, job->slices, job->owners)) {
	case -1:
		free(job->slices);
		free(job->owners);
		return -1;
	case 1:
		job->copying = 1;
		break;
	}
	job->mutations = filter_mutations(f);
	return 0;
}

/* Adds w (may be NULL) to the SAVEs job answers; -1 if out of memory. */
static int
add_wait(struct save_job *job, struct save_wait *w)
{
	struct save_wait **grown;

	if (w == NULL)
		return 0;
	grown = realloc(job->waits, (job->nwaits + 1) * sizeof(*grown));
	if (grown == NULL)
		return -1;
	job->waits = grown;
	job->waits[job->nwaits++] = w;
	w->pending++;
	return 0;
}

/*
 * A job for f still waiting in the queue takes this submission too: it is
 * captured again now, so it holds everything the new one would, and
 * answers its SAVE. So a burst of SAVEs (or rounds) costs one write per
 * filter, and a shutdown never waits behind a queue of them. The worker
 * takes jobs under the mutex, so a queued one is not being read.
 */
static int
coalesce(struct saver *sv, struct filter *f, const char *dir,
    struct save_wait *w)
{
	struct save_job	*job;
	int		 r = 0;

	pthread_mutex_lock(&sv->mtx);
	for (job = sv->queue; job != NULL; job = job->next)
		if (job->filter == f && job->image_fn == NULL &&
		    strcmp(job->dir, dir) == 0)
			break;
	if (job != NULL) {
		struct save_job fresh;

		/* its copies are whole before the new ones start: a table is
		 * copied for one capture at a time */
		if (job->copying) {
			filter_capture_finish(job->owners, job->info.nslices);
			job->copying = 0;
		}
		fresh = *job;
		if (capture(&fresh, f, sv->journal) == -1)
			r = -1;
		else if (add_wait(job, w) == -1) {
			release_slices(&fresh);
			r = -1;
		} else {
			release_slices(job);
			job->info = fresh.info;
			job->slices = fresh.slices;
			job->owners = fresh.owners;
			job->copying = fresh.copying;
			job->mutations = fresh.mutations;
			job->gen = f->dir_gen;
			job->jseq = sv->journal ? journal_seq(sv->journal) : 0;
		}
	}
	pthread_mutex_unlock(&sv->mtx);
	return job == NULL ? 0 : r == 0 ? 1 : -1;
}

int
saver_submit(struct saver *sv, struct filter *f, const char *dir,
    struct save_wait *w)
{
	struct save_job *job;
	int		 r;

	if ((r = coalesce(sv, f, dir, w)) != 0)
		return r == 1 ? 0 : -1;
	if ((job = calloc(1, sizeof(*job))) == NULL ||
	    (job->dir = strdup(dir)) == NULL ||
	    capture(job, f, sv->journal) == -1) {
		if (job != NULL)
			free(job->dir);
		free(job);
		return -1;
	}
	if (add_wait(job, w) == -1) {
		release_slices(job);
		free(job->dir);
		free(job);
		return -1;
	}
	filter_ref(f);
	f->saving++;
	job->filter = f;
	job->gen = f->dir_gen;
	job->jseq = sv->journal ? journal_seq(sv->journal) : 0;
	sv->pending++;
	pthread_mutex_lock(&sv->mtx);
	*sv->queue_tail = job;
	sv->queue_tail = &job->next;
	pthread_cond_signal(&sv->cond);
	pthread_mutex_unlock(&sv->mtx);
	return 0;
}

int
saver_submit_image(struct saver *sv, struct filter *f, const char *dir,
    saver_image_fn fn, void *arg)
{
	struct save_job *job;

	if ((job = calloc(1, sizeof(*job))) == NULL ||
	    (job->dir = strdup(dir)) == NULL ||
	    capture(job, f, sv->journal) == -1) {
		if (job != NULL)
			free(job->dir);
		free(job);
		return -1;
	}
	filter_ref(f);
	job->filter = f;
	job->image_fn = fn;
	job->image_arg = arg;
	job->image_fd = -1;
	sv->pending++;
	pthread_mutex_lock(&sv->mtx);
	*sv->queue_tail = job;
	sv->queue_tail = &job->next;
	pthread_cond_signal(&sv->cond);
	pthread_mutex_unlock(&sv->mtx);
	return 0;
}

void
saver_set_journal(struct saver *sv, struct journal *j)
{
	sv->journal = j;
}

void
saver_wait_done(struct saver *sv, struct save_wait *w)
{
	if (--w->pending > 0)
		return;
	sv->done_fn(sv->done_arg, w);
	free(w);
}

int
saver_busy(const struct saver *sv)
{
	return sv->pending;
}

int
saver_work(struct saver *sv, size_t max_bytes)
{
	struct save_job	*job;
	int		 more = 0;

	pthread_mutex_lock(&sv->mtx);
	for (job = sv->queue; job != NULL; job = job->next) {
		if (!job->copying)
			continue;
		if (filter_capture_step(job->owners, job->info.nslices,
		    max_bytes)) {
			job->copying = 0;
			pthread_cond_signal(&sv->cond);
		} else
			more = 1;
	}
	pthread_mutex_unlock(&sv->mtx);
	return more;
}

void
saver_drain(struct saver *sv)
{
	(void)saver_work(sv, SIZE_MAX);
	pthread_mutex_lock(&sv->mtx);
	while (sv->queue != NULL || sv->running)
		pthread_cond_wait(&sv->idle, &sv->mtx);
	pthread_mutex_unlock(&sv->mtx);
	process_done(sv);
}

void
saver_stop(struct saver *sv)
{
	if (sv == NULL)
		return;
	saver_drain(sv);
	pthread_mutex_lock(&sv->mtx);
	sv->stop = 1;
	pthread_cond_signal(&sv->cond);
	pthread_mutex_unlock(&sv->mtx);
	pthread_join(sv->thread, NULL);
	close(sv->pipe[0]);
	close(sv->pipe[1]);
	pthread_mutex_destroy(&sv->mtx);
	pthread_cond_destroy(&sv->cond);
	pthread_cond_destroy(&sv->idle);
	free(sv);
}
