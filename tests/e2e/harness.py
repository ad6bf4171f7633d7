"""What the end-to-end test scripts share: the command line every one of
them takes (--binary, --source, test names), the summary line ctest reads,
and a free loopback port."""

import argparse
import os
import socket
import sys
import unittest

BINARY = None
SOURCE = None


def free_port(host="127.0.0.1"):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def share_paths():
    """Gives every end-to-end module loaded so far the BINARY and SOURCE of
    the command line, for the support modules' helpers (a cluster test
    starts its webhooks through kube_support's, which reads
    kube_support.BINARY)."""
    directory = os.path.dirname(os.path.abspath(__file__))
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if (os.path.dirname(os.path.abspath(path)) == directory
                and hasattr(module, "BINARY") and hasattr(module, "SOURCE")):
            module.BINARY, module.SOURCE = BINARY, SOURCE


def main(module_name):
    """Runs the tests of the module `module_name` (its __doc__ is the
    description) after setting its BINARY and SOURCE; prints "N passed,
    M failed" last and returns the exit status."""
    module = sys.modules[module_name]
    parser = argparse.ArgumentParser(description=module.__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the cudagate binary")
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("tests", nargs="*", help="test names (default: all)")
    args = parser.parse_args()
    global BINARY, SOURCE
    BINARY = os.path.abspath(args.binary)
    SOURCE = os.path.abspath(args.source)
    module.BINARY, module.SOURCE = BINARY, SOURCE

    loader = unittest.TestLoader()
    if args.tests:
        suite = loader.loadTestsFromNames(args.tests, module)
    else:
        suite = loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    # A test with several failed subtests is one failed test.
    failed = len({getattr(test, "test_case", test).id()
                  for test, _ in result.failures + result.errors}
                 | {test.id() for test in result.unexpectedSuccesses})
    passed = result.testsRun - failed - len(result.skipped)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
