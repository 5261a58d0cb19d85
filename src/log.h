/*
 * log.h - one line per event on stderr, filtered by level.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) the journal adds its own
 * timestamp and priority, so we print "<N>" priority prefixes instead of a
 * time; anywhere else each line starts with an ISO-8601 UTC timestamp.
 */
#ifndef SEEND_LOG_H
#define SEEND_LOG_H

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

void	log_init(const char *progname);
void	log_set_level(enum log_level);
enum log_level log_get_level(void);
/* Parses "error|warn|info|debug"; returns 0, or -1 if the name is unknown. */
int	log_level_parse(const char *, enum log_level *);
const char *log_level_name(enum log_level);

void	log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Logs at error level and exits 1: only for start-up failures in main.c. */
void	fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
