#!/usr/bin/env python3
"""End-to-end tests of `cudagate serve` over real TLS.

Each test class starts the real binary on a free loopback port with
certificates made by certs/dev-certs.sh, polls /readyz until it answers, and
stops the server with SIGTERM at the end (checking that it exits 0). Clients
are Python's ssl/http.client/socket and curl.

    python3 server_test.py --binary build/dev/cudagate --source .

The last line printed is "N passed, M failed"; the exit status is non-zero
when a test fails.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import warnings

from harness import free_port
import harness
import server_support
from server_support import (A100_NODE, CUDA124_POD, JSON_HEADERS, T4_NODE, Server, ServerTestCase,
                            assert_promtool_accepts, client_context, gfd_node, is_closed,
                            make_certs, metric_value, node_list, poll_until, post, review)

BINARY = None
SOURCE = None


def setUpModule():
    server_support.BINARY = BINARY
    server_support.SOURCE = SOURCE


class TransportTest(ServerTestCase):
    """TLS, HTTP and limits against one server with short timeouts."""

    server_args = ("--header-timeout", "2s", "--body-timeout", "2s", "--idle-timeout", "3s")

    def test_dev_certs_prints_the_ca_bundle_last(self):
        import base64
        with open(os.path.join(self.certs, "ca.crt"), "rb") as f:
            self.assertEqual(base64.b64decode(self.ca_bundle), f.read())
        # Idempotent: a second run keeps every file.
        before = {n: os.stat(os.path.join(self.certs, n)).st_ino for n in os.listdir(self.certs)}
        make_certs(self.certs)
        after = {n: os.stat(os.path.join(self.certs, n)).st_ino for n in os.listdir(self.certs)}
        self.assertEqual(before, after)

    def test_tls12_and_tls13_accepted_with_modern_ciphers(self):
        for version, name in ((ssl.TLSVersion.TLSv1_2, "TLSv1.2"),
                              (ssl.TLSVersion.TLSv1_3, "TLSv1.3")):
            with self.subTest(name):
                ctx = client_context(self.certs, minimum=version, maximum=version)
                with self.server.tls_socket(ctx) as s:
                    self.assertEqual(s.version(), name)
                    cipher = s.cipher()[0]
                    if name == "TLSv1.2":
                        self.assertRegex(cipher, r"^ECDHE-(ECDSA|RSA)-(AES\d+-GCM|CHACHA20)")

    def test_tls11_refused(self):
        ctx = client_context(self.certs, minimum=ssl.TLSVersion.TLSv1_1,
                             maximum=ssl.TLSVersion.TLSv1_1, ciphers="DEFAULT:@SECLEVEL=0")
        self.assert_client_speaks_tls11(ctx)
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            with self.server.tls_socket(ctx):
                pass
        self.assert_served()

    def assert_client_speaks_tls11(self, ctx):
        """The refusal above must come from the server, not from a client
        that cannot speak TLS 1.1: check it against a TLS 1.1 server."""
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                server_ctx.minimum_version = ssl.TLSVersion.TLSv1_1
                server_ctx.maximum_version = ssl.TLSVersion.TLSv1_1
                server_ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            except (ValueError, ssl.SSLError) as e:
                self.skipTest(f"this OpenSSL cannot speak TLS 1.1: {e}")
        server_ctx.load_cert_chain(os.path.join(self.certs, "server.crt"),
                                   os.path.join(self.certs, "server.key"))
        listener = socket.create_server(("127.0.0.1", 0))
        outcome = {}

        def serve_one():
            conn, _ = listener.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as s:
                    outcome["version"] = s.version()
            except (ssl.SSLError, OSError) as e:
                outcome["error"] = e

        thread = threading.Thread(target=serve_one)
        thread.start()
        try:
            with socket.create_connection(listener.getsockname(), timeout=10) as raw:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    outcome["client"] = s.version()
        except (ssl.SSLError, OSError) as e:
            outcome["client_error"] = e
        thread.join(10)
        listener.close()
        if outcome.get("client") != "TLSv1.1":
            self.skipTest(f"this Python/OpenSSL client cannot speak TLS 1.1: {outcome}")

    def test_weak_cipher_refused(self):
        ctx = client_context(self.certs, maximum=ssl.TLSVersion.TLSv1_2,
                             ciphers="AES128-SHA:AES256-SHA:AES128-SHA256")
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            with self.server.tls_socket(ctx):
                pass

    def test_alpn_http11(self):
        ctx = client_context(self.certs, alpn=["h2", "http/1.1"])
        with self.server.tls_socket(ctx) as s:
            self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
        # A client offering only h2 still gets a connection (and HTTP/1.1).
        ctx = client_context(self.certs, alpn=["h2"])
        with self.server.tls_socket(ctx) as s:
            self.assertIsNone(s.selected_alpn_protocol())

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        conn = self.server.connect()
        try:
            conn.request("GET", "/healthz")
            res = conn.getresponse()
            self.assertEqual((res.status, res.read()), (200, b"ok\n"))
            sock = conn.sock
            self.assertIsNotNone(sock)
            for _ in range(3):
                uid, body = review()
                res, data = post(conn, "/validate", body)
                self.assert_review_answer(res, data, uid)
                self.assertFalse(res.will_close)
                self.assertIs(conn.sock, sock, "the server closed the connection")
            uid, body = review()
            res, data = post(conn, "/mutate?timeout=10s", body)
            self.assert_review_answer(res, data, uid)
            self.assertIs(conn.sock, sock)
        finally:
            conn.close()

    def test_pipelined_and_split_requests_are_answered_in_order(self):
        """Requests that arrive two to a write, or in pieces cut inside the
        request line, the header and the body, get their own answers in order."""
        def raw(body):
            return (b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

        reviews = [review(name=f"p{i}", pod_spec=CUDA124_POD if i % 2 else None)
                   for i in range(5)]
        requests = [raw(body) for _, body in reviews]
        with self.server.tls_socket() as s:
            s.sendall(requests[0] + requests[1])
            header_end = requests[2].index(b"\r\n\r\n") + 4
            for piece in (requests[2][:7], requests[2][7:header_end - 9],
                          requests[2][header_end - 9:header_end + 20],
                          requests[2][header_end + 20:]):
                s.sendall(piece)
            header_end = requests[3].index(b"\r\n\r\n") + 4
            s.sendall(requests[3][:header_end + 1])
            s.sendall(requests[3][header_end + 1:] + requests[4][:30])
            s.sendall(requests[4][30:])
            stream = s.makefile("rb")

            class Replies:
                """One buffered reader for every response on the connection,
                which the end of one response does not close."""
                def makefile(self, *args, **kwargs):
                    return self

                def readline(self, *args):
                    return stream.readline(*args)

                def read(self, *args):
                    return stream.read(*args)

                def readinto(self, buffer):
                    return stream.readinto(buffer)

                def close(self):
                    pass

            verdicts = []
            for uid, _ in reviews:
                res = http.client.HTTPResponse(Replies())
                res.begin()
                answer = self.assert_review_answer(res, res.read(), uid)
                verdicts.append(answer["response"]["allowed"])
            self.assertEqual(verdicts, [True, False, True, False, True])
        self.assert_served()

    def test_a_long_pipeline_is_answered_whole_and_in_order(self):
        """A thousand requests sent at once, read only after the last is
        sent: each answer arrives whole, in order, on the one connection."""
        count = 1000
        request = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
        with self.server.tls_socket(timeout=30) as s:
            s.sendall(request * count)
            stream = s.makefile("rb")
            for _ in range(count):
                status = stream.readline()
                self.assertTrue(status.startswith(b"HTTP/1.1 200"), status)
                length = None
                while (line := stream.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                self.assertIsNotNone(length)
                body = stream.read(length)
                self.assertEqual(len(body), length)
                self.assertIn(b"cudagate_admission_requests_total", body)
        self.assert_served()

    def test_errors_404_405_415(self):
        cases = [
            ("GET", "/nope", None, {}, 404),
            ("GET", "/validate", None, {}, 405),
            ("PUT", "/mutate", b"{}", JSON_HEADERS, 405),
            ("POST", "/healthz", b"", {}, 405),
            ("POST", "/validate", b"{}", {"Content-Type": "text/plain"}, 415),
            ("POST", "/validate", b"{}", {}, 415),
            ("POST", "/mutate", b"{}", {"Content-Type": "application/jsonx"}, 415),
            ("POST", "/validate", b"not json", JSON_HEADERS, 400),
        ]
        conn = self.server.connect()
        try:
            for method, path, body, headers, status in cases:
                with self.subTest(method=method, path=path, headers=headers):
                    conn.request(method, path, body=body, headers=headers)
                    res = conn.getresponse()
                    data = res.read()
                    self.assertEqual(res.status, status, data)
                    self.assertEqual(res.getheader("Content-Type"), "application/json")
                    self.assertIsInstance(json.loads(data)["error"], str)
                    if status == 405:
                        self.assertIn(res.getheader("Allow"), ("GET", "POST"))
        finally:
            conn.close()

    def test_json_content_type_with_parameters(self):
        uid, body = review()
        conn = self.server.connect()
        try:
            res, data = post(conn, "/validate", body,
                             {"Content-Type": "application/json; charset=utf-8"})
            self.assert_review_answer(res, data, uid)
        finally:
            conn.close()

    def test_body_over_4mib_gets_413(self):
        body = b"{" + b" " * (5 * 1024 * 1024) + b"}"
        conn = self.server.connect(timeout=30)
        try:
            res, data = post(conn, "/validate", body)
            self.assertEqual(res.status, 413)
            self.assertIn("error", json.loads(data))
        finally:
            conn.close()
        # curl sends Expect: 100-continue and gets its answer before the body.
        path = os.path.join(self.tmp, "big.json")
        with open(path, "wb") as f:
            f.write(body)
        out = subprocess.run(
            ["curl", "-sS", "--cacert", os.path.join(self.certs, "ca.crt"),
             "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
             "--data-binary", "@" + path, f"https://localhost:{self.server.port}/validate"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout, "413", out.stderr)
        self.assert_served()

    def test_body_at_the_limit_is_read(self):
        # Exactly 4 MiB is allowed: the answer is the admission layer's (400
        # for a body that is not a review), not 413.
        body = b" " * (4 * 1024 * 1024)
        conn = self.server.connect(timeout=30)
        try:
            res, _ = post(conn, "/validate", body)
            self.assertEqual(res.status, 400)
        finally:
            conn.close()

    def test_curl_posts_a_review(self):
        uid, body = review()
        path = os.path.join(self.tmp, "review.json")
        with open(path, "wb") as f:
            f.write(body)
        out = subprocess.run(
            ["curl", "-sS", "--fail", "--cacert", os.path.join(self.certs, "ca.crt"),
             "-H", "Content-Type: application/json", "--data-binary", "@" + path,
             f"https://localhost:{self.server.port}/validate"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["response"]["uid"], uid)

    def slow_client(self, prefix, result):
        """Sends `prefix` whole, then one byte a second; records when the
        server closed the connection."""
        try:
            s = self.server.tls_socket()
        except (ssl.SSLError, OSError) as e:
            result["error"] = e
            return
        with s:
            start = time.monotonic()
            s.sendall(prefix)
            for i in range(20):
                try:
                    s.sendall(b"x" if i % 2 else b"y")
                except (ssl.SSLError, OSError):
                    result["closed_after"] = time.monotonic() - start
                    return
                # recv paces the bytes at one a second and notices the close.
                if is_closed(s, 1.0):
                    result["closed_after"] = time.monotonic() - start
                    return
        result["closed_after"] = None

    def check_slow_client_cut_off(self, prefix, timeout):
        result = {}
        thread = threading.Thread(target=self.slow_client, args=(prefix, result))
        thread.start()
        # Others are served meanwhile, promptly.
        served = 0
        while thread.is_alive():
            start = time.monotonic()
            self.assert_served()
            self.assertLess(time.monotonic() - start, 1.5)
            served += 1
            thread.join(0.2)
        self.assertNotIn("error", result)
        self.assertIsNotNone(result["closed_after"], "slow client never cut off")
        self.assertGreaterEqual(result["closed_after"], timeout - 0.5)
        self.assertLess(result["closed_after"], timeout + 4)
        self.assertGreater(served, 3)

    def test_slow_header_cut_off_by_header_timeout(self):
        self.check_slow_client_cut_off(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ", 2)

    def test_slow_body_cut_off_by_body_timeout(self):
        prefix = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        self.check_slow_client_cut_off(prefix, 2)

    def test_silent_connections_closed_after_timeout(self):
        # TCP only (no handshake), TLS without a request, and keep-alive
        # after one request: each closed by its own timeout.
        start = time.monotonic()
        tcp_only = [socket.create_connection(("127.0.0.1", self.server.port)) for _ in range(3)]
        tls_only = [self.server.tls_socket() for _ in range(2)]
        conn = self.server.connect()
        conn.request("GET", "/healthz")
        self.assertEqual(conn.getresponse().read(), b"ok\n")
        self.assert_served()
        for s in tcp_only + tls_only:
            self.assertTrue(is_closed(s, 8), "a silent connection stayed open")
            s.close()
        self.assertLess(time.monotonic() - start, 8)
        self.assertTrue(is_closed(conn.sock, 8), "an idle keep-alive connection stayed open")
        elapsed = time.monotonic() - start
        self.assertGreaterEqual(elapsed, 2.5)  # idle timeout 3 s
        conn.close()
        self.assert_served()

    def test_plain_http_gets_no_http_answer(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            data = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except (ConnectionError, socket.timeout):
                pass
            self.assertFalse(data.startswith(b"HTTP/"), data)
        self.assert_served()

    def test_malformed_request_gets_400(self):
        with self.server.tls_socket() as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost localhost\r\n\r\n")
            res = http.client.HTTPResponse(s)
            res.begin()
            self.assertEqual(res.status, 400)
            self.assertIn("error", json.loads(res.read()))
        self.assert_served()

    def test_metrics_pass_promtool(self):
        # Something to count first: an admission on each endpoint.
        conn = self.server.connect()
        for path in ("/validate", "/mutate"):
            uid, body = review(CUDA124_POD, namespace="ml", name="train")
            res, data = post(conn, path, body)
            self.assert_review_answer(res, data, uid)
        conn.close()
        status, content_type, text = self.server.metrics()
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith("text/plain; version=0.0.4"), content_type)
        for name in ("cudagate_admission_requests_total", "cudagate_admission_duration_seconds",
                     "cudagate_image_metadata_lookups_total",
                     "cudagate_registry_request_duration_seconds", "cudagate_inventory_nodes",
                     "cudagate_inventory_last_sync_timestamp_seconds",
                     "cudagate_tls_certificate_expiry_timestamp_seconds", "cudagate_build_info"):
            self.assertIn(f"# TYPE {name} ", text)
        self.assertGreaterEqual(
            metric_value(text, "cudagate_admission_requests_total", endpoint="validate"), 1)
        self.assertGreaterEqual(metric_value(text, "cudagate_admission_duration_seconds_count",
                                             endpoint="mutate"), 1)
        self.assertEqual(metric_value(text, "cudagate_inventory_nodes", state="total"), 2)
        self.assertEqual(metric_value(text, "cudagate_inventory_nodes", state="gpu"), 2)
        self.assertGreaterEqual(
            metric_value(text, "cudagate_image_metadata_lookups_total", source="env",
                         result="found"), 2)
        expiry = metric_value(text, "cudagate_tls_certificate_expiry_timestamp_seconds")
        self.assertGreater(expiry, time.time() + 300 * 86400)
        self.assertEqual(metric_value(text, "cudagate_build_info"), 1)
        # Denials by rule: both admissions found the T4's driver too old for
        # CUDA 12.4 and nothing else, each counted once with its decision.
        findings = {}
        for line in text.splitlines():
            m = re.match(r'^cudagate_admission_findings_total\{rule="([^"]+)",'
                         r'decision="([^"]+)"\} (\S+)$', line)
            if m:
                findings[m.group(1), m.group(2)] = float(m.group(3))
        by_rule = {}
        for (rule, _), value in findings.items():
            by_rule[rule] = by_rule.get(rule, 0) + value
        self.assertEqual(by_rule, {"cuda-driver": 2, "gpu-arch": 0, "gpu-feature": 0}, findings)
        assert_promtool_accepts(self, text)


class SingleThreadTransportTest(TransportTest):
    """The same with one I/O thread, where sessions run without strands."""

    threads = 1


def hold_connection(server):
    """A kept-alive connection that has answered a request. A slot the
    readiness poll left is free once the server has seen its close, so the
    connection is retried until it gets in."""
    def attempt():
        conn = server.connect()
        try:
            conn.request("GET", "/healthz")
            if conn.getresponse().read() == b"ok\n":
                return conn
        except (ssl.SSLError, ConnectionError, OSError, http.client.HTTPException):
            pass
        conn.close()
        return None
    return poll_until(attempt, 10, "a connection slot")


class ConnectionBoundTest(ServerTestCase):
    server_args = ("--max-connections", "3")

    def test_connections_over_the_bound_are_closed_at_once(self):
        # Each held connection has answered a request, so none gives way.
        held = [hold_connection(self.server).sock for _ in range(3)]
        try:
            # The fourth is accepted by the kernel, then closed by the server.
            with self.assertRaises((ssl.SSLError, ConnectionError, OSError)):
                with self.server.tls_socket(timeout=10) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    if s.recv(1) == b"":
                        raise ConnectionError("closed")
        finally:
            held.pop().close()
        # One slot is free again once the server has seen the close.
        poll_until(lambda: self._healthz_ok(), 10, "a free connection slot")
        for s in held:
            s.close()

    def _healthz_ok(self):
        conn = self.server.connect()
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        except (ssl.SSLError, ConnectionError, OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()


class IdleConnectionEvictionTest(ServerTestCase):
    """At the bound, a connection that has sent no request for a second gives
    its place to a new one; the header timeout is far off, so only that can
    free the place."""

    server_args = ("--max-connections", "3", "--header-timeout", "60s")

    def test_idle_connections_give_way_to_a_new_client(self):
        idle = [socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
                for _ in range(3)]
        try:
            start = time.monotonic()
            poll_until(lambda: ConnectionBoundTest._healthz_ok(self), 20,
                       "a new client served despite three idle connections")
            self.assertLess(time.monotonic() - start, 30)
            closed = [s for s in idle if is_closed(s, 5)]
            self.assertGreaterEqual(len(closed), 1, "no idle connection was closed")
        finally:
            for s in idle:
                s.close()

    def test_a_connection_that_sent_a_request_is_not_evicted(self):
        busy = [hold_connection(self.server) for _ in range(3)]
        try:
            # Kept alive after a request: a new client is refused, not them.
            threading.Event().wait(1.5)
            self.assertFalse(ConnectionBoundTest._healthz_ok(self))
            for conn in busy:
                conn.request("GET", "/healthz")
                self.assertEqual(conn.getresponse().read(), b"ok\n")
        finally:
            for conn in busy:
                conn.close()


class RotationTest(ServerTestCase):
    """Certificate rotation under load."""

    def test_rotation_drops_nothing_and_new_handshakes_see_the_new_certificate(self):
        cert_path = os.path.join(self.certs, "server.crt")
        with open(cert_path) as f:
            old_der = ssl.PEM_cert_to_DER_cert(f.read())
        stop = threading.Event()
        failures = []
        keep_alive_requests = [0]
        new_connections = [0]
        seen = set()

        def keep_sending():
            conn = self.server.connect()
            try:
                conn.connect()
                sock = conn.sock
                while not stop.is_set():
                    uid, body = review()
                    res, data = post(conn, "/validate", body)
                    if res.status != 200 or json.loads(data)["response"]["uid"] != uid:
                        failures.append(("keep-alive", res.status, data[:200]))
                    if conn.sock is not sock:
                        failures.append(("keep-alive", "connection was replaced"))
                        return
                    keep_alive_requests[0] += 1
            except Exception as e:  # noqa: BLE001 - every failure is one
                failures.append(("keep-alive", repr(e)))
            finally:
                conn.close()

        def keep_connecting():
            while not stop.is_set():
                try:
                    with self.server.tls_socket() as s:
                        seen.add(s.getpeercert(binary_form=True))
                        uid, body = review()
                        s.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
                                  b"Content-Type: application/json\r\nConnection: close\r\n"
                                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                        res = http.client.HTTPResponse(s)
                        res.begin()
                        data = res.read()
                        if res.status != 200 or json.loads(data)["response"]["uid"] != uid:
                            failures.append(("new connection", res.status, data[:200]))
                    new_connections[0] += 1
                except Exception as e:  # noqa: BLE001
                    failures.append(("new connection", repr(e)))

        threads = [threading.Thread(target=keep_sending)] + [
            threading.Thread(target=keep_connecting) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            poll_until(lambda: keep_alive_requests[0] > 5 and new_connections[0] > 5, 30,
                       "traffic before the rotation")
            make_certs(self.certs, "--renew")
            with open(cert_path) as f:
                new_der = ssl.PEM_cert_to_DER_cert(f.read())
            self.assertNotEqual(new_der, old_der)

            def new_certificate_served():
                with self.server.tls_socket() as s:
                    return s.getpeercert(binary_form=True) == new_der

            poll_until(new_certificate_served, 20, "new handshakes to see the new certificate")
            served_before = keep_alive_requests[0], new_connections[0]
            poll_until(lambda: keep_alive_requests[0] > served_before[0] + 5
                       and new_connections[0] > served_before[1] + 5, 30,
                       "traffic after the rotation")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertEqual(failures, [])
        self.assertIn(old_der, seen)
        self.assertIn(new_der, seen)

        # A bad new pair is refused and the current one kept.
        with open(os.path.join(self.certs, "server.key"), "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        poll_until(lambda: (metric_value(self.server.metrics()[2], "cudagate_file_reloads_total",
                                         file="certificate", result="error") or 0) >= 1,
                   20, "the bad key to be noticed")
        with self.server.tls_socket() as s:
            self.assertEqual(s.getpeercert(binary_form=True), new_der)
        self.assert_served()


class ClientCertificateTest(ServerTestCase):
    """--client-ca: clients must present a certificate signed by it."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-server-test-")
        cls.certs = os.path.join(cls.tmp, "certs")
        cls.ca_bundle = make_certs(cls.certs)
        cls.server = Server(cls.tmp, cls.certs, "--client-ca",
                            os.path.join(cls.certs, "client-ca.crt"), client_cert=True).start()

    def request_healthz(self, ctx):
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=ctx, timeout=10)
        try:
            conn.request("GET", "/healthz")
            res = conn.getresponse()
            return res.status, res.read()
        finally:
            conn.close()

    def test_good_client_certificate_accepted(self):
        self.assertEqual(self.request_healthz(client_context(self.certs, client_cert=True)),
                         (200, b"ok\n"))
        uid, body = review()
        conn = self.server.connect()
        try:
            res, data = post(conn, "/validate", body)
            self.assert_review_answer(res, data, uid)
        finally:
            conn.close()

    def test_no_client_certificate_refused(self):
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.subTest(version=version):
                ctx = client_context(self.certs, maximum=version)
                with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
                    self.request_healthz(ctx)

    def test_certificate_from_another_ca_refused(self):
        ctx = client_context(self.certs)
        # The server's own certificate is signed by the server CA, not the client CA.
        ctx.load_cert_chain(os.path.join(self.certs, "server.crt"),
                            os.path.join(self.certs, "server.key"))
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            self.request_healthz(ctx)

    def test_verification_off_without_client_ca(self):
        tmp = tempfile.mkdtemp(prefix="cudagate-server-test-", dir=self.tmp)
        server = Server(tmp, self.certs).start()
        try:
            ctx = client_context(self.certs)
            conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=10)
            conn.request("GET", "/healthz")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
        finally:
            self.assertEqual(server.stop(), 0, server.log_tail())


