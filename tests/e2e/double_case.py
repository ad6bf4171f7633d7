"""The fixture of every test that runs cudagate against the API server
double (apiserver_double.py; there is no kube-apiserver on the machines
these tests run on): one set of development certificates per test class;
per test, a case directory that sees them as certs/, a started double, and
the cudagate processes the test started, each stopped after the test and
required to exit 0.

A test class says what its double is through `double_options()` (the
keyword arguments of ApiServerDouble: page size, tokens, client CA, DRA
versions) and what the double holds before it starts through `fill()`.
"""

import os
import shutil
import tempfile
import unittest

import harness
import server_support
from apiserver_double import ApiServerDouble


class DoubleTestCase(unittest.TestCase):
    prefix = "cudagate-double-"  # of the class's temporary directory

    @classmethod
    def setUpClass(cls):
        harness.share_paths()
        cls.shared = tempfile.mkdtemp(prefix=cls.prefix)
        cls.certs = os.path.join(cls.shared, "certs")
        server_support.make_certs(cls.certs)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)

    def double_options(self):
        return {}

    def fill(self):
        """Puts what the double holds from its first request."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=self.shared)
        os.symlink(self.certs, os.path.join(self.dir, "certs"))
        self.api = ApiServerDouble(self.certs, **self.double_options())
        self.webhooks = []  # objects with stop() -> exit status and log_tail()
        self.fill()
        self.api.start()

    def tearDown(self):
        try:
            stopped = [(webhook, webhook.stop()) for webhook in self.webhooks]
        finally:
            self.api.stop()
        for webhook, status in stopped:
            self.assertEqual(status, 0, f"cudagate exit status {status}:\n{webhook.log_tail()}")
