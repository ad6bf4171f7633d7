"""A test double of the Kubernetes API server's Node collection.

The real API server, scheduler and controllers are tested against in
tests/cluster/ (list and watch, relists after 410, RBAC, admission, DRA,
reports). This double stays for what a real server cannot be made to do on
demand, at a chosen moment and repeatably: answer 429 with Retry-After, drop
a watch stream in the middle of a chunk, expire a continue token between two
pages of a list, serve pages smaller than asked, refuse one collection with
403 while serving the others, and count exactly the calls a command makes.
It speaks the part of the protocol that `cudagate serve --in-cluster` /
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

Besides Nodes it serves the collections an audit reads and writes, as the
real server does:

- GET of a list of Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets,
  Jobs, CronJobs, PolicyReports or Reports, of every namespace
  (/api/v1/pods, /apis/apps/v1/deployments) or of one
  (/api/v1/namespaces/NS/pods), paged like the Node list, in namespace and
  name order, with labelSelector (equality terms); the items carry no kind
  or apiVersion, as in a real list; GET of one object (404 when absent);
- PATCH of a PolicyReport (wgpolicyk8s.io/v1alpha2) or Report
  (openreports.io/v1alpha1) as a server-side apply: Content-Type
  application/apply-patch+yaml (else 415), fieldManager (else 400) and
  force=true (else 409 when another manager owns the object), a body whose
  apiVersion, kind, name and namespace are the URL's (else 400), valid
  against the CRD's OpenAPI schema when `schemas` has it (else 422 with the
  schema's complaint); answered 201 on create, 200 on update, with the
  object as stored (uid, resourceVersion, managedFields of the manager);
- DELETE of one of those (200 with a Success Status, 404 when absent);
- Dynamic Resource Allocation (resource.k8s.io): ResourceSlices (cluster
  scoped), ResourceClaims and ResourceClaimTemplates (of every namespace or
  of one), listed as above and watched as Nodes are (put_object and
  remove_object send ADDED, MODIFIED and DELETED events), at the versions
  `dra_versions` names (v1 of Kubernetes 1.34+; v1beta2, v1beta1 of 1.32
  and 1.33); any other version, and every version when `dra_versions` is
  empty (a cluster without DRA), is answered 404 as the real server
  answers a group version it does not serve. The objects are stored as
  given: a test gives them in the shape of the version it serves.
- Karpenter's NodePools (karpenter.sh/v1, cluster scoped), listed and
  watched as the DRA collections are.

Applies and deletes are recorded in `applied` (the body of every apply, in
order) and `deleted`.

Node objects are stored as given and served with a resourceVersion; the
tests give Node objects shaped as a real cluster sends them (see
realistic_node()).

Every request is recorded in `requests` (method, path, query, the token
presented, the status answered, the time, and for PATCH the content type
and body), so tests can wait for what cudagate did instead of sleeping.
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


# The collections served besides Nodes: URL (group, version, resource) ->
# the kind of the objects and whether they are written (applied, deleted).
COLLECTIONS = {
    ("", "v1", "pods"): ("Pod", False),
    ("", "v1", "events"): ("Event", False),
    ("apps", "v1", "deployments"): ("Deployment", False),
    ("apps", "v1", "statefulsets"): ("StatefulSet", False),
    ("apps", "v1", "daemonsets"): ("DaemonSet", False),
    ("apps", "v1", "replicasets"): ("ReplicaSet", False),
    ("batch", "v1", "jobs"): ("Job", False),
    ("batch", "v1", "cronjobs"): ("CronJob", False),
    ("wgpolicyk8s.io", "v1alpha2", "policyreports"): ("PolicyReport", True),
    ("openreports.io", "v1alpha1", "reports"): ("Report", True),
    ("resource.k8s.io", "v1", "resourceslices"): ("ResourceSlice", False),
    ("resource.k8s.io", "v1", "resourceclaims"): ("ResourceClaim", False),
    ("resource.k8s.io", "v1", "resourceclaimtemplates"): ("ResourceClaimTemplate", False),
    ("karpenter.sh", "v1", "nodepools"): ("NodePool", False),
}

# The group whose objects are stored once and served at any version of
# `dra_versions` (under the v1 key of COLLECTIONS).
DRA_GROUP = "resource.k8s.io"

KIND_COLLECTION = {kind: key for key, (kind, _) in COLLECTIONS.items()}


def parse_path(path):
    """(group, version, namespace, resource, name) of an API path, or None."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) == 1:
        return group, version, namespace, rest[0], None
    if len(rest) == 2:
        return group, version, namespace, rest[0], rest[1]
    return None