class ReloadTest(ServerTestCase):
    """--config and --nodes are re-read when they change."""

    config_text = ("apiVersion: cudagate.io/v1alpha1\nkind: Policy\n"
                   "excludeNamespaces: [kube-system, ml]\n")

    def allowed(self):
        uid, body = review(CUDA124_POD, namespace="ml", name="train")
        conn = self.server.connect()
        try:
            res, data = post(conn, "/validate", body)
            return self.assert_review_answer(res, data, uid)["response"]["allowed"]
        finally:
            conn.close()

    def reloads(self, file, result):
        return metric_value(self.server.metrics()[2], "cudagate_file_reloads_total", file=file,
                            result=result) or 0

    def write(self, path, text):
        # Replaced by rename, as a ConfigMap volume update does.
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)

    def test_policy_reload_keeps_the_old_policy_when_the_new_one_is_bad(self):
        config = self.server.config
        self.assertTrue(self.allowed(), "namespace ml is excluded by the first policy")
        self.write(config, "apiVersion: cudagate.io/v1alpha1\nkind: Policy\nmode: sometimes\n")
        poll_until(lambda: self.reloads("config", "error") >= 1, 20, "the bad policy noticed")
        self.assertTrue(self.allowed(), "the old policy must stay after a bad one")
        self.write(config, "apiVersion: cudagate.io/v1alpha1\nkind: Policy\n"
                           "excludeNamespaces: [kube-system]\n")
        poll_until(lambda: self.allowed() is False, 20, "the new policy to deny the pod")
        self.assertGreaterEqual(self.reloads("config", "success"), 1)
        self.write(config, self.config_text)
        poll_until(self.allowed, 20, "the first policy back")

    def test_inventory_reload(self):
        nodes = self.server.nodes

        def total():
            return metric_value(self.server.metrics()[2], "cudagate_inventory_nodes",
                                state="total")

        self.assertEqual(total(), 2)
        self.write(nodes, '{"apiVersion": "v1", "kind": "NodeList", "items": [{"kind": 3}]}')
        poll_until(lambda: self.reloads("nodes", "error") >= 1, 20, "the bad inventory noticed")
        self.assertEqual(total(), 2)
        third = gfd_node("gpu-t4-2", "535.129.03", "12.2", "7.5", "Tesla-T4", "turing")
        self.write(nodes, json.dumps(node_list(T4_NODE, A100_NODE, third)))
        poll_until(lambda: total() == 3, 20, "the new inventory")
        self.write(nodes, json.dumps(node_list(T4_NODE, A100_NODE)))
        poll_until(lambda: total() == 2, 20, "the first inventory back")
        self.assert_served()


