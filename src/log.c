/*
 * log.c - levelled logging to stderr; see log.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static enum log_level	 log_threshold = LOG_LEVEL_INFO;
static int		 log_to_journal;
static const char	*log_progname = "seend";

static const char *const level_names[] = { "error", "warn", "info", "debug" };
/* syslog priorities for the journal's "<N>" prefix */
static const int level_prio[] = { 3, 4, 6, 7 };

/*
 * JOURNAL_STREAM is "device:inode" of the stream systemd connected to our
 * stderr; it only counts if stderr still is that stream (a shell started from
 * a unit inherits the variable but may have redirected stderr).
 */
static int
stderr_is_journal(void)
{
	const char	*js = getenv("JOURNAL_STREAM");
	unsigned long	 dev, ino;
	struct stat	 st;

	if (js == NULL || sscanf(js, "%lu:%lu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void
log_init(const char *progname)
{
	if (progname != NULL)
		log_progname = progname;
	log_to_journal = stderr_is_journal();
}

void
log_set_level(enum log_level level)
{
	log_threshold = level;
}

enum log_level
log_get_level(void)
{
	return log_threshold;
}

int
log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcasecmp(name, "warning") == 0) {
		*out = LOG_LEVEL_WARN;
		return 0;
	}
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	return level_names[level];
}

/* One fputs of a whole line, so lines from the snapshot thread never mix. */
static void
log_vwrite(enum log_level level, const char *fmt, va_list ap)
{
	char		 line[2048];
	int		 n = 0;
	struct timespec	 ts;
	struct tm	 tm;

	if (level > log_threshold)
		return;
	if (log_to_journal) {
		n = snprintf(line, sizeof(line), "<%d>", level_prio[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line),
		    "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld] %s: ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_progname,
		    (long)getpid(), level_names[level]);
	}
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	line[n] = '\0';
	fputs(line, stderr);
	fflush(stderr);
}

#define LOG_FN(fn, level)				\
void							\
fn(const char *fmt, ...)				\
{							\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_vwrite(level, fmt, ap);			\
	va_end(ap);					\
}
LOG_FN(log_error, LOG_LEVEL_ERROR)
LOG_FN(log_warn, LOG_LEVEL_WARN)
LOG_FN(log_info, LOG_LEVEL_INFO)
LOG_FN(log_debug, LOG_LEVEL_DEBUG)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}
