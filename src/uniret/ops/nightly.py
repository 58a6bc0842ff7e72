"""The nightly retraining run: refresh, `dvc repro`, gate against production, promote, report.

Exit codes (also in `uniret nightly --help`): 0 promoted (or the candidate already is
production), 3 blocked (by the gate, or because a rollback rejected the candidate's content),
4 promotion paused, 1 failed, 75 another nightly run holds the lock.

After the gate, the promote stage (uniret.stages.promote, the same step the Kubeflow pipeline runs)
decides: promote; hold while promotion is paused (`uniret registry pause`, or params
`nightly.promote: false`: every stage, the gate and the report still run) or when a rollback rejected
the candidate's content (the summary names that rollback and its time); and on a blocked or paused
night refresh production's corpus (params nightly.refresh_corpus, uniret.stages.corpus_refresh): the
exit code stays 3 or 4 and the summary says what the refresh did.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from uniret.config.nightly import NightlyConfig
from uniret.config.params import Params
from uniret.config.paths import params_dir, resolve_path
from uniret.core.errors import StageFailed
from uniret.ops.nightly_codes import (  # noqa: F401 - the CLI's codes
    EXIT_BLOCKED,
    EXIT_FAILED,
    EXIT_LOCKED,
    EXIT_PAUSED,
    EXIT_PROMOTED,
)
from uniret.ops.nightly_metrics import record_outcome
from uniret.ops.nightly_notify import notify_outcome
from uniret.runtime import ARTIFACTS_ENV, StageContext
from uniret.stages import run_stage
from uniret.utils.locks import HeldLock, LockHeld, file_lock
from uniret.utils.parent_watch import NIGHTLY_PID_ENV, die_with_parent

log = logging.getLogger("uniret.ops")

# the promote stage's outcome (uniret.stages.promote) -> the nightly's exit code
OUTCOME_CODES = {"promoted": EXIT_PROMOTED, "unchanged": EXIT_PROMOTED, "canary": EXIT_PROMOTED,
                 "blocked": EXIT_BLOCKED, "rejected": EXIT_BLOCKED, "paused": EXIT_PAUSED}

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
    ctx = _with_settings(ctx, cfg)
    # promote, hold, or refresh the corpus: the promote stage decides, as it does in the Kubeflow pipeline
    night = promote_outcome(run_stage("promote", ctx))
    out.code, out.summary, out.refresh = night.code, night.summary, night.refresh
    out.steps += night.steps
    if cfg.report:
        try:
            run_stage("report", ctx)
            out.steps.append("report: written")
        except Exception as exc:  # noqa: BLE001 - the decision stands; the run is still reported failed
            log.exception("nightly: report failed")
            out.steps.append(f"report: failed: {exc}")
            out.code, out.summary = EXIT_FAILED, f"{out.summary}; report failed: {exc}"
    return out


def promote_outcome(result: dict) -> NightlyOutcome:
    """The night's outcome from the promote stage's metrics (uniret.stages.promote): its code, its summary
    with what the corpus refresh did, and exit 1 when the refresh failed."""
    out = NightlyOutcome(OUTCOME_CODES[result["outcome"]], result["summary"])
    out.steps.append(f"promote: {result['outcome']} {result.get('version') or ''}".rstrip())
    if result.get("refresh") is not None:
        out.refresh = result["refresh"]
        out.steps.append(f"corpus refresh: {out.refresh['status']} {out.refresh.get('version') or ''}".rstrip())
        if result.get("error"):
            out.code, out.summary = EXIT_FAILED, f"{out.summary}; {result['error']}"
        else:
            out.summary = f"{out.summary}; {out.refresh['summary']}"
    return out


def _with_settings(ctx: StageContext, cfg: NightlyConfig) -> StageContext:
    """The context the promote and report stages read, with this run's nightly settings (a caller may
    pass a NightlyConfig that differs from params) in its params."""
    given = {"promote": cfg.promote, "refresh_corpus": cfg.refresh_corpus}
    params = ctx.params.section("nightly")
    if all(getattr(params, k) == v for k, v in given.items()):
        return ctx
    return dataclasses.replace(ctx, params=ctx.params.with_overrides("nightly", given))


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
    publish_outcome(ctx.params, outcome)
    return outcome


def publish_outcome(params: Params, outcome: NightlyOutcome) -> None:
    """The outcome into the registry's nightly.json (serving exports it to Prometheus) and to the
    webhook (params `notify`); neither can change the run's exit code (docs/monitoring.md). `uniret
    nightly` and the Kubeflow pipeline's promote task call it once per night."""
    for what, publish in (("record", record_outcome), ("notify", notify_outcome)):
        try:
            publish(params, outcome)
        except Exception:  # noqa: BLE001 - the decision stands whatever the registry or receiver does
            log.exception("nightly: could not %s the outcome", what)
