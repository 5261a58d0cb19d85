"""The Python client and the Scrapy settings over TLS, against a real seend
with tls_listen: ssl_context=, seends:// and rediss:// addresses, client
certificates, a refused certificate as a failed connect, batches larger
than a TLS record, a server closing an idle TLS connection, a Ring over
TLS nodes, SEEND_SSL_* in Scrapy."""
import signal

from pyseend import Failed, Server, free_port, run, test, wait_until
from seendtest import ROOMY_FILTERS
from tlspki import pki

import seend


def tls_server(t, p, auth="yes", extra="", **kw):
    tport = free_port()
    crt, key = p.server
    s = Server(t, "tls_listen = 127.0.0.1:%d\ntls_cert_file = %s\n"
               "tls_key_file = %s\ntls_ca_cert_file = %s\n"
               "tls_auth_clients = %s\n%s" % (tport, crt, key, p.ca, auth,
                                               extra), **kw)
    s.tport = tport
    return s


def urls(n, tag):
    return ["https://example.com/%s/%08d" % (tag, i) for i in range(n)]


@test
def ssl_context_with_a_client_certificate(t):
    p = pki(t)
    # 60,000 keys all answered new: in DEFAULT_FILTERS (100,000 keys) a
    # false positive among them comes once in 13 runs, in ROOMY_FILTERS
    # (1,000,000) once in 1.6 million
    with tls_server(t, p, filters=ROOMY_FILTERS) as s:
        ctx = seend.ssl_context(cafile=p.ca, certfile=p.client[0],
                                keyfile=p.client[1])
        with seend.Client("localhost:%d" % s.tport, ssl_context=ctx) as c:
            t.eq(c.ping(), True, "ping")
            t.eq(c.seen("https://a/1"), False, "new")
            t.eq(c.seen("https://a/1"), True, "seen")
            # far more than one TLS record each way, written while replies
            # are read
            keys = urls(60000, "big")
            t.eq(c.seen_many(keys, batch=20000), [False] * 60000, "batch")
            t.eq(c.check_many(keys[:5] + ["https://none/"]),
                 [True] * 5 + [False], "check_many")
            t.eq(c.info()["cmd_seen"] >= 60002, True, "INFO over TLS")
        # the same keys through the plain port: one seen-set
        with seend.Client("127.0.0.1:%d" % s.port) as c:
            t.eq(c.seen("https://a/1"), True, "plain port sees it")


@test
def seends_and_rediss_addresses_verify_the_server(t):
    p = pki(t)
    with tls_server(t, p, auth="no", extra="auth_token = tok3n\n") as s:
        # seends:// with the system's CAs: our test CA is not one of them
        c = seend.Client("seends://:tok3n@localhost:%d" % s.tport)
        try:
            c.ping()
            raise Failed("a certificate of an unknown CA accepted")
        except seend.ConnectionError as e:
            t.ok("CERTIFICATE_VERIFY_FAILED" in str(e) or
                 "certificate verify failed" in str(e), str(e))
        # the same address with a context that trusts our CA; the token
        # comes from the URL
        ctx = seend.ssl_context(cafile=p.ca)
        for scheme in ("seends", "rediss"):
            with seend.Client("%s://:tok3n@localhost:%d/0" % (scheme, s.tport),
                              ssl_context=ctx) as c:
                t.eq(c.seen("https://u/" + scheme), False, scheme)
        # a name the certificate does not hold, unless not checked
        bad = seend.Client("seends://:tok3n@127.0.0.2:%d" % s.tport,
                           ssl_context=seend.ssl_context(cafile=p.ca))
        try:
            bad.ping()
            raise Failed("a host name the certificate lacks accepted")
        except seend.ConnectionError:
            pass
        with seend.Client("127.0.0.1:%d" % s.tport, token="tok3n",
                          ssl_context=seend.ssl_context(
                              cafile=p.ca, check_hostname=False)) as c:
            t.eq(c.ping(), True, "check_hostname=False")
        try:
            seend.Client("seends:///tmp/x.sock")
            raise Failed("TLS over a Unix socket path accepted")
        except ValueError:
            pass


