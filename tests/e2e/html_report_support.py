"""What the tests of HTML pages in headless Chromium share: Debian's
chromium run on a page (its console messages, screenshots and DOM dumps), a
PNG decoder for the screenshots, a parser of the audit matrix's markup
contract, the matrix cells' colours, and `HtmlReportTestCase` (a temporary
folder per test, `cudagate audit --format html` written there, a page
rendered and parsed, a screenshot checked for drawn colours).

Used by html_report_test.py and plan_test.py; BINARY is set by the test
that runs.
"""

import html.parser
import os
import shutil
import struct
import subprocess
import tempfile
import unittest
import zlib

BINARY = ""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0"]


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise AssertionError("chromium is not installed: run scripts/install-deps.sh")
    return path


def run_chromium(page, *args, workdir):
    profile = tempfile.mkdtemp(dir=workdir)
    result = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
                             "file://" + os.path.abspath(page)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"chromium exit {result.returncode}:\n{result.stderr[-3000:]}")
    return result


def console_messages(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, colour = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


class MatrixParser(html.parser.HTMLParser):
    """Counts what the report's markup contract names in the DOM Chromium dumped."""

    def __init__(self):
        super().__init__()
        self.rows, self.groups, self.cells, self.articles = [], 0, {}, 0
        self.in_matrix = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and a.get("id") == "matrix":
            self.in_matrix = True
        if not self.in_matrix:
            if tag == "article":
                self.articles += 1
            return
        if tag == "tr" and "workload" in classes:
            self.rows.append(a.get("data-verdict"))
        elif tag == "th" and "group" in classes:
            self.groups += 1
        elif tag == "td" and "cell" in classes:
            for c in classes:
                if c != "cell":
                    self.cells[c] = self.cells.get(c, 0) + 1
            if not a.get("title"):
                raise AssertionError("a matrix cell without a hover reason")

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_matrix = False


class HtmlReportTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cudagate-html-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def report(self, args, cwd=None):
        result = subprocess.run([BINARY, "audit", "--offline", *args, "--format", "html"], capture_output=True,
                                text=True, timeout=300, cwd=cwd,
                                env=dict(os.environ, SOURCE_DATE_EPOCH="1764584444"))
        self.assertIn(result.returncode, (0, 1), result.stderr)
        path = os.path.join(self.tmp, "report.html")
        with open(path, "w") as f:
            f.write(result.stdout)
        return path

    def render(self, page, width, height):
        png = os.path.join(self.tmp, "shot.png")
        shot = run_chromium(page, f"--window-size={width},{height}", f"--screenshot={png}",
                            workdir=self.tmp)
        self.assertEqual(console_messages(shot.stderr), [])
        with open(png, "rb") as f:
            image = decode_png(f.read())
        dom = run_chromium(page, "--dump-dom", workdir=self.tmp)
        self.assertEqual(console_messages(dom.stderr), [])
        parser = MatrixParser()
        parser.feed(dom.stdout)
        return image, parser

    def assert_not_blank(self, image, colours):
        width, height, rows = image
        self.assertGreater(width, 0)
        pixels = [p for row in rows[::4] for p in row[::4]]
        background = max(set(pixels), key=pixels.count)
        drawn = sum(1 for p in pixels if p != background)
        self.assertGreater(drawn / len(pixels), 0.05, "the screenshot is nearly blank")
        present = set(pixels)
        for name, rgb in colours.items():
            near = any(all(abs(a - b) <= 6 for a, b in zip(rgb, p)) for p in present)
            self.assertTrue(near, f"no {name} pixel {rgb} in the screenshot")


CELL_COLOURS = {"compatible cell": (0xc8, 0xe6, 0xc9), "incompatible cell": (0xff, 0xcd, 0xd2),
                "not-a-candidate cell": (0xec, 0xef, 0xf1)}
