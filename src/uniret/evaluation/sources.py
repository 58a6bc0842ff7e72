"""Run sources: where the evaluate stage gets the rankings it scores.

A source turns upstream artifacts into runs, `{system: {dataset: Run}}`. BM25 reads the bm25
stage's run files; later sources (trained heads, bundle retrieval modes: dense, lexical, uni,
hybrid) plug in with one line in RUN_SOURCES. A required source whose upstream outputs are
missing fails the stage; an optional one is skipped with a log line, so the evaluate stage runs
as soon as BM25 exists and grows as the DAG does.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from uniret.core.runs import Run, read_run
from uniret.runtime import StageContext

log = logging.getLogger("uniret.evaluation")

Runs = dict[str, dict[str, Run]]  # {system: {dataset: Run}}

# source name -> "module:Class" (imported lazily: a model source may pull torch/faiss) or a
# zero-argument factory. Add a source here; the evaluate stage scores every registered source.
RUN_SOURCES: dict[str, str | Callable[[], RunSource]] = {
    "bm25": "uniret.evaluation.sources:Bm25Source",
    "bundle": "uniret.evaluation.bundle_source:BundleSource",
    "trained": "uniret.evaluation.model_source:TrainedModelSource",
    "zeroshot": "uniret.evaluation.model_source:ZeroShotSource",
}


class SourceUnavailable(FileNotFoundError):
    """A source's upstream outputs do not exist (its stage has not run)."""


@runtime_checkable
class RunSource(Protocol):
    """Produces runs on the eval datasets for one or more systems."""

    name: str
    required: bool  # True: missing upstream outputs fail the stage; False: skipped with a log line
    save_runs: bool  # True: the evaluate stage writes its runs (they exist nowhere else)

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        """Upstream files/dirs this source reads (hashed into the evaluate manifest)."""
        ...

    def runs(self, ctx: StageContext) -> Runs:
        """{system: {dataset: Run}} for every dataset in `data.eval_datasets`.

        Raises SourceUnavailable when the upstream stage has not run.
        """
        ...


def eval_datasets(ctx: StageContext) -> list[str]:
    """The datasets every source must cover, from params `data.eval_datasets`."""
    return list(ctx.params.section("data").eval_datasets)


class Bm25Source:
    """BM25 runs written by the bm25 stage: artifacts/bm25/runs/<dataset>.trec (system "bm25")."""

    name = "bm25"
    required = True
    save_runs = False  # the bm25 stage already keeps them
    RUNS_DIR = "runs"

    def _runs_dir(self, ctx: StageContext) -> Path:
        try:
            return ctx.require("bm25") / self.RUNS_DIR
        except FileNotFoundError as exc:
            raise SourceUnavailable(str(exc)) from exc

    def inputs(self, ctx: StageContext) -> dict[str, Path]:
        return {"bm25_runs": ctx.stage_dir("bm25") / self.RUNS_DIR}

    def runs(self, ctx: StageContext) -> Runs:
        folder = self._runs_dir(ctx)
        out: dict[str, Run] = {}
        for dataset in eval_datasets(ctx):
            path = folder / f"{dataset}.trec"
            if not path.is_file():
                raise SourceUnavailable(f"{path}: no BM25 run for eval dataset {dataset!r}; rerun `uniret bm25`")
            out[dataset] = read_run(path)
        return {"bm25": out}


def load_source(name: str) -> RunSource:
    """Instantiate the source registered as `name`."""
    try:
        target = RUN_SOURCES[name]
    except KeyError as exc:
        raise KeyError(f"unknown run source {name!r}; known: {', '.join(sorted(RUN_SOURCES))}") from exc
    if isinstance(target, str):
        module, _, cls = target.partition(":")
        target = getattr(importlib.import_module(module), cls)
    source = target()
    if not isinstance(source, RunSource):
        raise TypeError(f"{target} does not implement RunSource (name, required, save_runs, inputs, runs)")
    return source


def collect_runs(ctx: StageContext, sources: list[RunSource]) -> tuple[Runs, dict[str, dict[str, Any]]]:
    """Runs of every available source, and per source {"status": "ok"|"skipped", "systems", "reason"}.

    A required source's SourceUnavailable propagates (the stage fails); an optional one is logged
    and skipped. Two sources naming the same system is an error.
    """
    runs: Runs = {}
    report: dict[str, dict[str, Any]] = {}
    for source in sources:
        try:
            produced = source.runs(ctx)
        except SourceUnavailable as exc:
            if source.required:
                raise
            log.info("run source %s skipped: %s", source.name, exc)
            report[source.name] = {"status": "skipped", "systems": [], "reason": str(exc)}
            continue
        clash = sorted(set(produced) & set(runs))
        if clash:
            raise ValueError(f"run source {source.name!r} produced system(s) already scored: {', '.join(clash)}")
        runs.update(produced)
        report[source.name] = {"status": "ok", "systems": sorted(produced)}
        log.info("run source %s: systems %s", source.name, ", ".join(sorted(produced)))
    return runs, report
