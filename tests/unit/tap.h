/*
 * tap.h - the Test Anything Protocol, just enough for unit tests.
 *
 *   ok(cond, "what it checks", ...)   one test point
 *   done_testing()                    prints the plan, returns the exit status
 *
 * automake's tap-driver.sh counts every point, so "make check" reports test
 * cases, not test programs.
 */
#ifndef SEEND_TAP_H
#define SEEND_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline int
tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...)	tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define diag(...)	(printf("# "), printf(__VA_ARGS__), printf("\n"))

static inline int
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
