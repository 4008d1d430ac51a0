#!/usr/bin/env python3
"""The report in a real browser: Debian's Chromium, headless, driven by Playwright with its
networking disabled. Checks that the page has no console errors and makes no request, that the
key numbers are on it, that a click on a sample row shows its trace, that the filter box filters,
and saves screenshots. Run by scripts/report_browser_test.sh, which makes the pages:
    report_browser_test.py OUT_DIR   (OUT_DIR holds results.jsonl, report.html, fuzz.html)
"""
import json
import os
import pathlib
import sys

from playwright.sync_api import sync_playwright

out = pathlib.Path(sys.argv[1]).resolve()
chromium = os.environ.get("REFEREE_CHROMIUM", "/usr/bin/chromium")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def num(v):
    """The report's number format: integers bare, others to four decimals, zeros trimmed."""
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.4f}".rstrip("0").rstrip(".")


def open_page(browser, name):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None,
    )
    page.goto((out / name).as_uri())
    page.wait_for_load_state("load")
    return page, errors, requests


results = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
rewards = [r["reward"] for r in results if isinstance(r.get("reward"), (int, float))]
mean = sum(rewards) / len(rewards)
errors_n = sum(r["status"] == "error" for r in results)

with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=chromium,
        headless=True,
        # No network: every connection goes to a closed port, every name fails to resolve.
        args=["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"],
    )

    page, errors, requests = open_page(browser, "report.html")
    cards = {
        page.locator(".card .k").nth(i).inner_text(): page.locator(".card .v").nth(i).inner_text()
        for i in range(page.locator(".card").count())
    }
    expect(cards.get("rows") == str(len(results)), f"rows card {cards.get('rows')} != {len(results)}")
    expect(cards.get("mean reward") == num(mean), f"mean card {cards.get('mean reward')} != {num(mean)}")
    expect(cards.get("error") == str(errors_n), f"error card {cards.get('error')} != {errors_n}")
    expect("flat-group fraction" in cards, "no group cards")
    rows = page.locator("#samples tr.row")
    expect(rows.count() == len(results), f"{rows.count()} sample rows, {len(results)} results")
    first_detail = page.locator("#samples tr.detail").first
    expect(not first_detail.is_visible(), "the trace is shown before a click")
    rows.first.click()
    expect(first_detail.is_visible(), "a click does not show the trace")
    trace_text = first_detail.inner_text()
    root = results[0]["trace"]
    expect(root["type"] in trace_text, f"the trace does not name its root {root['type']}")
    for child in root.get("children", []):
        if child.get("name"):
            expect(child["name"] in trace_text, f"the trace lacks component {child['name']}")
    page.screenshot(path=str(out / "report-expanded.png"), full_page=True)
    rows.first.click()
    expect(not first_detail.is_visible(), "a second click does not hide the trace")
    page.fill('input.filter[data-table="samples"]', "invalid_json")
    visible = sum(rows.nth(i).is_visible() for i in range(rows.count()))
    expect(visible == 1, f"filtering for invalid_json leaves {visible} rows")
    expect(not errors, f"console errors: {errors}")
    expect(not requests, f"network requests: {requests}")
    page.screenshot(path=str(out / "report-filtered.png"))

    page, errors, requests = open_page(browser, "fuzz.html")
    body = page.inner_text("body")
    expect("FAILED" in body, "the fuzz verdict is missing")
    expect("answer_listing" in body and "0.75" in body, "the family rates are missing")
    fam = page.locator("tr.row.expandable").first
    fam.click()
    expect(page.locator("tr.detail").first.is_visible(), "a family row does not expand")
    expect("The answer is 1, 2, 3" in page.locator("tr.detail").first.inner_text(), "no example")
    expect(not errors, f"console errors on the fuzz page: {errors}")
    expect(not requests, f"network requests on the fuzz page: {requests}")
    page.screenshot(path=str(out / "fuzz.png"), full_page=True)
    browser.close()

if failures:
    print(f"report browser test: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"report browser test: ok (screenshots in {out})")
