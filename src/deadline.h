/*
 * deadline.h - the expiry deadlines of runtime filters (EXPIRE and its
 * family, cmd_keyspace.c), and the file in data_dir that keeps them
 * across restarts.
 *
 * <data_dir>/deadlines, text, one filter a line, version 1:
 *
 *   seend deadlines 1
 *   <filter> <deadline: Unix time in milliseconds, signed decimal>
 *   ...
 *   end <number of filter lines>
 *
 * Lines end in "\n"; the two fields are separated by one space; a name
 * is a runtime filter's (registry_valid_name) and appears at most once.
 * The "end" line proves the file whole. A file that breaks any of this
 * is refused with its line number and never overwritten silently.
 *
 * Writing: <data_dir>/.deadlines.tmp is written, fsynced, renamed over
 * deadlines, and data_dir is fsynced (as snapshots are), so a crash at any
 * instant leaves the old file or the new one whole. With no deadline left
 * the file is removed (and data_dir fsynced): no file means no deadline.
 *
 * A small table: one entry per filter that has a deadline, looked up by
 * a scan (max_filters bounds it), the whole file rewritten on a change.
 * No libevent here.
 */
#ifndef SEEND_DEADLINE_H
#define SEEND_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define DEADLINE_FILE		"deadlines"
/* where deadline_save writes first (fileio_write_small names it) */
#define DEADLINE_TMP		".deadlines.tmp"
#define DEADLINE_HEADER		"seend deadlines 1"
/* A file larger than this is not a deadline file (10,000 filters take
 * about 1 MB). */
#define DEADLINE_FILE_MAX	(64u << 20)

struct deadline {
	char		 name[CONFIG_NAME_MAX + 1];
	size_t		 namelen;
	int64_t		 at_ms;		/* Unix time in milliseconds */
};

struct deadlines {
	struct deadline	*v;
	size_t		 n;
	size_t		 slots;		/* allocated in v[] */
};

/* The entry of name, or NULL. */
struct deadline	*deadline_find(const struct deadlines *, const char *name,
		    size_t len);
/* Sets (adds or changes) name's deadline. Returns 0, or -1 (out of
 * memory, or a name longer than CONFIG_NAME_MAX) with nothing changed. */
int		 deadline_set(struct deadlines *, const char *name, size_t len,
		    int64_t at_ms);
/* Removes name's deadline; returns 1 if it had one, else 0. */
int		 deadline_remove(struct deadlines *, const char *name,
		    size_t len);
/* The earliest deadline, or INT64_MAX if there is none. */
int64_t		 deadline_earliest(const struct deadlines *);
void		 deadline_free(struct deadlines *);

/*
 * The file's text for d into *text (malloc'd, the caller frees it), its
 * length in *len. Returns 0, or -1 out of memory.
 */
int		 deadline_format(const struct deadlines *, char **text,
		    size_t *len);
/*
 * Parses a file's text into d (emptied first). Returns 0, or -1 with
 * "line N: what is wrong" in err and d empty. name is used in messages.
 */
int		 deadline_parse(const char *text, size_t len, const char *name,
		    struct deadlines *, char *err, size_t errlen);
/*
 * Reads <dir>/deadlines into d: 0 (a missing file: d empty), or -1 with a
 * message naming the file and the problem in err (d empty).
 */
int		 deadline_load(const char *dir, struct deadlines *, char *err,
		    size_t errlen);
/*
 * Writes d to <dir>/deadlines durably (see above). Returns 0, or -1 with
 * a message in err; on failure the previous file is untouched and the
 * temporary file removed.
 */
int		 deadline_save(const char *dir, const struct deadlines *,
		    char *err, size_t errlen);

#endif
