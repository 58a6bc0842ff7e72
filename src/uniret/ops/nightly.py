"""The nightly retraining run: refresh, `dvc repro`, gate against production, promote, report.

Exit codes (also in `uniret nightly --help`): 0 promoted (or the candidate already is
production), 3 blocked (by the gate, or because a rollback rejected the candidate's content),
4 promotion paused, 1 failed, 75 another nightly run holds the lock.

A blocked or paused night refreshes production's corpus (params nightly.refresh_corpus,
uniret.stages.corpus_refresh): today's documents indexed with production's own model, checked and
promoted; the exit code stays 3 or 4 and the summary says what the refresh did.

Before promoting, the run reads the registry's control state (uniret.registry.control): while
promotion is paused (`uniret registry pause`, or params `nightly.promote: false`) every stage, the
gate and the report still run and nothing is promoted; a candidate whose content a rollback
rejected is not promoted again and the summary names that rollback and its time.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from uniret.config.nightly import NightlyConfig
from uniret.config.paths import params_dir, resolve_path
from uniret.core.errors import StageFailed
from uniret.core.jsonio import read_json
from uniret.ops.nightly_codes import (  # noqa: F401 - the CLI's codes
    EXIT_BLOCKED,
    EXIT_FAILED,
    EXIT_LOCKED,
    EXIT_PAUSED,
    EXIT_PROMOTED,
)
from uniret.ops.nightly_metrics import record_outcome
from uniret.ops.nightly_notify import notify_outcome
from uniret.registry.configured import registry_root
from uniret.registry.control import read_control
from uniret.registry.pointer import read_pointer
from uniret.runtime import ARTIFACTS_ENV, StageContext
from uniret.stages import run_stage
from uniret.stages.gate import DECISION_JSON, INDEX_BUNDLE
from uniret.stages.promote import blocked_summary
from uniret.utils.files import hash_path
from uniret.utils.locks import HeldLock, LockHeld, file_lock
from uniret.utils.parent_watch import NIGHTLY_PID_ENV, die_with_parent

log = logging.getLogger("uniret.ops")

DVC_ARTIFACTS = "artifacts"  # where dvc.yaml puts every stage's outs, relative to the project


@dataclass
class NightlyOutcome:
    """Exit code, one-line summary and the steps that ran."""

    code: int
    summary: str
    steps: list[str] = field(default_factory=list)
    refresh: dict | None = None  # what the corpus refresh did (uniret.stages.corpus_refresh), None: not run


class Supervisor:
    """Starts the watchdog (uniret.ops.watchdog) and runs commands in process groups it watches."""

    def __init__(self, lock: HeldLock):
        # the watchdog inherits the lock's descriptor: the lock stays held until it has made sure
        # every command's process group is gone, even when this process is killed with -9
        self.watchdog = subprocess.Popen(
            [sys.executable, "-m", "uniret.ops.watchdog"], stdin=subprocess.PIPE, text=True,
            pass_fds=(lock.fd,), start_new_session=True,
        )

    def run(self, command: str, cwd: Path, env: dict[str, str]) -> int:
        """Run one configured command (no shell: split like a shell would) in its own process group."""
        argv = shlex.split(command)
        log.info("nightly: $ %s (in %s)", command, cwd)
        try:
            # dies with nightly (kernel signal); the uniret stages dvc starts watch NIGHTLY_PID_ENV
            child = subprocess.Popen(argv, cwd=cwd, env={**env, NIGHTLY_PID_ENV: str(os.getpid())},
                                     start_new_session=True, preexec_fn=die_with_parent)
        except OSError as exc:
            log.error("nightly: cannot run %r: %s", command, exc)
            return 127  # the shell's "command not found"
        assert self.watchdog.stdin is not None
        self.watchdog.stdin.write(f"{child.pid}\n")  # a new session: its pgid is its pid
        self.watchdog.stdin.flush()
        try:
            return child.wait()
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)  # Ctrl-C / error: the whole group, not just dvc
            child.wait()
            raise

    def close(self) -> None:
        """Let the watchdog kill what is left of the commands' groups, and wait for it."""
        assert self.watchdog.stdin is not None
        self.watchdog.stdin.close()
        self.watchdog.wait()


def _child_env(ctx: StageContext) -> dict[str, str]:
    """Children (dvc repro -> `uniret <stage>`) use the same profile and artifacts as this run."""
    from uniret.config.params import PROFILE_ENV

    return {**os.environ, PROFILE_ENV: ctx.profile, ARTIFACTS_ENV: str(ctx.artifacts)}


def check_artifacts_for_dvc(ctx: StageContext, cfg: NightlyConfig) -> None:
    """`dvc repro` writes the outs dvc.yaml names (<project>/artifacts); another --artifacts would
    make the stages write elsewhere and the gate read a folder dvc never filled: refuse it."""
    expected = params_dir(ctx.params) / DVC_ARTIFACTS
    uses_dvc = shlex.split(cfg.repro_command)[:2] == ["dvc", "repro"]
    if uses_dvc and ctx.artifacts.resolve() != expected.resolve():
        raise StageFailed(
            f"--artifacts {ctx.artifacts} cannot be used with `{cfg.repro_command}`: dvc.yaml writes "
            f"{expected}; drop --artifacts (or $UNIRET_ARTIFACTS), or give another DAG command with --repro"
        )


