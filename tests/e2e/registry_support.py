"""Real OCI registries for the tests: Debian's docker-registry (the CNCF
distribution registry) on loopback ports, images built here as OCI layouts
and pushed with skopeo, and the small servers around them that the tests
need (a token issuer, a blob store that registries redirect to, a registry
that rate-limits, one that delays or never answers).

Everything runs as child processes or threads of the test and is stopped
by it; nothing here listens beyond 127.0.0.1.
"""

import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.request
import uuid

from harness import free_port

POLL = 0.05


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception as e:  # noqa: BLE001 - reported if it persists
            last = e
        threading.Event().wait(POLL)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                         + (f" (last error: {last!r})" if last else ""))


# --- certificates ------------------------------------------------------------

def make_ca_and_server_cert(directory):
    """A test CA and a server certificate for 127.0.0.1 and localhost signed
    by it; returns (ca.crt, server.crt, server.key)."""
    ca_key = os.path.join(directory, "ca.key")
    ca_crt = os.path.join(directory, "ca.crt")
    key = os.path.join(directory, "registry.key")
    csr = os.path.join(directory, "registry.csr")
    crt = os.path.join(directory, "registry.crt")
    ext = os.path.join(directory, "registry.ext")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=60)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key,
        "-out", ca_crt, "-days", "2", "-subj", "/CN=cudagate registry test CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
        "-subj", "/CN=127.0.0.1")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
        "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
    return ca_crt, crt, key


# --- files ---------------------------------------------------------------------

def write_file(directory, name, content):
    """`content` (text, or a value written as JSON) in directory/name; its path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))
    return path


def registry_policy(directory, name, **registry):
    """A policy file whose registry section holds `registry` (values as JSON)."""
    lines = ["apiVersion: cudagate.io/v1alpha1", "kind: Policy", "registry:"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in registry.items()]
    return write_file(directory, name, "\n".join(lines) + "\n")


# --- images --------------------------------------------------------------------

def stored_blob(layout, data):
    """`data` stored in the OCI layout `layout`: its digest and size."""
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(layout, "blobs", "sha256", digest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)


def _layer(name):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        content = f"{name}\n".encode()
        info = tarfile.TarInfo(f"etc/{name}-release")
        info.size = len(content)
        info.mtime = 0
        tar.addfile(info, io.BytesIO(content))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def image_config(env, labels=None, architecture="amd64", os_name="linux", variant=None):
    """An image config shaped as the real ones are (the fields docker and
    buildkit write), with `env` a dict of its variables."""
    config = {
        "architecture": architecture,
        "os": os_name,
        "created": "2024-04-01T00:00:00Z",
        "config": {
            "Env": ["PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:"
                    "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
                   + [f"{k}={v}" for k, v in env.items()],
            "Entrypoint": ["/opt/nvidia/nvidia_entrypoint.sh"],
            "WorkingDir": "/workspace",
            "Labels": dict(labels or {}),
        },
        "rootfs": {"type": "layers", "diff_ids": []},
        "history": [{"created": "2024-04-01T00:00:00Z", "created_by": "test"}],
    }
    if variant:
        config["variant"] = variant
    return config


def _manifest(layout, config):
    layer, diff_id = _layer(config["architecture"])
    config = json.loads(json.dumps(config))
    config["rootfs"]["diff_ids"] = [diff_id]
    config_bytes = json.dumps(config, separators=(",", ":")).encode()
    config_digest, config_size = stored_blob(layout, config_bytes)
    layer_digest, layer_size = stored_blob(layout, layer)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest, "size": layer_size}],
    }
    data = json.dumps(manifest, separators=(",", ":")).encode()
    digest, size = stored_blob(layout, data)
    return {"mediaType": manifest["mediaType"], "digest": digest, "size": size}, config_digest


def oci_layout(directory, tag, configs):
    """An OCI image layout at `directory` whose `tag` is one image (one
    config) or, with several configs, an image index of one manifest per
    config's platform. Returns the config digests in order."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    descriptors, config_digests = [], []
    for config in configs:
        descriptor, config_digest = _manifest(directory, config)
        platform = {"architecture": config["architecture"], "os": config["os"]}
        if config.get("variant"):
            platform["variant"] = config["variant"]
        descriptor["platform"] = platform
        descriptors.append(descriptor)
        config_digests.append(config_digest)
    if len(descriptors) == 1:
        top = dict(descriptors[0])
        top.pop("platform")
    else:
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": descriptors}
        data = json.dumps(index, separators=(",", ":")).encode()
        digest, size = stored_blob(directory, data)
        top = {"mediaType": index["mediaType"], "digest": digest, "size": size}
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(directory, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [top]}, f)
    return config_digests


