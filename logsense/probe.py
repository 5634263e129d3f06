"""Readiness as an operator checks it: the server answers on its port, not only in its log.

One check is `GET /health`, then a one-token request: `POST /v1/chat/completions` (the model
named by `GET /v1/models`) or SGLang's native `POST /generate`. Every request has a timeout,
proxies are never used (a proxy that answers for localhost is a classic false alarm), and only
loopback addresses are probed unless the caller allows others. No redirect is followed: a
redirect could leave loopback, and one that turns a POST into a GET would pass for an answer.
`tail --probe` repeats the check a bounded number of times, some seconds apart.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from logsense.errors import UsageError

APIS = ("chat", "generate")
MAX_BODY = 1 << 20  # bytes of an answer read at most


@dataclass(frozen=True)
class ProbeConfig:
    url: str  # scheme://host:port, no path
    api: str = "chat"
    timeout: float = 10.0  # seconds per request
    tries: int = 8
    every: float = 15.0  # seconds between two tries


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str


def config(url: str, api: str = "chat", timeout: float = 10.0, tries: int = 8, every: float = 15.0,
           any_host: bool = False) -> ProbeConfig:
    """A checked probe configuration; a usage error names what is wrong."""
    if api not in APIS:
        raise UsageError(f"--probe-api {api!r}: choose from {', '.join(APIS)}")
    if not 0 < timeout <= 600:
        raise UsageError("--probe-timeout: give a time between 0 and 10 minutes")
    if not 1 <= tries <= 1000:
        raise UsageError("--probe-tries: give a number from 1 to 1000")
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--probe {url!r}: give the server's address, e.g. http://127.0.0.1:30000")
    if not any_host and not _loopback(parts.hostname):
        raise UsageError(f"--probe {url!r}: not a loopback address; add --probe-any-host to probe another host")
    base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return ProbeConfig(base, api, timeout, tries, every)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(cfg: ProbeConfig) -> ProbeResult:
    """One round: /health, then a one-token request. Never raises for what the server does."""
    status, body = _request(cfg, "GET", "/health")
    if status != 200:
        return ProbeResult(False, f"GET /health: {_what(status, body)}")
    if cfg.api == "generate":
        payload: dict[str, Any] = {"text": "Hi", "sampling_params": {"max_new_tokens": 1, "temperature": 0}}
        status, body = _request(cfg, "POST", "/generate", payload)
        if status == 200 and isinstance(_json(body), dict) and "text" in _json(body):
            return ProbeResult(True, "GET /health 200; POST /generate answered")
        return ProbeResult(False, f"POST /generate: {_what(status, body)}")
    model = _model(cfg)
    payload = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "temperature": 0}
    status, body = _request(cfg, "POST", "/v1/chat/completions", payload)
    answer = _json(body)
    if status == 200 and isinstance(answer, dict) and answer.get("choices"):
        return ProbeResult(True, "GET /health 200; POST /v1/chat/completions answered")
    return ProbeResult(False, f"POST /v1/chat/completions: {_what(status, body)}")


def _model(cfg: ProbeConfig) -> str:
    status, body = _request(cfg, "GET", "/v1/models")
    data = _json(body) if status == 200 else None
    try:
        return str(data["data"][0]["id"])  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        return "default"


def _request(cfg: ProbeConfig, method: str, path: str, payload: dict | None = None) -> tuple[int | None, str]:
    """(HTTP status or None, body or the reason there is none)."""
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(cfg.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    try:
        with opener.open(req, timeout=cfg.timeout) as resp:
            return resp.status, resp.read(MAX_BODY).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        if 300 <= e.code < 400:
            return e.code, f"redirects to {e.headers.get('Location', '?')} (not followed)"
        try:
            body = e.read(MAX_BODY).decode("utf-8", "replace")
        except OSError:
            body = ""
        return e.code, body
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, TimeoutError):
            return None, f"no answer in {cfg.timeout:g} s"
        return None, str(getattr(reason, "strerror", None) or reason)
    except TimeoutError:
        return None, f"no answer in {cfg.timeout:g} s"
    except (OSError, ValueError) as e:
        return None, str(e)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Turns every redirect into the 3xx answer it is."""

    def redirect_request(self, *_: object) -> None:
        return None


def _json(body: str):
    try:
        return json.loads(body)
    except ValueError:
        return None


def _what(status: int | None, body: str) -> str:
    text = " ".join(body.split())[:160]
    return f"HTTP {status}: {text}" if status is not None else text
