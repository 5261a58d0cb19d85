/*
 * client.h - connection code shared by seen-cli and seen-bench.
 *
 * Plain blocking or non-blocking sockets and poll(2), no libevent: the
 * clients are small programs that talk to one server. Nothing here prints or
 * exits; failures come back as -1 with a message in a caller's buffer, so
 * each program decides how to report them.
 */
#ifndef SEEND_CLIENT_H
#define SEEND_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

/* The build passes no config.h, so the clients carry the version here; keep
 * it in step with AC_INIT in configure.ac. */
#define SEEN_VERSION		"0.1.0"
#define SEEN_DEFAULT_HOST	"127.0.0.1"
#define SEEN_DEFAULT_PORT	"6874"

/* Where to connect: a Unix socket path wins over host and port. With
 * tls, a TCP connection speaks TLS (to seend's tls_listen), verifying the
 * server against cacert (or the system's CAs) and presenting cert/key if
 * given: as redis-cli's --tls, --cacert, --cert, --key. */
struct client_target {
	const char	*host;
	const char	*port;
	const char	*path;
	int		 tls;
	const char	*cacert;
	const char	*cert;
	const char	*key;
};

/* The long options of client_target_option for TLS, to put in each
 * program's getopt_long table. */
#define CLIENT_OPT_TLS		0x100
#define CLIENT_OPT_CACERT	0x101
#define CLIENT_OPT_CERT		0x102
#define CLIENT_OPT_KEY		0x103
#define CLIENT_TLS_LONGOPTS \
	{ "tls",	no_argument,		NULL, CLIENT_OPT_TLS }, \
	{ "cacert",	required_argument,	NULL, CLIENT_OPT_CACERT }, \
	{ "cert",	required_argument,	NULL, CLIENT_OPT_CERT }, \
	{ "key",	required_argument,	NULL, CLIENT_OPT_KEY }

/*
 * A buffered line reader over a socket. Lines are returned in place, without
 * their "\r\n" or "\n", and stay valid until the next call that reads.
 */
struct client_reader {
	int		 fd;
	char		*buf;
	size_t		 cap;
	size_t		 start;		/* first unread byte */
	size_t		 end;		/* one past the last byte read */
};

/* Formats the target as "host:port", "[v6]:port" or the socket path. */
void	client_target_name(const struct client_target *, char *, size_t);
/* "[::1]" -> "::1" in place (the brackets a user types around IPv6). */
char	*client_strip_brackets(char *host);
/*
 * The connection flags both clients share: -h host, -p port, -s socket,
 * -a token, and CLIENT_TLS_LONGOPTS. Returns 1 if ch was one of them (and
 * stores optarg), else 0.
 */
int	client_target_option(int ch, char *optarg, struct client_target *,
	    const char **token);
/*
 * Connects (TCP through getaddrinfo, trying every address; or a Unix
 * socket). Returns a blocking socket, or -1 with a message such as
 * "cannot connect to 127.0.0.1:6874: Connection refused" in err.
 *
 * With tls the handshake is done here (a certificate refused is this
 * call's error), and what is returned is one end of a socket pair whose
 * other end a thread relays through the TLS session: every client's
 * reads, writes and poll(2) loops work on it unchanged. The relay ends
 * when the caller closes its end (or exits) and what it wrote is sent.
 */
int	client_connect(const struct client_target *, char *err, size_t errlen);
int	client_set_nonblock(int fd, int on);
/* Writes all of buf, retrying on EINTR and partial writes (and waiting
 * with poll if the socket is non-blocking). Returns 0, or -1 with errno. */
int	client_write_all(int fd, const void *buf, size_t len);

int	client_reader_init(struct client_reader *, int fd, size_t cap);
void	client_reader_free(struct client_reader *);
/* The next complete line already buffered: 1 and the line, or 0 if none. */
int	client_reader_next(struct client_reader *, char **line, size_t *len);
/* One read(2) into the buffer, growing it when a line does not fit.
 * Returns the bytes read, 0 at end of file, -1 on error (errno set; EAGAIN
 * on a non-blocking socket with nothing to read). */
ssize_t	client_reader_fill(struct client_reader *);
/* Blocks until a whole line is there: 1 and the line, 0 if the server
 * closed the connection first, -1 on error. */
int	client_reader_line(struct client_reader *, char **line, size_t *len);

/*
 * Sends "AUTH token" and reads the answer. Returns 0 on "OK"; -1 with the
 * server's error, or the connection error, in err.
 */
int	client_auth(int fd, struct client_reader *, const char *token,
	    char *err, size_t errlen);

/*
 * Copies a key into dst with spaces and tabs percent-encoded (" " -> "%20",
 * tab -> "%09"): they separate tokens in the protocol and would split the key.
 * Other bytes, "%" included, pass unchanged. dst needs room for 3 * len
 * bytes. Returns the length written.
 */
size_t	client_encode_key(char *dst, const char *src, size_t len);

/* Sends what a non-blocking socket takes now of p[*off..len), advancing
 * *off. Returns 0 (all sent, or the socket is full), or -1 on an error. */
int	client_send_some(int fd, const char *p, size_t len, size_t *off);

#endif
