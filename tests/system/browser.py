"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: NUL-separated JSON on
fds 3 and 4, no WebSocket library needed): open a page at a width, read its DOM, take a screenshot, and collect
every console error, uncaught exception, failed request and CSP violation the browser reports."""

import base64
import fcntl
import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def _wire(commands: int, answers: int) -> None:
    """In the child: its fd 3 reads our commands, its fd 4 writes to us (copied high first: no clash with 3, 4)."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands, answers)]
    for target, fd in zip((3, 4), high, strict=True):
        os.dup2(fd, target)


class Browser:
    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The browser reads commands on its fd 3 and writes answers and events on its fd 4.
        self.process = subprocess.Popen(
            ["chromium", *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=partial(_wire, to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._ids = iter(range(1, 1 << 30))
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.problems: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_browser, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                waiting = self._answers.pop(message["id"])
            waiting.put(message)
            return
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.problems.append(f"console.{params['type']}: {params.get('args')}")
        elif method == "Runtime.exceptionThrown":
            self.problems.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.problems.append(f"log: {params['entry']['text']} ({params['entry'].get('url')})")
        elif method == "Network.loadingFailed":
            self.problems.append(f"request failed: {params.get('errorText')} {params.get('blockedReason') or ''}")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            self.problems.append(f"HTTP {params['response']['status']}: {params['response']['url']}")
        self.events.put(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> dict[str, Any]:
        number = next(self._ids)
        answer: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._answers[number] = answer
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        reply = answer.get(timeout=60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def open(self, url: str, width: int, height: int = 900) -> None:
        """Navigate at a viewport `width` px wide and wait for that page's load event."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
        self.send("Emulation.setDeviceMetricsOverride", metrics, session=True)
        self._drain()
        navigated = self.send("Page.navigate", {"url": url}, session=True)["loaderId"]
        self._loaded(lambda loader: loader == navigated)

    def navigate_by(self, script: str) -> None:
        """Run `script` (a form submit, a click) and wait for the page it leads to to load."""
        self._drain()
        current = self.send("Page.getFrameTree", session=True)["frameTree"]["frame"]["loaderId"]
        self.evaluate(script)
        self._loaded(lambda loader: loader != current)

    def _drain(self) -> None:
        while not self.events.empty():
            self.events.get_nowait()

    def _loaded(self, ours: Callable[[str], bool]) -> None:
        """Until the load event of the page whose navigation `ours` knows by its loader id: the load event of a page
        before it (the new tab's about:blank, reported late) is not taken for it. Events come in order: a document's
        commit (`Page.frameNavigated`), then its load."""
        committed = False
        while True:
            event = self.events.get(timeout=60)
            method, params = event.get("method"), event.get("params", {})
            if method == "Page.frameNavigated" and "parentId" not in params["frame"]:
                committed = ours(params["frame"]["loaderId"])
            elif method == "Page.loadEventFired" and committed:
                return

    def evaluate(self, expression: str) -> Any:
        """The value of `expression` in the page (a promise is awaited)."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.send("Runtime.evaluate", params, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def dom(self) -> str:
        html: str = self.evaluate("document.documentElement.outerHTML")
        return html

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, queue.Empty):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
