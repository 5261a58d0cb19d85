/*
 * progress.h - a progress bar for long seen-cli runs (import; later dump,
 * restore and copy).
 *
 * On a terminal (stderr is a tty) the bar is one line redrawn in place with
 * "\r": done / total and %, the rate and the time left. Anywhere else it
 * draws nothing, so logs and pipes get only the caller's summary line at the
 * end. The module knows nothing of what is counted: members, bytes, keys.
 */
#ifndef SEEND_PROGRESS_H
#define SEEND_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE		*fp;		/* where the bar goes: stderr */
	int		 tty;		/* draw at all */
	int		 drawn;		/* a bar is on the line now */
	uint64_t	 total;		/* 0 when unknown */
	uint64_t	 done;
	double		 start;		/* monotonic seconds */
	double		 last;		/* when the bar was last drawn */
	size_t		 width;		/* characters of the last bar drawn */
};

/* Starts the clock; total may be 0 (unknown) or an estimate that done
 * later passes (the bar then shows done as the total). */
void	progress_init(struct progress *, uint64_t total);
/* Records done and redraws, at most a few times a second. */
void	progress_update(struct progress *, uint64_t done);
/* Draws the final state and ends the line, if a bar was drawn. */
void	progress_finish(struct progress *);
/* Erases the bar, so that an error message starts on a clean line. */
void	progress_clear(struct progress *);
/* Seconds since progress_init. */
double	progress_elapsed(const struct progress *);
/* A count for people: "999", "312k", "1.25M". */
void	progress_fmt_count(char *, size_t, double);
/* A duration for people: "3.2 s", "2m05s", "1h02m". */
void	progress_fmt_duration(char *, size_t, double seconds);

#endif