class ShutdownTest(unittest.TestCase):
    """SIGTERM: not ready at once, listener closed, in-flight requests finish, exit 0."""

    threads = 4

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cudagate-server-test-")
        self.certs = os.path.join(self.tmp, "certs")
        make_certs(self.certs)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def partial_request(server, method, path, body):
        """Sends a request's header with Expect: 100-continue and waits for
        100 Continue, which proves the server is reading this request."""
        s = server.tls_socket()
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                  "Expect: 100-continue\r\n\r\n".encode())
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            chunk = s.recv(1)
            if not chunk:
                raise AssertionError("closed before 100 Continue")
            interim += chunk
        assert interim.startswith(b"HTTP/1.1 100"), interim
        return s

    @staticmethod
    def finish(s, body):
        s.sendall(body)
        res = http.client.HTTPResponse(s)
        res.begin()
        return res, res.read()

    def listener_closed(self, server):
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
            return False
        except ConnectionRefusedError:
            return True

    def test_sigterm_lets_in_flight_requests_finish_and_exits_0(self):
        server = Server(self.tmp, self.certs, "--shutdown-grace", "20s",
                        threads=self.threads).start()
        try:
            idle = server.connect()
            idle.request("GET", "/healthz")
            self.assertEqual(idle.getresponse().read(), b"ok\n")
            in_flight = []
            for _ in range(3):
                uid, body = review()
                in_flight.append((uid, body, self.partial_request(server, "POST", "/validate",
                                                                  body)))
            readyz = self.partial_request(server, "GET", "/readyz", b"{}")

            server.proc.send_signal(signal.SIGTERM)
            poll_until(lambda: self.listener_closed(server), 10, "the listener to close")
            self.assertTrue(is_closed(idle.sock, 10), "idle connection not closed")
            idle.close()

            res, data = self.finish(readyz, b"{}")
            self.assertEqual(res.status, 503)
            readyz.close()
            self.assertIsNone(server.proc.poll(), "exited with requests in flight")
            for uid, body, s in in_flight:
                res, data = self.finish(s, body)
                self.assertEqual(res.status, 200, data)
                self.assertEqual(json.loads(data)["response"]["uid"], uid)
                self.assertTrue(res.will_close, "draining responses close the connection")
                s.close()
            self.assertEqual(server.proc.wait(timeout=20), 0, server.log_tail())
        finally:
            server.stop()

    def test_a_new_connection_gets_its_first_request_answered(self):
        server = Server(self.tmp, self.certs, "--shutdown-grace", "20s",
                        threads=self.threads).start()
        try:
            fresh = server.tls_socket()  # handshake done, request not yet sent
            silent = server.tls_socket()
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            poll_until(lambda: self.listener_closed(server), 10, "the listener to close")
            uid, body = review()
            fresh.sendall(f"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(body)}"
                          "\r\n\r\n".encode() + body)
            res = http.client.HTTPResponse(fresh)
            res.begin()
            data = res.read()
            self.assertEqual(res.status, 200, data)
            self.assertEqual(json.loads(data)["response"]["uid"], uid)
            self.assertTrue(res.will_close)
            fresh.close()
            # One that never sends a request does not hold the drain for the grace.
            self.assertTrue(is_closed(silent, 15), "silent new connection not closed")
            self.assertEqual(server.proc.wait(timeout=20), 0, server.log_tail())
            self.assertLess(time.monotonic() - start, 15)
            silent.close()
        finally:
            server.stop()

    def test_shutdown_grace_bounds_the_drain(self):
        server = Server(self.tmp, self.certs, "--shutdown-grace", "1s",
                        threads=self.threads).start()
        try:
            uid, body = review()
            stuck = self.partial_request(server, "POST", "/validate", body)
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.proc.wait(timeout=20), 0, server.log_tail())
            elapsed = time.monotonic() - start
            self.assertGreaterEqual(elapsed, 0.9)
            self.assertLess(elapsed, 10)
            stuck.close()
        finally:
            server.stop()