def push(layout, tag, destination, *, tls_verify=False, creds=None, cert_dir=None,
         format=None):
    """skopeo copy of every platform of `layout`:`tag` to docker://destination."""
    cmd = ["skopeo", "copy", "--all", "--quiet", f"--dest-tls-verify={'true' if tls_verify else 'false'}"]
    if creds:
        cmd += ["--dest-creds", creds]
    if cert_dir:
        cmd += ["--dest-cert-dir", cert_dir]
    if format:
        cmd += ["--format", format]
    cmd += [f"oci:{layout}:{tag}", f"docker://{destination}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"skopeo failed ({out.returncode}): {out.stderr}")


# --- the registry ----------------------------------------------------------------

def htpasswd_line(user, password):
    import crypt  # noqa: deprecated, still in Debian 12's Python; bcrypt via libxcrypt
    return f"{user}:{crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))}\n"


class Registry:
    """One docker-registry process on a free loopback port.

    auth: None, ("htpasswd", path) or ("token", realm, service, issuer, bundle).
    tls: None or (cert, key)."""

    def __init__(self, workdir, *, tls=None, auth=None):
        self.workdir = tempfile.mkdtemp(prefix="registry-", dir=workdir)
        self.tls = tls
        self.auth = auth
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.workdir, "registry.log")

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def _config(self):
        lines = [
            "version: 0.1",
            "log:",
            "  level: info",
            "  accesslog:",
            "    disabled: false",
            "storage:",
            "  filesystem:",
            f"    rootdirectory: {self.workdir}/data",
            "  delete:",
            "    enabled: true",
            "http:",
            f"  addr: 127.0.0.1:{self.port}",
            "  secret: cudagate-test",
        ]
        if self.tls:
            lines += ["  tls:", f"    certificate: {self.tls[0]}", f"    key: {self.tls[1]}"]
        if self.auth and self.auth[0] == "htpasswd":
            lines += ["auth:", "  htpasswd:", "    realm: cudagate-test", f"    path: {self.auth[1]}"]
        if self.auth and self.auth[0] == "token":
            _, realm, service, issuer, bundle = self.auth
            lines += ["auth:", "  token:", f"    realm: {realm}", f"    service: {service}",
                      f"    issuer: {issuer}", f"    rootcertbundle: {bundle}"]
        return "\n".join(lines) + "\n"

    def start(self, port=None):
        """Starts on a free port, or on `port` (a restart where clients
        already know the address)."""
        for _ in range(5):
            self.port = port or free_port()
            config = os.path.join(self.workdir, "config.yml")
            with open(config, "w") as f:
                f.write(self._config())
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(["docker-registry", "serve", config],
                                         stdout=log, stderr=log)
            log.close()
            try:
                wait_for(self._listening, 30, "docker-registry to listen")
                return self
            except AssertionError:
                self.stop()
                if "address already in use" not in self.log().lower():
                    raise AssertionError("docker-registry did not start:\n" + self.log()[-3000:])
        raise AssertionError("no free port for docker-registry")

    def _listening(self):
        if self.proc.poll() is not None:
            raise AssertionError("exited")
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def requests(self, method, pattern):
        """The access-log lines of requests `method` whose path matches `pattern`."""
        out = []
        for line in self.log().splitlines():
            m = re.search(r'"(GET|HEAD|PUT|POST|PATCH|DELETE) (\S+) HTTP/[0-9.]+" (\d+)', line)
            if m and m.group(1) == method and re.search(pattern, m.group(2)):
                out.append((m.group(2), int(m.group(3))))
        return out


# --- the token issuer ---------------------------------------------------------------

