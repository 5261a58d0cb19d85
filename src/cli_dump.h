/*
 * cli_dump.h - "seen-cli dump", "restore" and "copy": a filter to a file
 * and back, or from one seend to another, as the chunks of BF.SCANDUMP
 * and BF.LOADCHUNK (dump.h).
 */
#ifndef SEEND_CLI_DUMP_H
#define SEEND_CLI_DUMP_H

struct client_target;

/*
 * Runs "dump FILTER FILE" or "restore FILTER FILE" (argv[0] says which)
 * against the seend at target, sending AUTH token first if it is not
 * NULL; name is the target for messages. Returns the exit status: 0, 1
 * for a server or I/O error, 2 for a usage error.
 */
int	cli_dump(const struct client_target *target, const char *token,
	    const char *name, int argc, char **argv);

/*
 * Runs "copy SOURCE/FILTER DEST/FILTER [--merge]" (argv[0] is "copy"):
 * each side is host:port, [v6addr]:port or a Unix socket path, and token,
 * if not NULL, is sent to both. Returns the exit status as cli_dump.
 */
int	cli_copy(const char *token, int argc, char **argv);

#endif