class SingleThreadShutdownTest(ShutdownTest):
    """The same with one I/O thread."""

    threads = 1


class Ipv6Test(unittest.TestCase):
    def test_listen_on_ipv6_loopback(self):
        try:
            free_port("::1")
        except OSError:
            self.skipTest("no IPv6 loopback")
        tmp = tempfile.mkdtemp(prefix="cudagate-server-test-")
        try:
            certs = os.path.join(tmp, "certs")
            make_certs(certs)
            server = Server(tmp, certs, host="::1").start()
            try:
                conn = server.connect()
                conn.request("GET", "/healthz")
                self.assertEqual(conn.getresponse().read(), b"ok\n")
                conn.close()
            finally:
                self.assertEqual(server.stop(), 0, server.log_tail())
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class StartupErrorTest(unittest.TestCase):
    def test_bad_files_and_flags_exit_2_naming_the_problem(self):
        tmp = tempfile.mkdtemp(prefix="cudagate-server-test-")
        try:
            certs = os.path.join(tmp, "certs")
            make_certs(certs)
            nodes = os.path.join(tmp, "nodes.json")
            with open(nodes, "w") as f:
                json.dump(node_list(T4_NODE), f)
            base = {"--tls-cert": os.path.join(certs, "server.crt"),
                    "--tls-key": os.path.join(certs, "server.key"), "--nodes": nodes,
                    "--listen": f"127.0.0.1:{free_port()}"}
            cases = [
                ({"--tls-key": os.path.join(certs, "client.key")}, "does not match"),
                ({"--tls-cert": os.path.join(tmp, "missing.crt")}, "missing.crt: cannot open"),
                ({"--tls-cert": nodes}, "no PEM certificate"),
                ({"--client-ca": nodes}, "no PEM certificate"),
                ({"--listen": "localhost"}, "--listen"),
                ({"--listen": "127.0.0.1:99999"}, "--listen"),
                ({"--header-timeout": "soon"}, "--header-timeout"),
                ({"--nodes": os.path.join(tmp, "missing.json")}, "missing.json"),
                ({"--config": nodes}, "nodes.json"),
            ]
            for extra, message in cases:
                with self.subTest(extra=extra):
                    args = [x for k, v in {**base, **extra}.items() for x in (k, v)]
                    out = subprocess.run([BINARY, "serve", *args], capture_output=True,
                                         text=True, timeout=60)
                    self.assertEqual(out.returncode, 2, out.stderr)
                    self.assertIn(message, out.stderr)
                    self.assertRegex(out.stderr, r"(?m)^cudagate: error: ")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))
