"""The GPU check's report (uniret.ops.gpu_check): steps, fallbacks, gpu_check.json and gpu_check.md."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger("uniret.gpu_check")

SCHEMA = 1
REPORT_JSON = "gpu_check.json"
REPORT_MD = "gpu_check.md"


@dataclass
class StepRecord:
    """One step of the check: what it measured, or why it failed or was skipped."""

    name: str
    status: str = "ok"  # ok | failed | skipped
    seconds: float | None = None
    peak_gpu_memory_mib: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Report:
    """The whole check's findings; `write` renders gpu_check.json and gpu_check.md."""

    device: dict[str, Any]
    versions: dict[str, str]
    settings: dict[str, Any]
    command: str
    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    steps: list[StepRecord] = field(default_factory=list)
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    out_dir: Path | None = None  # set: both reports rewritten after every step, so a killed run leaves its steps

    def fallback(self, step: str, wanted: str, used: str, why: str) -> None:
        """Record that `step` could not do `wanted` and did `used` instead (said in both reports)."""
        self.fallbacks.append({"step": step, "wanted": wanted, "used": used, "why": why})
        log.warning("fallback in %s: wanted %s, used %s (%s)", step, wanted, used, why)

    @property
    def ok(self) -> bool:
        return all(s.status != "failed" for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "dry_run": self.device.get("type") != "cuda",
            "command": self.command,
            "started": self.started,
            "device": self.device,
            "versions": self.versions,
            "settings": self.settings,
            "steps": [vars(s) for s in self.steps],
            "fallbacks": self.fallbacks,
        }

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        """Write both reports atomically into `out_dir`."""
        from uniret.utils.files import atomic_write_json, atomic_write_text

        out_dir.mkdir(parents=True, exist_ok=True)
        doc = self.to_json()
        return (atomic_write_json(out_dir / REPORT_JSON, doc),
                atomic_write_text(out_dir / REPORT_MD, render_markdown(doc)))


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


# per-step figures worth a column of their own in the Markdown table
HEADLINE = ("docs_per_s", "queries_per_s", "steps", "step_seconds_median", "device")


def render_markdown(doc: dict[str, Any]) -> str:
    """The Markdown report of a gpu_check.json document."""
    dev = doc["device"]
    where = (f"{dev.get('name')} (compute capability {dev.get('capability')}, bf16: {dev.get('bf16')}, "
             f"{_fmt(dev.get('total_memory_gib'))} GiB)" if dev.get("type") == "cuda"
             else "cpu: DRY RUN (--allow-cpu), no GPU figure below")
    lines = [f"# GPU check: {'passed' if doc['ok'] else 'FAILED'}", "",
             f"- device: {where}", f"- started: {doc['started']}", f"- command: `{doc['command']}`",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(doc["versions"].items())),
             "- settings: " + ", ".join(f"{k} {_fmt(v)}" for k, v in doc["settings"].items()), "",
             "| step | status | seconds | peak GPU MiB | " + " | ".join(HEADLINE) + " |",
             "|---|---|---|---|" + "---|" * len(HEADLINE)]
    for step in doc["steps"]:
        d = step["details"]
        cells = [step["name"], step["status"], _fmt(step["seconds"]), _fmt(step["peak_gpu_memory_mib"]),
                 *(_fmt(d.get(k)) for k in HEADLINE)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Fallbacks", ""]
    lines += [f"- {f['step']}: wanted {f['wanted']}; used {f['used']} ({f['why']})" for f in doc["fallbacks"]] or ["- none"]
    problems = [s for s in doc["steps"] if s["status"] != "ok"]
    if problems:
        lines += ["", "## Failed or skipped", ""]
        lines += [f"- {s['name']} ({s['status']}): {s['error']}" for s in problems]
    lines += ["", "## Details", ""]
    for step in doc["steps"]:
        if step["details"]:
            lines.append(f"- {step['name']}: `{json.dumps(step['details'], sort_keys=True)}`")
    return "\n".join(lines) + "\n"


class StepTimeout(BaseException):
    """A step ran past its time limit (raised in it by SIGALRM; a BaseException so no step swallows it)."""


def _raise_timeout(signum, frame):
    raise StepTimeout


def run_step(report: Report, name: str, fn: Callable[[], dict[str, Any] | None],
             timeout_s: float | None = None) -> StepRecord:
    """Run one step, timed (CUDA synchronised) and with its peak GPU memory; a failure is recorded,
    not raised, so one broken piece does not hide the others. A step returning {"skipped": why}
    is recorded as skipped. With `timeout_s` the step is interrupted (SIGALRM, main thread) and
    recorded as failed once it runs longer; a hang inside C code outlives it, which is why
    scripts/gpu_check.sh also kills the whole check at its own limit."""
    import torch

    record = StepRecord(name)
    alarm = bool(timeout_s) and threading.current_thread() is threading.main_thread()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    log.info("gpu-check step %s", name)
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _raise_timeout) if alarm else None
    try:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, float(timeout_s))
        details = fn() or {}
        if cuda:
            torch.cuda.synchronize()
        if "skipped" in details:
            record.status, record.error = "skipped", str(details.pop("skipped"))
        record.details = details
    except StepTimeout:
        record.status, record.error = "failed", f"StepTimeout: stopped at its {timeout_s:g} s limit"
        log.error("gpu-check step %s stopped at its %g s limit", name, timeout_s)
    except Exception as exc:  # recorded in the report; the run's exit status says it failed
        record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
        log.error("gpu-check step %s failed:\n%s", name, traceback.format_exc())
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    record.seconds = round(time.perf_counter() - start, 3)
    if cuda:
        record.peak_gpu_memory_mib = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    report.steps.append(record)
    if report.out_dir is not None:
        report.write(report.out_dir)
    return record
