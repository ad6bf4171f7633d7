"""What the tests of charts/cudagate share: where the chart and the tools
of tests/manifests are, `helm template` of the chart, its Grafana dashboard
and the Prometheus queries of its panels (with the panels that need an API
server to return data), and `Prometheus` (Debian's prometheus scraping one
cudagate over HTTPS).

Used by helm_chart_test.py and tests/cluster/helm_test.py. BINARY and SOURCE
are set by the test that runs (harness.share_paths or its setUpModule).
"""

import json
import os
import subprocess
import urllib.parse
import urllib.request

import yaml

from harness import free_port
from server_support import stop_process

BINARY = None
SOURCE = None

TIMEOUT = 120
NAMESPACE = "cudagate-system"


def chart():
    return os.path.join(SOURCE, "charts", "cudagate")


def tools():
    return os.path.join(SOURCE, "tests", "manifests", "tools")


def helm():
    return os.path.join(tools(), "helm")


def kubectl():
    return os.path.join(tools(), "kubectl")


def run(argv, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", TIMEOUT)
    return subprocess.run(argv, **kwargs)


def template(test, *args):
    out = run([helm(), "template", "cudagate", chart(), "--namespace", NAMESPACE, *args])
    test.assertEqual(out.returncode, 0, out.stderr)
    return [o for o in yaml.safe_load_all(out.stdout) if o]


# The panels whose series a cudagate reading a nodes file never makes: the
# inventory watch's restarts and relists (serve --kubeconfig or --in-cluster),
# the background audit and the reports it writes (--audit-interval and
# --write-reports against an API server). helm_chart_test.py's DashboardTest
# runs their queries and lets them come back empty; tests/cluster/helm_test.py
# runs a cudagate against a real API server (its watch restarted, its audit
# writing PolicyReports) and asserts that each query of exactly these panels
# returns data there. Between the two, every panel has returned data.
PANELS_NEEDING_AN_API_SERVER = ("Watch restarts and relists", "Background audit",
                                "Report writes")


def dashboard():
    with open(os.path.join(chart(), "files", "grafana-dashboard.json")) as f:
        return json.load(f)


def panel_queries(board):
    """(panel title, query) for every target of the dashboard, its variables
    replaced as Grafana would for the job "cudagate": the rate interval by
    one minute, the hidden timeout constant by its value."""
    variables = {v["name"]: v for v in board["templating"]["list"]}
    substitutions = {"$__rate_interval": "1m", "$job": "cudagate",
                     "$timeout": variables["timeout"]["query"]}
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for k, v in substitutions.items():
                expr = expr.replace(k, v)
            yield panel["title"], expr


class Prometheus:
    """Debian's prometheus scraping one cudagate (job "cudagate") over HTTPS
    every second, verified as the ServiceMonitor does: with the serving CA."""

    def __init__(self, work, target, ca_file, server_name="localhost"):
        self.work = work
        self.target = target
        self.ca_file = ca_file
        self.server_name = server_name
        self.port = free_port()
        self.proc = None

    def start(self):
        config = os.path.join(self.work, "prometheus.yml")
        with open(config, "w") as f:
            yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [{
                    "job_name": "cudagate", "scheme": "https", "metrics_path": "/metrics",
                    "tls_config": {"ca_file": self.ca_file, "server_name": self.server_name},
                    "static_configs": [{"targets": [self.target]}]}]}, f)
        log = open(os.path.join(self.work, "prometheus.log"), "ab")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(self.work, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}"], stdout=log, stderr=log)
        log.close()
        return self

    def stop(self):
        stop_process(self.proc)

    def query(self, expr):
        """The result of an instant query; raises OSError while Prometheus is
        not answering yet and AssertionError for a query it refuses."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=30) as res:
            answer = json.load(res)
        if answer["status"] != "success":
            raise AssertionError(f"{expr}: {answer}")
        return answer["data"]["result"]