def _steps(ctx: StageContext, cfg: NightlyConfig, supervisor: Supervisor) -> NightlyOutcome:
    out = NightlyOutcome(EXIT_FAILED, "")
    cwd, env = params_dir(ctx.params), _child_env(ctx)
    for command in [*cfg.refresh_commands, cfg.repro_command]:
        rc = supervisor.run(command, cwd, env)
        out.steps.append(f"{command}: exit {rc}")
        if rc != 0:
            out.summary = f"failed: `{command}` exited with {rc}"
            return out
    # The gate runs here, not in dvc.yaml: it compares against the live production pointer,
    # which changes outside DVC (promotions, rollbacks), so a cached decision could be stale.
    run_stage("gate", ctx)
    out.steps.append("gate: decided")
    decision = read_json(ctx.stage_dir("gate") / DECISION_JSON)
    passed = decision.get("passed") is True
    gate_says = "gate passed" if passed else blocked_summary(decision).removeprefix("skipped: ")
    held = promotion_held(ctx, cfg, passed)
    if held is not None:
        out.code, out.summary = held[0], f"{held[1]}; {gate_says}" if held[0] == EXIT_PAUSED else held[1]
        out.steps.append("promote: not run")
    elif passed:
        result = run_stage("promote", ctx)
        out.steps.append(f"promote: {result.get('status')} {result.get('version', '')}".rstrip())
        # canary.enabled: the candidate went to a canary (or waits for the running one), not to production
        out.code, out.summary = EXIT_PROMOTED, result["status"] if result.get("canary") else "promoted"
    else:
        out.code, out.summary = EXIT_BLOCKED, f"blocked: {gate_says}"
    if out.code in (EXIT_BLOCKED, EXIT_PAUSED):
        _refresh_corpus(ctx, cfg, out)
    if cfg.report:
        try:
            run_stage("report", ctx)
            out.steps.append("report: written")
        except Exception as exc:  # noqa: BLE001 - the decision stands; the run is still reported failed
            log.exception("nightly: report failed")
            out.steps.append(f"report: failed: {exc}")
            out.code, out.summary = EXIT_FAILED, f"{out.summary}; report failed: {exc}"
    return out


def _refresh_corpus(ctx: StageContext, cfg: NightlyConfig, out: NightlyOutcome) -> None:
    """No new model tonight: today's corpus with production's model (uniret.stages.corpus_refresh), so
    served documents are never older than a night. The exit code stays blocked/paused (the model was
    not promoted); a refresh that fails makes the night failed: documents go stale until it is fixed."""
    from uniret.stages.corpus_refresh import refresh_corpus

    setting = cfg.refresh_corpus if cfg.promote else "off"  # nightly.promote: false promotes nothing at all
    try:
        result = refresh_corpus(ctx, setting, paused=out.code == EXIT_PAUSED)
    except Exception as exc:  # noqa: BLE001 - the gate's decision stands; the night is reported failed
        log.exception("nightly: corpus refresh failed")
        out.steps.append(f"corpus refresh: failed: {exc}")
        out.refresh = {"status": "failed", "summary": f"corpus refresh failed: {exc}"}
        out.code, out.summary = EXIT_FAILED, f"{out.summary}; corpus refresh failed: {exc}"
        return
    out.refresh = result.to_dict()
    out.steps.append(f"corpus refresh: {result.status} {result.version or ''}".rstrip())
    out.summary = f"{out.summary}; {result.summary}"


def promotion_held(ctx: StageContext, cfg: NightlyConfig, passed: bool) -> tuple[int, str] | None:
    """(exit code, summary) when this run must not promote though the DAG ran: promotion paused
    (registry control or params nightly.promote: false; whatever the gate decided), or a passed
    candidate whose content a rollback rejected. None: promote when the gate passed."""
    root = registry_root(ctx.params)
    control = read_control(root)  # a damaged control.json fails the run: never promote on a guess
    pointer = read_pointer(root)
    stays = f"production stays {pointer['version']}" if pointer else "nothing is in production"
    if not cfg.promote:
        return EXIT_PAUSED, f"paused: params nightly.promote is false; {stays}"
    if control.paused:
        return EXIT_PAUSED, f"paused: {control.pause_text()}; {stays}"
    if passed and control.rejected:
        refusal = control.refusal(hash_path(ctx.require("index") / INDEX_BUNDLE))
        if refusal is not None:
            return EXIT_BLOCKED, f"blocked: the candidate is not promoted again: {refusal}; {stays}"
    return None


def run_nightly(ctx: StageContext, cfg: NightlyConfig, lock_file: str | None = None) -> NightlyOutcome:
    """One nightly run under an exclusive non-blocking lock; never raises for expected failures."""
    check_artifacts_for_dvc(ctx, cfg)
    lock = resolve_path(ctx.params, lock_file or cfg.lock_file)
    try:
        with file_lock(lock, blocking=False) as held:
            supervisor = Supervisor(held)
            try:
                outcome = _steps(ctx, cfg, supervisor)
            except Exception as exc:  # noqa: BLE001 - any failure maps to exit 1 with its message
                log.exception("nightly: failed")
                outcome = NightlyOutcome(EXIT_FAILED, f"failed: {exc}")
            finally:
                supervisor.close()  # before the lock is released: no command outlives it
    except LockHeld as exc:
        return NightlyOutcome(EXIT_LOCKED, f"another nightly run is in progress: {exc}")
    log.info("nightly: %s (exit %d)", outcome.summary, outcome.code)
    _publish_outcome(ctx, outcome)
    return outcome


def _publish_outcome(ctx: StageContext, outcome: NightlyOutcome) -> None:
    """The outcome into the registry's nightly.json (serving exports it to Prometheus) and to the
    webhook (params `notify`); neither can change the run's exit code (docs/monitoring.md)."""
    for what, publish in (("record", record_outcome), ("notify", notify_outcome)):
        try:
            publish(ctx.params, outcome)
        except Exception:  # noqa: BLE001 - the decision stands whatever the registry or receiver does
            log.exception("nightly: could not %s the outcome", what)
