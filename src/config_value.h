/*
 * config_value.h - the errors and the values of the config file
 * (config_value.c), for config.c, config_filter.c and config_reader.c
 * (through config_parser.h, which includes it).
 */
#ifndef SEEND_CONFIG_VALUE_H
#define SEEND_CONFIG_VALUE_H

#include <stddef.h>
#include <stdint.h>

struct parser;

#define SHOWN_VALUE_MAX		80	/* of a bad value, in a message */

/* How a number's suffix scales it. */
enum unit {
	UNIT_COUNT,	/* k M G T = 10^3, 10^6, 10^9, 10^12 */
	UNIT_BYTES,	/* k M G T = 2^10, 2^20, 2^30, 2^40 */
	UNIT_SECONDS,	/* s m h d */
};

/* Records "name:line: message" (or "name: message" for line 0). */
void		 perror_at(struct parser *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
/* Puts the recorded messages in line order (at the end of a parse). */
void		 sort_errors(struct parser *);
/* A value as it goes into a message: cut short, control and non-ASCII
 * bytes shown as '?'. */
const char	*shown(const char *s, char *buf, size_t size);
#define SHOW(s)	shown((s), (char[SHOWN_VALUE_MAX]){ 0 }, SHOWN_VALUE_MAX)
/* strdup, or NULL with p->oom set. */
char		*xstrdup(struct parser *, const char *);
/* Replaces *dst by a copy of s (or by NULL). */
void		 set_string(struct parser *, char **dst, const char *s);
/* Appends s to a string list: 0, or -1 with p->oom set. */
int		 push_string(struct parser *, char ***list, size_t *n,
		    const char *s);
int		 is_blank(int c);
/* "off", "none" or "never". */
int		 is_off(const char *v);
/* An integer key in [min, max]; reports and returns -1 if it is not. */
int		 get_number(struct parser *, const char *key, const char *value,
		    enum unit, uint64_t min, uint64_t max, uint64_t *out);

#endif
