"""Flower and the API's /docs in a real headless Chromium (Debian's, driven by Playwright).

Flower and the API run as processes of their own on free ports, as `make up` runs them, in
front of the session's real Redis, tritonserver and worker. Screenshots are kept in
build/browser/ as the run's artifacts.

Nothing here reaches the internet, and the /docs page must not try: every request the
browser makes to another host is refused and counted (the API serves Swagger UI's files).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack import stack
from devstack.services import api_server, free_port, stop, wait_for
from devstack.stack import REPO
from docq.config import Settings
from tests.conftest import settings_env, tenant_headers
from tests.tiers import missing_tool

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package (make system); never a downloaded one
# Flags that work on these machines; Playwright adds --headless and a fresh user-data-dir.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "build" / "browser"
ELSEWHERE = re.compile(r"^(?!https?://127\.0\.0\.1[:/])")  # any host but the local one


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        missing_tool("Debian's chromium", "make test installs it")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def flower_login() -> tuple[str, str]:
    return "docq", secrets.token_urlsafe(12)


@pytest.fixture(scope="module")
def flower_url(
    settings: Settings, service_dir: Path, flower_login: tuple[str, str]
) -> Iterator[str]:
    """Flower behind basic auth, the way `python -m devstack flower` starts it."""
    port = free_port()
    env = {**settings_env(settings), "FLOWER_BASIC_AUTH": ":".join(flower_login)}
    log = service_dir / "flower.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            stack.flower(port), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        # A slow start on a busy machine is no failure: the tests below are about the pages.
        wait_for(lambda: httpx.get(url).status_code == 401, 300, f"flower (log: {log})", proc)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def api_url(settings: Settings, service_dir: Path) -> Iterator[str]:
    with api_server(settings_env(settings), service_dir / "browser-api.log") as url:
        yield url


def test_flower_asks_for_a_login_and_lists_the_workers(
    browser: Any, flower_url: str, flower_login: tuple[str, str], worker: object
) -> None:
    from playwright.sync_api import expect

    anonymous = browser.new_context()  # no login: Flower answers 401 and shows nothing
    assert anonymous.request.get(flower_url).status == 401
    anonymous.close()

    user, password = flower_login
    context = browser.new_context(http_credentials={"username": user, "password": password})
    page = context.new_page()
    answer = page.goto(flower_url)
    assert answer is not None and answer.status == 200
    # The conftest worker's Celery hostname: `cpu-<pid of this test process>@<host>`.
    row = page.get_by_role("row", name=re.compile(rf"Worker cpu-{os.getpid()}@\S+ Online"))
    for _ in range(30):  # Flower learns the workers by broadcast; reload until it has
        if row.count():
            break
        page.wait_for_timeout(1000)
        page.reload()
    expect(row).to_be_visible()
    shot = ARTIFACTS / "flower-workers.png"
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 0
    context.close()


def test_docs_page_submits_a_job(
    browser: Any, api_url: str, settings: Settings, worker: object
) -> None:
    from playwright.sync_api import expect

    # /docs has no login of its own: the page's requests carry the tenant's key.
    context = browser.new_context(extra_http_headers=tenant_headers(settings))
    elsewhere: list[str] = []

    def refuse(route: Any) -> None:
        elsewhere.append(route.request.url)
        route.abort()

    context.route(ELSEWHERE, refuse)
    page = context.new_page()
    page.goto(f"{api_url}/docs")
    expect(page.get_by_role("heading", name=re.compile("^docq"))).to_be_visible()
    assert elsewhere == [], f"/docs reached for other hosts: {elsewhere}"

    operation = page.locator("#operations-jobs-create_job_v1_jobs_post")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    body = {"model": "doc-type", "documents": [{"id": "from-docs", "text": "INVOICE No. 4711"}]}
    operation.locator("textarea.body-param__text").fill(json.dumps(body))

    # Swagger UI sends the query's default along (`?on_invalid=accept`): match the path.
    def is_create(response: Any) -> bool:
        url = response.url.split("?")[0]
        return url == f"{api_url}/v1/jobs" and response.request.method == "POST"

    with page.expect_response(is_create) as answer:
        operation.get_by_role("button", name="Execute").click()
    assert answer.value.status == 202
    created = answer.value.json()
    assert created["status"] == "queued" and created["documents"] == 1
    # Swagger UI shows the answer it got.
    status = operation.locator(".live-responses-table tbody td.response-col_status")
    expect(status).to_have_text("202")
    shot = ARTIFACTS / "docs-job-submitted.png"
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 0

    job = httpx.get(f"{api_url}/v1/jobs/{created['id']}", headers=tenant_headers(settings))
    assert job.json()["id"] == created["id"]
    context.close()
