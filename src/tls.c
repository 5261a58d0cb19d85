/*
 * tls.c - OpenSSL contexts for the server and its clients; see tls.h.
 *
 * What Redis's tls.c does when it builds its contexts, with the same
 * settings and the same words (tls-auth-clients, tls-protocols,
 * tls-ciphers, tls-ciphersuites), so that an operator who has configured
 * one has configured the other.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls.h"

/* The id sessions are cached under: resumption with a verified client
 * certificate needs one (OpenSSL refuses it otherwise). */
static const unsigned char tls_sid_ctx[] = "seend";

unsigned
tls_parse_protocols(const char *s)
{
	static const struct {
		const char	*name;
		unsigned	 bit;
	} names[] = {
		{ "TLSv1", TLS_PROTO_TLSv1 },
		{ "TLSv1.1", TLS_PROTO_TLSv1_1 },
		{ "TLSv1.2", TLS_PROTO_TLSv1_2 },
		{ "TLSv1.3", TLS_PROTO_TLSv1_3 },
	};
	unsigned	 set = 0;
	size_t		 n, i;

	while (*s != '\0') {
		if (*s == ' ' || *s == '\t' || *s == ',') {
			s++;
			continue;
		}
		n = strcspn(s, " \t,");
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n &&
			    strncasecmp(s, names[i].name, n) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return 0;
		set |= names[i].bit;
		s += n;
	}
	return set;
}

const char *
tls_error_string(char *buf, size_t len)
{
	unsigned long	 e, last = 0;

	/* the last error is the one nearest the cause's report */
	while ((e = ERR_get_error()) != 0)
		last = e;
	buf[0] = '\0';
	if (last != 0)
		ERR_error_string_n(last, buf, len);
	return buf;
}

/* An error of OpenSSL's about what we were doing: "what: reason". */
static void
fail(char *err, size_t errlen, const char *what, const char *file)
{
	char reason[256];

	tls_error_string(reason, sizeof(reason));
	if (file != NULL)
		snprintf(err, errlen, "%s \"%s\": %s", what, file,
		    reason[0] ? reason : "unknown error");
	else
		snprintf(err, errlen, "%s: %s", what, reason[0] ? reason :
		    "unknown error");
}

/* What every context shares: the protocols, the ciphers, the modes. */
static SSL_CTX *
ctx_common(const SSL_METHOD *method, const struct tls_settings *t,
    char *err, size_t errlen)
{
	SSL_CTX		*ctx;
	unsigned	 protos = t->protocols ? t->protocols :
			    TLS_PROTO_DEFAULT;
	uint64_t	 opts;

	ERR_clear_error();
	if ((ctx = SSL_CTX_new(method)) == NULL) {
		fail(err, errlen, "cannot make a TLS context", NULL);
		return NULL;
	}
	/* no renegotiation (a client could make us do handshakes at will),
	 * no compression (CRIME); the protocols not asked for are off */
	opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE;
	/* a peer that closes without a close_notify (most clients do)
	 * has ended its input, as a plain socket's EOF */
	opts |= SSL_OP_IGNORE_UNEXPECTED_EOF;
	if (!(protos & TLS_PROTO_TLSv1))
		opts |= SSL_OP_NO_TLSv1;
	if (!(protos & TLS_PROTO_TLSv1_1))
		opts |= SSL_OP_NO_TLSv1_1;
	if (!(protos & TLS_PROTO_TLSv1_2))
		opts |= SSL_OP_NO_TLSv1_2;
	if (!(protos & TLS_PROTO_TLSv1_3))
		opts |= SSL_OP_NO_TLSv1_3;
	SSL_CTX_set_options(ctx, opts);
	/* OpenSSL 3's default level refuses TLSv1 and TLSv1.1: asked for by
	 * name, they are allowed, as Redis allows them */
	if (protos & (TLS_PROTO_TLSv1 | TLS_PROTO_TLSv1_1)) {
		SSL_CTX_set_security_level(ctx, 0);
		SSL_CTX_set_min_proto_version(ctx, 0);
	}
	/* writes of what the socket takes, from an output buffer that
	 * moves as replies are consumed and appended */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (t->ciphers != NULL && SSL_CTX_set_cipher_list(ctx,
	    t->ciphers) != 1) {
		fail(err, errlen, "tls_ciphers", t->ciphers);
		goto bad;
	}
	if (t->ciphersuites != NULL && SSL_CTX_set_ciphersuites(ctx,
	    t->ciphersuites) != 1) {
		fail(err, errlen, "tls_ciphersuites", t->ciphersuites);
		goto bad;
	}
	return ctx;
bad:
	SSL_CTX_free(ctx);
	return NULL;
}