def rbac_call(record):
    """The RBAC (verb, group, resource) of a recorded request."""
    parsed = parse_path(record["path"])
    if parsed is None:
        return None
    group, _, _, resource, name = parsed
    method = record.get("method", "GET")
    if method == "GET":
        if record["query"].get("watch") in ("1", "true"):
            verb = "watch"
        else:
            verb = "get" if name else "list"
    else:
        verb = method.lower()
    return verb, group, resource


def realistic_object(obj, manager="kube-controller-manager"):
    """A workload (from a manifest) as a live API server returns it: uid,
    creationTimestamp, generation, managedFields, and a status."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", "6a1b2c3d-0000-4000-8000-" + format(
        abs(hash((obj.get("kind"), meta["namespace"], meta.get("name")))) % 10**12, "012d"))
    meta.setdefault("creationTimestamp", "2025-11-28T08:00:00Z")
    meta.setdefault("generation", 1)
    meta["managedFields"] = [
        {"apiVersion": obj.get("apiVersion", "v1"), "fieldsType": "FieldsV1", "manager": manager,
         "operation": "Update", "time": "2025-11-28T08:00:00Z",
         "fieldsV1": {"f:metadata": {"f:labels": {}}, "f:spec": {}}},
        {"apiVersion": obj.get("apiVersion", "v1"), "fieldsType": "FieldsV1",
         "manager": "kube-controller-manager" if obj.get("kind") != "Pod" else "kubelet",
         "operation": "Update", "subresource": "status", "time": "2025-11-28T08:01:00Z",
         "fieldsV1": {"f:status": {}}},
    ]
    kind = obj.get("kind")
    if kind == "Pod":
        obj.setdefault("status", {"phase": "Running", "podIP": "10.1.2.3",
                                  "conditions": [{"type": "Ready", "status": "True"}],
                                  "startTime": "2025-11-28T08:01:00Z"})
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        replicas = obj.get("spec", {}).get("replicas", 1)
        obj.setdefault("status", {"replicas": replicas, "readyReplicas": replicas,
                                  "observedGeneration": 1})
    elif kind == "DaemonSet":
        obj.setdefault("status", {"desiredNumberScheduled": 3, "numberReady": 3})
    elif kind == "Job":
        obj.setdefault("status", {"active": 1, "startTime": "2025-11-28T08:01:00Z"})
    elif kind == "CronJob":
        obj.setdefault("status", {"lastScheduleTime": "2025-11-28T02:00:00Z"})
    return obj


def selector_matches(selector, labels):
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class ApiServerDouble:
    def __init__(self, certs_dir, tokens=("test-token",), client_ca=None, page_size=500,
                 schemas=None, dra_versions=("v1",)):
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
        # (group, version, resource) -> {(namespace, name): object}
        self.objects = {key: {} for key in COLLECTIONS}
        # (group, version, resource) -> [(rv, type, object)], for watches
        self.object_events = {key: [] for key in COLLECTIONS}
        self.dra_versions = tuple(dra_versions)
        self.applied = []           # (resource, namespace, name, body) of every apply
        self.deleted = []           # (resource, namespace, name)
        # (group, version, resource) -> a JSON schema the applied bodies must pass
        self.schemas = schemas or {}

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

            def do_PATCH(self):
                double._handle(self)

            def do_DELETE(self):
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

    def fail(self, status, count=1, retry_after=None, path=None):
        """The next `count` requests (of `path` only, when given) answered `status`."""
        with self.lock:
            self.fail_next += [(status, retry_after, path)] * count

    def put_object(self, obj):
        """Adds or replaces a workload or report (by its kind)."""
        with self.lock:
            key = KIND_COLLECTION[obj["kind"]]
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            where = (meta.get("namespace", ""), meta["name"])
            kind = "MODIFIED" if where in self.objects[key] else "ADDED"
            self.objects[key][where] = obj
            self.object_events[key].append((rv, kind, obj))
            self.lock.notify_all()

    def remove_object(self, kind, namespace, name):
        with self.lock:
            key = KIND_COLLECTION[kind]
            obj = copy.deepcopy(self.objects[key].pop((namespace, name)))
            rv = self._next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            self.object_events[key].append((rv, "DELETED", obj))
            self.lock.notify_all()

    def stored(self, resource):
        """The stored objects of a resource ("policyreports"), by (namespace, name)."""
        with self.lock:
            for (group, version, res), objects in self.objects.items():
                if res == resource:
                    return copy.deepcopy(objects)
        raise KeyError(resource)

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
        record = {"method": handler.command, "path": parsed.path, "query": query, "token": token,
                  "time": time.monotonic()}
        body = b""
        length = int(handler.headers.get("Content-Length") or 0)
        if length:
            body = handler.rfile.read(length)
        if handler.command == "PATCH":
            record["content_type"] = handler.headers.get("Content-Type", "")
            record["body"] = body.decode(errors="replace")
        with self.lock:
            self.requests.append(record)
            failure = None
            if ok:
                for i, (status, retry_after, path) in enumerate(self.fail_next):
                    if path is None or path == parsed.path:
                        failure = self.fail_next.pop(i)[:2]
                        break
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
            return self._collection(handler, parsed.path, query, record, body)
        if query.get("watch") in ("1", "true"):
            return self._watch(handler, query, record, lambda: self.events)
        return self._list(handler, query, record)

    def _continue_state(self, handler, query, record):
        """The (list resourceVersion, last key) of a continue token, or None
        when it was answered: 400 for a token that is not one, 410 for one
        older than the compaction point. Called with the lock held."""
        try:
            state = json.loads(base64.b64decode(query["continue"]))
            list_rv, after = state["rv"], state["after"]
        except (ValueError, KeyError, TypeError):
            record["status"] = 400
            self._send_json(handler, 400, status_body(400, "BadRequest", "bad continue token"))
            return None
        if list_rv < self.compacted:
            record["status"] = 410
            self._send_json(handler, 410, status_body(
                410, "Expired", "The provided continue parameter is too old to display "
                "a consistent list result. You can start a new list without the continue "
                "parameter."))
            return None
        return list_rv, after

    def _list(self, handler, query, record):
        self.list_gate.wait()
        if "continue" in query:
            self.continue_gate.wait()
        limit = min(int(query.get("limit", "0")) or 10**9, self.page_size)
        with self.lock:
            if "continue" in query:
                state = self._continue_state(handler, query, record)
                if state is None:
                    return None
                list_rv, after = state
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

    def _collection(self, handler, path, query, record, body):
        where = parse_path(path)
        key = where and (where[0], where[1], where[3])
        served_version = where and where[1]
        if where and where[0] == DRA_GROUP:
            # Stored once, served at each version the cluster has.
            key = (DRA_GROUP, "v1", where[3]) if where[1] in self.dra_versions else None
        if key not in COLLECTIONS:
            record["status"] = 404
            return self._send_json(handler, 404, status_body(
                404, "NotFound", "the server could not find the requested resource"))
        group, version, namespace, resource, name = where
        kind, writable = COLLECTIONS[key]
        method = handler.command
        if method == "GET" and name is None and query.get("watch") in ("1", "true"):
            return self._watch(handler, query, record, lambda: [
                e for e in self.object_events[key]
                if namespace is None or e[2]["metadata"].get("namespace") == namespace])
        if method == "GET" and name is None:
            return self._list_objects(handler, key, kind, namespace, query, record,
                                      served_version)
        if method == "GET":
            with self.lock:
                obj = self.objects[key].get((namespace or "", name))
            if obj is None:
                record["status"] = 404
                return self._send_json(handler, 404, status_body(
                    404, "NotFound", f'{resource} "{name}" not found'))
            record["status"] = 200
            return self._send_json(handler, 200, obj)
        if not writable or name is None or namespace is None:
            record["status"] = 405
            return self._send_json(handler, 405, status_body(405, "MethodNotAllowed",
                                                              "the server does not allow this"))
        if method == "DELETE":
            with self.lock:
                gone = self.objects[key].pop((namespace, name), None)
                if gone is not None:
                    self.deleted.append((resource, namespace, name))
                    self._next_rv()
            if gone is None:
                record["status"] = 404
                return self._send_json(handler, 404, status_body(
                    404, "NotFound", f'{resource}.{group} "{name}" not found'))
            record["status"] = 200
            return self._send_json(handler, 200, {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "group": group, "kind": resource,
                            "uid": gone["metadata"].get("uid", "")}})
        if method == "PATCH":
            return self._apply(handler, key, kind, namespace, name, query, record, body)
        record["status"] = 405
        return self._send_json(handler, 405, status_body(405, "MethodNotAllowed", "not allowed"))

    def _list_objects(self, handler, key, kind, namespace, query, record, version=None):
        if "continue" in query:
            self.continue_gate.wait()
        limit = min(int(query.get("limit", "0")) or 10**9, self.page_size)
        selector = query.get("labelSelector")
        with self.lock:
            if "continue" in query:
                state = self._continue_state(handler, query, record)
                if state is None:
                    return None
                list_rv, after = state[0], tuple(state[1])
            else:
                list_rv, after = self.rv, ("", "")
            keys = sorted(k for k, obj in self.objects[key].items()
                          if (namespace is None or k[0] == namespace) and k > after
                          and selector_matches(selector, obj["metadata"].get("labels", {})))
            page = keys[:limit]
            items = []
            for k in page:
                item = copy.deepcopy(self.objects[key][k])
                item.pop("kind", None)        # list items carry neither
                item.pop("apiVersion", None)
                items.append(item)
            meta = {"resourceVersion": str(list_rv)}
            if len(keys) > limit:
                meta["continue"] = base64.b64encode(json.dumps(
                    {"rv": list_rv, "after": list(page[-1])}).encode()).decode()
                meta["remainingItemCount"] = len(keys) - limit
        group, stored_version, _ = key
        version = version or stored_version
        record["status"] = 200
        self._send_json(handler, 200, {"kind": kind + "List",
                                       "apiVersion": f"{group}/{version}" if group else version,
                                       "metadata": meta, "items": items})

    def _apply(self, handler, key, kind, namespace, name, query, record, body):
        group, version, resource = key
        api_version = f"{group}/{version}"

        def refuse(status, reason, message):
            record["status"] = status
            return self._send_json(handler, status, status_body(status, reason, message))

        content_type = handler.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type != "application/apply-patch+yaml":
            return refuse(415, "UnsupportedMediaType",
                          f"the body of the request was in an unknown format - accepted media "
                          f"types include: application/json-patch+json, application/merge-patch"
                          f"+json, application/apply-patch+yaml (got {content_type!r})")
        manager = query.get("fieldManager", "")
        if not manager:
            return refuse(400, "BadRequest", 'PatchOptions.meta.k8s.io "" is invalid: '
                          'fieldManager: Required value: is required for apply patch')
        try:
            import yaml  # JSON is YAML; the server reads either
            obj = yaml.safe_load(body.decode())
        except Exception as e:  # noqa: BLE001 - the server's answer to any unreadable body
            return refuse(400, "BadRequest", f"error decoding YAML: {e}")
        if not isinstance(obj, dict):
            return refuse(400, "BadRequest", "the body is not an object")
        meta = obj.get("metadata") or {}
        if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
            return refuse(400, "BadRequest", f"apiVersion and kind must be {api_version} {kind}")
        if meta.get("name") != name or meta.get("namespace", namespace) != namespace:
            return refuse(400, "BadRequest", "the name and namespace of the body do not match "
                          "the request")
        schema = self.schemas.get(key)
        if schema is not None:
            import jsonschema  # python3-jsonschema
            try:
                jsonschema.validate(obj, schema)
            except jsonschema.ValidationError as e:
                return refuse(422, "Invalid", f"{kind}.{group} \"{name}\" is invalid: "
                              f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}")
        with self.lock:
            existing = self.objects[key].get((namespace, name))
            if existing is not None and query.get("force") != "true":
                owners = {f["manager"] for f in existing["metadata"].get("managedFields", [])}
                if owners - {manager}:
                    return refuse(409, "Conflict", f"Apply failed with conflicts: managers "
                                  f"{sorted(owners - {manager})}")
            stored = copy.deepcopy(obj)
            stored["metadata"]["namespace"] = namespace
            stored["metadata"]["uid"] = (existing or {}).get("metadata", {}).get(
                "uid", "7b2c3d4e-0000-4000-8000-" + format(self.rv, "012d"))
            stored["metadata"]["resourceVersion"] = str(self._next_rv())
            stored["metadata"]["managedFields"] = [{
                "apiVersion": api_version, "fieldsType": "FieldsV1", "manager": manager,
                "operation": "Apply", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "fieldsV1": {"f:metadata": {}, "f:results": {}, "f:summary": {}}}]
            self.objects[key][(namespace, name)] = stored
            self.applied.append((resource, namespace, name, obj))
            self.lock.notify_all()
        record["status"] = 200 if existing is not None else 201
        return self._send_json(handler, record["status"], stored)

    def _watch(self, handler, query, record, events):
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
                            pending = [e for e in events() if e[0] > since]
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
