"""How heavy the maintainer page is (peers/page.py): its size, and the time to first render in
headless Chromium (Debian's chromium and chromedriver, driven by selenium as app/tests' HTML test
does), for the index and for the largest per-domain detail page.

    /usr/bin/python3 peers/page_bench.py --report R.json [--judged judged.json] [--out DIR] [--runs 3]
                                         [--screenshot index.png] [--detail-screenshot detail.png]
    /usr/bin/python3 peers/page_bench.py --page DIR        # an already written page

Prints one line per page: its size in MB and, over --runs loads (the best and the median), the
first contentful paint, DOMContentLoaded and the frame after the whole page is laid out, in ms from navigation start; exit 1 when
the index is over 3 MB or, in the median load, not laid out and painted whole within 2 s (issue 44's
bound: the stricter of the two times, as a first paint comes early even for a page of 14 MB, whose
parse and layout take seconds), 2 for bad input."""

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT_BYTES = 3_000_000
LIMIT_MS = 2000


def browser(width=1400, height=1000):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}", "--hide-scrollbars",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--no-first-run",
                 "--disable-background-networking", "--disable-sync", "--disable-component-update",
                 "--disable-default-apps"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


# The first contentful paint may be reported after the load event: wait for it (a buffered
# observer sees one that came before), then read the navigation's own timings.
TIMING = """
var done = arguments[arguments.length - 1];
function report(fcp) {
  // The whole page laid out and painted: a frame after the load event and the first paint.
  requestAnimationFrame(function () { requestAnimationFrame(function () {
    var n = performance.getEntriesByType('navigation')[0];
    done([fcp, n.domContentLoadedEventEnd, Math.max(n.loadEventEnd, performance.now()),
          performance.getEntriesByType('resource').length]);
  }); });
}
new PerformanceObserver(function (list) {
  var e = list.getEntriesByName('first-contentful-paint')[0];
  if (e) report(e.startTime);
}).observe({type: 'paint', buffered: true});
"""


def measure(driver, path, runs):
    """[(first contentful paint, DOMContentLoaded, load) in ms] over `runs` fresh loads of `path`."""
    out = []
    for _ in range(runs):
        driver.get("about:blank")
        driver.get(Path(path).resolve().as_uri())
        fcp, dcl, load, fetched = driver.execute_async_script(TIMING)
        if fetched:
            raise SystemExit(f"peers/page_bench.py: {path} fetched {fetched} resource(s): it must be self-contained")
        out.append((fcp, dcl, load))
    return out


def line(path, timings):
    size = Path(path).stat().st_size
    med = [statistics.median(t[i] for t in timings) for i in range(3)]
    best = [min(t[i] for t in timings) for i in range(3)]
    return size, med, (f"{Path(path).name}: {size / 1e6:.2f} MB; first contentful paint {med[0]:.0f} ms "
                       f"(best {best[0]:.0f}), DOMContentLoaded {med[1]:.0f} ms, all laid out and painted {med[2]:.0f} ms "
                       f"(median of {len(timings)} loads in headless Chromium)")


def screenshot(driver, path, target, height_cap=5000):
    driver.get(Path(path).resolve().as_uri())
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height, 1000), height_cap))
    driver.save_screenshot(str(target))
    driver.set_window_size(1400, 1000)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", help="the conform JSON report: write the page from it first")
    ap.add_argument("--judged", help="peers/judged.py --json output, passed to peers/page.py")
    ap.add_argument("--out", help="where to write the page (default: a temporary folder)")
    ap.add_argument("--page", help="an already written page folder (index.html and its detail pages)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--screenshot", help="a PNG of the index's first 5000 pixels")
    ap.add_argument("--detail-screenshot", help="a PNG of the largest detail page's first 5000 pixels")
    args = ap.parse_args(argv)
    if not args.page and not args.report:
        ap.error("--report or --page")
    folder = Path(args.page or args.out or tempfile.mkdtemp(prefix="dm-page-"))
    if not args.page:
        cmd = [sys.executable, str(HERE / "page.py"), "--report", args.report, "--out", str(folder)]
        if args.judged:
            cmd += ["--judged", args.judged]
        try:
            if subprocess.run(cmd, timeout=300).returncode != 0:
                return 2
        except subprocess.TimeoutExpired:
            print(f"peers/page_bench.py: peers/page.py did not write {folder} within 300 s", file=sys.stderr)
            return 2
    index = folder / "index.html"
    if not index.is_file():
        print(f"peers/page_bench.py: no {index}", file=sys.stderr)
        return 2
    details = sorted((p for p in folder.glob("*.html") if p.name != "index.html"), key=lambda p: p.stat().st_size)
    driver = browser()
    driver.set_script_timeout(30)
    driver.set_page_load_timeout(60)  # a page that never loads is an error, not a wait
    try:
        size, med, text = line(index, measure(driver, index, args.runs))
        print(text)
        if details:
            print("largest detail page: " + line(details[-1], measure(driver, details[-1], args.runs))[2])
            total = sum(p.stat().st_size for p in details)
            print(f"detail pages: {len(details)}, {total / 1e6:.2f} MB together (each loaded only when followed)")
        if args.screenshot:
            screenshot(driver, index, args.screenshot)
        if args.detail_screenshot and details:
            screenshot(driver, details[-1], args.detail_screenshot)
    finally:
        driver.quit()
    ok = size <= LIMIT_BYTES and max(med[0], med[2]) <= LIMIT_MS
    print(f"index: {'within' if ok else 'OVER'} the bound ({LIMIT_BYTES / 1e6:.0f} MB, painted whole in {LIMIT_MS} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
