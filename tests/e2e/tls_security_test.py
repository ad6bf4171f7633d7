#!/usr/bin/env python3
"""End-to-end tests of what `cudagate serve`'s TLS offers, as a scanner sees it.

sslscan (Debian's) connects to a running server and tries every protocol
version and cipher suite OpenSSL knows, client-initiated renegotiation and
heartbeats; its XML report must show TLS 1.2 and 1.3 only, AEAD ciphers with
forward secrecy only, no renegotiation and no heartbleed. Compression is read
from a handshake with Python's ssl module. Client certificates under
--client-ca are tried expired, not yet valid, from another CA, and missing,
beside a good one, each made with openssl.

    python3 tls_security_test.py --binary build/release/cudagate --source .
"""

import http.client
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import server_support  # noqa: E402
from server_support import Server, client_context, make_certs  # noqa: E402

BINARY = None
SOURCE = None

# Ciphers OpenSSL names with these parts are AEAD; key exchange by (EC)DHE
# gives forward secrecy. TLS 1.3 suites are all AEAD with an ephemeral key
# exchange (RFC 8446 section 1.2).
AEAD = ("GCM", "CHACHA20-POLY1305", "CCM")
FORWARD_SECRET = ("ECDHE-", "DHE-")


def setUpModule():
    server_support.BINARY = BINARY
    server_support.SOURCE = SOURCE


class ScannedServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("sslscan") is None:
            raise unittest.SkipTest("sslscan is not installed (scripts/install-deps.sh installs it)")
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-tls-test-")
        cls.certs = os.path.join(cls.tmp, "certs")
        make_certs(cls.certs)
        cls.server = Server(cls.tmp, cls.certs).start()
        out = subprocess.run(["sslscan", "--no-colour", "--xml=-", f"127.0.0.1:{cls.server.port}"],
                             capture_output=True, text=True, timeout=240)
        cls.scan_error = out.stderr
        cls.report = ET.fromstring(out.stdout[out.stdout.index("<?xml"):]).find("ssltest")

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        tail = cls.server.log_tail()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if status != 0:
            raise AssertionError(f"server exited with {status} after SIGTERM:\n{tail}")

    def test_the_scan_reached_the_server(self):
        self.assertIsNotNone(self.report, self.scan_error)
        self.assertEqual(self.report.get("port"), str(self.server.port))
        self.assertTrue(self.report.findall("cipher"), "no cipher accepted at all")

    def test_only_tls_1_2_and_1_3_are_enabled(self):
        enabled = {(p.get("type"), p.get("version")) for p in self.report.findall("protocol")
                   if p.get("enabled") == "1"}
        offered = {(p.get("type"), p.get("version")) for p in self.report.findall("protocol")}
        self.assertEqual(enabled, {("tls", "1.2"), ("tls", "1.3")})
        # The scan tried the old ones too, so their absence means refused.
        self.assertTrue({("ssl", "3"), ("tls", "1.0"), ("tls", "1.1")} <= offered, offered)

    def test_every_accepted_cipher_is_aead_with_forward_secrecy(self):
        ciphers = [(c.get("sslversion"), c.get("cipher")) for c in self.report.findall("cipher")]
        self.assertIn("TLSv1.2", {v for v, _ in ciphers})
        self.assertIn("TLSv1.3", {v for v, _ in ciphers})
        for version, name in ciphers:
            with self.subTest(cipher=name):
                self.assertIn(version, ("TLSv1.2", "TLSv1.3"))
                if version == "TLSv1.3":
                    self.assertTrue(name.startswith("TLS_"), name)
                    self.assertTrue(any(a in name.replace("_", "-") for a in AEAD), name)
                else:
                    self.assertTrue(name.startswith(FORWARD_SECRET), name)
                    self.assertTrue(any(a in name for a in AEAD), name)
                    self.assertNotIn("SHA1", name)

    def test_no_renegotiation(self):
        renegotiation = self.report.find("renegotiation")
        self.assertIsNotNone(renegotiation)
        self.assertEqual(renegotiation.get("supported"), "0")

    def test_no_heartbleed(self):
        beats = self.report.findall("heartbleed")
        self.assertTrue(beats)
        self.assertTrue(all(b.get("vulnerable") == "0" for b in beats))

    def test_no_compression(self):
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.subTest(version=version):
                ctx = client_context(self.certs, minimum=version, maximum=version)
                with self.server.tls_socket(ctx) as s:
                    self.assertEqual(s.version(), {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                                                   ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version])
                    self.assertIsNone(s.compression())


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def client_certificate(certs, directory, name, start, end):
    """A client certificate signed by certs/client-ca.crt, valid from `start`
    to `end` (openssl's YYYYMMDDHHMMSSZ), made with `openssl ca`, which sets
    both dates as given."""
    db = os.path.join(directory, f"{name}-ca")
    os.makedirs(os.path.join(db, "new"))
    open(os.path.join(db, "index.txt"), "w").close()
    with open(os.path.join(db, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = test\n[test]\n"
                f"dir = {db}\ndatabase = $dir/index.txt\nnew_certs_dir = $dir/new\n"
                "serial = $dir/serial\ndefault_md = sha256\npolicy = any\n"
                "unique_subject = no\ncopy_extensions = none\n"
                "[any]\ncommonName = supplied\n"
                "[client]\nextendedKeyUsage = clientAuth\nkeyUsage = digitalSignature\n")
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("1000\n")
    key, csr, crt = (os.path.join(directory, f"{name}.{ext}") for ext in ("key", "csr", "crt"))
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", csr, "-subj", f"/CN={name}", cwd=directory)
    openssl("ca", "-batch", "-config", os.path.join(db, "ca.cnf"), "-extensions", "client",
            "-cert", os.path.join(certs, "client-ca.crt"),
            "-keyfile", os.path.join(certs, "client-ca.key"),
            "-startdate", start, "-enddate", end, "-in", csr, "-out", crt, cwd=directory)
    return crt, key


class ClientCertificateValidityTest(unittest.TestCase):
    """--client-ca: a certificate from that CA is accepted only while valid."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-tls-test-")
        cls.certs = os.path.join(cls.tmp, "certs")
        make_certs(cls.certs)
        made = os.path.join(cls.tmp, "made")
        os.makedirs(made)
        cls.current = client_certificate(cls.certs, made, "current", "20240101000000Z",
                                         "20991231000000Z")
        cls.expired = client_certificate(cls.certs, made, "expired", "20200101000000Z",
                                         "20210101000000Z")
        cls.future = client_certificate(cls.certs, made, "future", "20980101000000Z",
                                        "20991231000000Z")
        cls.server = Server(cls.tmp, cls.certs, "--client-ca",
                            os.path.join(cls.certs, "client-ca.crt"), client_cert=True).start()

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        tail = cls.server.log_tail()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if status != 0:
            raise AssertionError(f"server exited with {status} after SIGTERM:\n{tail}")

    def healthz(self, chain, version):
        ctx = client_context(self.certs, minimum=version, maximum=version)
        if chain:
            ctx.load_cert_chain(*chain)
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=ctx, timeout=10)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        finally:
            conn.close()

    def test_each_certificate(self):
        cases = [("current", self.current, True), ("expired", self.expired, False),
                 ("not yet valid", self.future, False), ("missing", None, False)]
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            for name, chain, accepted in cases:
                with self.subTest(certificate=name, version=version):
                    if accepted:
                        self.assertEqual(self.healthz(chain, version), 200)
                    else:
                        # TLS 1.3 clients learn of the refusal at their first read.
                        with self.assertRaises((ssl.SSLError, ConnectionError,
                                                http.client.HTTPException)):
                            self.healthz(chain, version)
        # Refused handshakes leave the server serving.
        self.assertEqual(self.healthz(self.current, ssl.TLSVersion.TLSv1_3), 200)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))
