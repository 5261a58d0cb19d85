/*
 * tls.h - OpenSSL contexts: the server's (tls_listen, and the primary's
 * side of a TLS replica link) and a client's (a replica connecting to its
 * primary, seen-cli --tls). No sockets and no events here: conn.c wraps
 * the SSL objects made from these contexts in its connection type, the
 * replica link in libevent's OpenSSL bufferevents.
 *
 * A context is reference-counted by OpenSSL: every connection holds its
 * own reference, so a reload (SIGHUP: certificate rotation) builds a new
 * one and drops the old, and the connections already open keep theirs.
 */
#ifndef SEEND_TLS_H
#define SEEND_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

/* tls_auth_clients, as Redis's tls-auth-clients */
enum tls_auth {
	TLS_AUTH_YES,		/* a client certificate is required */
	TLS_AUTH_NO,		/* none is asked for */
	TLS_AUTH_OPTIONAL,	/* asked for; if sent, it must verify */
};

/* tls_protocols, a set of these */
#define TLS_PROTO_TLSv1		0x1
#define TLS_PROTO_TLSv1_1	0x2
#define TLS_PROTO_TLSv1_2	0x4
#define TLS_PROTO_TLSv1_3	0x8
#define TLS_PROTO_DEFAULT	(TLS_PROTO_TLSv1_2 | TLS_PROTO_TLSv1_3)

struct tls_settings {
	const char	*cert_file;	/* PEM; the chain may follow */
	const char	*key_file;	/* PEM */
	const char	*ca_cert_file;	/* PEM: whom to trust; NULL: none */
	enum tls_auth	 auth_clients;
	unsigned	 protocols;	/* TLS_PROTO_* */
	const char	*ciphers;	/* TLSv1.2 and below; NULL: OpenSSL's */
	const char	*ciphersuites;	/* TLSv1.3; NULL: OpenSSL's */
};

/*
 * "TLSv1.2 TLSv1.3" -> a set of TLS_PROTO_*; 0 if a word is not one of
 * TLSv1, TLSv1.1, TLSv1.2, TLSv1.3 (Redis's tls-protocols words).
 */
unsigned	 tls_parse_protocols(const char *);

/*
 * A server context: loads the certificate, its key (checked against each
 * other) and the CA, and applies the protocol, cipher and client
 * certificate settings. NULL with why in err (OpenSSL's reason, with the
 * file it was reading).
 */
SSL_CTX		*tls_server_ctx_new(const struct tls_settings *, char *err,
		    size_t errlen);
/*
 * A client context: verifies the server against ca_cert_file (or the
 * system's CAs if NULL), and presents cert_file/key_file if set.
 */
SSL_CTX		*tls_client_ctx_new(const struct tls_settings *, char *err,
		    size_t errlen);

/* OpenSSL's error queue as one line (and emptied), "" if empty. */
const char	*tls_error_string(char *buf, size_t len);

#endif
