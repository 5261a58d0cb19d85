"""
tlspki - certificates for the TLS tests, made with openssl(1) in a test's
directory: a CA and what it signs (a server's certificate for localhost
and 127.0.0.1, clients', an expired one with dates in the past through
openssl ca), and a foreign CA with certificates of its own.

    from tlspki import pki
    p = pki(t)        # p.ca, p.server, p.client, p.expired,
                      # p.foreign_ca, p.foreign_client, p.foreign_server
    crt, key = p.issue("another", cn="crawler-2")
"""
import os
import subprocess

from seendtest import SLOW

OPENSSL = "openssl"
CA_CNF = """
[ca]
default_ca = ca_default
[ca_default]
database = {d}/index.txt
new_certs_dir = {d}
serial = {d}/serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
"""


def sh(t, *argv, **kw):
    p = subprocess.run(list(argv), capture_output=True, text=True,
                       timeout=60 * SLOW, **kw)
    t.ok(p.returncode == 0, "%s exited %d: %s" % (" ".join(argv),
                                                   p.returncode, p.stderr))
    return p.stdout


class PKI:
    """A CA and the certificates it signs, in dir/NAME.{crt,key}."""

    def __init__(self, t, name):
        self.t = t
        self.dir = t.path("pki-" + name)
        os.makedirs(self.dir, exist_ok=True)
        self.ca = self.path("ca.crt")
        self.ca_key = self.path("ca.key")
        sh(t, OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
           "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", self.ca_key,
           "-out", self.ca, "-days", "30", "-subj", "/CN=seend test CA " + name)
        with open(self.path("index.txt"), "w"):
            pass
        with open(self.path("serial"), "w") as f:
            f.write("1000\n")
        with open(self.path("ca.cnf"), "w") as f:
            f.write(CA_CNF.format(d=self.dir))

    def path(self, name):
        return os.path.join(self.dir, name)

    def issue(self, name, cn="localhost", start=None, end=None, days=30):
        """NAME.crt and NAME.key; start/end "YYYYMMDDHHMMSSZ" for dates in
        the past (an expired certificate)."""
        key, csr, crt = (self.path(name + e) for e in (".key", ".csr", ".crt"))
        sh(self.t, OPENSSL, "req", "-newkey", "ec", "-pkeyopt",
           "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
           "-out", csr, "-subj", "/CN=" + cn, "-addext",
           "subjectAltName=DNS:localhost,IP:127.0.0.1")
        dates = (["-startdate", start, "-enddate", end] if start
                 else ["-days", str(days)])
        sh(self.t, OPENSSL, "ca", "-batch", "-notext", "-config",
           self.path("ca.cnf"), "-cert", self.ca, "-keyfile", self.ca_key,
           "-in", csr, "-out", crt, *dates)
        return crt, key


def pki(t):
    """The CA, its server and client certificates, and the bad ones."""
    p = PKI(t, "main")
    p.server = p.issue("server")
    p.client = p.issue("client", cn="crawler-1")
    p.expired = p.issue("expired", cn="crawler-old", start="20200101000000Z",
                        end="20200201000000Z")
    f = PKI(t, "foreign")
    p.foreign_client = f.issue("client", cn="intruder")
    p.foreign_server = f.issue("server")
    p.foreign_ca = f.ca
    return p