@test
def a_refused_client_certificate_is_a_failed_connect(t):
    p = pki(t)
    with tls_server(t, p) as s:
        for cert in (None, p.expired, p.foreign_client):
            ctx = seend.ssl_context(cafile=p.ca,
                                    certfile=cert and cert[0],
                                    keyfile=cert and cert[1])
            c = seend.Client("localhost:%d" % s.tport, ssl_context=ctx,
                             timeout=5)
            try:
                c.seen("https://refused/")
                raise Failed("accepted with %r" % (cert,))
            except seend.ConnectionError:
                pass
            c.close()
        ctx = seend.ssl_context(cafile=p.ca, certfile=p.client[0],
                                keyfile=p.client[1])
        with seend.Client("localhost:%d" % s.tport, ssl_context=ctx) as c:
            t.eq(c.check("https://refused/"), False,
                 "nothing refused was recorded")


@test
def an_idle_tls_connection_closed_by_the_server_is_replaced(t):
    p = pki(t)
    ctx = seend.ssl_context(cafile=p.ca, certfile=p.client[0],
                            keyfile=p.client[1])
    with tls_server(t, p, extra="idle_timeout = 1\n") as s:
        c = seend.Client("localhost:%d" % s.tport, ssl_context=ctx)
        t.eq(c.seen("https://idle/1"), False, "first")
        t.ok(wait_until(lambda: "idle timeout" in s.read_log(), timeout=10),
             "the server closed it")
        t.eq(c.seen("https://idle/1"), True, "answered on a new connection")
        c.close()
        # and across a restart of seend
        s.stop()
        s.start()
        c = seend.Client("localhost:%d" % s.tport, ssl_context=ctx,
                         connect_retry=5)
        t.eq(c.seen("https://idle/2"), False, "after a restart")
        s.send_signal(signal.SIGHUP)
        t.eq(c.seen("https://idle/2"), True, "after a reload")
        c.close()


@test
def a_ring_of_tls_nodes(t):
    p = pki(t)
    ctx = seend.ssl_context(cafile=p.ca, certfile=p.client[0],
                            keyfile=p.client[1])
    with tls_server(t, p, name="a") as a, tls_server(t, p, name="b") as b:
        ring = seend.Client(["localhost:%d" % a.tport,
                             "localhost:%d" % b.tport], ssl_context=ctx)
        keys = urls(3000, "ring")
        t.eq(ring.seen_many(keys), [False] * 3000, "first")
        t.eq(ring.seen_many(keys), [True] * 3000, "again")
        ring.close()


@test
def scrapy_settings_seend_ssl(t):
    from scrapy.utils.test import get_crawler
    from seend.scrapy import DupeFilter
    from scrapy import Request
    p = pki(t)
    with tls_server(t, p) as s:
        crawler = get_crawler(settings_dict={
            "DUPEFILTER_CLASS": "seend.scrapy.DupeFilter",
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
            "SEEND_ADDRESS": "localhost:%d" % s.tport,
            "SEEND_SSL_CA": p.ca, "SEEND_SSL_CERT": p.client[0],
            "SEEND_SSL_KEY": p.client[1], "SEEND_KEY": "url"})
        crawler.stats.open_spider(None)
        df = DupeFilter.from_crawler(crawler)
        df.open()
        t.eq(df.request_seen(Request("http://s.example/1")), False, "new")
        t.eq(df.request_seen(Request("http://s.example/1")), True, "seen")
        df.close("finished")
        # without the client certificate the crawl cannot start
        crawler = get_crawler(settings_dict={
            "SEEND_ADDRESS": "localhost:%d" % s.tport, "SEEND_SSL": True,
            "SEEND_SSL_CA": p.ca, "SEEND_CONNECT_RETRY": 0,
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"})
        crawler.stats.open_spider(None)
        df = DupeFilter.from_crawler(crawler)
        try:
            df.open()
            raise Failed("opened without a client certificate")
        except Exception as e:
            t.ok(not isinstance(e, Failed), "refused: %r" % e)
        # a key without its certificate is a settings error
        try:
            DupeFilter.from_crawler(get_crawler(settings_dict={
                "SEEND_SSL_KEY": p.client[1],
                "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"}))
            raise Failed("SEEND_SSL_KEY alone accepted")
        except ValueError:
            pass


if __name__ == "__main__":
    run()