def send(handler, status, headers, body):
    """Writes one whole HTTP response from a BaseHTTPRequestHandler."""
    handler.send_response(status)
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    """The token endpoint of the registry's `auth.token` scheme: issues RS256
    JWTs, signed with openssl by a key whose self-signed certificate is the
    registry's rootcertbundle and rides in the token's x5c header, to
    clients whose Basic credentials are `user`:`password`."""

    def __init__(self, workdir, user, password, service="cudagate-test", issuer="cudagate-test-issuer"):
        self.dir = tempfile.mkdtemp(prefix="token-", dir=workdir)
        self.user, self.password = user, password
        self.service, self.issuer = service, issuer
        self.key = os.path.join(self.dir, "token.key")
        self.cert = os.path.join(self.dir, "token.crt")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", self.key, "-out", self.cert, "-days", "2",
                        "-subj", "/CN=cudagate test token issuer"],
                       check=True, capture_output=True, timeout=60)
        der = subprocess.run(["openssl", "x509", "-in", self.cert, "-outform", "DER"],
                             check=True, capture_output=True, timeout=60).stdout
        self.x5c = base64.b64encode(der).decode()
        self.issued = []  # (scope, granted) of every request
        self.tokens = []  # every token handed out
        self.server = None

    @property
    def realm(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def sign(self, claims):
        header = {"alg": "RS256", "typ": "JWT", "x5c": [self.x5c]}
        signing_input = (_b64url(json.dumps(header).encode()) + "." +
                         _b64url(json.dumps(claims).encode()))
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                                   input=signing_input.encode(), check=True,
                                   capture_output=True, timeout=30).stdout
        return signing_input + "." + _b64url(signature)

    def start(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                from urllib.parse import parse_qs, urlparse
                query = parse_qs(urlparse(self.path).query)
                scopes = query.get("scope", [])
                auth = self.headers.get("Authorization", "")
                expected = "Basic " + base64.b64encode(
                    f"{outer.user}:{outer.password}".encode()).decode()
                granted = auth == expected
                outer.issued.append((scopes, granted))
                if not granted:
                    send(self, 401, {"Content-Type": "application/json"},
                         b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')
                    return
                access = []
                for scope in scopes:
                    parts = scope.split(":")
                    if len(parts) >= 3:
                        access.append({"type": parts[0], "name": ":".join(parts[1:-1]),
                                       "actions": parts[-1].split(",")})
                now = int(time.time())
                token = outer.sign({"iss": outer.issuer, "sub": outer.user,
                                    "aud": query.get("service", [""])[0], "exp": now + 300,
                                    "nbf": now - 10, "iat": now, "jti": uuid.uuid4().hex,
                                    "access": access})
                outer.tokens.append(token)
                body = json.dumps({"token": token, "access_token": token, "expires_in": 300,
                                   "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
                send(self, 200, {"Content-Type": "application/json"}, body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()


# --- servers in front of a registry -------------------------------------------------

def serve_get(on_get):
    """A threaded HTTP/1.1 server on a loopback port whose GET requests are
    answered by on_get(handler); returns the server (serving)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Header and body leave as separate writes: without this, Nagle's
            # algorithm and the client's delayed ACK hold each answer ~40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args):
            pass

        def do_GET(self):
            on_get(self)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class FrontServer:
    """A plain-HTTP server in front of a registry, answering each request
    with what `decide(handler)` returns: None to forward it to the upstream
    registry (after `delay` seconds), or (status, headers, body)."""

    def __init__(self, upstream, decide=None, delay=0.0):
        self.upstream = upstream
        self.decide = decide or (lambda handler: None)
        self.delay = delay
        self.seen = []  # paths requested
        self.server = None

    @property
    def host(self):
        return f"127.0.0.1:{self.server.server_address[1]}"

    def start(self):
        self.server = serve_get(self._answer)
        return self

    def _answer(self, handler):
        self.seen.append(handler.path)
        answer = self.decide(handler)
        if answer is None:
            if self.delay:
                threading.Event().wait(self.delay)
            request = urllib.request.Request(f"http://{self.upstream}{handler.path}",
                                             headers={k: v for k, v in handler.headers.items()
                                                      if k.lower() in ("accept", "authorization")})
            try:
                with urllib.request.urlopen(request, timeout=30) as res:
                    status, headers, body = res.status, dict(res.headers), res.read()
            except urllib.error.HTTPError as e:
                status, headers, body = e.code, dict(e.headers), e.read()
            headers = {k: v for k, v in headers.items()
                       if k.lower() in ("content-type", "docker-content-digest",
                                        "www-authenticate", "location")}
        else:
            status, headers, body = answer
        send(handler, status, headers, body)

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()


class SilentServer:
    """Accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def host(self):
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def stop(self):
        self.stopped.set()
        self.sock.close()
        for c in self.held:
            c.close()
