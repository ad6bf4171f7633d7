"""A test double of the Kubernetes API server's Node collection.

There is no kube-apiserver on the machines these tests run on, so this
module speaks the part of its protocol that `cudagate serve --in-cluster` /
`--kubeconfig` uses, over real TLS, as the API server does:

- GET /api/v1/nodes?limit=N[&continue=T]: a NodeList page in name order,
  at most N items (and at most `page_size`, which the real server may also
  do), with metadata.continue until the last page and the list's
  resourceVersion; a continue token older than the compaction point is
  answered 410 Gone, as etcd compaction makes the real server do;
- GET /api/v1/nodes?watch=1&resourceVersion=R&allowWatchBookmarks=true:
  200 with Transfer-Encoding: chunked, then one JSON watch event per line
  (ADDED, MODIFIED, DELETED, BOOKMARK), each event split over two chunks
  so that a reader cannot assume one chunk is one event; a resourceVersion
  older than the compaction point gets an ERROR event with a 410 Status,
  and compact() sends the same to open watches; timeoutSeconds ends the
  stream with the last chunk;
- authentication: a bearer token from `tokens`, or a client certificate
  signed by `client_ca`; anything else is 401 with a Status body;
- failures on request: the next requests answered 429 with Retry-After,
  open watch streams dropped without the last chunk (a lost connection).

Node objects are stored as given and served with a resourceVersion; the
tests give Node objects shaped as a real cluster sends them (see
realistic_node()).

Every request is recorded in `requests` (method, path, query, the token
presented, the status answered, the time), so tests can wait for what
cudagate did instead of sleeping.
"""

import base64
import copy
import http.server
import json
import socket
import ssl
import threading
import time
import urllib.parse


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def realistic_node(node, rv_hint=None):
    """`node` (a Node from a kubectl get nodes -o json list) with what a live
    API server adds to it: managedFields of the kubelet and of GPU Feature
    Discovery, and status conditions and images if missing."""
    node = copy.deepcopy(node)
    meta = node.setdefault("metadata", {})
    meta.setdefault("uid", "00000000-0000-4000-8000-" + format(abs(hash(meta.get("name"))) % 10**12, "012d"))
    meta.setdefault("creationTimestamp", "2025-11-20T09:14:07Z")
    meta["managedFields"] = [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet", "operation": "Update",
         "time": "2025-11-29T17:31:02Z", "subresource": "status",
         "fieldsV1": {"f:status": {"f:allocatable": {"f:nvidia.com/gpu": {}},
                                   "f:conditions": {"k:{\"type\":\"Ready\"}": {
                                       "f:lastHeartbeatTime": {}}}}}},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "gpu-feature-discovery",
         "operation": "Update", "time": "2025-11-29T17:30:00Z",
         "fieldsV1": {"f:metadata": {"f:labels": {
             f"f:{k}": {} for k in meta.get("labels", {}) if k.startswith("nvidia.com/")}}}},
    ]
    status = node.setdefault("status", {})
    status.setdefault("conditions", [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                      "message": "kubelet is posting ready status",
                                      "lastHeartbeatTime": "2025-11-29T17:31:02Z",
                                      "lastTransitionTime": "2025-11-20T09:14:07Z"}])
    status.setdefault("images", [{"names": ["nvcr.io/nvidia/k8s-device-plugin:v0.17.0"],
                                  "sizeBytes": 187654321}])
    return node


