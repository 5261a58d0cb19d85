/*
 * resp_cli.c - resp_parse as a filter, for tests/integration/
 * test_resp_golden.py: reads a stream of RESP requests on stdin and writes
 * what a server built on resp_parse would send back, so that it can be
 * compared byte for byte with what redis-server sends for the same bytes.
 *
 *   resp_cli [-m max_bulk] [-r max_request] [-a max_args] [-u]
 *
 * Each request gets a reply: PING gets "+PONG", ECHO its argument as a bulk
 * string, anything else the array of its arguments (which shows how it was
 * framed); "*0" and "*-1" get none,
 * as in Redis. A protocol error gets "-ERR Protocol error: ..." and ends
 * the stream, as Redis closes the connection. Exit status: 0 if the input
 * ended between requests, 1 after a protocol error, 2 if it ended inside
 * a request (stderr says how many bytes were needed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "proto.h"
#include "resp.h"

static void
usage(void)
{
	fprintf(stderr, "usage: resp_cli [-m max_bulk] [-r max_request] "
	    "[-a max_args] [-u]\n");
	exit(64);
}

static void
reply(struct buf *out, const struct resp_request *req)
{
	int i;

	if (req->argc == 1 && proto_token_is(req->argv[0], req->argl[0],
	    "PING")) {
		resp_add_status(out, "PONG");
		return;
	}
	if (req->argc == 2 && proto_token_is(req->argv[0], req->argl[0],
	    "ECHO")) {
		resp_add_bulk(out, req->argv[1], req->argl[1]);
		return;
	}
	resp_add_array(out, req->argc);
	for (i = 0; i < req->argc; i++)
		resp_add_bulk(out, req->argv[i], req->argl[i]);
}

int
main(int argc, char **argv)
{
	struct resp_limits	 lim = { 512 * 1024 * 1024, (size_t)1 << 31,
				     1024, 0, 0, 0 };
	struct resp_request	 req;
	struct buf		 in = { 0 }, out = { 0 };
	enum resp_status	 st;
	const char		**av;
	size_t			*al;
	ssize_t			 n;
	int			 c, status = 0;

	while ((c = getopt(argc, argv, "m:r:a:u")) != -1) {
		switch (c) {
		case 'm':
			lim.max_bulk = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			lim.max_request = strtoull(optarg, NULL, 10);
			break;
		case 'a':
			lim.max_args = atoi(optarg);
			break;
		case 'u':
			lim.unauth = 1;
			break;
		default:
			usage();
		}
	}
	if (lim.max_args < 1)
		usage();
	av = calloc((size_t)lim.max_args, sizeof(*av));
	al = calloc((size_t)lim.max_args, sizeof(*al));
	if (av == NULL || al == NULL)
		return 70;
	req.argv = av;
	req.argl = al;
	for (;;) {
		if (buf_reserve(&in, 65536) == -1)
			return 70;
		n = read(0, in.data + in.len, in.cap - in.len);
		if (n <= 0)
			break;
		in.len += (size_t)n;
	}
	while (buf_used(&in) > 0) {
		st = resp_parse(buf_head(&in), buf_used(&in), &lim, &req);
		if (st == RESP_MORE) {
			fprintf(stderr, "incomplete: %zu bytes, need %zu\n",
			    buf_used(&in), req.used);
			status = 2;
			break;
		}
		if (st == RESP_ERROR) {
			resp_add_error(&out, "ERR", req.error,
			    strlen(req.error));
			status = 1;
			break;
		}
		if (st == RESP_TOO_MANY)
			resp_add_errorf(&out, "ERR", "too many arguments "
			    "(%d, max %d)", req.argc, lim.max_args);
		else if (st == RESP_OK)
			reply(&out, &req);
		buf_consume(&in, req.used);
	}
	fwrite(buf_head(&out), 1, buf_used(&out), stdout);
	buf_free(&in);
	buf_free(&out);
	free(av);
	free(al);
	return status;
}