/* The certificate and its key, checked against each other. */
static int
load_cert(SSL_CTX *ctx, const struct tls_settings *t, char *err,
    size_t errlen)
{
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
		fail(err, errlen, "cannot load tls_cert_file", t->cert_file);
		return -1;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file,
	    SSL_FILETYPE_PEM) != 1) {
		fail(err, errlen, "cannot load tls_key_file", t->key_file);
		return -1;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		fail(err, errlen, "tls_key_file does not match tls_cert_file",
		    t->key_file);
		return -1;
	}
	return 0;
}

SSL_CTX *
tls_server_ctx_new(const struct tls_settings *t, char *err, size_t errlen)
{
	SSL_CTX			*ctx;
	STACK_OF(X509_NAME)	*names;
	int			 mode;

	if (t->cert_file == NULL || t->key_file == NULL) {
		snprintf(err, errlen, "tls_cert_file and tls_key_file are "
		    "needed");
		return NULL;
	}
	if ((ctx = ctx_common(TLS_server_method(), t, err, errlen)) == NULL)
		return NULL;
	if (load_cert(ctx, t, err, errlen) == -1)
		goto bad;
	SSL_CTX_set_session_id_context(ctx, tls_sid_ctx,
	    sizeof(tls_sid_ctx) - 1);
	/* one read(2) takes what the socket holds, many records of a
	 * pipelining client, not a record header and then its body
	 * (conn.c's TLS type takes the records it holds) */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_dh_auto(ctx, 1);
	if (t->ca_cert_file != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, t->ca_cert_file,
		    NULL) != 1) {
			fail(err, errlen, "cannot load tls_ca_cert_file",
			    t->ca_cert_file);
			goto bad;
		}
		/* the CAs named to a client choosing its certificate */
		if ((names = SSL_load_client_CA_file(t->ca_cert_file)) != NULL)
			SSL_CTX_set_client_CA_list(ctx, names);
	} else if (t->auth_clients != TLS_AUTH_NO) {
		snprintf(err, errlen, "tls_auth_clients = %s needs "
		    "tls_ca_cert_file (the CA client certificates are "
		    "verified against)", t->auth_clients == TLS_AUTH_YES ?
		    "yes" : "optional");
		goto bad;
	}
	switch (t->auth_clients) {
	case TLS_AUTH_YES:
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		break;
	case TLS_AUTH_OPTIONAL:
		mode = SSL_VERIFY_PEER;
		break;
	default:
		mode = SSL_VERIFY_NONE;
		break;
	}
	SSL_CTX_set_verify(ctx, mode, NULL);
	return ctx;
bad:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *
tls_client_ctx_new(const struct tls_settings *t, char *err, size_t errlen)
{
	SSL_CTX	*ctx;
	int	 ok;

	if ((ctx = ctx_common(TLS_client_method(), t, err, errlen)) == NULL)
		return NULL;
	if (t->cert_file != NULL && t->key_file != NULL &&
	    load_cert(ctx, t, err, errlen) == -1)
		goto bad;
	if (t->cert_file != NULL && t->key_file == NULL) {
		snprintf(err, errlen, "a client certificate needs its key");
		goto bad;
	}
	ok = t->ca_cert_file != NULL ?
	    SSL_CTX_load_verify_locations(ctx, t->ca_cert_file, NULL) :
	    SSL_CTX_set_default_verify_paths(ctx);
	if (ok != 1) {
		fail(err, errlen, "cannot load the CA certificates",
		    t->ca_cert_file);
		goto bad;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
bad:
	SSL_CTX_free(ctx);
	return NULL;
}
