"""A real browser for the web chat tests: one headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium) for the whole pytest session, with waits that poll the
page without blocking the asyncio loop the slixmpp peers run on, and that fail saying what
was awaited, what the page shows as its error line, and the browser console.

Screenshots go to $WEBCHAT_SCREENSHOTS when set (docs/images is made that way), else to a
temporary directory named in the test output.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 15.0  # seconds for anything the page should show


class Page:
    """The browser's one tab, with bounded waits."""

    def __init__(self, driver, screenshots: Path):
        self.driver = driver
        self.screenshots = screenshots

    def open(self, url: str) -> None:
        self.driver.get(url)

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def describe(self) -> str:
        """What the page says about itself, for failure messages."""
        try:
            state = self.js("""
                const error = document.getElementById('error');
                const status = document.getElementById('status-line');
                const login = document.getElementById('login-error');
                return JSON.stringify({url: location.href,
                    error: error && !error.hidden ? error.textContent : null,
                    loginError: login ? login.textContent : null,
                    status: status ? status.textContent : null,
                    body: document.body ? document.body.dataset : null});""")
        except Exception as error:  # the page itself may be what broke
            state = f"(page state unreadable: {error})"
        try:
            console = self.console()[-15:]
        except Exception:
            console = []
        return f"page: {state}; console: {json.dumps(console)}"

    def console(self) -> list[str]:
        """The browser console's entries since the last call."""
        return [f"{e['level']} {e['message']}" for e in self.driver.get_log("browser")]

    async def wait(self, expression: str, what: str, *args, timeout: float = WAIT):
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = self.js(f"return ({expression});", *args)
            if value:
                return value
            if asyncio.get_running_loop().time() >= deadline:
                raise AssertionError(f"not within {timeout}s: {what}. {self.describe()}")
            await asyncio.sleep(0.05)

    def fill(self, css: str, text: str) -> None:
        from selenium.webdriver.common.by import By
        element = self.driver.find_element(By.CSS_SELECTOR, css)
        element.clear()
        element.send_keys(text)

    def click(self, css: str) -> None:
        """A real click; the page redraws its lists on every change, so an element found may
        be replaced before the click lands: then it is found again."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.common.by import By
        for attempt in range(5):
            try:
                self.driver.find_element(By.CSS_SELECTOR, css).click()
                return
            except StaleElementReferenceException:
                if attempt == 4:
                    raise

    def choose_file(self, css: str, path: Path) -> None:
        """A file input, hidden or not (chromedriver does not require it to be visible)."""
        from selenium.webdriver.common.by import By
        self.driver.find_element(By.CSS_SELECTOR, css).send_keys(str(path))

    def screenshot(self, name: str) -> Path:
        path = self.screenshots / name
        self.driver.save_screenshot(str(path))
        return path


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium, started once per session; each test opens its own page in it."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("the selenium Python package")
    if missing:
        pytest.fail(f"the browser tests need {', '.join(missing)}: run scripts/install-deps.sh", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # Root in a container: no sandbox; the tests' HTTPS certificate is self-signed.
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--ignore-certificate-errors", "--window-size=1180,720", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    except Exception as error:
        pytest.fail(f"Chromium did not start through {CHROMEDRIVER}: {error}", pytrace=False)
    configured = os.environ.get("WEBCHAT_SCREENSHOTS")
    screenshots = Path(configured) if configured else Path(tempfile.mkdtemp(prefix="webchat-screenshots-"))
    screenshots.mkdir(parents=True, exist_ok=True)
    print(f"\nweb chat screenshots: {screenshots}")
    try:
        yield Page(driver, screenshots)
    finally:
        driver.quit()


def strophe_js() -> Path:
    """Debian's libjs-strophe."""
    path = Path("/usr/share/javascript/strophe/strophe.js")
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/install-deps.sh (libjs-strophe)", pytrace=False)
    return path


def copy_strophe(into: Path) -> None:
    shutil.copy(strophe_js(), into / "strophe.js")
