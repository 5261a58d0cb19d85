/*
 * test_deadline - the runtime filters' deadline table and its file: set,
 * change, remove, the earliest; the text written and read back; every
 * kind of damage refused with its line; the durable write (no temporary
 * file left, the file removed when no deadline is left) and a write that
 * fails leaving the previous file whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deadline.h"
#include "tap.h"

static char dir[] = "/tmp/seend-deadline-XXXXXX";

static int
exists(const char *name)
{
	char		 path[512];
	struct stat	 st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static void
put_file(const char *name, const char *text)
{
	char	 path[512];
	FILE	*fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	fputs(text, fp);
	fclose(fp);
}

/* 1 if parsing text fails with a message containing want. */
static int
refused(const char *text, const char *want)
{
	struct deadlines	 d = { 0 };
	char			 err[512] = "";
	int			 rc;

	rc = deadline_parse(text, strlen(text), "f", &d, err, sizeof(err));
	if (rc == 0 || d.n != 0 || strstr(err, want) == NULL) {
		diag("%s -> rc %d, n %zu, err \"%s\" (want \"%s\")", text, rc,
		    d.n, err, want);
		deadline_free(&d);
		return 0;
	}
	return 1;
}

static void
test_table(void)
{
	struct deadlines	 d = { 0 };
	struct deadline		*e;

	ok(deadline_earliest(&d) == INT64_MAX, "no deadline: earliest is "
	    "INT64_MAX");
	ok(deadline_find(&d, "a", 1) == NULL, "an empty table finds nothing");
	ok(deadline_set(&d, "a", 1, 3000) == 0 &&
	    deadline_set(&d, "bb", 2, 1000) == 0 &&
	    deadline_set(&d, "c", 1, 2000) == 0 && d.n == 3,
	    "three deadlines set");
	ok(deadline_earliest(&d) == 1000, "the earliest is the smallest");
	ok(deadline_set(&d, "bb", 2, 5000) == 0 && d.n == 3 &&
	    (e = deadline_find(&d, "bb", 2)) != NULL && e->at_ms == 5000,
	    "setting a name again changes its deadline, adds no entry");
	ok(deadline_earliest(&d) == 2000, "the earliest follows a change");
	ok(deadline_find(&d, "b", 1) == NULL && deadline_find(&d, "bbb", 3)
	    == NULL, "names match whole, not by prefix");
	ok(deadline_remove(&d, "a", 1) == 1 && d.n == 2 &&
	    deadline_find(&d, "a", 1) == NULL &&
	    deadline_find(&d, "c", 1) != NULL &&
	    deadline_find(&d, "bb", 2) != NULL,
	    "a removal keeps the others");
	ok(deadline_remove(&d, "a", 1) == 0, "removing a missing name: 0");
	{
		char long_name[CONFIG_NAME_MAX + 2];

		memset(long_name, 'x', sizeof(long_name));
		ok(deadline_set(&d, long_name, sizeof(long_name), 1) == -1 &&
		    d.n == 2, "a name longer than a filter's is refused");
	}
	for (int i = 0; i < 1000; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		if (deadline_set(&d, name, strlen(name), 10000 + i) == -1)
			break;
	}
	ok(d.n == 1002 && deadline_find(&d, "f999", 4)->at_ms == 10999,
	    "the table grows to a thousand entries");
	deadline_free(&d);
	ok(d.n == 0 && d.v == NULL, "freed");
}