class ApiServerDouble:
    def __init__(self, certs_dir, tokens=("test-token",), client_ca=None, page_size=500):
        self.certs_dir = certs_dir
        self.tokens = set(tokens)
        self.page_size = page_size
        self.lock = threading.Condition()
        self.rv = 1000
        self.compacted = 0          # resourceVersions at or below this are gone
        self.nodes = {}             # name -> (rv, object)
        self.events = []            # (rv, type, object) in order
        self.requests = []
        self.fail_next = []         # [(status, retry_after)] for the next requests
        self.list_gate = threading.Event()
        self.list_gate.set()
        self.continue_gate = threading.Event()  # held: continue requests wait
        self.continue_gate.set()
        self.drop_generation = 0
        self.closed = False
        self.client_ca = client_ca

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(f"{certs_dir}/server.crt", f"{certs_dir}/server.key")
        if client_ca:
            ctx.load_verify_locations(client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                double._handle(self)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that went away, or a stream cut on purpose

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                            do_handshake_on_connect=False)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # --- control, for the tests ---------------------------------------------

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        with self.lock:
            self.closed = True
            self.lock.notify_all()
        self.list_gate.set()
        self.continue_gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def _next_rv(self):
        self.rv += 1
        return self.rv

    def put(self, node, silently=False):
        """Adds or replaces a node (ADDED or MODIFIED); `silently`: no event
        (a change a watcher can only learn by listing again)."""
        with self.lock:
            name = node["metadata"]["name"]
            rv = self._next_rv()
            obj = copy.deepcopy(node)
            obj["metadata"]["resourceVersion"] = str(rv)
            kind = "MODIFIED" if name in self.nodes else "ADDED"
            self.nodes[name] = (rv, obj)
            if not silently:
                self.events.append((rv, kind, obj))
            self.lock.notify_all()

    def delete(self, name):
        with self.lock:
            _, obj = self.nodes.pop(name)
            rv = self._next_rv()
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(rv)
            self.events.append((rv, "DELETED", obj))
            self.lock.notify_all()

    def bookmark(self):
        with self.lock:
            rv = self._next_rv()
            self.events.append((rv, "BOOKMARK", {"kind": "Node", "apiVersion": "v1",
                                                 "metadata": {"resourceVersion": str(rv)}}))
            self.lock.notify_all()

    def compact(self):
        """Forgets every resourceVersion up to now: open watches get an
        ERROR 410 event, and watches and continue tokens from before it 410;
        lists from now on start after it."""
        with self.lock:
            self.compacted = self._next_rv()
            self.lock.notify_all()

    def drop_watches(self):
        """Cuts every open watch stream without its last chunk."""
        with self.lock:
            self.drop_generation += 1
            self.lock.notify_all()

    def fail(self, status, count=1, retry_after=None):
        with self.lock:
            self.fail_next += [(status, retry_after)] * count

    def requests_where(self, predicate):
        with self.lock:
            return [r for r in self.requests if predicate(r)]

    # --- the protocol ---------------------------------------------------------

    def _authenticated(self, handler):
        auth = handler.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        cert = None
        try:
            cert = handler.connection.getpeercert()
        except (ValueError, AttributeError):
            cert = None
        return token, (token is not None and token in self.tokens) or bool(cert)

    def _send_json(self, handler, status, body, headers=()):
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _handle(self, handler):
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        token, ok = self._authenticated(handler)
        record = {"path": parsed.path, "query": query, "token": token, "time": time.monotonic()}
        with self.lock:
            self.requests.append(record)
            failure = self.fail_next.pop(0) if self.fail_next and ok else None
        if not ok:
            record["status"] = 401
            return self._send_json(handler, 401, status_body(401, "Unauthorized", "Unauthorized"))
        if failure:
            status, retry_after = failure
            record["status"] = status
            headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
            return self._send_json(handler, status, status_body(
                status, "TooManyRequests" if status == 429 else "InternalError",
                "the server has received too many requests" if status == 429 else "injected"),
                headers)
        if parsed.path != "/api/v1/nodes":
            record["status"] = 404
            return self._send_json(handler, 404, status_body(404, "NotFound", "not found"))
        if query.get("watch") in ("1", "true"):
            return self._watch(handler, query, record)
        return self._list(handler, query, record)

    def _list(self, handler, query, record):
        self.list_gate.wait()
        if "continue" in query:
            self.continue_gate.wait()
        limit = min(int(query.get("limit", "0")) or 10**9, self.page_size)
        with self.lock:
            if "continue" in query:
                try:
                    state = json.loads(base64.b64decode(query["continue"]))
                except ValueError:
                    record["status"] = 400
                    return self._send_json(handler, 400, status_body(400, "BadRequest",
                                                                      "bad continue token"))
                list_rv, after = state["rv"], state["after"]
                if list_rv < self.compacted:
                    record["status"] = 410
                    return self._send_json(handler, 410, status_body(
                        410, "Expired", "The provided continue parameter is too old to display "
                        "a consistent list result. You can start a new list without the continue "
                        "parameter."))
            else:
                list_rv, after = self.rv, ""
            # The list as of list_rv: nodes whose current rv is newer are shown
            # as they are now (a simplification the tests do not depend on).
            names = sorted(n for n in self.nodes if n > after)
            page = names[:limit]
            items = [self.nodes[n][1] for n in page]
            meta = {"resourceVersion": str(list_rv)}
            if len(names) > limit:
                meta["continue"] = base64.b64encode(json.dumps(
                    {"rv": list_rv, "after": page[-1]}).encode()).decode()
                meta["remainingItemCount"] = len(names) - limit
        record["status"] = 200
        self._send_json(handler, 200, {"kind": "NodeList", "apiVersion": "v1",
                                       "metadata": meta, "items": items})

    def _watch(self, handler, query, record):
        try:
            since = int(query.get("resourceVersion", "0"))
        except ValueError:
            since = 0
        timeout = float(query.get("timeoutSeconds", "300"))
        bookmarks = query.get("allowWatchBookmarks") == "true"
        record["status"] = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        out = handler.wfile

        def chunk(data):
            out.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        def send_event(kind, obj):
            line = json.dumps({"type": kind, "object": obj}).encode() + b"\n"
            half = len(line) // 2
            chunk(line[:half])
            out.flush()
            chunk(line[half:])
            out.flush()

        deadline = time.monotonic() + timeout
        with self.lock:
            generation = self.drop_generation
        try:
            while True:
                with self.lock:
                    while True:
                        if self.closed or self.drop_generation != generation:
                            action = "drop"
                        elif since < self.compacted:
                            action = "gone"
                        else:
                            pending = [e for e in self.events if e[0] > since]
                            left = deadline - time.monotonic()
                            action = "send" if pending else ("end" if left <= 0 else None)
                        if action:
                            break
                        self.lock.wait(min(0.5, left))
                if action == "drop":
                    handler.close_connection = True
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action == "gone":
                    send_event("ERROR", status_body(410, "Expired",
                                                    f"too old resource version: {since}"))
                if action in ("gone", "end"):
                    chunk(b"")
                    out.flush()
                    return
                for rv, kind, obj in pending:
                    if kind != "BOOKMARK" or bookmarks:
                        send_event(kind, obj)
                    since = rv
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            handler.close_connection = True
