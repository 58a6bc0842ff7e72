"""The serve params section: every bound of ServeConfig.validate is checked when params load."""

from __future__ import annotations

import pytest

from uniret.config import Params
from uniret.config.loader import ConfigError


def _section(values: dict):
    return Params(raw={"serve": values}, profile="tiny").section("serve")


def test_defaults_pass():
    cfg = _section({})
    assert cfg.port == 8000 and cfg.search_threads() > 0
    assert cfg.watch_interval_s > 0  # every process follows production unless a person turns it off


@pytest.mark.parametrize(
    "values, message",
    [
        ({"port": 0}, "port must be in 1..65535"),
        ({"max_k": 0}, "max_k must be positive"),
        ({"default_k": 50, "max_k": 10}, r"default_k \(50\) cannot exceed max_k"),
        ({"onnx_threads": 0}, "onnx_threads must be positive or null"),
        ({"gil_searches": -1}, r"gil_searches must be >= 0 \(0: on the event loop\)"),
        ({"request_timeout_s": 0}, "request_timeout_s positive"),
        # these three sat after a `return` in search_threads() and were never checked
        ({"probe_query": "   "}, "probe_query must be a non-empty query"),
        ({"watch_interval_s": -1.0}, "watch_interval_s must be >= 0"),
        # several workers without the pointer watch: a reload call would reach one of them
        ({"workers": 2, "watch_interval_s": 0}, "workers 2 needs watch_interval_s > 0"),
        ({"admin_token": ""}, "admin_token must be null or a non-empty string"),
    ],
)
def test_bad_serve_value_names_the_bound(values, message):
    with pytest.raises(ConfigError, match=message):
        _section(values)