static void
test_text(void)
{
	struct deadlines	 d = { 0 }, back = { 0 };
	char			*text, err[512];
	size_t			 len;

	deadline_set(&d, "crawl:2024", 10, 1767225600000LL);
	deadline_set(&d, "a.b-c_d", 7, -5);
	deadline_set(&d, "big", 3, INT64_MAX);
	ok(deadline_format(&d, &text, &len) == 0, "formatted");
	ok(len == strlen(text) && strcmp(text, "seend deadlines 1\n"
	    "crawl:2024 1767225600000\na.b-c_d -5\nbig 9223372036854775807\n"
	    "end 3\n") == 0, "the text is the documented format");
	ok(deadline_parse(text, len, "f", &back, err, sizeof(err)) == 0 &&
	    back.n == 3 && deadline_find(&back, "crawl:2024", 10)->at_ms ==
	    1767225600000LL && deadline_find(&back, "a.b-c_d", 7)->at_ms == -5
	    && deadline_find(&back, "big", 3)->at_ms == INT64_MAX,
	    "it reads back the same");
	free(text);
	deadline_free(&d);
	ok(deadline_format(&d, &text, &len) == 0 &&
	    strcmp(text, "seend deadlines 1\nend 0\n") == 0,
	    "an empty table: the header and end 0");
	ok(deadline_parse(text, len, "f", &back, err, sizeof(err)) == 0 &&
	    back.n == 0, "which reads back empty");
	free(text);
	deadline_free(&back);

	ok(refused("", "empty"), "an empty file is refused");
	ok(refused("seend deadlines 2\nend 0\n", "line 1"),
	    "another version is refused");
	ok(refused("SEENDBF\n", "line 1"), "another file is refused");
	ok(refused("seend deadlines 1\na 100\n", "no \"end\""),
	    "a file without its end line is cut short");
	ok(refused("seend deadlines 1\na 100\nend 1", "line 3: no newline"),
	    "a last line without its newline is cut short");
	ok(refused("seend deadlines 1\na 100\nb 200\nend 1\n", "line 4"),
	    "an end line that miscounts is refused");
	ok(refused("seend deadlines 1\nend 0\na 100\n", "line 3: text after"),
	    "lines after the end are refused");
	ok(refused("seend deadlines 1\na 100\na 200\nend 2\n",
	    "line 3: filter a appears twice"), "a name twice is refused");
	ok(refused("seend deadlines 1\n.hidden 100\nend 1\n", "line 2: not a "
	    "filter name"), "a name no filter can have is refused");
	ok(refused("seend deadlines 1\n../x 100\nend 1\n", "line 2: not a "
	    "filter name"), "a path is refused");
	ok(refused("seend deadlines 1\na 1x\nend 1\n", "line 2: the deadline"),
	    "a deadline that is not a number is refused");
	ok(refused("seend deadlines 1\na 99999999999999999999\nend 1\n",
	    "line 2: the deadline"), "a deadline past int64 is refused");
	ok(refused("seend deadlines 1\na +5\nend 1\n", "line 2: the deadline"),
	    "a '+' is refused");
	ok(refused("seend deadlines 1\na  5\nend 1\n", "line 2"),
	    "two spaces are refused");
	ok(refused("seend deadlines 1\na\nend 0\n", "line 2: not"),
	    "a line with one field is refused");
	ok(refused("seend deadlines 1\r\nend 0\r\n", "line 1"),
	    "CRLF line ends are refused");
	ok(refused("seend deadlines 1\na 5\nend -1\n", "line 3"),
	    "a negative count is refused");
}

static void
test_files(void)
{
	struct deadlines	 d = { 0 }, back = { 0 };
	char			 err[512], path[512];

	ok(deadline_load(dir, &back, err, sizeof(err)) == 0 && back.n == 0,
	    "no file: no deadline");
	deadline_set(&d, "a", 1, 1000);
	deadline_set(&d, "b", 1, 2000);
	err[0] = '\0';
	ok(deadline_save(dir, &d, err, sizeof(err)) == 0, "saved %s", err);
	ok(exists(DEADLINE_FILE) && !exists(DEADLINE_TMP),
	    "the file is in place and no temporary file is left");
	ok(deadline_load(dir, &back, err, sizeof(err)) == 0 && back.n == 2 &&
	    deadline_find(&back, "b", 1)->at_ms == 2000, "loaded back");

	/* a write that cannot happen: the temporary name is a directory */
	snprintf(path, sizeof(path), "%s/%s", dir, DEADLINE_TMP);
	mkdir(path, 0700);
	deadline_set(&d, "c", 1, 3000);
	ok(deadline_save(dir, &d, err, sizeof(err)) == -1 &&
	    strstr(err, DEADLINE_TMP) != NULL, "a failed write says where: %s",
	    err);
	ok(deadline_load(dir, &back, err, sizeof(err)) == 0 && back.n == 2 &&
	    deadline_find(&back, "c", 1) == NULL,
	    "and leaves the previous file whole");
	rmdir(path);

	put_file(DEADLINE_FILE, "seend deadlines 1\na 5\n");
	ok(deadline_load(dir, &back, err, sizeof(err)) == -1 && back.n == 0 &&
	    strstr(err, dir) != NULL && strstr(err, "cut short") != NULL,
	    "a damaged file is refused, named: %s", err);
	snprintf(path, sizeof(path), "%s/%s", dir, DEADLINE_FILE);
	unlink(path);
	mkdir(path, 0700);
	ok(deadline_load(dir, &back, err, sizeof(err)) == -1 &&
	    strstr(err, "not a regular file") != NULL,
	    "a directory in its place is refused");
	rmdir(path);

	ok(deadline_save(dir, &d, err, sizeof(err)) == 0 &&
	    exists(DEADLINE_FILE), "written again");
	deadline_free(&d);
	ok(deadline_save(dir, &d, err, sizeof(err)) == 0 &&
	    !exists(DEADLINE_FILE), "no deadline left: the file is removed");
	ok(deadline_save(dir, &d, err, sizeof(err)) == 0,
	    "and removing it again is no error");
	ok(deadline_load(dir, &back, err, sizeof(err)) == 0 && back.n == 0,
	    "which loads as no deadline");
	deadline_free(&back);
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_table();
	test_text();
	test_files();
	rmdir(dir);
	return done_testing();
}
